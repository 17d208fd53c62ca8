//! WSO2 MI's management API (`apictl mi`, the Integration Control Plane), under `/management` on the
//! internal API's port, with MI's JSON shapes.
//!
//! | Request | Answer |
//! |---|---|
//! | `GET /management` | 200, no credentials needed |
//! | `GET /management/login`, Basic credentials | 200 `{"AccessToken": JWT}`; else 401 |
//! | any other, without a live `Bearer` token | 401, empty body (as MI) |
//! | `GET /management/logout` | 200; the token ends |
//! | `GET /management/server` | MI's server fields (`productName` Sluice), and `lastReload` (`time`, `reason`, `status` deployed or refused, `errors`) once a hot deployment ran |
//! | `GET /management/proxy-services[?proxyServiceName=]` | `{"count","list":[{"name","wsdl1_1","wsdl2_0"}]}`, or one with `stats`, `tracing`, `eprs`, `isRunning` |
//! | `POST /management/proxy-services` `{"name","status":"active\|inactive"}` | `{"Message": ...}`; a deactivated proxy answers 503 |
//! | `GET /management/apis[?apiName=]` | `{"count","list":[{"name","url","urlList","tracing"}]}`, or one with `resources`, `context`, `port` |
//! | `GET /management/endpoints[?endpointName=]` | `{"count","list":[{"name","type","isActive"}]}`, or one with `address` |
//! | `POST /management/endpoints` `{"name","status"}` | `{"Message":"X is switched On\|Off"}`; a switched-off endpoint fails every send as a suspended one |
//! | `GET /management/sequences` | the named sequences |
//! | `GET /management/logging[?loggerName=]` | `{"count","list":[{"loggerName","componentName","level"}]}` ([`logging`]) |
//! | `PATCH /management/logging` `{"loggerName","loggingLevel"[,"loggerClass"]}` | `{"message": ...}`; the level applies at once |
//! | `GET /management/applications[?carbonAppName=]` | each CAR `{"name","version","artifacts":[{"name","type"}]}`, under `activeList` or, when an artifact of it is not deployed, `faultyList` |
//! | `GET /management/local-entries`, `/templates[?type=]` | their names (and MI's type names) |
//! | `GET /management/registry-resources[/properties\|/metadata]?path=registry/config/...` | the registry read at load, read only ([`registry`]) |
//! | `GET /management/logs[?file=]`, `GET`/`PUT /management/configs` (correlation) | the access log's file, and its lines on or off ([`files`]) |
//! | tasks, message stores and processors, inbound endpoints, connectors, data services and sources | `{"count":0,"list":[]}` (Sluice has none yet) |
//! | an unknown name | 404, empty body (as MI) |
//! | a bad body | 400 `{"Error": ...}` (MI answers some with 200 or a server error) |
//!
//! Users come from `[[internal_apis.users]]` ([`auth`]). With none configured, MI's default
//! `admin`/`admin` works, and only from loopback: anyone else gets 403 until users are configured.

pub mod auth;
mod files;
pub mod logging;
mod registry;
mod stores;

use auth::{Auth, Caller};
use hyper::{Method, StatusCode};
use serde_json::{json, Value};
use sluice_mediation::plan::{Address, EndpointPlan, GroupKind};
use sluice_mediation::{Plan, ProxyPlan};
use sluice_transport::access_log::AccessLog;
use sluice_transport::Deployment;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The management API's state.
pub struct Management {
    /// The plan being served (a reload replaces it).
    deployment: Arc<Deployment>,
    /// The access log, when one is written: MI's log files and correlation logs ([`files`]).
    access_log: Option<Arc<AccessLog>>,
    /// The last reload's outcome (hot deployment), shown under `server`.
    reloads: Option<Arc<crate::deploy::Reloads>>,
    auth: Auth,
    /// Where services are reached, for the URLs MI shows.
    host: String,
    http_port: u16,
    https_port: Option<u16>,
    home: String,
}

/// A request to it, as the listener read it.
pub struct Call<'a> {
    pub method: &'a Method,
    /// After `/management` (`""` for the root).
    pub path: &'a str,
    pub query: Option<&'a str>,
    pub authorization: Option<&'a str>,
    pub body: &'a [u8],
    pub loopback: bool,
}

