//! Endpoints: the compiled kinds (address, http, wsdl-less default, load-balance and failover
//! groups), how a message picks one, and how each compiles from the configuration model.

use crate::compile::Compiler;
use crate::health::{EndpointHealth, Readiness, SuspendPolicy};
use crate::message::Message;
use crate::uritemplate::UriTemplate;
use crate::{Error, ErrorKind};
use http::{HeaderValue, Method, Uri};
use sluice_config::{self as cfg, FaultVersion, Location, Severity};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Debug)]
pub struct EndpointPlan {
    /// The name, or `anonymous endpoint at file:line`.
    pub name: String,
    /// `endpoint NAME (URI)`, made once for errors and logs.
    pub label: Arc<str>,
    pub uri: Uri,
    /// `host:port` to connect to (port 80 when the URI has none).
    pub authority: Arc<str>,
    /// The Host header for this endpoint.
    pub host: HeaderValue,
    pub timeout: Option<Duration>,
    pub timeout_action: cfg::TimeoutAction,
    /// Suspension state, shared by every reference to the same definition.
    pub health: Arc<EndpointHealth>,
    /// Which failures let a failover or load-balance parent try another child.
    pub retry: cfg::RetryConfig,
    /// Where each message goes: `uri`, or an address made per message
    /// ([`EndpointPlan::for_message`]).
    pub address: Address,
    /// Template variables the endpoint's own `<property>` elements set (they win over the
    /// message's, as in Synapse).
    pub template_vars: Vec<(String, String)>,
    /// An `<http>` endpoint's `method`; None keeps the request's.
    pub method: Option<Method>,
    /// A failover or load-balance endpoint: its children (the fields above are then unused: every
    /// send goes to an address endpoint [`EndpointPlan::pick`] chooses).
    pub group: Option<Group>,
    /// The address endpoint's `format`, which decides whether a REST API's `REST_URL_POSTFIX` is
    /// appended.
    pub format: Format,
    /// The endpoint's own `<property>`s, set on each message it sends ([`EndpointPlan::set_properties`]).
    pub properties: Arc<[EndpointProp]>,
    /// MI's `<duration>{expression}</duration>`: the timeout in ms for each message
    /// ([`EndpointPlan::timeout_for`]).
    pub timeout_expr: Option<Arc<sluice_expr::Expr>>,
}

/// An endpoint `<property name value|expression scope>`: set on each message the endpoint sends, as
/// Synapse's endpoints evaluate theirs before sending (the transport scope: a header of the
/// request).
#[derive(Debug)]
pub struct EndpointProp {
    pub name: String,
    pub value: crate::plan::Value,
    pub scope: cfg::Scope,
}

pub use crate::format::Format;

/// Endpoint properties a load-balance endpoint reads (the weights of its children; Synapse's
/// thread-local variant, which changes nothing a client sees).
const LOADBALANCE_PROPERTIES: &[&str] = &["loadbalance.weight", "loadbalance.threadLocal"];

#[derive(Debug)]
pub enum Address {
    /// `uri`, the same for every message.
    Fixed,
    /// An `<http>` endpoint's `uri-template`, expanded from each message's properties.
    Template(Arc<UriTemplate>),
    /// A `<default>` endpoint: each message's To address.
    To,
    /// A key that names no endpoint in the configuration: each send fails, as in Synapse, which
    /// looks the key up then.
    Missing,
    /// A `<wsdl>` endpoint whose WSDL is read when Sluice starts: the address it gives.
    Wsdl(Arc<LazyWsdl>),
    /// A load-balance `<member>`: `scheme://host:port` and the path (and query) of the message's
    /// To address, else of the request.
    Member(Arc<str>),
}

/// A `<wsdl uri service port>` endpoint's WSDL, read over the network when Sluice starts (WSO2 MI
/// reads it when it deploys the endpoint). Until then, or when it could not be read, a message
/// sent to the endpoint fails with the reason.
#[derive(Debug)]
pub struct LazyWsdl {
    pub uri: String,
    pub service: Option<String>,
    pub port: Option<String>,
    address: std::sync::OnceLock<Result<String, String>>,
}

impl LazyWsdl {
    /// What reading the WSDL gave: its text, or why there is none. The first call decides.
    pub fn read(&self, text: Result<String, String>) {
        let address = text
            .and_then(|t| cfg::wsdl::address(&t, self.service.as_deref(), self.port.as_deref()));
        let _ = self.address.set(address);
    }

    /// The address, or why there is none.
    fn address(&self) -> Result<&str, String> {
        match self.address.get() {
            Some(Ok(a)) => Ok(a),
            Some(Err(e)) => Err(format!("its WSDL at {} gave no address: {e}", self.uri)),
            None => Err(format!("its WSDL at {} has not been read", self.uri)),
        }
    }
}

#[derive(Debug)]
pub struct Group {
    pub kind: GroupKind,
    pub children: Vec<Arc<EndpointPlan>>,
    /// Round robin: where the next turn starts; static failover: the child in use.
    cursor: AtomicUsize,
    /// Weighted round robin: the running sums of the children's weights (child `i` has the turns
    /// from `sums[i - 1]` up to `sums[i]`). `None`: a turn each.
    sums: Option<Box<[u64]>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupKind {
    /// `dynamic`: always the first ready child; static: the one in use while it is ready.
    Failover { dynamic: bool },
    /// Round robin over the ready children; `failover`: a failed send goes to the next one.
    RoundRobin { failover: bool },
    /// `<recipientlist>`: every child gets a copy. A `send` to it is a clone (see
    /// [`EndpointPlan::recipients`]); as one endpoint it picks none.
    RecipientList,
}

impl Group {
    /// Weighted round robin: the child whose turn it is, or the next ready one after it (its
    /// turns skipped as Synapse skips a child that is not ready), within one round.
    fn pick_weighted(&self, now: Instant, tried: &[usize]) -> Option<Arc<EndpointPlan>> {
        let sums = self.sums.as_deref()?;
        let total = *sums.last()?;
        let start = self.cursor.fetch_add(1, Ordering::Relaxed) as u64;
        let mut k = 0u64;
        for _ in 0..self.children.len() {
            let at = (start + k) % total;
            let i = sums.partition_point(|&s| s <= at);
            if let Some(leaf) = self.children[i].pick(now, tried) {
                if k > 0 {
                    self.cursor.fetch_add(k as usize, Ordering::Relaxed);
                }
                return Some(leaf);
            }
            // On to the first turn of the next child.
            k += sums[i] - at;
        }
        None
    }
}

impl EndpointPlan {
    /// A failover or load-balance endpoint over `children`.
    pub fn group(name: String, kind: GroupKind, children: Vec<Arc<EndpointPlan>>) -> Self {
        let what = match kind {
            GroupKind::Failover { .. } => "failover",
            GroupKind::RoundRobin { .. } => "loadbalance",
            GroupKind::RecipientList => "recipientlist",
        };
        EndpointPlan {
            label: format!("{what} endpoint {name}").into(),
            name,
            uri: Uri::from_static("/"),
            authority: "".into(),
            host: HeaderValue::from_static(""),
            timeout: None,
            timeout_action: cfg::TimeoutAction::Fault,
            health: Arc::new(EndpointHealth::new(SuspendPolicy::never())),
            retry: cfg::RetryConfig::default(),
            address: Address::Fixed,
            template_vars: Vec::new(),
            method: None,
            group: Some(Group {
                kind,
                children,
                cursor: AtomicUsize::new(0),
                sums: None,
            }),
            format: Format::AsIs,
            properties: Arc::new([]),
            timeout_expr: None,
        }
    }

