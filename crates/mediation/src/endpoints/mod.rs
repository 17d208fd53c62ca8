//! Endpoints: the compiled kinds (address, http, wsdl-less default, load-balance and failover
//! groups), how a message picks one, and how each compiles from the configuration model.

use crate::health::{EndpointHealth, Readiness, SuspendPolicy};
use crate::message::Message;
use crate::uritemplate::UriTemplate;
use crate::{Error, ErrorKind};
use http::{HeaderValue, Method, Uri};
use sluice_config::{self as cfg, FaultVersion, Location, Severity};
use sluice_expr::BodyNeed;
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
    /// `<enableAddressing>`: the WS-Addressing headers a SOAP request leaves with
    /// ([`EndpointPlan::add_addressing`]).
    pub addressing: Option<cfg::WsaVersion>,
    /// `<enableSec>`: the request secured and the response checked as Rampart's initiator does
    /// (the body is then read whole both ways).
    pub security: Option<Arc<sluice_security::Initiator>>,
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
    /// An address no message can be sent to (an empty `uri`, as MI deploys it): each send fails
    /// with this reason.
    Invalid(Arc<str>),
    /// A `<wsdl>` endpoint whose WSDL is read when Sluice starts: the address it gives.
    Wsdl(Arc<LazyWsdl>),
    /// A load-balance `<member>`: `scheme://host:port` and the path (and query) of the message's
    /// To address, else of the request.
    Member(Arc<str>),
    /// `<endpoint key-expression>`: the named endpoint each message's key names
    /// ([`EndpointPlan::by_key`]).
    ByKey(Arc<ByKey>),
}

/// Every named endpoint that compiled, by name: filled when the configuration is compiled.
pub type EndpointsByName =
    Arc<std::sync::OnceLock<std::collections::HashMap<String, Arc<EndpointPlan>>>>;