/// Status and JSON body (`None`: empty, as MI's 401 and 404).
pub type Answer = (StatusCode, Option<Value>);

impl Management {
    pub fn new(
        deployment: Arc<Deployment>,
        users: &[auth::UserEntry],
        (host, http_port, https_port): (String, u16, Option<u16>),
        home: String,
    ) -> Management {
        Management {
            deployment,
            access_log: None,
            reloads: None,
            auth: Auth::new(users),
            host,
            http_port,
            https_port,
            home,
        }
    }

    /// The access log's file is listed and its lines switched here.
    pub fn with_access_log(mut self, log: Option<Arc<AccessLog>>) -> Management {
        self.access_log = log;
        self
    }

    /// The last reload's outcome is shown under `server`.
    pub fn with_reloads(mut self, reloads: Arc<crate::deploy::Reloads>) -> Management {
        self.reloads = Some(reloads);
        self
    }

    /// `GET /logs?file=NAME` from a logged-in caller: the file's bytes, or why not; `None` for any
    /// other request (answered by [`Management::answer`]).
    pub fn download(&self, c: &Call<'_>) -> Option<Result<Vec<u8>, Answer>> {
        if c.method != Method::GET || c.path != "/logs" {
            return None;
        }
        let name = query_value(c.query, "file")?;
        if let Some(refused) = self.refused_address(c) {
            return Some(Err(refused));
        }
        if let Err(refused) = self.user(c) {
            return Some(Err(refused));
        }
        Some(files::download(self.access_log.as_deref(), &name))
    }

    /// 403 for a caller off loopback while MI's default user is the only one.
    fn refused_address(&self, c: &Call<'_>) -> Option<Answer> {
        (self.auth.defaults && !c.loopback).then(|| {
            let why = "the management API answers only on loopback until users are configured ([[internal_apis.users]] in the --config file)";
            error(StatusCode::FORBIDDEN, why)
        })
    }

    /// Whether `c` carries a live token, else the 401 it gets.
    fn user(&self, c: &Call<'_>) -> Result<(), Answer> {
        match self.auth.caller(c.authorization) {
            Caller::User { .. } => Ok(()),
            _ => Err((StatusCode::UNAUTHORIZED, None)),
        }
    }

    /// The plan being served.
    fn plan(&self) -> Arc<Plan> {
        self.deployment.current()
    }

