//! The `--config` file: Sluice's limits, timeouts and ports, in TOML, under the section names WSO2
//! MI's `deployment.toml` uses (`[transport.http]`, `[mediation]`). Every key is optional. A bad
//! value is an error with its line. A key Sluice has no setting for (an MI `deployment.toml` holds
//! many) is reported with its line and ignored, so an MI user's file works as it is and a typo is
//! still seen.

use serde::Deserialize;
use sluice_transport::access_log::{AccessLog, Format};
use sluice_transport::body::BodyPace;
use sluice_transport::buffered::BodyBudget;
use sluice_transport::metrics::Buckets;
use sluice_transport::offload::{Offload, OffloadOptions};
use sluice_transport::{EngineOptions, ServerOptions};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

#[derive(Deserialize, Default, Debug)]
pub struct Settings {
    #[serde(default)]
    server: Server,
    #[serde(default)]
    transport: Transport,
    #[serde(default)]
    mediation: Mediation,
    #[serde(default)]
    metric_handler: MetricHandler,
    #[serde(default)]
    passthru_properties: Passthru,
    #[serde(default)]
    access_log: AccessLogSettings,
    #[serde(default)]
    internal_apis: InternalApis,
    #[serde(default)]
    opentelemetry: OpenTelemetry,
    #[serde(default)]
    keystore: KeyStores,
    /// `[truststore]`: certificates whose WS-Security signatures are accepted.
    truststore: Option<KeyStoreFile>,
    /// The folder of the file read, for the relative paths in it.
    #[serde(skip)]
    dir: Option<std::path::PathBuf>,
}

/// `[keystore.primary]`: MI's own key, which its https listeners and the management API serve.
#[derive(Deserialize, Default, Debug)]
struct KeyStores {
    primary: Option<KeyStoreFile>,
}

/// MI's defaults: `wso2carbon.jks`, password and alias `wso2carbon`.
#[derive(Deserialize, Debug, Default, Clone)]
struct KeyStoreFile {
    file_name: Option<String>,
    password: Option<String>,
    /// The key's alias (default: the store's only key, else `wso2carbon`).
    alias: Option<String>,
    /// The key's password (default: the store's).
    key_password: Option<String>,
    /// `JKS` (MI's default) or `PKCS12`.
    #[serde(rename = "type")]
    kind: Option<String>,
}

/// `[opentelemetry]`: MI's tracing switch and where spans go.
#[derive(Deserialize, Default, Debug)]
struct OpenTelemetry {
    enable: Option<bool>,
    /// MI's exporter kind: `otlp` (Sluice's only one), `jaeger`, `zipkin`, `log`.
    #[serde(rename = "type")]
    kind: Option<String>,
    /// The collector's OTLP URL.
    url: Option<String>,
    /// `http` or `grpc` (MI's default; Sluice sends over HTTP).
    protocol: Option<String>,
    /// The Jaeger and Zipkin exporters' (not read for `otlp`).
    host: Option<toml::Value>,
    port: Option<toml::Value>,
    class: Option<toml::Value>,
}

/// `[internal_apis]`: MI's file user store for the management API.
#[derive(Deserialize, Default, Debug)]
struct InternalApis {
    #[serde(default)]
    users: Vec<UserTable>,
}

/// One `[[internal_apis.users]]`: `user.name`, `user.password`, `user.is_admin`.
#[derive(Deserialize, Debug)]
struct UserTable {
    user: UserFields,
}

#[derive(Deserialize, Debug)]
struct UserFields {
    name: String,
    password: String,
    #[serde(default)]
    is_admin: bool,
}

/// `[access_log]` (Sluice's: MI sets its access log in log4j2.properties).
#[derive(Deserialize, Default, Debug)]
struct AccessLogSettings {
    /// A line per request (default off).
    enable: Option<bool>,
    /// The file the lines are appended to (default `http_access.log`, MI's name).
    file: Option<std::path::PathBuf>,
    /// `mi` (MI's default pattern) or `json`.
    format: Option<String>,
}