    /// A round-robin group whose children take `weights` turns in a row each (Synapse's
    /// `WeightedRoundRobin`). Each weight must be at least 1.
    pub fn weighted(
        name: String,
        failover: bool,
        children: Vec<Arc<EndpointPlan>>,
        weights: &[u32],
    ) -> Self {
        let mut plan = EndpointPlan::group(name, GroupKind::RoundRobin { failover }, children);
        let sums = weights
            .iter()
            .scan(0u64, |sum, &w| {
                *sum += u64::from(w.max(1));
                Some(*sum)
            })
            .collect();
        if let Some(g) = &mut plan.group {
            g.sums = Some(sums);
        }
        plan
    }

    /// The address endpoint a send goes to now: this one, or, for a failover or load-balance
    /// endpoint, a ready address endpoint under it that is not in `tried` (this message's failed
    /// attempts, by [`EndpointPlan::id`]), chosen by the group's rule. None when there is none.
    pub fn pick(self: &Arc<Self>, now: Instant, tried: &[usize]) -> Option<Arc<Self>> {
        let Some(g) = &self.group else {
            let ready = self.health.readiness(now) == Readiness::Ready;
            return (ready && !tried.contains(&self.id())).then(|| self.clone());
        };
        let n = g.children.len();
        if n == 0 {
            return None;
        }
        match g.kind {
            // Not one endpoint: only `send` uses it, as a clone to every child.
            GroupKind::RecipientList => None,
            GroupKind::Failover { dynamic: true } => {
                g.children.iter().find_map(|c| c.pick(now, tried))
            }
            GroupKind::Failover { dynamic: false } => {
                let current = g.cursor.load(Ordering::Relaxed) % n;
                g.children[current].pick(now, tried).or_else(|| {
                    g.children.iter().enumerate().find_map(|(i, c)| {
                        let leaf = c.pick(now, tried)?;
                        g.cursor.store(i, Ordering::Relaxed);
                        Some(leaf)
                    })
                })
            }
            GroupKind::RoundRobin { .. } if g.sums.is_some() => g.pick_weighted(now, tried),
            GroupKind::RoundRobin { .. } => {
                let start = g.cursor.fetch_add(1, Ordering::Relaxed);
                (0..n).find_map(|k| {
                    let leaf = g.children[(start + k) % n].pick(now, tried)?;
                    // Children skipped this turn: the next turn starts after the one chosen.
                    if k > 0 {
                        g.cursor.fetch_add(k, Ordering::Relaxed);
                    }
                    Some(leaf)
                })
            }
        }
    }

    /// A recipient list's children, each of which a `send` to it gives a copy of the message.
    pub fn recipients(&self) -> Option<&[Arc<EndpointPlan>]> {
        match &self.group {
            Some(g) if g.kind == GroupKind::RecipientList => Some(&g.children),
            _ => None,
        }
    }

    /// The template expanded for a message. As Synapse: only `uri.var.*` and `query.param.*`
    /// properties are variables, the endpoint's own first.
    fn expand(&self, t: &UriTemplate, msg: &Message) -> String {
        t.expand(|name| {
            let own = self.template_vars.iter().find(|(n, _)| n == name);
            own.map(|(_, v)| v.as_str()).or_else(|| {
                is_template_variable(name)
                    .then(|| msg.props.get(name))
                    .flatten()
            })
        })
    }

    /// Whether a send could go anywhere now (without moving a round-robin turn): this endpoint is
    /// ready, or some address endpoint under it is.
    pub fn any_ready(&self, now: Instant) -> bool {
        match &self.group {
            None => self.health.readiness(now) == Readiness::Ready,
            Some(g) => g.children.iter().any(|c| c.any_ready(now)),
        }
    }

    /// After a send to the address endpoint `failed`, somewhere under this one, failed: the next one
    /// to try. As in Synapse, the failure goes first to the group right above that endpoint, which
    /// tries another of its children if it fails over, and otherwise (or when it has none left)
    /// passes the failure up to its own parent. None when no group takes it.
    pub fn pick_after_failure(
        self: &Arc<Self>,
        failed: usize,
        now: Instant,
        tried: &[usize],
    ) -> Option<Arc<Self>> {
        let g = self.group.as_ref()?;
        let child = g
            .children
            .iter()
            .find(|c| c.id() == failed || c.contains(failed))?;
        child
            .pick_after_failure(failed, now, tried)
            .or_else(|| self.fails_over().then(|| self.pick(now, tried)).flatten())
    }

    /// Whether the address endpoint `id` is under this one.
    fn contains(&self, id: usize) -> bool {
        self.group
            .as_ref()
            .is_some_and(|g| g.children.iter().any(|c| c.id() == id || c.contains(id)))
    }

    /// This endpoint's identity while the plan lives (its address).
    pub fn id(&self) -> usize {
        self as *const EndpointPlan as usize
    }

    /// Whether a failed send through this endpoint may go to another of its children.
    pub fn fails_over(&self) -> bool {
        matches!(
            self.group.as_ref().map(|g| g.kind),
            Some(GroupKind::Failover { .. } | GroupKind::RoundRobin { failover: true })
        )
    }

    /// Whether this address endpoint's `retryConfig` lets a failure with `code` go to another child.
    pub fn retry_allows(&self, code: i64) -> bool {
        !self.retry.disabled.contains(&code)
            && (self.retry.enabled.is_empty() || self.retry.enabled.contains(&code))
    }