    pub fn answer(&self, c: &Call<'_>) -> Answer {
        if c.path.is_empty() && c.method == Method::GET {
            let v = json!({"WSO2 Micro Integrator": env!("CARGO_PKG_VERSION"), "ManagementApi": "Active", "product": "Sluice"});
            return (StatusCode::OK, Some(v));
        }
        if let Some(refused) = self.refused_address(c) {
            return refused;
        }
        if c.path == "/login" && c.method == Method::GET {
            let issuer = format!("http://{}:{}/", self.host, self.http_port);
            return match c.authorization.and_then(|a| self.auth.login(a, &issuer)) {
                Some(t) => (StatusCode::OK, Some(json!({ "AccessToken": t }))),
                None => (StatusCode::UNAUTHORIZED, None),
            };
        }
        if let Err(refused) = self.user(c) {
            return refused;
        }
        let q = |name: &str| query_value(c.query, name);
        match (c.method, c.path) {
            (&Method::GET, "/logout") => {
                self.auth.logout(c.authorization);
                (StatusCode::OK, None)
            }
            (&Method::GET, "/server") => (StatusCode::OK, Some(self.server())),
            (&Method::GET, "/proxy-services") => match q("proxyServiceName") {
                Some(n) => found(self.plan().proxies.get(&n).map(|p| self.proxy(p))),
                None => (StatusCode::OK, Some(self.proxies())),
            },
            (&Method::POST, "/proxy-services") => self.switch_proxy(c.body),
            (&Method::GET, "/apis") => match q("apiName") {
                Some(n) => found(self.api(&n)),
                None => (StatusCode::OK, Some(self.apis())),
            },
            (&Method::GET, "/endpoints") => match q("endpointName") {
                Some(n) => found(self.endpoint(&n).map(|e| endpoint_detail(&n, &e))),
                None => (StatusCode::OK, Some(self.endpoints())),
            },
            (&Method::POST, "/endpoints") => self.switch_endpoint(c.body),
            (&Method::GET, "/sequences") => match q("sequenceName") {
                Some(n) => found(self.plan().sequences.contains(&n).then(|| sequence(&n))),
                None => {
                    let list: Vec<Value> =
                        self.plan().sequences.iter().map(|n| sequence(n)).collect();
                    (StatusCode::OK, Some(listed(list)))
                }
            },
            (&Method::GET, "/logging") => self.loggers(q("loggerName")),
            (&Method::PATCH, "/logging") => self.set_level(c.body),
            (&Method::GET, "/applications") => match q("carbonAppName") {
                Some(n) => found(self.apps().0.into_iter().find(|a| a["name"] == n.as_str())),
                None => (StatusCode::OK, Some(self.applications())),
            },
            (&Method::GET, "/local-entries") => {
                let list = (self.plan().local_entries.iter())
                    .map(|(n, t)| json!({"name": n, "type": t}))
                    .collect();
                (StatusCode::OK, Some(listed(list)))
            }
            (&Method::GET, "/templates") => {
                let kind = q("type");
                let list = (self.plan().templates.iter())
                    .filter(|(_, k)| kind.as_deref().is_none_or(|want| want == *k))
                    .map(|(n, k)| match kind {
                        Some(_) => json!({ "name": n }),
                        None => json!({"name": n, "type": k}),
                    })
                    .collect();
                (StatusCode::OK, Some(listed(list)))
            }
            (&Method::GET, "/logs") => files::list(self.access_log.as_deref()),
            (&Method::GET, "/configs") => {
                files::config(self.access_log.as_deref(), q("configName"))
            }
            (&Method::PUT, "/configs") => files::set_config(self.access_log.as_deref(), c.body),
            (&Method::GET, "/registry-resources") => registry::list(&self.plan(), q("path")),
            (&Method::GET, "/registry-resources/properties") => {
                registry::resource_properties(&self.plan(), q("path"), q("name"))
            }
            (&Method::GET, "/registry-resources/metadata") => {
                registry::metadata(&self.plan(), q("path"))
            }
            (&Method::GET, "/message-stores") => {
                stores::stores(&self.plan(), q("name"), q("searchKey"))
            }
            (&Method::GET, "/message-processors") => {
                stores::processors(&self.plan(), q("name"), q("searchKey"))
            }
            (&Method::POST, "/message-processors") => stores::switch(&self.plan(), c.body),
            (
                &Method::GET,
                "/tasks" | "/inbound-endpoints" | "/connectors" | "/data-services"
                | "/data-sources",
            ) => (StatusCode::OK, Some(listed(Vec::new()))),
            _ => (StatusCode::NOT_FOUND, None),
        }
    }

    fn loggers(&self, name: Option<String>) -> Answer {
        let Some(logging) = logging::installed() else {
            return (StatusCode::OK, Some(listed(Vec::new())));
        };
        let shown = |l: &logging::Logger| json!({"loggerName": l.name, "componentName": l.component, "level": l.level});
        match name {
            None => (
                StatusCode::OK,
                Some(listed(logging.list().iter().map(shown).collect())),
            ),
            Some(n) => match logging.get(&n) {
                Some(l) => (StatusCode::OK, Some(shown(&l))),
                None => error(
                    StatusCode::BAD_REQUEST,
                    &format!("Logger name ('{n}') not found"),
                ),
            },
        }
    }

    fn set_level(&self, body: &[u8]) -> Answer {
        let Ok(v) = serde_json::from_slice::<Value>(body) else {
            return error(StatusCode::BAD_REQUEST, "JSON payload is missing");
        };
        let field = |k: &str| v.get(k).and_then(Value::as_str);
        let Some(name) = field("loggerName") else {
            return error(StatusCode::BAD_REQUEST, "Logger name is missing");
        };
        let Some(level) = field("loggingLevel") else {
            return error(StatusCode::BAD_REQUEST, "Log level is missing");
        };
        let Some(logging) = logging::installed() else {
            return error(StatusCode::BAD_REQUEST, "log levels cannot be changed here");
        };
        match logging.set(name, level, field("loggerClass")) {
            Ok(m) => {
                tracing::info!(target: "sluice::audit", logger = %name, level = %level, "log level changed through the management API");
                (StatusCode::OK, Some(json!({ "message": m })))
            }
            Err(e) => error(StatusCode::BAD_REQUEST, &e),
        }
    }