/// `[passthru_properties]`: MI's HTTP transport settings.
#[derive(Deserialize, Default, Debug)]
struct Passthru {
    /// The header that carries the correlation ID (MI's default `activityid`).
    correlation_header_name: Option<String>,
}

/// `[metric_handler]`: MI's latency buckets, and whether requests are counted at all.
#[derive(Deserialize, Default, Debug)]
struct MetricHandler {
    /// Sluice's: counting on or off (default on; the page is served on the internal API's port).
    enable: Option<bool>,
    /// Upper bounds of the proxies' latency buckets, in seconds, ascending.
    proxy_latency_buckets: Option<Vec<f64>>,
    /// The same for the APIs.
    api_latency_buckets: Option<Vec<f64>>,
}

/// `[server]`.
#[derive(Deserialize, Default, Debug)]
struct Server {
    /// MI's port offset: added to the base ports (8280 http, 9191 internal API). MI's default is
    /// 10.
    offset: Option<u16>,
    /// MI's switch for hot deployment (on by default, as MI).
    hot_deployment: Option<bool>,
}

#[derive(Deserialize, Default, Debug)]
struct Transport {
    #[serde(default)]
    http: Http,
}

/// `[transport.http]`.
#[derive(Deserialize, Default, Debug)]
struct Http {
    /// The largest request head in bytes (431 past it).
    max_header_size: Option<usize>,
    /// Seconds a client has to send its request head.
    header_read_timeout: Option<u64>,
    /// Bytes per second a request body must average once its grace period is over (408 if not).
    request_body_min_rate: Option<u64>,
    /// Seconds before the minimum rate applies.
    request_body_grace: Option<u64>,
    /// Seconds a whole request body may take.
    request_body_timeout: Option<u64>,
    /// The largest body read into memory for a mediator, in bytes (413 past it).
    max_body_size: Option<usize>,
    /// What all bodies read into memory may hold at once, in bytes (503 past it).
    max_buffered_bytes: Option<usize>,
}

/// `[mediation]`.
#[derive(Deserialize, Default, Debug)]
struct Mediation {
    /// Messages whose body in memory has at least this many bytes are mediated off the event loop.
    offload_above: Option<usize>,
    /// How many of those run at once.
    offload_threads: Option<usize>,
    /// Milliseconds such a mediation may take.
    deadline: Option<u64>,
    /// MI's internal HTTP API (here: the health probes) on or off (default on).
    internal_http_api_enable: Option<bool>,
    /// Its port (default 9201: MI's 9191 with its default port offset of 10).
    internal_http_api_port: Option<u16>,
    /// The same over TLS, MI's management API port (default 9164: MI's 9154 with the offset).
    internal_https_api_port: Option<u16>,
}

/// The keys Sluice reads, by section.
const KNOWN: &[(&str, &[&str])] = &[
    ("server", &["offset", "hot_deployment"]),
    (
        "transport.http",
        &[
            "max_header_size",
            "header_read_timeout",
            "request_body_min_rate",
            "request_body_grace",
            "request_body_timeout",
            "max_body_size",
            "max_buffered_bytes",
        ],
    ),
    (
        "mediation",
        &[
            "offload_above",
            "offload_threads",
            "deadline",
            "internal_http_api_enable",
            "internal_http_api_port",
            "internal_https_api_port",
        ],
    ),
    (
        "metric_handler",
        &["enable", "proxy_latency_buckets", "api_latency_buckets"],
    ),
    ("passthru_properties", &["correlation_header_name"]),
    ("access_log", &["enable", "file", "format"]),
    ("internal_apis", &["users"]),
    (
        "opentelemetry",
        &["enable", "type", "url", "protocol", "host", "port", "class"],
    ),
    (
        "keystore.primary",
        &["file_name", "password", "alias", "key_password", "type"],
    ),
    ("truststore", &["file_name", "password", "type"]),
];