    pub fn new(
        name: String,
        uri: Uri,
        host: HeaderValue,
        timeout: Option<Duration>,
        timeout_action: cfg::TimeoutAction,
        suspension: SuspendPolicy,
    ) -> Self {
        let health = Arc::new(EndpointHealth::new(suspension));
        EndpointPlan {
            label: format!("endpoint {name} ({uri})").into(),
            name,
            authority: connect_authority(&uri),
            uri,
            host,
            timeout,
            timeout_action,
            health,
            retry: cfg::RetryConfig::default(),
            address: Address::Fixed,
            template_vars: Vec::new(),
            method: None,
            group: None,
            format: Format::AsIs,
            properties: Arc::new([]),
            timeout_expr: None,
        }
    }

    /// Where a message goes by its To address when the flow names no endpoint: a `<default>`
    /// endpoint with no settings, which keeps no suspension state (Synapse keeps none for such
    /// sends). Made once; [`EndpointPlan::for_message`] gives each message its address.
    pub fn to_address() -> Self {
        let mut plan = EndpointPlan::new(
            "To address".into(),
            Uri::from_static("http://to-address.invalid/"),
            HeaderValue::from_static("to-address.invalid"),
            None,
            cfg::TimeoutAction::Fault,
            SuspendPolicy::never(),
        );
        plan.address = Address::To;
        plan
    }

    /// What a key that names no endpoint stands for ([`Address::Missing`]): every send through it
    /// fails with `EndpointNotFound`; it is never suspended.
    pub fn missing(key: &str) -> Self {
        let mut plan = EndpointPlan::new(
            key.into(),
            Uri::from_static("http://undefined-endpoint.invalid/"),
            HeaderValue::from_static("undefined-endpoint.invalid"),
            None,
            cfg::TimeoutAction::Fault,
            SuspendPolicy::never(),
        );
        plan.label = format!("endpoint {key} (not defined)").into();
        plan.address = Address::Missing;
        plan
    }

    /// The part of a REST API request's path after the API's context (`REST_URL_POSTFIX`, axis2
    /// scope), when Synapse appends it to this address: it is not empty, and the endpoint is
    /// `format="pox"`, or not forced to SOAP and the request is a REST one (any method but POST, a
    /// content type that is not SOAP, or `text/xml` without a SOAPAction).
    fn rest_postfix<'m>(&self, msg: &'m Message) -> Option<&'m str> {
        let p = msg
            .axis2
            .get("REST_URL_POSTFIX")
            .filter(|p| !p.is_empty())?;
        let rest = msg.method != Method::POST
            || match msg.soap {
                FaultVersion::Pox => true,
                FaultVersion::Soap11 => msg.soap_action().is_none(),
                FaultVersion::Soap12 => false,
            };
        match self.format {
            Format::Soap11 | Format::Soap12 => None,
            Format::Pox => Some(p),
            Format::AsIs | Format::Json => rest.then_some(p),
        }
    }

    /// The endpoint a message goes to: this one; for an `<http>` endpoint one with the URI its
    /// template gives from the message's `uri.var.*` and `query.param.*` properties; for a
    /// `<default>` one the message's To address. Those share this one's suspension state.
    pub fn for_message(self: &Arc<Self>, msg: &Message) -> Result<Arc<Self>, Error> {
        let text = match &self.address {
            // Synapse's words (IndirectEndpoint), as ERROR_MESSAGE.
            Address::Missing => {
                return Err(Error::new(
                    ErrorKind::EndpointNotFound,
                    format!("Couldn't find the endpoint with the key : {}", self.name),
                ))
            }
            Address::Template(t) => self.expand(t, msg),
            Address::Member(base) => {
                let path = match msg.to.as_deref().and_then(|t| t.parse::<Uri>().ok()) {
                    Some(to) => to.path_and_query().map_or("/", |p| p.as_str()).to_owned(),
                    None => msg.path_and_query.clone(),
                };
                format!("{base}{path}")
            }
            Address::Wsdl(w) => {
                let at = w.address().map_err(|why| {
                    Error::new(
                        ErrorKind::EndpointNotFound,
                        format!("endpoint {}: {why}", self.name),
                    )
                })?;
                match self.rest_postfix(msg) {
                    Some(postfix) => joined(at, postfix),
                    None => at.to_owned(),
                }
            }
            Address::To => msg.to.clone().ok_or_else(|| {
                Error::new(
                    ErrorKind::NoRoute,
                    format!(
                        "endpoint {} sends to the message's To address, and it has none",
                        self.name
                    ),
                )
            })?,
            Address::Fixed => match self.rest_postfix(msg) {
                Some(postfix) => joined(&self.uri.to_string(), postfix),
                None => return Ok(self.clone()),
            },
        };
        let (uri, host) = http_uri(&text).map_err(|(_, why)| {
            let what = match self.address {
                Address::To => "To address",
                Address::Fixed => "address with the REST API's path after its context",
                Address::Wsdl(_) => "address its WSDL gives",
                Address::Member(_) => "member's address for the message",
                _ => "uri-template",
            };
            Error::new(
                ErrorKind::Mediation,
                format!("{what} of endpoint {}: {why}", self.name),
            )
        })?;
        // Every field named: one added later must be decided on here too.
        Ok(Arc::new(EndpointPlan {
            name: self.name.clone(),
            label: format!("endpoint {} ({uri})", self.name).into(),
            authority: connect_authority(&uri),
            uri,
            host,
            timeout: self.timeout,
            timeout_action: self.timeout_action,
            health: self.health.clone(),
            retry: self.retry.clone(),
            address: Address::Fixed,
            template_vars: Vec::new(),
            method: self.method.clone(),
            group: None,
            format: self.format,
            properties: self.properties.clone(),
            timeout_expr: self.timeout_expr.clone(),
        }))
    }

    /// The timeout for `msg`: the expression's milliseconds when the endpoint computes it per
    /// message (a value that is no positive number leaves the endpoint's own, with a warning),
    /// else the endpoint's own.
    pub fn timeout_for(&self, msg: &Message) -> Option<Duration> {
        let Some(e) = &self.timeout_expr else {
            return self.timeout;
        };
        let doc = crate::exec::DocCache::new();
        match crate::exec::eval_expr(e, msg, &doc) {
            Ok(v) => match v.trim().parse::<u64>() {
                Ok(ms) if ms > 0 => Some(Duration::from_millis(ms)),
                _ => {
                    tracing::warn!(
                        "{}: timeout '{v}' is not a positive number of ms",
                        self.label
                    );
                    self.timeout
                }
            },
            Err(err) => {
                tracing::warn!("{}: timeout: {}", self.label, err.reason());
                self.timeout
            }
        }
    }

    /// Sets the endpoint's properties on a message it sends. A value that cannot be had (an
    /// expression that fails) is left unset, with a warning.
    pub fn set_properties(&self, msg: &mut Message) {
        for p in self.properties.iter() {
            let v = match &p.value {
                crate::plan::Value::Literal(v) => v.clone(),
                crate::plan::Value::Expr(e) => {
                    let doc = crate::exec::DocCache::new();
                    match crate::exec::eval_expr(e, msg, &doc) {
                        Ok(v) => v,
                        Err(err) => {
                            tracing::warn!("{}: property {}: {}", self.label, p.name, err.reason());
                            continue;
                        }
                    }
                }
            };
            match p.scope {
                cfg::Scope::Transport => {
                    let (Ok(n), Ok(v)) = (
                        http::HeaderName::from_bytes(p.name.as_bytes()),
                        http::HeaderValue::from_str(&v),
                    ) else {
                        continue;
                    };
                    msg.headers.insert(n, v);
                }
                cfg::Scope::Axis2 | cfg::Scope::Axis2Client => msg.axis2.set(&p.name, v),
                cfg::Scope::Default | cfg::Scope::Operation => msg.props.set(&p.name, v),
            }
        }
    }

    pub fn describe(&self) -> &str {
        &self.label
    }
}