    /// The Carbon Applications read, active and faulty: faulty when an artifact of it is not
    /// deployed (a proxy or API left out, or a kind Sluice cannot deploy), as MI takes a whole CAR
    /// as failed.
    fn apps(&self) -> (Vec<Value>, Vec<Value>) {
        const DEPLOYS: [&str; 7] = [
            "proxy-service",
            "api",
            "endpoint",
            "sequence",
            "local-entry",
            "template",
            "resource",
        ];
        let plan = self.plan();
        let left_out = |(name, kind): &(String, String)| {
            !DEPLOYS.contains(&kind.as_str())
                || (kind == "proxy-service" && !plan.proxies.contains_key(name))
                || (kind == "api" && !plan.apis.iter().any(|a| &*a.name == name))
        };
        let (mut active, mut faulty) = (Vec::new(), Vec::new());
        for car in &plan.cars {
            let artifacts: Vec<Value> = (car.artifacts.iter())
                .map(|(n, k)| json!({"name": n, "type": k}))
                .collect();
            let v = json!({"name": car.name, "version": car.version, "artifacts": artifacts});
            if car.artifacts.iter().any(left_out) {
                faulty.push(v);
            } else {
                active.push(v);
            }
        }
        (active, faulty)
    }

    fn applications(&self) -> Value {
        let (active, faulty) = self.apps();
        json!({
            "totalCount": active.len() + faulty.len(),
            "activeCount": active.len(),
            "activeList": active,
            "faultyCount": faulty.len(),
            "faultyList": faulty,
        })
    }

    fn server(&self) -> Value {
        let mut v = self.server_fields();
        // Sluice's own: how the last hot deployment went (absent before the first).
        if let Some(r) = self.reloads.as_ref().and_then(|r| r.last()) {
            v["lastReload"] = json!({
                "time": r.at,
                "reason": r.why,
                "status": if r.deployed { "deployed" } else { "refused" },
                "errors": r.errors,
            });
        }
        v
    }

    fn server_fields(&self) -> Value {
        json!({
            "carbonHome": self.home,
            "javaHome": "",
            "javaVersion": "",
            "javaVendor": "",
            "osName": std::env::consts::OS,
            "osVersion": std::fs::read_to_string("/proc/sys/kernel/osrelease").map(|v| v.trim().to_owned()).unwrap_or_default(),
            "productName": "Sluice",
            "productVersion": env!("CARGO_PKG_VERSION"),
        })
    }

    /// The base URLs services are reached at: http, then https when served.
    fn bases(&self) -> Vec<String> {
        let mut out = vec![format!("http://{}:{}", self.host, self.http_port)];
        if let Some(p) = self.https_port {
            out.push(format!("https://{}:{p}", self.host));
        }
        out
    }

    fn proxy_urls(&self, p: &ProxyPlan) -> (String, String) {
        let base = format!(
            "http://{}:{}/services/{}",
            self.host, self.http_port, p.name
        );
        (format!("{base}?wsdl"), format!("{base}?wsdl2"))
    }

    fn proxies(&self) -> Value {
        let plan = self.plan();
        let mut names: Vec<&String> = plan.proxies.keys().collect();
        names.sort();
        let list = names
            .iter()
            .filter_map(|n| plan.proxies.get(*n))
            .map(|p| {
                let (w1, w2) = self.proxy_urls(p);
                json!({"name": &*p.name, "wsdl1_1": w1, "wsdl2_0": w2})
            })
            .collect();
        listed(list)
    }