impl Settings {
    /// The file at `path`, and a warning (`FILE:LINE: ...`) for each key Sluice has no setting for.
    pub fn read(path: &Path) -> Result<(Settings, Vec<String>), String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let mut s = Settings::parse(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        s.dir = path.parent().map(Path::to_owned);
        let unused = unused_keys(&text)
            .into_iter()
            .map(|(key, line)| {
                format!(
                    "{}:{line}: `{key}` is not a setting Sluice has: ignored",
                    path.display()
                )
            })
            .collect();
        Ok((s, unused))
    }

    pub fn parse(text: &str) -> Result<Settings, String> {
        let s: Settings = toml::from_str(text).map_err(|e| e.to_string())?;
        let h = &s.transport.http;
        if h.request_body_timeout == Some(0) || s.mediation.deadline == Some(0) {
            return Err("a timeout of 0 would refuse every request".into());
        }
        if s.mediation.offload_threads == Some(0) {
            return Err("offload_threads must be at least 1".into());
        }
        if let Some(n) = &s.passthru_properties.correlation_header_name {
            if http::HeaderName::from_bytes(n.as_bytes()).is_err() {
                return Err(format!(
                    "passthru_properties.correlation_header_name: '{n}' is not a header name"
                ));
            }
        }
        if let Some(f) = &s.access_log.format {
            if f != "mi" && f != "json" {
                return Err(format!("access_log.format: '{f}': want \"mi\" or \"json\""));
            }
        }
        let m = &s.metric_handler;
        for (key, b) in [
            ("proxy_latency_buckets", &m.proxy_latency_buckets),
            ("api_latency_buckets", &m.api_latency_buckets),
        ] {
            let Some(b) = b else { continue };
            if b.is_empty()
                || b.iter().any(|x| !x.is_finite() || *x <= 0.0)
                || b.windows(2).any(|w| w[0] >= w[1])
            {
                return Err(format!(
                    "metric_handler.{key}: want positive seconds in ascending order, as [0.19, 0.2, 1, 5]"
                ));
            }
        }
        Ok(s)
    }

    /// The engine's options: the defaults, with what the file sets.
    pub fn engine(&self, mut e: EngineOptions) -> EngineOptions {
        let h = &self.transport.http;
        let pace = BodyPace::default();
        e.body_pace = BodyPace {
            grace: h.request_body_grace.map_or(pace.grace, Duration::from_secs),
            min_rate: h.request_body_min_rate.unwrap_or(pace.min_rate),
            deadline: h
                .request_body_timeout
                .map_or(pace.deadline, Duration::from_secs),
        };
        if let Some(n) = h.max_body_size {
            e.max_buffered_body = n;
        }
        if let Some(n) = h.max_buffered_bytes {
            e.body_budget = BodyBudget::new(n);
        }
        if let Some(n) = self.correlation_header() {
            if let Ok(name) = http::HeaderName::from_bytes(n.as_bytes()) {
                sluice_transport::correlation::set_header(name);
            }
        }
        // Parsed trees count against the bodies' budget.
        sluice_mediation::budget::install(e.body_budget.clone());
        let m = &self.mediation;
        let d = OffloadOptions::default();
        e.offload = Offload::new(OffloadOptions {
            above: m.offload_above.unwrap_or(d.above),
            threads: m.offload_threads.unwrap_or(d.threads),
            deadline: m.deadline.map_or(d.deadline, Duration::from_millis),
        });
        e
    }

    /// The primary key store's key and chain (`[keystore.primary]`, a JKS file; a relative
    /// `file_name` is read beside the settings file, else in MI's `repository/resources/security`
    /// beside its `conf`), for the TLS listeners that have no `--tls-cert`; `None` without one.
    pub fn primary_identity(&self) -> Result<Option<sluice_transport::tls::Identity>, String> {
        let Some(k) = &self.keystore.primary else {
            return Ok(None);
        };
        let key = primary_key(k, self.dir.clone().unwrap_or_default())?;
        Ok(Some(sluice_transport::tls::Identity::from_der(
            key.chain, key.pkcs8, key.named,
        )))
    }