/// An address with a REST postfix appended as Synapse joins them: one `/` between the two, and no
/// `/` before a query.
pub(crate) fn joined(address: &str, postfix: &str) -> String {
    if postfix.starts_with('?') {
        return format!("{}{postfix}", address.trim_end_matches('/'));
    }
    match (address.ends_with('/'), postfix.strip_prefix('/')) {
        (true, Some(p)) => format!("{address}{p}"),
        (false, None) => format!("{address}/{postfix}"),
        _ => format!("{address}{postfix}"),
    }
}

/// `host:port` to connect to (port 80, or 443 for https, when the URI has none).
fn connect_authority(uri: &Uri) -> Arc<str> {
    let default = if uri.scheme_str() == Some("https") {
        443
    } else {
        80
    };
    match uri.authority() {
        Some(a) if a.port().is_some() => a.as_str().into(),
        Some(a) => format!("{}:{default}", a.host()).into(),
        None => "".into(),
    }
}

/// Whether a property is a variable of `<http>` endpoints' URI templates.
fn is_template_variable(name: &str) -> bool {
    name.starts_with("uri.var.") || name.starts_with("query.param.")
}

/// The scheme of `text` when it has one (RFC 3986: a letter, then letters, digits, `+`, `-` or
/// `.`, then `:`) that is not http or https. `host:8080/x` is read as a host and port without a
/// scheme (an error), not as the scheme `host`.
fn other_scheme(text: &str) -> Option<&str> {
    let (scheme, rest) = text.split_once(':')?;
    let mut chars = scheme.chars();
    let well_formed = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    let http = scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https");
    let port = rest.starts_with(|c: char| c.is_ascii_digit());
    (well_formed && !http && !port).then_some(scheme)
}

/// An endpoint URI Sluice can send to (http or https, with a host, no user info), and its Host
/// header; else the severity and what is wrong.
fn http_uri(text: &str) -> Result<(Uri, HeaderValue), (Severity, String)> {
    let bad = |why: String| (Severity::Error, format!("endpoint uri '{text}' {why}"));
    // The scheme decides first: `jms:/Queue?...`, `vfs:file:///...` and `mailto:a@b` are valid URIs
    // of transports Sluice does not have (Synapse picks the transport by the scheme), not malformed
    // HTTP ones.
    if let Some(scheme) = other_scheme(text) {
        let msg = format!("'{scheme}:' endpoints are not supported; only http and https");
        return Err((Severity::Unsupported, msg));
    }
    let uri: Uri = text
        .parse()
        .map_err(|e| bad(format!("is not valid: {e}")))?;
    match uri.scheme_str() {
        Some("http" | "https") => {}
        Some(other) => {
            let msg = format!("'{other}:' endpoints are not supported; only http and https");
            return Err((Severity::Unsupported, msg));
        }
        None => return Err(bad("has no scheme".into())),
    }
    let authority = uri.authority().ok_or_else(|| bad("has no host".into()))?;
    if authority.as_str().contains('@') {
        let msg = format!("endpoint uri '{text}': user info in the address is not supported");
        return Err((Severity::Unsupported, msg));
    }
    let host = HeaderValue::from_str(authority.as_str()).map_err(|_| bad("has no host".into()))?;
    Ok((uri, host))
}