/// Synapse's ResolvingEndpoint: the key expression, and where the names are looked up.
#[derive(Debug)]
pub struct ByKey {
    pub key: sluice_expr::Expr,
    pub all: EndpointsByName,
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
    /// `<session>`: which child each client stays on.
    pub sessions: Option<session::Sessions>,
    /// A recipient list's `<endpoints value="{...}">`: the addresses each message gives
    /// (comma-separated); `children` is then empty.
    pub listed_per_message: Option<sluice_expr::Expr>,
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
                sessions: None,
                listed_per_message: None,
            }),
            format: Format::AsIs,
            properties: Arc::new([]),
            timeout_expr: None,
            addressing: None,
            security: None,
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

    /// A recipient list's children known at load, each of which a `send` to it gives a copy of
    /// the message (`None` for a list each message gives: [`EndpointPlan::recipients_per_message`]).
    pub fn recipients(&self) -> Option<&[Arc<EndpointPlan>]> {
        match &self.group {
            Some(g) if g.kind == GroupKind::RecipientList && g.listed_per_message.is_none() => {
                Some(&g.children)
            }
            _ => None,
        }
    }

    /// A recipient list whose addresses each message gives: the expression that gives them.
    pub fn recipients_per_message(&self) -> Option<&sluice_expr::Expr> {
        self.group.as_ref()?.listed_per_message.as_ref()
    }

    /// An address endpoint with no settings of its own, for an address a message gives (a
    /// recipient list's); `Err` when it is no http(s) URL.
    pub fn for_url(owner: &str, url: &str) -> Result<Arc<EndpointPlan>, Error> {
        let (uri, host) = http_uri(url).map_err(|(_, why)| {
            Error::new(
                ErrorKind::Mediation,
                format!("{owner}: the recipient '{url}': {why}"),
            )
        })?;
        Ok(Arc::new(EndpointPlan::new(
            format!("recipient of {owner}"),
            uri,
            host,
            None,
            cfg::TimeoutAction::Fault,
            SuspendPolicy::never(),
        )))
    }

    /// The address endpoint `msg` goes to first: a load balancer with sessions sends a client
    /// that has one to its child (when it is ready), and binds a new client session to the child
    /// chosen; otherwise [`EndpointPlan::pick`].
    pub fn pick_for(self: &Arc<Self>, msg: &Message, now: Instant) -> Option<Arc<Self>> {
        let Some((g, s)) = self
            .group
            .as_ref()
            .and_then(|g| g.sessions.as_ref().map(|s| (g, s)))
        else {
            return self.pick(now, &[]);
        };
        let ids = s.ids_of(msg);
        if let Some(leaf) = s
            .child_of(&ids, now)
            .and_then(|i| g.children.get(i))
            .and_then(|c| c.pick(now, &[]))
        {
            return Some(leaf);
        }
        let leaf = self.pick(now, &[])?;
        if s.bound_by_request() {
            if let (Some(id), Some(i)) = (ids.into_iter().next(), self.child_index(leaf.id())) {
                s.bind(id, i, now);
            }
        }
        Some(leaf)
    }

    /// After the address endpoint `leaf` under this one answered with `headers`: an `http`
    /// session binds the cookies the response set to the child `leaf` is under.
    pub fn answered(&self, leaf: &EndpointPlan, headers: &http::HeaderMap) {
        let Some(s) = self.group.as_ref().and_then(|g| g.sessions.as_ref()) else {
            return;
        };
        if let Some(i) = self.child_index(leaf.id()) {
            s.after_response(headers, i, Instant::now());
        }
    }

    /// Which child the address endpoint `id` is (or is under).
    fn child_index(&self, id: usize) -> Option<usize> {
        self.group
            .as_ref()?
            .children
            .iter()
            .position(|c| c.id() == id || c.contains(id))
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
            addressing: None,
            security: None,
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

    /// An `<endpoint key-expression>`: the endpoint this message's key names (`None` for any
    /// other endpoint). A key naming nothing fails the send, with Synapse's words.
    pub fn by_key(&self, msg: &Message) -> Option<Result<Arc<EndpointPlan>, Error>> {
        let Address::ByKey(k) = &self.address else {
            return None;
        };
        let doc = crate::exec::DocCache::new();
        let name = match crate::exec::eval_expr(&k.key, msg, &doc) {
            Ok(n) => n,
            Err(e) => return Some(Err(e)),
        };
        let found = k.all.get().and_then(|all| all.get(name.trim())).cloned();
        Some(found.ok_or_else(|| {
            Error::new(
                ErrorKind::EndpointNotFound,
                format!("Couldn't find the endpoint with the key : {}", name.trim()),
            )
        }))
    }

    /// What the key of an `<endpoint key-expression>` reads of the body.
    pub fn by_key_need(&self) -> BodyNeed {
        match &self.address {
            Address::ByKey(k) => k.key.body_need(),
            _ => BodyNeed::None,
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
            Address::Invalid(why) => return Err(Error::new(ErrorKind::NoRoute, why.to_string())),
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
            // Resolved before it is sent (EndpointPlan::by_key).
            Address::ByKey(_) => {
                return Err(Error::new(
                    ErrorKind::Internal,
                    format!("endpoint {}: its key was not resolved", self.name),
                ))
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
            addressing: self.addressing,
            security: self.security.clone(),
        }))
    }

    /// The timeout for `msg`: the expression's milliseconds when the endpoint computes it per
    /// message (a value that is no positive number leaves the endpoint's own, with a warning),
    /// else the endpoint's own.
    #[inline]
    pub fn timeout_for(&self, msg: &Message) -> Option<Duration> {
        match &self.timeout_expr {
            None => self.timeout,
            Some(e) => self.timeout_computed(e, msg),
        }
    }

    #[cold]
    #[inline(never)]
    fn timeout_computed(&self, e: &sluice_expr::Expr, msg: &Message) -> Option<Duration> {
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

    /// With `<enableAddressing>`: the WS-Addressing headers Axis2's addressing module writes for
    /// Synapse, added to a SOAP request in memory: `To` (this endpoint's address), `ReplyTo`
    /// (anonymous; the submission version only), `MessageID` and `Action` (the SOAPAction). A
    /// message that is no SOAP envelope is left as it is.
    #[inline]
    pub fn add_addressing(&self, msg: &mut Message) -> Result<(), Error> {
        match self.addressing {
            None => Ok(()),
            Some(version) => self.addressed(version, msg),
        }
    }

    #[cold]
    #[inline(never)]
    fn addressed(&self, version: cfg::WsaVersion, msg: &mut Message) -> Result<(), Error> {
        let crate::message::Body::Bytes(b) = &msg.body else {
            return Ok(());
        };
        let what = "enableAddressing";
        let xml = |e: sluice_xml::XmlError| crate::exec::xml_error(what, e);
        let mut d = sluice_xml::Document::parse(b).map_err(xml)?;
        let Some(header) = d.ensure_soap_header().map_err(xml)? else {
            return Ok(());
        };
        let ns = wsa_namespace(version);
        // A message sent again (failover to the next child) is addressed to that child alone.
        let old: Vec<sluice_xml::NodeId> = d
            .soap_header()
            .map(|h| {
                h.child_elements()
                    .filter(|c| {
                        c.namespace_uri() == Some(ns)
                            && matches!(c.name(), "To" | "ReplyTo" | "MessageID" | "Action")
                    })
                    .map(|c| c.id())
                    .collect()
            })
            .unwrap_or_default();
        for id in old {
            d.remove(id).map_err(xml)?;
        }
        let text = |t: &str| {
            let mut out = String::new();
            crate::fault::escape(t, &mut out);
            out
        };
        let mut blocks = format!(
            "<wsa:To xmlns:wsa=\"{ns}\">{}</wsa:To>",
            text(&self.uri.to_string())
        );
        if version == cfg::WsaVersion::Submission {
            blocks.push_str(&format!("<wsa:ReplyTo xmlns:wsa=\"{ns}\"><wsa:Address>{ns}/role/anonymous</wsa:Address></wsa:ReplyTo>"));
        }
        blocks.push_str(&format!(
            "<wsa:MessageID xmlns:wsa=\"{ns}\">{}</wsa:MessageID>",
            text(msg.message_id())
        ));
        if let Some(action) = msg.soap_action() {
            blocks.push_str(&format!(
                "<wsa:Action xmlns:wsa=\"{ns}\">{}</wsa:Action>",
                text(action)
            ));
        }
        let fragment = sluice_xml::Fragment::parse(&blocks).map_err(xml)?;
        d.insert(header, &fragment, sluice_xml::Placement::LastChild)
            .map_err(xml)?;
        msg.body = crate::message::Body::Bytes(crate::exec::message_bytes(&d, what)?.into());
        msg.headers.remove(http::header::CONTENT_LENGTH);
        Ok(())
    }

    /// With `<enableAddressing>`: the answer without the WS-Addressing header blocks of the
    /// endpoint's version, as Axis2's addressing module takes them in for Synapse (the client
    /// then gets the rest of the Header). `None`: nothing to take out (no such endpoint, no SOAP
    /// envelope, no such block, or a body that is no XML: it goes on as it came).
    pub fn without_addressing(&self, body: &[u8]) -> Option<Vec<u8>> {
        let ns = wsa_namespace(self.addressing?);
        let mut d = sluice_xml::parse_untrusted(body, &Default::default()).ok()?;
        let blocks: Vec<sluice_xml::NodeId> = (d.soap_header()?.child_elements())
            .filter(|c| c.namespace_uri() == Some(ns))
            .map(|c| c.id())
            .collect();
        if blocks.is_empty() {
            return None;
        }
        for id in blocks {
            d.remove(id).ok()?;
        }
        d.to_bytes().ok()
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

mod compile;
pub mod session;

/// The namespace of a WS-Addressing version.
fn wsa_namespace(version: cfg::WsaVersion) -> &'static str {
    match version {
        cfg::WsaVersion::Final => crate::addressing::NAMESPACES[0],
        cfg::WsaVersion::Submission => crate::addressing::NAMESPACES[1],
    }
}

#[cfg(test)]
mod tests;