    /// Where WS-Security's keys come from: the primary key store, as for TLS, with MI's defaults
    /// when `[keystore.primary]` is absent (`wso2carbon.jks` beside this file or in MI's
    /// `repository/resources/security`). Read when a secured proxy first needs it. UsernameTokens
    /// are checked against `[[internal_apis.users]]` (MI's file-based user store).
    pub fn security_keys(&self) -> sluice_security::KeySource {
        let k = self.keystore.primary.clone().unwrap_or_default();
        let trust = self.truststore.clone();
        let dir = self.dir.clone().unwrap_or_default();
        sluice_security::KeySource::new(move || {
            let key = primary_key(&k, dir.clone())?;
            let private = sluice_xml::SecurityKey::private_pkcs8(&key.pkcs8)
                .map_err(|e| format!("keystore.primary: {}: {e}", key.named))?;
            let certificate = key.chain.first().cloned().unwrap_or_default();
            // Whose signatures are taken: the store's trusted certificates and its keys' own; MI's
            // trust store's too (MI's default file when it is there). By alias, for a policy's
            // encryptionUser.
            let named = [
                key.store.named_certificates(),
                trust_store(trust.as_ref(), &dir)?,
            ]
            .concat();
            let trusted = named.iter().map(|(_, c)| c.clone()).collect();
            // The store's other keys open encrypted keys too (Rampart decrypts with whichever key
            // of its store a message names), those the key password opens.
            let password = (k.key_password.as_deref())
                .or(k.password.as_deref())
                .unwrap_or("wso2carbon");
            let others = (key.store.keys.iter())
                .filter(|e| Some(&e.chain) != Some(&key.chain))
                .filter_map(|e| e.key(password).ok())
                .filter_map(|pkcs8| sluice_xml::SecurityKey::private_pkcs8(&pkcs8).ok())
                .collect();
            sluice_security::inbound::Keys::new(private, certificate, trusted)
                .map(|k| k.with_named(named).with_other_keys(others))
                .map_err(|e| format!("keystore.primary: {}: {e}", key.named))
        })
        .with_users(sluice_security::username::Users::new(
            (self.users().into_iter()).map(|u| {
                let roles = if u.is_admin {
                    vec!["admin".to_owned()]
                } else {
                    Vec::new()
                };
                (u.name, u.password, roles)
            }),
        ))
    }