impl Compiler<'_> {
    pub(crate) fn endpoint_ref(&mut self, e: &cfg::EndpointRef) -> Option<Arc<EndpointPlan>> {
        match e {
            cfg::EndpointRef::Key { key, loc } => self.named_endpoint(key, Some(loc)),
            cfg::EndpointRef::Inline(ep) => self.endpoint(ep, None),
        }
    }
    pub(crate) fn named_endpoint(
        &mut self,
        key: &str,
        from: Option<&Location>,
    ) -> Option<Arc<EndpointPlan>> {
        if let Some(r) = self.ep_cache.get(key) {
            return self.dependency(r.clone(), "endpoint", key, from);
        }
        let Some(ep) = self.endpoints.get(key).copied() else {
            let loc = from?;
            self.left_for_run("endpoint", key, loc, "endpoint").ok()?;
            return Some(Arc::new(EndpointPlan::missing(key)));
        };
        if !self.in_progress.insert(format!("endpoint:{key}")) {
            if let Some(loc) = from {
                self.report(
                    Severity::Error,
                    loc,
                    "endpoint",
                    format!("endpoint '{key}' refers to itself (cycle)"),
                );
            }
            return None;
        }
        let override_uri = self.opts.endpoint_overrides.get(key).cloned();
        let (plan, failed) = self.nested(format!("endpoint {key}"), |c| {
            c.endpoint(ep, override_uri.as_deref())
        });
        self.in_progress.remove(&format!("endpoint:{key}"));
        let r = match plan {
            Some(p) if !failed => Ok(p),
            _ => Err(format!("endpoint '{key}' is not deployed")),
        };
        self.ep_cache.insert(key.to_owned(), r.clone());
        self.dependency(r, "endpoint", key, from)
    }
    /// `<endpoint template="..">`: the template's endpoint with the arguments put in, compiled as
    /// if written there, under the name of the endpoint that uses it.
    pub(crate) fn template_endpoint(
        &mut self,
        ep: &cfg::Endpoint,
        template: &str,
        args: &[(String, String)],
        override_uri: Option<&str>,
    ) -> Option<Arc<EndpointPlan>> {
        let Some(t) = self.endpoint_templates.get(template).copied() else {
            self.report(
                Severity::Error,
                &ep.loc,
                "endpoint",
                format!("no endpoint template named '{template}'"),
            );
            return None;
        };
        let guard = format!("endpoint-template:{template}");
        if !self.in_progress.insert(guard.clone()) {
            self.report(
                Severity::Error,
                &ep.loc,
                "endpoint",
                format!("endpoint template '{template}' uses itself (cycle)"),
            );
            return None;
        }
        let user = match &ep.name {
            Some(n) => format!("endpoint {n}"),
            None => format!("the endpoint at {}", ep.loc),
        };
        // `None` when anything in it was reported as an error or unsupported.
        let made = cfg::parse::instantiate_endpoint(t, args, &user, self.diags);
        let plan = made.and_then(|mut inner| {
            inner.name = ep.name.clone().or(inner.name);
            self.endpoint(&inner, override_uri)
        });
        self.in_progress.remove(&guard);
        if plan.is_none() {
            self.failed = true;
        }
        plan
    }
    pub(crate) fn endpoint(
        &mut self,
        ep: &cfg::Endpoint,
        override_uri: Option<&str>,
    ) -> Option<Arc<EndpointPlan>> {
        let name = ep
            .name
            .clone()
            .unwrap_or_else(|| format!("anonymous endpoint at {}", ep.loc));
        // Endpoint properties: an <http> endpoint's template variables, the weights a load-balance
        // endpoint reads, and the rest set on each message sent.
        let template_kind =
            matches!(&ep.kind, cfg::EndpointKind::Address(a) if a.kind == cfg::AddressKind::Http);
        let mut template_vars = Vec::new();
        let mut props = Vec::new();
        for p in &ep.properties {
            if template_kind && p.expression.is_none() && is_template_variable(&p.name) {
                template_vars.push((p.name.clone(), p.value.clone()));
            } else if LOADBALANCE_PROPERTIES.contains(&p.name.as_str()) {
                // Read by the load-balance endpoint around it (or ignored, as in Synapse).
            } else {
                let value = match &p.expression {
                    Some(e) => crate::plan::Value::Expr(self.expr(e, "property")?),
                    None => crate::plan::Value::Literal(p.value.clone()),
                };
                props.push(EndpointProp {
                    name: p.name.clone(),
                    value,
                    scope: p.scope,
                });
            }
        }
        if !props.is_empty() && !matches!(&ep.kind, cfg::EndpointKind::Address(_)) {
            self.report(
                Severity::Warning,
                &ep.loc,
                "property",
                "the properties of a failover, load-balance or recipient-list endpoint are not applied yet (its children's are); ignored",
            );
        }
        let a = match &ep.kind {
            cfg::EndpointKind::Address(a) => a,
            cfg::EndpointKind::Rejected => {
                self.failed = true;
                return None;
            }
            // The definition itself: a failure seen through one reference suspends it for all.
            cfg::EndpointKind::Indirect(key) => return self.named_endpoint(key, Some(&ep.loc)),
            cfg::EndpointKind::Template { template, args } => {
                return self.template_endpoint(ep, template, args, override_uri);
            }
            cfg::EndpointKind::Failover { dynamic, children } => {
                let kind = GroupKind::Failover { dynamic: *dynamic };
                return self.group(ep, name, kind, children, override_uri);
            }
            cfg::EndpointKind::RecipientList { children, list } => {
                let listed;
                let children = match list {
                    None => children,
                    Some(l) => {
                        listed = self.listed_recipients(ep, l)?;
                        &listed
                    }
                };
                return self.group(ep, name, GroupKind::RecipientList, children, override_uri);
            }
            cfg::EndpointKind::Loadbalance {
                failover,
                children,
                weighted: false,
            } => {
                let kind = GroupKind::RoundRobin {
                    failover: *failover,
                };
                return self.group(ep, name, kind, children, override_uri);
            }
            cfg::EndpointKind::Loadbalance {
                failover,
                children,
                weighted: true,
            } => {
                let weights = self.weights(children)?;
                let kind = GroupKind::RoundRobin {
                    failover: *failover,
                };
                let g = self.group(ep, name.clone(), kind, children, override_uri)?;
                let plans = g.group.as_ref()?.children.clone();
                return Some(Arc::new(EndpointPlan::weighted(
                    name, *failover, plans, &weights,
                )));
            }
        };
        let plan = self.address(ep, a, name, template_vars, override_uri)?;
        if props.is_empty() {
            return Some(plan);
        }
        let mut plan = Arc::try_unwrap(plan).ok()?;
        plan.properties = props.into();
        Some(Arc::new(plan))
    }

    /// The `<http>` endpoint's URI template, parsed (`None` for the other kinds); `Err` when it
    /// is reported.
    fn uri_template(
        &mut self,
        a: &cfg::AddressEndpoint,
        uri_text: &str,
    ) -> Result<Option<Arc<UriTemplate>>, ()> {
        if a.kind != cfg::AddressKind::Http {
            return Ok(None);
        }
        // As Synapse: a template that starts with a variable holds a whole URL, expanded with
        // reserved characters kept.
        // Other operators there are kept (Synapse would turn `{/x}` into the invalid `{+/x}`).
        let text = match uri_text.strip_prefix('{') {
            Some(rest) if !rest.starts_with(['+', '#', '.', '/', ';', '?', '&']) => {
                format!("{{+{rest}")
            }
            _ => uri_text.to_owned(),
        };
        match UriTemplate::parse(&text) {
            Ok(t) => Ok(Some(Arc::new(t))),
            Err(e) => {
                self.report(Severity::Error, &a.uri_loc, "http", e);
                Err(())
            }
        }
    }

    /// The timeout and what to do on it, read as Synapse 3.0.1's `EndpointDefinitionFactory`
    /// reads them: a duration of 0 or less sets no timeout of the endpoint's own (the default
    /// applies), except that a `<responseAction>` (fault or discard) without a positive duration
    /// means 30 s. Without a `<responseAction>`, Synapse drops the late response and the
    /// transport's timeout faults the call; Sluice answers in every case (see docs), so a missing
    /// one reads as fault. (WSO2 MI reads 0 as a timeout of 0 ms that its timeout handler applies
    /// at its next sweep, up to 15 s later: an accident of its code, not followed here.)
    fn timeout(&mut self, a: &cfg::AddressEndpoint) -> (Option<Duration>, cfg::TimeoutAction) {
        const WITH_ACTION_MS: u64 = 30_000;
        let Some(t) = &a.timeout else {
            return (None, cfg::TimeoutAction::Fault);
        };
        let own = t
            .duration_ms
            .and_then(|ms| u64::try_from(ms).ok())
            .filter(|&ms| ms > 0);
        let ms = match (own, t.action) {
            (Some(ms), _) => Some(ms),
            (None, Some(cfg::TimeoutAction::Fault | cfg::TimeoutAction::Discard)) => {
                Some(WITH_ACTION_MS)
            }
            (None, _) => None,
        };
        (
            ms.map(Duration::from_millis),
            t.action.unwrap_or(cfg::TimeoutAction::Fault),
        )
    }

    /// An address, `<http>` or default endpoint.
    /// A `<wsdl>` endpoint's address: known now (the WSDL written inside, or a `file:`), or read
    /// when Sluice starts (`Err`, with what will read it). `None` when reported.
    fn wsdl_address(
        &mut self,
        a: &cfg::AddressEndpoint,
        w: &cfg::WsdlPort,
    ) -> Option<Result<String, Arc<LazyWsdl>>> {
        let text = match (&w.inline, a.uri.as_str()) {
            (Some(t), _) => t.clone(),
            (None, u) if u.starts_with("http://") || u.starts_with("https://") => {
                let lazy = Arc::new(LazyWsdl {
                    uri: u.to_owned(),
                    service: w.service.clone(),
                    port: w.port.clone(),
                    address: std::sync::OnceLock::new(),
                });
                self.wsdls.push(lazy.clone());
                return Some(Err(lazy));
            }
            (None, u) => {
                let read = cfg::load::file_url_path(self.home, u)
                    .ok_or_else(|| {
                        format!("a WSDL at '{u}' is not read (only http, https and file: URLs)")
                    })
                    .and_then(|p| {
                        std::fs::read_to_string(&p)
                            .map_err(|e| format!("cannot read the WSDL {}: {e}", p.display()))
                    });
                match read {
                    Ok(t) => t,
                    Err(why) => {
                        self.report(Severity::Error, &a.uri_loc, "wsdl", why);
                        return None;
                    }
                }
            }
        };
        match cfg::wsdl::address(&text, w.service.as_deref(), w.port.as_deref()) {
            Ok(at) => Some(Ok(at)),
            Err(why) => {
                self.report(Severity::Error, &a.uri_loc, "wsdl", why);
                None
            }
        }
    }

    fn address(
        &mut self,
        ep: &cfg::Endpoint,
        a: &cfg::AddressEndpoint,
        name: String,
        template_vars: Vec<(String, String)>,
        override_uri: Option<&str>,
    ) -> Option<Arc<EndpointPlan>> {
        let mut lazy = None;
        let from_wsdl = match (&a.wsdl, override_uri) {
            (Some(w), None) => match self.wsdl_address(a, w)? {
                Ok(at) => Some(at),
                Err(l) => {
                    lazy = Some(l);
                    None
                }
            },
            _ => None,
        };
        let uri_text = override_uri.or(from_wsdl.as_deref()).unwrap_or(&a.uri);
        let template = self.uri_template(a, uri_text).ok()?;
        // What can be checked at load: the address, or the template with no variable set when its
        // scheme and host are written out before any variable (each message's URI is checked again
        // when expanded).
        let checked = match &template {
            Some(t) => t.expand(|_| None),
            None => uri_text.to_owned(),
        };
        let to_address = a.kind == cfg::AddressKind::Default;
        if to_address && override_uri.is_some() {
            self.report(
                Severity::Error,
                &ep.loc,
                "default",
                format!("--endpoint {name}=...: {name} is a default endpoint, which sends to each message's To address"),
            );
            return None;
        }
        let fixed_host = !to_address
            && template.as_ref().is_none_or(|t| {
                let head = t.literal_head();
                let whole = head.len() == uri_text.len();
                head.find("://")
                    .is_some_and(|i| whole || head[i + 3..].contains(['/', '?']))
            });
        let (uri, host) = if !fixed_host {
            (
                Uri::from_static("http://uri-template.invalid/"),
                HeaderValue::from_static("uri-template.invalid"),
            )
        } else {
            match http_uri(&checked) {
                Ok(u) => u,
                Err((sev, msg)) => {
                    self.report(sev, &a.uri_loc, a.kind.element(), msg);
                    return None;
                }
            }
        };
        let format = Format::named(a.format.as_deref());
        if format.is_none() {
            self.report(
                Severity::Unsupported,
                &a.uri_loc,
                "address",
                format!(
                    "format '{}' is not supported yet (message conversion)",
                    a.format.as_deref().unwrap_or_default()
                ),
            );
        }
        let (timeout, timeout_action) = self.timeout(a);
        let mut plan = EndpointPlan::new(
            name,
            uri,
            host,
            timeout,
            timeout_action,
            SuspendPolicy::new(&a.suspend_on_failure, &a.mark_for_suspension),
        );
        plan.retry = a.retry.clone();
        plan.address = match (template, lazy) {
            (_, Some(w)) => Address::Wsdl(w),
            (None, None) if a.kind == cfg::AddressKind::Member => Address::Member(uri_text.into()),
            (Some(t), None) => Address::Template(t),
            (None, None) if to_address => Address::To,
            (None, None) => Address::Fixed,
        };
        plan.template_vars = template_vars;
        if let Some(d) = a.timeout.as_ref().and_then(|t| t.dynamic.as_ref()) {
            plan.timeout_expr = Some(Arc::new(self.expr(d, "duration")?));
        }
        plan.method = a.method.as_deref().and_then(|m| m.parse().ok());
        plan.format = format.unwrap_or(Format::AsIs);
        Some(Arc::new(plan))
    }
    /// A failover or load-balance endpoint; None (all problems reported) when a child is not
    /// deployable.
    /// Each child's `loadbalance.weight` property (default 1), as Synapse's `WeightedRoundRobin`
    /// reads it: a whole number above zero, else the endpoint does not deploy.
    fn weights(&mut self, children: &[cfg::Endpoint]) -> Option<Vec<u32>> {
        let mut weights = Vec::with_capacity(children.len());
        for c in children {
            let Some(p) = c.properties.iter().find(|p| p.name == "loadbalance.weight") else {
                weights.push(1);
                continue;
            };
            match p.value.trim().parse::<u32>() {
                Ok(w) if w > 0 => weights.push(w),
                _ => {
                    self.report(
                        Severity::Error,
                        &p.loc,
                        "property",
                        format!(
                            "loadbalance.weight '{}' is not a whole number above zero",
                            p.value
                        ),
                    );
                    return None;
                }
            }
        }
        Some(weights)
    }

    /// `<endpoints value>`: its comma-separated addresses, as address endpoints. An expression
    /// must be known at load (a literal, `get-property('registry', KEY)`); one computed per
    /// message is unsupported.
    fn listed_recipients(
        &mut self,
        ep: &cfg::Endpoint,
        list: &cfg::ValueSrc,
    ) -> Option<Vec<cfg::Endpoint>> {
        let text = match list {
            cfg::ValueSrc::Literal(t) => t.clone(),
            cfg::ValueSrc::Expr(e) => match self.expr(e, "endpoints")? {
                sluice_expr::Expr::Literal(t) => t,
                _ => {
                    let why = "a recipient list computed per message is not supported yet (only one known at load: a literal, get-property('registry', KEY))";
                    self.report(Severity::Unsupported, &e.loc, "endpoints", why);
                    self.failed = true;
                    return None;
                }
            },
        };
        let children: Vec<cfg::Endpoint> = text
            .split(',')
            .map(str::trim)
            .filter(|u| !u.is_empty())
            .map(|uri| cfg::Endpoint {
                name: None,
                loc: ep.loc.clone(),
                kind: cfg::EndpointKind::Address(Box::new(cfg::AddressEndpoint::plain(
                    uri.to_owned(),
                    ep.loc.clone(),
                ))),
                properties: Vec::new(),
            })
            .collect();
        if children.is_empty() {
            self.report(
                Severity::Error,
                &ep.loc,
                "endpoints",
                "the recipient list is empty",
            );
            self.failed = true;
            return None;
        }
        Some(children)
    }

    pub(crate) fn group(
        &mut self,
        ep: &cfg::Endpoint,
        name: String,
        kind: GroupKind,
        children: &[cfg::Endpoint],
        override_uri: Option<&str>,
    ) -> Option<Arc<EndpointPlan>> {
        if override_uri.is_some() {
            self.report(
                Severity::Error,
                &ep.loc,
                "endpoint",
                format!("--endpoint {name}=...: {name} is a failover or load-balance endpoint, which has no address; point its children instead"),
            );
            return None;
        }
        let plans: Vec<Option<Arc<EndpointPlan>>> =
            children.iter().map(|c| self.endpoint(c, None)).collect();
        let plans: Option<Vec<Arc<EndpointPlan>>> = plans.into_iter().collect();
        Some(Arc::new(EndpointPlan::group(name, kind, plans?)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn address(name: &str) -> EndpointPlan {
        EndpointPlan::new(
            name.into(),
            Uri::from_static("http://h/x"),
            HeaderValue::from_static("h"),
            None,
            cfg::TimeoutAction::Fault,
            SuspendPolicy::new(&Default::default(), &Default::default()),
        )
    }

    fn leaf(name: &str) -> Arc<EndpointPlan> {
        Arc::new(address(name))
    }

    fn picks(ep: &Arc<EndpointPlan>, n: usize, tried: &[usize]) -> Vec<String> {
        let now = Instant::now();
        (0..n)
            .map(|_| ep.pick(now, tried).map_or("-".into(), |l| l.name.clone()))
            .collect()
    }

    #[test]
    fn groups_pick_ready_children_by_their_rule() {
        let (a, b, c) = (leaf("a"), leaf("b"), leaf("c"));
        let group = |kind, children: &[&Arc<EndpointPlan>]| {
            Arc::new(EndpointPlan::group(
                "g".into(),
                kind,
                children.iter().map(|c| (*c).clone()).collect(),
            ))
        };
        let dynamic = group(GroupKind::Failover { dynamic: true }, &[&a, &b, &c]);
        let fixed = group(GroupKind::Failover { dynamic: false }, &[&a, &b, &c]);
        let rr = group(GroupKind::RoundRobin { failover: true }, &[&a, &b, &c]);
        assert_eq!(picks(&dynamic, 2, &[]), ["a", "a"]);
        assert_eq!(picks(&rr, 4, &[]), ["a", "b", "c", "a"]);
        // This message already failed on a: the next child, whatever the rule.
        assert_eq!(picks(&dynamic, 1, &[a.id()]), ["b"]);
        assert_eq!(picks(&rr, 3, &[b.id()]), ["c", "a", "c"]);
        // a suspended: dynamic and static failover both move on; when a is back, dynamic returns
        // to it and static stays where it went.
        let now = Instant::now();
        a.health.on_fault(101503, now);
        assert_eq!(picks(&dynamic, 1, &[]), ["b"]);
        assert_eq!(picks(&fixed, 2, &[]), ["b", "b"]);
        a.health.on_success();
        assert_eq!(picks(&dynamic, 1, &[]), ["a"]);
        assert_eq!(picks(&fixed, 1, &[]), ["b"]);
        // Nested: a round robin whose second child is a failover; nothing left gives None.
        let nested = group(GroupKind::RoundRobin { failover: true }, &[&c, &dynamic]);
        assert_eq!(picks(&nested, 2, &[]), ["c", "a"]);
        assert_eq!(picks(&nested, 1, &[a.id(), b.id(), c.id()]), ["-"]);
        assert!(dynamic.fails_over() && rr.fails_over() && !a.fails_over());
        let no = group(GroupKind::RoundRobin { failover: false }, &[&a]);
        assert!(!no.fails_over());
    }

    /// Synapse's WeightedRoundRobin: each child its weight's turns in a row; a child that is not
    /// ready is passed over with its turns; none ready gives none.
    #[test]
    fn weighted_round_robin_gives_each_child_its_turns_in_a_row() {
        let (a, b, c) = (leaf("a"), leaf("b"), leaf("c"));
        let wrr = |weights: &[u32]| {
            Arc::new(EndpointPlan::weighted(
                "w".into(),
                true,
                vec![a.clone(), b.clone(), c.clone()],
                weights,
            ))
        };
        let g = wrr(&[3, 1, 2]);
        assert_eq!(
            picks(&g, 12, &[]),
            ["a", "a", "a", "b", "c", "c", "a", "a", "a", "b", "c", "c"]
        );
        let g = wrr(&[2, 2, 1]);
        assert_eq!(picks(&g, 3, &[b.id()]), ["a", "a", "c"]);
        assert_eq!(picks(&g, 3, &[b.id()]), ["a", "a", "c"]);
        let big = wrr(&[1_000_000, 1, u32::MAX]);
        assert_eq!(picks(&big, 1, &[a.id(), b.id(), c.id()]), ["-"]);
        assert_eq!(picks(&big, 1, &[a.id(), c.id()]), ["b"]);
    }

    /// The weights come from the children's `loadbalance.weight` properties, which draw no
    /// warning; a weight that is no whole number above zero stops the endpoint.
    #[test]
    fn weights_are_read_from_the_children() {
        let load = |w: &str| {
            let text = format!(
                r#"<definitions xmlns="http://ws.apache.org/ns/synapse"><proxy name="P"><target><endpoint name="W">
<loadbalance algorithm="org.apache.synapse.endpoints.algorithms.WeightedRoundRobin">
<endpoint name="a"><address uri="http://a/"/><property name="loadbalance.weight" value="{w}"/></endpoint>
<endpoint name="b"><address uri="http://b/"/></endpoint>
</loadbalance></endpoint></target></proxy></definitions>"#
            );
            let (cfg, mut diags) = sluice_config::load_str("t.xml", &text);
            let plan = crate::compile(&cfg, &crate::CompileOptions::default(), &mut diags);
            (plan, diags)
        };
        let (plan, d) = load("2");
        assert!(d.items.is_empty(), "{:?}", d.items);
        let w = plan.proxies["P"].target.clone().unwrap();
        assert_eq!(picks(&w, 6, &[]), ["a", "a", "b", "a", "a", "b"]);
        for bad in ["0", "-1", "two"] {
            let (plan, d) = load(bad);
            assert!(plan.proxies.is_empty(), "{bad}");
            assert!(
                d.items[0].message.contains("loadbalance.weight"),
                "{:?}",
                d.items
            );
        }
    }

    #[test]
    fn endpoint_uris_need_http_a_host_and_no_user_info() {
        assert!(http_uri("http://h:81/x?y").is_ok());
        let (https, host) = http_uri("https://h/x").unwrap();
        assert_eq!(&*connect_authority(&https), "h:443");
        assert_eq!(host, "h");
        let (http, _) = http_uri("http://h/x").unwrap();
        assert_eq!(&*connect_authority(&http), "h:80");
        assert_eq!(
            &*connect_authority(&http_uri("https://h:8243/x").unwrap().0),
            "h:8243"
        );
        for (bad, sev) in [
            ("http://u:p@h/x", Severity::Unsupported),
            ("https://u@h/x", Severity::Unsupported),
            ("ftp://h/x", Severity::Unsupported),
            // Parsed as HTTP URIs they were malformed (an error); their scheme says first.
            ("jms:/SimpleStockQuoteService?transport.jms.ConnectionFactoryJNDIName=QueueConnectionFactory&java.naming.provider.url=tcp://localhost:61616", Severity::Unsupported),
            ("vfs:file:///home/user/test/out", Severity::Unsupported),
            ("vfs:sftp://user:pass@host/home/user/out", Severity::Unsupported),
            ("mailto:user@host", Severity::Unsupported),
            ("localhost:8280/x", Severity::Error),
            ("/x", Severity::Error),
            ("http:///x", Severity::Error),
        ] {
            assert_eq!(
                http_uri(bad).map(|_| ()).map_err(|e| e.0),
                Err(sev),
                "{bad}"
            );
        }
    }

    /// The timeout of each proxy's target endpoint, compiled from `timeouts` (one `<timeout>`
    /// body each), with the diagnostics.
    fn compiled_timeouts(timeouts: &[&str]) -> (Vec<Option<Duration>>, sluice_config::Diagnostics) {
        let mut text = String::from(r#"<definitions xmlns="http://ws.apache.org/ns/synapse">"#);
        for (i, t) in timeouts.iter().enumerate() {
            text.push_str(&format!(
                r#"<proxy name="P{i}"><target><endpoint><address uri="http://h/x"><timeout>{t}</timeout></address></endpoint><inSequence/></target></proxy>"#
            ));
        }
        text.push_str("</definitions>");
        let (cfg, mut diags) = sluice_config::load_str("t.xml", &text);
        let plan = crate::compile(&cfg, &crate::CompileOptions::default(), &mut diags);
        let found = (0..timeouts.len())
            .map(|i| {
                plan.proxies[&format!("P{i}")]
                    .target
                    .as_ref()
                    .unwrap()
                    .timeout
            })
            .collect();
        (found, diags)
    }

    #[test]
    fn timeouts_of_zero_or_less_are_the_default_as_in_synapse() {
        let (t, diags) = compiled_timeouts(&[
            "<duration>0</duration>",
            "<duration>-1</duration>",
            "<duration>0</duration><responseAction>fault</responseAction>",
            "<responseAction>discard</responseAction>",
            "<duration>2500</duration><responseAction>fault</responseAction>",
            "<duration>7</duration>",
        ]);
        assert!(diags.items.is_empty(), "{diags:?}");
        let ms = |v: u64| Some(Duration::from_millis(v));
        assert_eq!(t, [None, None, ms(30_000), ms(30_000), ms(2500), ms(7)]);
    }

    #[test]
    fn retry_config_decides_which_failures_go_to_another_child() {
        let mut p = address("e");
        assert!(p.retry_allows(101503));
        p.retry.disabled = vec![101504];
        assert!(p.retry_allows(101503) && !p.retry_allows(101504));
        p.retry.enabled = vec![101503];
        assert!(p.retry_allows(101503) && !p.retry_allows(101505));
    }

    #[test]
    fn rest_postfixes_join_addresses_as_synapse_joins_them() {
        assert_eq!(joined("http://h/svc", "/a/b?x=1"), "http://h/svc/a/b?x=1");
        assert_eq!(joined("http://h/svc/", "/a"), "http://h/svc/a");
        assert_eq!(joined("http://h/svc", "a"), "http://h/svc/a");
        assert_eq!(joined("http://h/svc/", "a"), "http://h/svc/a");
        assert_eq!(joined("http://h/svc/", "?x=1"), "http://h/svc?x=1");
        assert_eq!(joined("http://h/svc", "/"), "http://h/svc/");
    }
}