    fn proxy(&self, p: &ProxyPlan) -> Value {
        let (w1, w2) = self.proxy_urls(p);
        let mut eprs = Vec::new();
        for (base, served) in self.bases().iter().zip([p.on_http, p.on_https]) {
            if served {
                eprs.push(format!("{base}/services/{}", p.name));
            }
        }
        json!({
            "name": &*p.name,
            "wsdl1_1": w1,
            "wsdl2_0": w2,
            "stats": "disabled",
            "tracing": "disabled",
            "configuration": format!("{}:{}", p.loc.file, p.loc.line),
            "eprs": eprs,
            "isRunning": p.active.load(Ordering::Relaxed),
        })
    }

    fn switch_proxy(&self, body: &[u8]) -> Answer {
        let (name, on) = match switch_request(body) {
            Ok(s) => s,
            Err(e) => return e,
        };
        let plan = self.plan();
        let Some(p) = plan.proxies.get(&name) else {
            return error(StatusCode::NOT_FOUND, "Proxy service could not be found");
        };
        p.active.store(on, Ordering::Relaxed);
        tracing::info!(target: "sluice::audit", proxy = %name, active = on, "proxy service switched through the management API");
        let done = if on { "started" } else { "stopped" };
        let m = format!("Proxy service {name} {done} successfully");
        (StatusCode::OK, Some(json!({ "Message": m })))
    }

    fn apis(&self) -> Value {
        let plan = self.plan();
        let list = plan
            .apis
            .iter()
            .map(|a| {
                let urls: Vec<String> = self
                    .bases()
                    .iter()
                    .map(|b| format!("{b}{}", a.context))
                    .collect();
                json!({"name": &*a.name, "url": urls[0], "urlList": urls, "tracing": "disabled"})
            })
            .collect();
        listed(list)
    }

    fn api(&self, name: &str) -> Option<Value> {
        let plan = self.plan();
        let a = plan.apis.iter().find(|a| &*a.name == name)?;
        let urls: Vec<String> = self
            .bases()
            .iter()
            .map(|b| format!("{b}{}", a.context))
            .collect();
        let resources: Vec<Value> = a
            .resources
            .iter()
            .map(|r| {
                let methods: Vec<&str> = r.methods.iter().map(Method::as_str).collect();
                json!({"methods": methods, "url": r.pattern.text()})
            })
            .collect();
        let mut v = json!({
            "name": &*a.name,
            "url": urls[0],
            "urlList": urls,
            "version": "N/A",
            "stats": "disabled",
            "tracing": "disabled",
            "resources": resources,
            "context": a.context,
            "port": a.port.map_or(-1, i32::from),
            "configuration": "",
        });
        if let Some(h) = &a.host {
            v["host"] = json!(h);
        }
        Some(v)
    }

    fn endpoint(&self, name: &str) -> Option<Arc<EndpointPlan>> {
        self.plan().endpoints.get()?.get(name).cloned()
    }

    fn endpoints(&self) -> Value {
        let plan = self.plan();
        let Some(all) = plan.endpoints.get() else {
            return listed(Vec::new());
        };
        let mut names: Vec<&String> = all.keys().collect();
        names.sort();
        let list = names
            .into_iter()
            .map(|n| {
                let e = &all[n];
                json!({"name": n, "type": endpoint_type(e), "isActive": e.health.is_active()})
            })
            .collect();
        listed(list)
    }

    fn switch_endpoint(&self, body: &[u8]) -> Answer {
        let (name, on) = match switch_request(body) {
            Ok(s) => s,
            Err(e) => return e,
        };
        let Some(e) = self.endpoint(&name) else {
            return error(StatusCode::NOT_FOUND, "Endpoint does not exist");
        };
        if on {
            e.health.switch_on();
        } else {
            e.health.switch_off();
        }
        tracing::info!(target: "sluice::audit", endpoint = %name, active = on, "endpoint switched through the management API");
        let m = format!("{name} is switched {}", if on { "On" } else { "Off" });
        (StatusCode::OK, Some(json!({ "Message": m })))
    }
}