    /// Where spans go when tracing is on (`[opentelemetry] enable`, off by default as in MI).
    /// Sluice exports OTLP over HTTP: another `type` or `protocol` is reported and tracing stays
    /// off, or goes over HTTP.
    pub fn tracing(&self) -> Option<sluice_transport::otel::TracingOptions> {
        let o = &self.opentelemetry;
        if o.enable != Some(true) {
            return None;
        }
        let _ = (&o.host, &o.port, &o.class);
        match o.kind.as_deref().unwrap_or("otlp") {
            "otlp" => {}
            other => {
                tracing::warn!(
                    "opentelemetry.type = \"{other}\" is not supported (Sluice exports OTLP: type = \"otlp\", which Jaeger, Zipkin's collector and the OpenTelemetry Collector take); tracing is off"
                );
                return None;
            }
        }
        if o.protocol.as_deref().is_some_and(|p| p != "http") {
            tracing::warn!(
                "opentelemetry.protocol: Sluice sends OTLP over HTTP (protobuf), not gRPC; give the collector's HTTP URL (port 4318) in opentelemetry.url"
            );
        }
        let url = match o.url.as_deref().map(str::trim) {
            None | Some("") => "http://localhost:4318/v1/traces".to_owned(),
            // A collector's base URL gets OTLP's traces path, as OTEL_EXPORTER_OTLP_ENDPOINT does.
            Some(u) => match u.split_once("://").map(|(_, rest)| rest.contains('/')) {
                Some(false) => format!("{u}/v1/traces"),
                _ => u.trim_end_matches('/').to_owned(),
            },
        };
        let service_name = std::env::var("SERVICE_NAME")
            .ok()
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| "sluice".to_owned());
        Some(sluice_transport::otel::TracingOptions { url, service_name })
    }

    /// Whether a change to the deployed files is deployed while serving (`[server]
    /// hot_deployment`, on by default as in MI).
    pub fn hot_deployment(&self) -> bool {
        self.server.hot_deployment.unwrap_or(true)
    }

    /// MI's port offset (`[server] offset`, 10 by default, as MI).
    fn offset(&self) -> u16 {
        self.server.offset.unwrap_or(10)
    }

    /// The http port when `--port` does not say: MI's 8280 with the offset (8290).
    pub fn http_port(&self) -> u16 {
        8280u16.saturating_add(self.offset())
    }

    /// The health probes' port: `cli` (`--internal-port`) over the file's, else MI's 9191 with the
    /// offset (9201); `None` when the file turns the internal API off.
    pub fn internal_api(&self, cli: Option<u16>) -> Option<u16> {
        self.internal_port(cli, self.mediation.internal_http_api_port, 9191)
    }

    /// The internal API's TLS port: `cli` over the file's, else MI's 9154 with the offset (9164);
    /// `None` when the internal API is off.
    pub fn internal_https_api(&self, cli: Option<u16>) -> Option<u16> {
        self.internal_port(cli, self.mediation.internal_https_api_port, 9154)
    }

    /// `cli` over `file`, else MI's `base` port with the offset; `None` when the internal API is off.
    fn internal_port(&self, cli: Option<u16>, file: Option<u16>, base: u16) -> Option<u16> {
        if self.mediation.internal_http_api_enable == Some(false) {
            return None;
        }
        Some(cli.or(file).unwrap_or(base.saturating_add(self.offset())))
    }

    /// The access log the file asks for, opened (appending); `None` when it is off.
    pub fn access_log(&self) -> Result<Option<Arc<AccessLog>>, String> {
        let a = &self.access_log;
        if a.enable != Some(true) {
            return Ok(None);
        }
        let path = a.file.clone().unwrap_or_else(|| "http_access.log".into());
        let format = match a.format.as_deref() {
            Some("json") => Format::Json,
            _ => Format::Mi,
        };
        AccessLog::open(&path, format)
            .map(|l| Some(Arc::new(l)))
            .map_err(|e| format!("access_log.file {}: {e}", path.display()))
    }

    /// The management API's users (`[[internal_apis.users]]`); none: MI's default admin/admin.
    pub fn users(&self) -> Vec<crate::management::auth::UserEntry> {
        self.internal_apis
            .users
            .iter()
            .map(|u| crate::management::auth::UserEntry {
                name: u.user.name.clone(),
                password: u.user.password.clone(),
                is_admin: u.user.is_admin,
            })
            .collect()
    }

    /// The correlation ID's header when the file names one (MI's default is `activityid`).
    pub fn correlation_header(&self) -> Option<&str> {
        self.passthru_properties.correlation_header_name.as_deref()
    }

    /// The latency buckets requests are counted with (MI's defaults, or the file's), `None` when
    /// `[metric_handler] enable = false`.
    pub fn metrics(&self) -> Option<Buckets> {
        let m = &self.metric_handler;
        if m.enable == Some(false) {
            return None;
        }
        let d = Buckets::default();
        Some(Buckets {
            proxy: m.proxy_latency_buckets.clone().unwrap_or(d.proxy),
            api: m.api_latency_buckets.clone().unwrap_or(d.api),
        })
    }

    /// The listener's options: the defaults, with what the file sets.
    pub fn server(&self, mut s: ServerOptions) -> ServerOptions {
        let h = &self.transport.http;
        if let Some(n) = h.max_header_size {
            s.max_head = n;
        }
        if let Some(t) = h.header_read_timeout {
            s.header_read_timeout = Duration::from_secs(t);
        }
        s
    }
}

/// The keys (dotted paths) of `text`, a TOML file that parses, that Sluice has no setting for,
/// with their lines: a whole table when Sluice reads nothing in it.
fn unused_keys(text: &str) -> Vec<(String, usize)> {
    let Ok(table) = toml::from_str::<toml::Table>(text) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    unused_in(&table, "", &mut out);
    let lines = key_lines(text);
    out.into_iter()
        .map(|key| {
            // The key's own line; else the first line of what is under it (`[keystore.primary]`
            // for `keystore`, a dotted key); else the nearest table header that holds it.
            let under = format!("{key}.");
            let first = lines
                .iter()
                .filter(|(p, _)| p.starts_with(&under))
                .map(|(_, &l)| l)
                .min();
            let mut at = key.as_str();
            let line = loop {
                if let Some(&l) = lines.get(at).or(first.as_ref()) {
                    break l;
                }
                match at.rfind('.') {
                    Some(k) => at = &at[..k],
                    None => break 1,
                }
            };
            (key, line)
        })
        .collect()
}

/// Adds to `out` the paths under `prefix` in `table` that no [`KNOWN`] section reads.
fn unused_in(table: &toml::Table, prefix: &str, out: &mut Vec<String>) {
    for (key, value) in table {
        let path = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        if let Some((_, keys)) = KNOWN.iter().find(|(s, _)| *s == path) {
            match value.as_table() {
                Some(t) => out.extend(
                    t.keys()
                        .filter(|k| !keys.contains(&k.as_str()))
                        .map(|k| format!("{path}.{k}")),
                ),
                None => out.push(path),
            }
        } else if let (true, Some(t)) = (
            KNOWN
                .iter()
                .any(|(s, _)| s.starts_with(&format!("{path}."))),
            value.as_table(),
        ) {
            unused_in(t, &path, out);
        } else {
            out.push(path);
        }
    }
}

/// The line of each key and table header in `text`, by dotted path (quotes and spaces left out
/// of simple keys; enough to point at a line).
fn key_lines(text: &str) -> std::collections::HashMap<String, usize> {
    let mut lines = std::collections::HashMap::new();
    let mut section = String::new();
    for (n, line) in text.lines().enumerate() {
        let l = line.trim();
        if let Some(h) = l.strip_prefix('[') {
            let name = h.trim_start_matches('[').split(']').next().unwrap_or("");
            section = name.replace(['"', ' '], "");
            lines.entry(section.clone()).or_insert(n + 1);
        } else if let Some((key, _)) = l.split_once('=') {
            let key = key.trim().replace(['"', ' '], "");
            if !key.is_empty() && !key.starts_with('#') {
                let path = if section.is_empty() {
                    key
                } else {
                    format!("{section}.{key}")
                };
                lines.entry(path).or_insert(n + 1);
            }
        }
    }
    lines
}

/// The certificates of `[truststore]` (a JKS or PKCS#12 file, as for the key store); without the section,
/// those of MI's default `client-truststore.jks` when there is one.
fn trust_store(
    t: Option<&KeyStoreFile>,
    dir: &std::path::Path,
) -> Result<Vec<(String, Vec<u8>)>, String> {
    let name = t
        .and_then(|t| t.file_name.as_deref())
        .unwrap_or("client-truststore.jks");
    let Some(path) = store_path(dir, name) else {
        return match t {
            Some(_) => Err(format!("truststore: cannot find {name}")),
            None => Ok(Vec::new()),
        };
    };
    if !sluice_transport::keystore::KeyStore::reads_type(t.and_then(|t| t.kind.as_deref())) {
        return Err("truststore: only JKS and PKCS12 stores are read (type)".into());
    }
    let password = t
        .and_then(|t| t.password.as_deref())
        .unwrap_or("wso2carbon");
    let bytes = std::fs::read(&path)
        .map_err(|e| format!("truststore: cannot read {}: {e}", path.display()))?;
    let store = sluice_transport::keystore::KeyStore::read(&bytes, password)
        .map_err(|e| format!("truststore: {}: {e}", path.display()))?;
    Ok(store.named_certificates())
}