/// `{"name": ..., "status": "active|inactive"}` (any case), or the 400 MI gives.
fn switch_request(body: &[u8]) -> Result<(String, bool), Answer> {
    let v: Value = serde_json::from_slice(body)
        .map_err(|_| error(StatusCode::BAD_REQUEST, "JSON payload is missing"))?;
    let name = v
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| error(StatusCode::BAD_REQUEST, "Missing attribute name in payload"))?;
    let on = match v
        .get("status")
        .and_then(Value::as_str)
        .map(str::to_ascii_lowercase)
    {
        Some(s) if s == "active" => true,
        Some(s) if s == "inactive" => false,
        _ => {
            return Err(error(
                StatusCode::BAD_REQUEST,
                "Provided state is not valid",
            ))
        }
    };
    Ok((name.to_owned(), on))
}

fn endpoint_type(e: &EndpointPlan) -> &'static str {
    match (&e.group, &e.address) {
        (Some(g), _) => match g.kind {
            GroupKind::Failover { .. } => "failover",
            GroupKind::RoundRobin { .. } => "loadbalance",
            _ => "recipientlist",
        },
        (None, Address::Template(_)) => "http",
        (None, Address::To) => "default",
        (None, Address::Wsdl(_)) => "wsdl",
        _ => "address",
    }
}

fn endpoint_detail(name: &str, e: &EndpointPlan) -> Value {
    let kind = match endpoint_type(e) {
        "http" => "HTTP Endpoint",
        "default" => "Default Endpoint",
        "wsdl" => "WSDL Endpoint",
        "failover" => "Failover Endpoint",
        "loadbalance" => "Load Balance Endpoint",
        "recipientlist" => "Recipient List Endpoint",
        _ => "Address Endpoint",
    };
    json!({
        "name": name,
        "type": kind,
        "address": e.uri.to_string(),
        "isActive": e.health.is_active(),
        "tracing": "disabled",
        "configuration": "",
    })
}

fn sequence(name: &str) -> Value {
    json!({"name": name, "stats": "disabled", "tracing": "disabled"})
}

fn listed(list: Vec<Value>) -> Value {
    json!({"count": list.len(), "list": list})
}

fn found(v: Option<Value>) -> Answer {
    match v {
        Some(v) => (StatusCode::OK, Some(v)),
        None => (StatusCode::NOT_FOUND, None),
    }
}

fn error(status: StatusCode, why: &str) -> Answer {
    (status, Some(json!({ "Error": why })))
}

/// The first value of `name` in a query string, decoded as Synapse decodes `query.param.*`.
fn query_value(query: Option<&str>, name: &str) -> Option<String> {
    sluice_mediation::api::query_params(query?)
        .into_iter()
        .find_map(|(k, v)| (k == name).then_some(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call<'a>(method: &'a Method, path: &'a str, loopback: bool) -> Call<'a> {
        Call {
            method,
            path,
            query: None,
            authorization: Some("Basic YWRtaW46YWRtaW4="),
            body: b"",
            loopback,
        }
    }

    #[test]
    fn the_default_admin_answers_on_loopback_only() {
        let at = ("h".to_owned(), 8290, None);
        let m = Management::new(
            Deployment::new(Arc::new(Plan::default())),
            &[],
            at,
            String::new(),
        );
        let get = Method::GET;
        assert_eq!(m.answer(&call(&get, "/login", true)).0, StatusCode::OK);
        let (status, body) = m.answer(&call(&get, "/login", false));
        assert_eq!(status, StatusCode::FORBIDDEN);
        assert!(body.unwrap()["Error"]
            .as_str()
            .unwrap()
            .contains("internal_apis.users"));
        // The root needs nothing.
        assert_eq!(m.answer(&call(&get, "", false)).0, StatusCode::OK);
        let users = [auth::UserEntry {
            name: "admin".into(),
            password: "admin".into(),
            is_admin: true,
        }];
        let at = ("h".to_owned(), 8290, None);
        let m = Management::new(
            Deployment::new(Arc::new(Plan::default())),
            &users,
            at,
            String::new(),
        );
        assert_eq!(m.answer(&call(&get, "/login", false)).0, StatusCode::OK);
    }

    #[test]
    fn queries_are_decoded() {
        assert_eq!(
            query_value(Some("a=1&apiName=My%20Api+x"), "apiName"),
            Some("My Api x".into())
        );
        assert_eq!(query_value(Some("a=1"), "apiName"), None);
        assert_eq!(query_value(Some("x=%zz%4"), "x"), Some("%zz%4".into()));
    }
}