/// Where a store named `name` is: beside the settings file (`dir`), else where MI keeps it when the
/// settings file is MI's `conf/deployment.toml`.
fn store_path(dir: &std::path::Path, name: &str) -> Option<std::path::PathBuf> {
    [
        dir.join(name),
        dir.join("../repository/resources/security").join(name),
    ]
    .into_iter()
    .find(|p| p.is_file())
}

/// The primary key, read from its store.
struct PrimaryKey {
    store: sluice_transport::keystore::KeyStore,
    chain: Vec<Vec<u8>>,
    pkcs8: Vec<u8>,
    /// The file and alias, for messages.
    named: String,
}

/// Reads `[keystore.primary]` `k`, a relative file name beside `dir` or in MI's
/// `../repository/resources/security`.
fn primary_key(k: &KeyStoreFile, dir: std::path::PathBuf) -> Result<PrimaryKey, String> {
    use sluice_transport::keystore::KeyStore;
    if !KeyStore::reads_type(k.kind.as_deref()) {
        return Err("keystore.primary: only JKS and PKCS12 key stores are read (type)".into());
    }
    let name = k.file_name.as_deref().unwrap_or("wso2carbon.jks");
    let password = k.password.as_deref().unwrap_or("wso2carbon");
    let path = store_path(&dir, name).unwrap_or_else(|| dir.join(name));
    let bytes = std::fs::read(&path)
        .map_err(|e| format!("keystore.primary: cannot read {}: {e}", path.display()))?;
    let at = |e: sluice_transport::keystore::KeyStoreError| {
        format!("keystore.primary: {}: {e}", path.display())
    };
    let store = KeyStore::read(&bytes, password).map_err(at)?;
    let entry = match &k.alias {
        Some(a) => store.key(a),
        None if store.keys.len() == 1 => store.keys.first(),
        None => store.key("wso2carbon"),
    }
    .ok_or_else(|| {
        let aliases: Vec<&str> = store.keys.iter().map(|e| e.alias.as_str()).collect();
        format!(
            "keystore.primary: {} holds no key named {} (its keys: {})",
            path.display(),
            k.alias.as_deref().unwrap_or("wso2carbon"),
            aliases.join(", ")
        )
    })?;
    let pkcs8 = entry
        .key(k.key_password.as_deref().unwrap_or(password))
        .map_err(at)?;
    let named = format!("{} ({})", path.display(), entry.alias);
    let chain = entry.chain.clone();
    Ok(PrimaryKey {
        store,
        chain,
        pkcs8,
        named,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_reaches_its_option() {
        let s = Settings::parse(
            "[transport.http]\nmax_header_size = 8192\nheader_read_timeout = 5\n\
             request_body_min_rate = 10\nrequest_body_grace = 2\nrequest_body_timeout = 60\n\
             max_body_size = 1000\nmax_buffered_bytes = 5000\n\
             [mediation]\noffload_above = 100\noffload_threads = 3\ndeadline = 250\n\
             internal_http_api_port = 9391\n",
        )
        .unwrap();
        // The health probes' port: the command line's over the file's.
        assert_eq!(s.internal_api(None), Some(9391));
        assert_eq!(s.internal_api(Some(0)), Some(0));
        let e = s.engine(EngineOptions::default());
        assert_eq!(
            e.body_pace,
            BodyPace {
                grace: Duration::from_secs(2),
                min_rate: 10,
                deadline: Duration::from_secs(60)
            }
        );
        assert_eq!(e.max_buffered_body, 1000);
        assert_eq!(e.body_budget.cap(), 5000);
        let o = e.offload.options();
        assert_eq!(
            (o.above, o.threads, o.deadline),
            (100, 3, Duration::from_millis(250))
        );
        let v = s.server(ServerOptions::default());
        assert_eq!(v.max_head, 8192);
        assert_eq!(v.header_read_timeout, Duration::from_secs(5));
    }

    #[test]
    fn an_empty_file_keeps_the_defaults() {
        let e = Settings::parse("")
            .unwrap()
            .engine(EngineOptions::default());
        let d = EngineOptions::default();
        assert_eq!(Settings::default().internal_api(None), Some(9201));
        assert_eq!(Settings::default().internal_https_api(None), Some(9164));
        assert_eq!(Settings::default().http_port(), 8290);
        // MI's port offset moves both.
        let moved = Settings::parse("[server]\noffset = 20\n").unwrap();
        assert_eq!(
            (moved.http_port(), moved.internal_api(None)),
            (8300, Some(9211))
        );
        let off = Settings::parse("[mediation]\ninternal_http_api_enable = false\n").unwrap();
        assert_eq!(off.internal_api(Some(9300)), None);
        assert_eq!(off.internal_https_api(Some(9300)), None);
        assert_eq!(moved.internal_https_api(None), Some(9174));
        assert_eq!(e.body_pace, d.body_pace);
        assert_eq!(e.max_buffered_body, d.max_buffered_body);
        assert_eq!(e.body_budget.cap(), d.body_budget.cap());
    }

    #[test]
    fn bad_values_are_refused_with_their_line_and_unknown_keys_reported() {
        // An MI deployment.toml: what Sluice has no setting for is named with its line.
        let mi = "[server]\nhostname = \"localhost\"\noffset = 10\n\n[transport.http]\n\
                  max_body_sise = 5\nsocket_timeout = 180000\nmax_body_size = 100\n\
                  [[datasource]]\nid = \"WSO2_CARBON_DB\"\n\n[keystore.primary]\n\
                  file_name = \"wso2carbon.jks\"\n[mediation]\nflow.statistics.enable = true\n";
        let s = Settings::parse(mi).unwrap();
        assert_eq!(s.engine(EngineOptions::default()).max_buffered_body, 100);
        assert_eq!(
            unused_keys(mi),
            [
                ("datasource".to_owned(), 9),
                ("mediation.flow".to_owned(), 15),
                ("server.hostname".to_owned(), 2),
                ("transport.http.max_body_sise".to_owned(), 6),
                ("transport.http.socket_timeout".to_owned(), 7),
            ]
        );
        let e = Settings::parse("[mediation]\ndeadline = \"soon\"\n").unwrap_err();
        assert!(e.contains("line 2"), "{e}");
        assert!(Settings::parse("[mediation]\ndeadline = 0\n").is_err());
        assert!(Settings::parse("[mediation]\noffload_threads = 0\n").is_err());
        for bad in ["[]", "[0.5, 0.2]", "[0.1, 0.1]", "[-1.0]", "\"1s\""] {
            let text = format!("[metric_handler]\nproxy_latency_buckets = {bad}\n");
            assert!(Settings::parse(&text).is_err(), "{bad}");
        }
    }

    #[test]
    fn metrics_take_mi_buckets_and_can_be_off() {
        let d = Settings::default().metrics().unwrap();
        assert_eq!(d.proxy, sluice_transport::metrics::DEFAULT_BUCKETS);
        let s =
            Settings::parse("[metric_handler]\napi_latency_buckets = [0.01, 1, 2.5]\n").unwrap();
        let b = s.metrics().unwrap();
        assert_eq!((b.api, b.proxy), (vec![0.01, 1.0, 2.5], d.proxy));
        let off = Settings::parse("[metric_handler]\nenable = false\n").unwrap();
        assert!(off.metrics().is_none());
    }
}
