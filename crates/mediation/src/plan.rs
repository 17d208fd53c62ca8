//! The executable plan: the configuration compiled once at load. Expressions and regexes are compiled,
//! keys resolved, values checked; what each flow needs of the body is decided here.

use crate::api::{ApiPlan, Pattern, ResourcePlan, Template};
use crate::fault::{self, Detail, FaultParts};
use crate::health::{EndpointHealth, Readiness, SuspendPolicy};
use crate::message::Message;
use crate::uritemplate::UriTemplate;
use crate::{Error, ErrorKind};
use bytes::Bytes;
use http::{HeaderName, HeaderValue, Method, Uri};
use sluice_config::{self as cfg, Diagnostics, FaultVersion, Location, Severity};
use sluice_expr::{BodyNeed, Expr, ExprError, ExprErrorKind, FullRegex};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Everything deployed, immutable once built; shared by all requests.
#[derive(Debug, Default)]
pub struct Plan {
    pub proxies: HashMap<String, Arc<ProxyPlan>>,
    /// REST APIs, each with its resources (run as services: a [`ProxyPlan`] without target).
    pub apis: Vec<Arc<ApiPlan>>,
    /// Proxies found but not deployed, with the reason (for the 404 page and the start-up report).
    pub not_deployed: Vec<(String, String)>,
    /// Synapse's `main` sequence, when the configuration defines one: the service for a request no
    /// proxy or API takes, its in- and out-sequence both (`<in>` and `<out>` tell them apart).
    pub main: Option<Arc<ProxyPlan>>,
}

#[derive(Debug)]
pub struct ProxyPlan {
    pub name: Arc<str>,
    pub loc: Location,
    pub started: bool,
    pub in_seq: Arc<SeqPlan>,
    pub out_seq: Option<Arc<SeqPlan>>,
    pub fault_seq: Option<Arc<SeqPlan>>,
    pub target: Option<Arc<EndpointPlan>>,
    pub wsdl: Option<WsdlPlan>,
    /// A REST API's resource: an in-sequence that ends without sending anything is answered 202, as
    /// Synapse acknowledges it.
    pub api_resource: bool,
    /// The listeners that serve it: a proxy's `transports` (`http`, `https`); both for everything
    /// else.
    pub on_http: bool,
    pub on_https: bool,
}

impl ProxyPlan {
    /// A service with empty sequences (tests and fuzzing).
    pub fn empty(name: &str) -> ProxyPlan {
        ProxyPlan {
            name: name.into(),
            loc: Location {
                file: "test".into(),
                line: 0,
                col: 0,
            },
            started: true,
            in_seq: SeqPlan::empty(),
            out_seq: None,
            fault_seq: None,
            target: None,
            wsdl: None,
            api_resource: true,
            on_http: true,
            on_https: true,
        }
    }

    /// What the request path must read of the body before the in-sequence runs (what something in
    /// the in-sequence reads), for a request with these headers ([`SeqPlan::need_for`]). Decided at
    /// load. A fault sequence that reads the body reads it when it runs, from the stream the failed
    /// call did not touch.
    pub fn request_body_need(&self, headers: &http::HeaderMap) -> BodyNeed {
        self.in_seq.need_for(headers)
    }
    pub fn response_body_need(&self, headers: &http::HeaderMap) -> BodyNeed {
        self.out_seq
            .as_ref()
            .map_or(BodyNeed::None, |s| s.need_for(headers))
    }
}

/// A WSDL with its `soap:address` locations cut out: `parts` joined by the service URL.
#[derive(Debug, Clone)]
pub struct WsdlPlan {
    pub parts: Vec<String>,
}

impl WsdlPlan {
    pub fn render(&self, service_url: &str) -> String {
        self.parts.join(service_url)
    }
}

#[derive(Debug)]
pub struct SeqPlan {
    pub name: Option<String>,
    pub steps: Steps,
    /// What the steps read of an XML (or unknown) body.
    pub body_need: BodyNeed,
    /// What they read of a JSON body: a JSON `messageType` needs an XML body read to convert it,
    /// not a JSON one, which goes out as it is.
    pub body_need_json: BodyNeed,
}

impl SeqPlan {
    fn new(name: Option<String>, steps: Steps) -> SeqPlan {
        SeqPlan {
            name,
            body_need: need_of(&steps, false),
            body_need_json: need_of(&steps, true),
            steps,
        }
    }

    /// What the steps read of a message's body, JSON (by its Content-Type) or not.
    pub fn need(&self, json: bool) -> BodyNeed {
        if json {
            self.body_need_json
        } else {
            self.body_need
        }
    }

    /// [`SeqPlan::need`] for a message with these headers: they are looked at only when the two
    /// needs differ (a sequence that may set a JSON `messageType`).
    pub fn need_for(&self, headers: &http::HeaderMap) -> BodyNeed {
        if self.body_need == self.body_need_json {
            self.body_need
        } else {
            self.need(crate::json::is_json_headers(headers))
        }
    }

    /// A sequence with no mediators (an absent in-sequence).
    pub fn empty() -> Arc<SeqPlan> {
        Arc::new(SeqPlan::new(None, Steps::default()))
    }

    /// Whether every expression in this sequence (and the sequences it calls) that reads the body is
    /// decided by `head`, the start of the message: then the transport need not read further.
    pub fn decided_by_head(&self, head: &[u8]) -> bool {
        body_exprs_all(&self.steps, &mut |e| e.decided_by(head))
    }
}

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
}

/// An address endpoint's `format`, as far as Sluice applies it: the REST postfix of an API request
/// is appended for REST requests (as is), always (pox), or never (SOAP).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    AsIs,
    Soap,
    Pox,
}

#[derive(Debug)]
pub enum Address {
    /// `uri`, the same for every message.
    Fixed,
    /// An `<http>` endpoint's `uri-template`, expanded from each message's properties.
    Template(Arc<UriTemplate>),
    /// A `<default>` endpoint: each message's To address.
    To,
}

#[derive(Debug)]
pub struct Group {
    pub kind: GroupKind,
    pub children: Vec<Arc<EndpointPlan>>,
    /// Round robin: where the next turn starts; static failover: the child in use.
    cursor: AtomicUsize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupKind {
    /// `dynamic`: always the first ready child; static: the one in use while it is ready.
    Failover { dynamic: bool },
    /// Round robin over the ready children; `failover`: a failed send goes to the next one.
    RoundRobin { failover: bool },
}

impl EndpointPlan {
    /// A failover or load-balance endpoint over `children`.
    pub fn group(name: String, kind: GroupKind, children: Vec<Arc<EndpointPlan>>) -> Self {
        let what = match kind {
            GroupKind::Failover { .. } => "failover",
            GroupKind::RoundRobin { .. } => "loadbalance",
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
            }),
            format: Format::AsIs,
        }
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
            Format::Soap => None,
            Format::Pox => Some(p),
            Format::AsIs => rest.then_some(p),
        }
    }

    /// The endpoint a message goes to: this one; for an `<http>` endpoint one with the URI its
    /// template gives from the message's `uri.var.*` and `query.param.*` properties; for a
    /// `<default>` one the message's To address. Those share this one's suspension state.
    pub fn for_message(self: &Arc<Self>, msg: &Message) -> Result<Arc<Self>, Error> {
        let text = match &self.address {
            Address::Template(t) => self.expand(t, msg),
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
        }))
    }

    pub fn describe(&self) -> &str {
        &self.label
    }
}

#[derive(Debug)]
pub enum Value {
    Literal(String),
    Expr(Expr),
}

impl Value {
    fn body_need(&self) -> BodyNeed {
        match self {
            Value::Literal(_) => BodyNeed::None,
            Value::Expr(e) => e.body_need(),
        }
    }
}

/// A list of steps, shared so that a continuation after `call` can hold on to where it resumes.
pub type Steps = Arc<[Step]>;

#[derive(Debug)]
pub enum Step {
    Send(Option<Arc<EndpointPlan>>),
    /// `call`: to this endpoint, or (None) to the message's `To` (else the proxy's target); mediation
    /// goes on with the response after this step.
    CallEndpoint(Option<Arc<EndpointPlan>>),
    Respond,
    /// `<loopback>`: on to the out-sequence as a response.
    Loopback,
    /// `<call-template>`: the template's steps with its parameters' values (`$func:`).
    Template(Arc<TemplateCall>),
    /// `<clone>`: a copy of the message for each target; mediation of the original ends.
    Clone(Arc<ClonePlan>),
    /// `<aggregate>`: gathers the copies' responses; the one that completes it goes on as the
    /// merged message, made from the first one gathered.
    Aggregate(Arc<AggregatePlan>),
    /// `<iterate>`: a message for each element the expression selects, through the target.
    Iterate(Arc<IteratePlan>),
    /// `<foreach>`: each selected node in turn through the sequence, the results in their place.
    Foreach(Arc<ForeachPlan>),
    /// Leaves the template run last (after a `call` inside it, the continuation's end of it).
    LeaveTemplate,
    /// Before a `call` whose response goes into a property: the message is kept aside
    /// ([`crate::Message::save`]).
    SaveMessage,
    /// A `call`'s `<source>`: the payload made from it, without reading the message's.
    CallSource(CallSourcePlan),
    /// After a `call` with a property target: the response payload goes into the property (XML,
    /// JSON or text, as it came; empty for no body), then, when `restore`, the message kept aside
    /// is the message again.
    CallTarget {
        property: String,
        restore: bool,
    },
    Drop,
    Log(LogPlan),
    SetProperty {
        scope: cfg::Scope,
        name: String,
        ty: cfg::PropertyType,
        value: Value,
    },
    RemoveProperty {
        scope: cfg::Scope,
        name: String,
    },
    SetHeader {
        name: HeaderName,
        value: Value,
    },
    RemoveHeader(HeaderName),
    SetTo(Value),
    RemoveTo,
    /// `<header name="Action">`: the WS-Addressing action, which is also the SOAP action.
    SetAction(Value),
    RemoveAction,
    Filter {
        cond: Cond,
        then: Steps,
        otherwise: Steps,
    },
    Switch {
        source: Expr,
        cases: Vec<(FullRegex, Steps)>,
        default: Steps,
    },
    Call(Arc<SeqPlan>),
    MakeFault(FaultPlan),
    Xslt(XsltPlan),
    PayloadFactory(PayloadPlan),
    Enrich(EnrichPlan),
    Validate(ValidatePlan),
    /// A SOAP header block `<prefix:local xmlns:prefix="ns">value</prefix:local>` added to the
    /// Header (created when absent), as Synapse's header mediator does.
    SetSoapHeader {
        ns: String,
        prefix: String,
        local: String,
        value: Value,
    },
    /// Every SOAP header block with this namespace and local name is removed.
    RemoveSoapHeader {
        ns: String,
        local: String,
    },
}

/// `<clone>`'s targets, each a sequence, else an endpoint, else a `to` address.
#[derive(Debug)]
pub struct ClonePlan {
    pub targets: Vec<CloneTargetPlan>,
}

#[derive(Debug)]
pub struct CloneTargetPlan {
    pub sequence: Option<Arc<SeqPlan>>,
    pub endpoint: Option<Arc<EndpointPlan>>,
    /// The copy's To address (where a send without an endpoint goes) and action.
    pub to: Option<String>,
    pub soap_action: Option<String>,
}

/// `<foreach>`, as Synapse's first form runs it: the selected nodes are taken out of the message
/// (their parent is the first one's), each becomes in turn the payload of the message for the
/// sequence, and the payload it leaves is added to that parent's end. `FOREACH_COUNTER` (with the
/// `id_` prefix) counts them; `FOREACH_ORIGINAL_MESSAGE` holds the envelope from before.
#[derive(Debug)]
pub struct ForeachPlan {
    /// `id_`, or empty.
    pub prefix: String,
    pub expression: Expr,
    pub sequence: Arc<SeqPlan>,
    pub continue_on_failure: bool,
}

/// A `call`'s `<source>`: where the payload comes from, and the Content-Type it goes out with.
#[derive(Debug)]
pub struct CallSourcePlan {
    pub source: EnrichSourcePlan,
    pub content_type: Option<String>,
}

/// `<iterate>`: what it splits on, and where each part goes.
#[derive(Debug)]
pub struct IteratePlan {
    pub expression: Expr,
    pub target: CloneTargetPlan,
}

/// `<aggregate>`: how many responses complete it (`max`; none or -1: as many as the clone made),
/// what of each is gathered (`expression`, as XML), the element they are gathered in (the XML of
/// the property `enclosing`, else the Body itself), and what runs on the merged message.
#[derive(Debug)]
pub struct AggregatePlan {
    pub max: Option<usize>,
    /// `messageCount min`: it completes at min or max, whichever comes first.
    pub min: Option<usize>,
    pub expression: Expr,
    pub enclosing: Option<String>,
    pub on_complete: Steps,
}

/// A `<call-template>`: the template's compiled sequence, and each parameter's value (an
/// argument, else the default; a parameter with neither is not set). `missing`: a mandatory
/// parameter the call does not pass, an error when the call runs (as in WSO2 MI).
#[derive(Debug)]
pub struct TemplateCall {
    pub name: String,
    pub template: Arc<SeqPlan>,
    pub params: Vec<(String, Value)>,
    pub missing: Option<String>,
}

/// `payloadFactory` (media-type xml, json or text): the format cut at its `$n` placeholders at load.
#[derive(Debug)]
pub struct PayloadPlan {
    pub segments: Vec<Segment>,
    pub args: Vec<PayloadArg>,
    /// The format's root is a SOAP Envelope: the result replaces the whole message.
    pub envelope: bool,
    /// What the format is and the result becomes (`media-type`).
    pub media: cfg::PayloadMedia,
}

#[derive(Debug, PartialEq, Eq)]
pub enum Segment {
    Text(String),
    /// Zero-based argument index.
    Arg(usize),
}

#[derive(Debug)]
pub enum PayloadArg {
    /// A literal, already escaped (or kept as is when it is XML or JSON), as Synapse prepares it.
    Ready(String),
    /// `literal="true"`: the value goes in as a string, never as XML or JSON.
    Expr { expr: Expr, literal: bool },
}

#[derive(Debug)]
pub enum EnrichSourcePlan {
    Custom(Expr),
    Envelope,
    Body,
    Property(String),
    /// Inline or local-entry content: XML (checked well-formed at load) or text.
    Xml(String),
    Text(String),
}

impl EnrichSourcePlan {
    /// What reading the source takes of the body.
    fn body_need(&self) -> BodyNeed {
        match self {
            EnrichSourcePlan::Custom(x) => x.body_need(),
            EnrichSourcePlan::Envelope | EnrichSourcePlan::Body => BodyNeed::Full,
            _ => BodyNeed::None,
        }
    }

    /// [`body_exprs_all`] for the source: `f` holds for its expression if it reads the body;
    /// `false` for a source that is the whole body.
    fn body_exprs_all(&self, f: &mut dyn FnMut(&Expr) -> bool) -> bool {
        match self {
            EnrichSourcePlan::Custom(x) => x.body_need() == BodyNeed::None || f(x),
            EnrichSourcePlan::Envelope | EnrichSourcePlan::Body => false,
            _ => true,
        }
    }
}

#[derive(Debug)]
pub enum EnrichTargetPlan {
    Custom(Expr),
    Envelope,
    Body,
    Property(String),
}

#[derive(Debug)]
pub struct EnrichPlan {
    pub source: EnrichSourcePlan,
    pub target: EnrichTargetPlan,
    pub action: cfg::EnrichAction,
}

#[derive(Debug)]
pub struct ValidatePlan {
    pub schema: Arc<sluice_xml::Schema>,
    pub key: String,
    /// Evaluated with the SOAP Envelope as context node; `None`: the first element of the Body.
    pub source: Option<Expr>,
    pub on_fail: Steps,
}

/// A stylesheet compiled once: by libxslt, and for the streaming fast path when it is in that subset.
#[derive(Debug)]
pub struct Sheet {
    pub xslt: sluice_xml::Stylesheet,
    pub stream: Option<sluice_stx::StreamSheet>,
}

#[derive(Debug)]
pub struct XsltPlan {
    pub sheet: Arc<Sheet>,
    pub key: String,
    /// Node transformed (`None`: the first child of the SOAP Body, or the root of a plain XML message).
    pub source: Option<Expr>,
    pub params: Vec<(String, Value)>,
    pub fast: bool,
}

#[derive(Debug)]
pub enum Cond {
    Regex {
        source: Expr,
        regex: FullRegex,
    },
    XPath(Expr),
    /// `<out>` (true) or `<in>`: whether the message is a response (the response path, or
    /// `RESPONSE=true`), as Synapse's `isResponse`.
    Response(bool),
}

impl Cond {
    /// The expression the condition evaluates, if any.
    fn source(&self) -> Option<&Expr> {
        match self {
            Cond::Regex { source, .. } | Cond::XPath(source) => Some(source),
            Cond::Response(_) => None,
        }
    }
}

#[derive(Debug)]
pub struct LogPlan {
    pub level: cfg::LogLevel,
    pub category: cfg::LogCategory,
    pub separator: String,
    pub properties: Vec<(String, Value)>,
}

#[derive(Debug)]
pub struct FaultPlan {
    pub version: FaultVersion,
    pub response: bool,
    /// The whole fault when nothing in it is computed per message.
    pub fixed: Option<Bytes>,
    pub code: Option<(String, String)>,
    pub reason: Value,
    pub role: Option<String>,
    pub node: Option<String>,
    pub detail: Option<DetailPlan>,
}

#[derive(Debug)]
pub enum DetailPlan {
    Value(Value),
    Xml(String),
}

impl FaultPlan {
    pub fn render(&self, reason: &str, detail: Option<&str>) -> Bytes {
        let detail = match (&self.detail, detail) {
            (Some(DetailPlan::Xml(x)), _) => Some(Detail::Xml(x)),
            (Some(DetailPlan::Value(_)), Some(d)) => Some(Detail::Text(d)),
            _ => None,
        };
        fault::build(
            self.version,
            &FaultParts {
                code: self.code.as_ref().map(|(a, b)| (a.as_str(), b.as_str())),
                reason,
                role: self.role.as_deref(),
                node: self.node.as_deref(),
                detail,
            },
        )
    }
}

/// Options of the compile step that do not come from the files.
#[derive(Debug, Default, Clone)]
pub struct CompileOptions {
    /// Named endpoint -> replacement address URI (`--endpoint NAME=URI`).
    pub endpoint_overrides: HashMap<String, String>,
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

/// An endpoint URI Sluice can send to (http or https, with a host, no user info), and its Host
/// header; else the severity and what is wrong.
fn http_uri(text: &str) -> Result<(Uri, HeaderValue), (Severity, String)> {
    let bad = |why: String| (Severity::Error, format!("endpoint uri '{text}' {why}"));
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

/// Compiles the model into a plan. Artifacts with errors or unsupported features are left out and
/// reported.
pub fn compile(config: &cfg::Config, opts: &CompileOptions, diags: &mut Diagnostics) -> Plan {
    let mut c = Compiler {
        opts,
        diags,
        sequences: config
            .sequences
            .iter()
            .map(|s| (s.name.as_str(), s))
            .collect(),
        endpoints: config
            .endpoints
            .iter()
            .filter_map(|e| e.name.as_deref().map(|n| (n, e)))
            .collect(),
        local_entries: config
            .local_entries
            .iter()
            .map(|l| (l.key.as_str(), l))
            .collect(),
        seq_cache: HashMap::new(),
        templates: config
            .templates
            .iter()
            .map(|t| (t.name.as_str(), t))
            .collect(),
        endpoint_templates: config
            .endpoint_templates
            .iter()
            .map(|t| (t.name.as_str(), t))
            .collect(),
        xslt_cache: HashMap::new(),
        schema_cache: HashMap::new(),
        resources: config
            .resources
            .iter()
            .map(|r| (normalize_registry_key(&r.key), r))
            .collect(),
        ep_cache: HashMap::new(),
        in_progress: HashSet::new(),
        artifact: String::new(),
        failed: false,
    };
    for name in opts.endpoint_overrides.keys() {
        if !c.endpoints.contains_key(name.as_str()) {
            let loc = Location {
                file: "--endpoint".into(),
                line: 0,
                col: 0,
            };
            c.diags.push(
                Severity::Error,
                loc,
                "",
                format!("--endpoint {name}=...: no endpoint named '{name}' is loaded"),
                None,
            );
        }
    }
    // Named sequences, sequence templates and endpoints are compiled on first use and also on their
    // own, so that errors in unused ones are reported too (as MI refuses to deploy a template with
    // errors). An endpoint template is read only with a use's values, as in MI.
    for s in &config.sequences {
        c.named_sequence(&s.name, None);
    }
    for t in &config.templates {
        c.template(t, None, "call-template");
    }
    for e in &config.endpoints {
        if let Some(n) = &e.name {
            c.named_endpoint(n, None);
        }
    }
    let mut plan = Plan::default();
    for p in &config.proxies {
        match c.proxy(p) {
            Ok(pp) => {
                plan.proxies.insert(p.name.clone(), Arc::new(pp));
            }
            Err(reason) => plan.not_deployed.push((p.name.clone(), reason)),
        }
    }
    for a in &config.apis {
        let (r, failed) = c.nested(format!("api {}", a.name), |c| c.api(a));
        if let Some(other) = r
            .as_ref()
            .and_then(|api| plan.apis.iter().find(|o| o.context == api.context))
        {
            c.diags.push(
                Severity::Error,
                a.loc.clone(),
                "api",
                format!(
                    "API {} has the context {} of API {}: a request could go to either",
                    a.name, other.context, other.name
                ),
                Some(&format!("api {}", a.name)),
            );
            plan.not_deployed.push((
                a.name.clone(),
                format!("its context is API {}'s", other.name),
            ));
            continue;
        }
        match r {
            Some(api) if !failed => plan.apis.push(Arc::new(api)),
            _ => plan.not_deployed.push((
                a.name.clone(),
                format!(
                    "API {} has errors or unsupported features (see above)",
                    a.name
                ),
            )),
        }
    }
    if let Some(main) = config.sequences.iter().find(|s| s.name == "main") {
        // As a service whose in- and out-sequence are both `main`.
        let main_ref = Some(cfg::SequenceRef::Key {
            key: "main".to_owned(),
            loc: main.sequence.loc.clone(),
        });
        let (r, failed) = c.nested("sequence main".to_owned(), |c| {
            c.service(
                "main".into(),
                &main.sequence.loc,
                [&main_ref, &main_ref, &None],
            )
        });
        match r {
            Some(m) if !failed => plan.main = Some(Arc::new(m)),
            _ => plan.not_deployed.push((
                "main".to_owned(),
                "the main sequence has errors or unsupported features (see above)".to_owned(),
            )),
        }
    }
    plan
}

type Failure = String;

struct Compiler<'a> {
    opts: &'a CompileOptions,
    diags: &'a mut Diagnostics,
    sequences: HashMap<&'a str, &'a cfg::NamedSequence>,
    endpoints: HashMap<&'a str, &'a cfg::Endpoint>,
    local_entries: HashMap<&'a str, &'a cfg::LocalEntry>,
    seq_cache: HashMap<String, Result<Arc<SeqPlan>, Failure>>,
    templates: HashMap<&'a str, &'a cfg::Template>,
    endpoint_templates: HashMap<&'a str, &'a cfg::EndpointTemplate>,
    /// Stylesheets by key, compiled once and shared by every mediator that names them.
    xslt_cache: HashMap<String, Option<Arc<Sheet>>>,
    /// XML Schemas by key, compiled once.
    schema_cache: HashMap<String, Option<Arc<sluice_xml::Schema>>>,
    resources: HashMap<String, &'a cfg::Resource>,
    ep_cache: HashMap<String, Result<Arc<EndpointPlan>, Failure>>,
    in_progress: HashSet<String>,
    /// The artifact being compiled, for diagnostics.
    artifact: String,
    /// Set when the current artifact cannot be deployed.
    failed: bool,
}

impl<'a> Compiler<'a> {
    fn report(&mut self, sev: Severity, loc: &Location, element: &str, msg: impl Into<String>) {
        if sev >= Severity::Unsupported {
            self.failed = true;
        }
        let artifact = if self.artifact.is_empty() {
            None
        } else {
            Some(self.artifact.as_str())
        };
        let artifact = artifact.map(str::to_owned);
        self.diags
            .push(sev, loc.clone(), element, msg, artifact.as_deref());
    }

    /// Runs `f` as the compile of a separate artifact, restoring the current one's state afterwards.
    fn nested<T>(&mut self, artifact: String, f: impl FnOnce(&mut Self) -> T) -> (T, bool) {
        let saved = (
            std::mem::replace(&mut self.artifact, artifact),
            std::mem::replace(&mut self.failed, false),
        );
        let r = f(self);
        let failed = self.failed;
        (self.artifact, self.failed) = saved;
        (r, failed)
    }

    fn proxy(&mut self, p: &cfg::Proxy) -> Result<ProxyPlan, Failure> {
        let (r, failed) = self.nested(format!("proxy {}", p.name), |c| c.proxy_inner(p));
        match r {
            Some(pp) if !failed => Ok(pp),
            _ => Err(format!(
                "proxy {} has errors or unsupported features (see above)",
                p.name
            )),
        }
    }

    fn proxy_inner(&mut self, p: &cfg::Proxy) -> Option<ProxyPlan> {
        // Problems found while parsing were reported then; they still keep the proxy from deploying.
        self.failed |= p.rejected;
        if let Some(loc) = &p.security {
            self.report(
                Severity::Unsupported,
                loc,
                "enableSec",
                "WS-Security (enableSec / policy) is not supported yet",
            );
        }
        let on_http = p.transports.iter().any(|t| t == "http");
        let on_https = p.transports.iter().any(|t| t == "https");
        if !on_http && !on_https {
            self.report(
                Severity::Unsupported,
                &p.loc,
                "proxy",
                format!(
                    "transports '{}': only http and https are served",
                    p.transports.join(" ")
                ),
            );
        }
        let t = &p.target;
        let service = self.service(
            p.name.as_str().into(),
            &p.loc,
            [&t.in_sequence, &t.out_sequence, &t.fault_sequence],
        );
        // Compiled (and their problems reported) even when a sequence failed.
        let target = t.endpoint.as_ref().map(|e| self.endpoint_ref(e));
        let wsdl = p.publish_wsdl.as_ref().and_then(|w| self.wsdl(w));
        Some(ProxyPlan {
            started: p.start_on_load,
            target: target.flatten(),
            wsdl,
            on_http,
            on_https,
            ..service?
        })
    }

    /// A service's plan from its in-, out- and fault sequences (a proxy's target, an API resource):
    /// started, with no target, WSDL or API; `None` when the in-sequence does not compile.
    fn service(
        &mut self,
        name: Arc<str>,
        loc: &Location,
        [in_seq, out_seq, fault_seq]: [&Option<cfg::SequenceRef>; 3],
    ) -> Option<ProxyPlan> {
        let in_seq = match in_seq {
            Some(s) => self.sequence_ref(s, "inSequence"),
            None => Some(SeqPlan::empty()),
        };
        let out_seq = out_seq
            .as_ref()
            .map(|s| self.sequence_ref(s, "outSequence"));
        let fault_seq = self.fault_sequence(fault_seq, loc);
        Some(ProxyPlan {
            name,
            loc: loc.clone(),
            started: true,
            in_seq: in_seq?,
            out_seq: out_seq.flatten(),
            fault_seq: fault_seq.flatten(),
            target: None,
            wsdl: None,
            api_resource: false,
            on_http: true,
            on_https: true,
        })
    }

    fn api(&mut self, a: &cfg::Api) -> Option<ApiPlan> {
        self.failed |= a.rejected;
        let name: Arc<str> = a.name.as_str().into();
        let mut resources = Vec::new();
        for r in &a.resources {
            let mut methods = Vec::new();
            for m in &r.methods {
                match m.as_str() {
                    "GET" | "POST" | "PUT" | "DELETE" | "OPTIONS" | "HEAD" | "PATCH" => {
                        methods.push(m.parse().unwrap_or(http::Method::GET));
                    }
                    other => self.report(
                        Severity::Error,
                        &r.loc,
                        "resource",
                        format!("unknown method '{other}' (GET, POST, PUT, DELETE, OPTIONS, HEAD or PATCH)"),
                    ),
                }
            }
            let pattern = match &r.pattern {
                cfg::ResourcePattern::Any => Pattern::Any,
                cfg::ResourcePattern::UrlMapping(m) => Pattern::mapping(m),
                cfg::ResourcePattern::UriTemplate(t) => match Template::parse(t) {
                    Ok(t) => Pattern::Template(t),
                    Err(e) => {
                        self.report(Severity::Error, &r.loc, "resource", e);
                        continue;
                    }
                },
            };
            let service = ProxyPlan {
                api_resource: true,
                ..self.service(
                    name.clone(),
                    &r.loc,
                    [&r.in_sequence, &r.out_sequence, &r.fault_sequence],
                )?
            };
            resources.push(ResourcePlan {
                methods,
                pattern,
                service: Arc::new(service),
            });
        }
        let context = match a.context.trim_end_matches('/') {
            "" => "/".to_owned(),
            c => c.to_owned(),
        };
        Some(ApiPlan {
            name,
            context,
            resources,
        })
    }

    /// A fault sequence as given, else Synapse's default: the sequence named "fault". That one
    /// always exists in Synapse (a built-in when the configuration defines none), so naming it
    /// without defining it means Sluice's own fault answer, as no fault sequence does.
    fn fault_sequence(
        &mut self,
        s: &Option<cfg::SequenceRef>,
        loc: &Location,
    ) -> Option<Option<Arc<SeqPlan>>> {
        match s {
            Some(cfg::SequenceRef::Key { key, .. })
                if key == "fault" && !self.sequences.contains_key("fault") =>
            {
                None
            }
            Some(s) => Some(self.sequence_ref(s, "faultSequence")),
            None if self.sequences.contains_key("fault") => {
                Some(self.named_sequence("fault", Some(loc)))
            }
            None => None,
        }
    }

    fn wsdl(&mut self, w: &cfg::PublishWsdl) -> Option<WsdlPlan> {
        let text = match &w.source {
            cfg::WsdlSource::Inline(t) => t.clone(),
            cfg::WsdlSource::Uri(u) => {
                self.report(Severity::Warning, &w.loc, "publishWSDL", format!("WSDL from '{u}' is not fetched (no network at load); ?wsdl will answer 404"));
                return None;
            }
            cfg::WsdlSource::Key(k) => match self.local_entries.get(k.as_str()).map(|l| &l.value) {
                Some(cfg::LocalEntryValue::Xml { text, .. }) => text.clone(),
                Some(_) => {
                    self.report(
                        Severity::Warning,
                        &w.loc,
                        "publishWSDL",
                        format!("local entry '{k}' is not inline XML; ?wsdl will answer 404"),
                    );
                    return None;
                }
                None => {
                    self.report(
                        Severity::Error,
                        &w.loc,
                        "publishWSDL",
                        format!("no local entry '{k}' for publishWSDL"),
                    );
                    return None;
                }
            },
        };
        Some(wsdl_template(&text))
    }

    fn sequence_ref(&mut self, s: &cfg::SequenceRef, what: &str) -> Option<Arc<SeqPlan>> {
        match s {
            cfg::SequenceRef::Key { key, loc } => {
                let _ = what;
                self.named_sequence(key, Some(loc))
            }
            cfg::SequenceRef::Inline(seq) => {
                let steps = self.steps(&seq.mediators);
                Some(Arc::new(SeqPlan::new(None, steps)))
            }
        }
    }

    /// A named sequence, compiled once. `from` is where it is referenced (None when compiled on its own).
    fn named_sequence(&mut self, key: &str, from: Option<&Location>) -> Option<Arc<SeqPlan>> {
        let Some(seq) = self.sequences.get(key).copied() else {
            if let Some(loc) = from {
                self.report(
                    Severity::Error,
                    loc,
                    "sequence",
                    format!("no sequence named '{key}'"),
                );
            }
            return None;
        };
        self.compile_once(
            "sequence",
            key,
            key.to_owned(),
            &seq.sequence,
            seq.rejected,
            from,
            "sequence",
            "refers to itself",
        )
    }

    /// A named sequence's or a template's steps, compiled once and kept under `cache_key`
    /// (a failure too), with a cycle reported at `from` as `element`.
    #[allow(clippy::too_many_arguments)]
    fn compile_once(
        &mut self,
        kind: &str,
        name: &str,
        cache_key: String,
        seq: &cfg::Sequence,
        rejected: bool,
        from: Option<&Location>,
        element: &str,
        cycle: &str,
    ) -> Option<Arc<SeqPlan>> {
        if let Some(r) = self.seq_cache.get(&cache_key) {
            return self.dependency(r.clone(), kind, name, from);
        }
        if !self.in_progress.insert(cache_key.clone()) {
            if let Some(loc) = from {
                self.report(
                    Severity::Error,
                    loc,
                    element,
                    format!("{kind} '{name}' {cycle} (cycle)"),
                );
            }
            return None;
        }
        let (steps, failed) = self.nested(format!("{kind} {name}"), |c| {
            c.failed |= rejected;
            c.steps(&seq.mediators)
        });
        self.in_progress.remove(&cache_key);
        if seq.on_error.is_some() {
            // Run-time mediation errors inside go to the proxy's fault sequence for now.
            self.diags.push(
                Severity::Note,
                seq.loc.clone(),
                kind,
                "onError is not used yet: errors go to the proxy's fault sequence",
                Some(&format!("{kind} {name}")),
            );
        }
        let r = if failed {
            Err(format!("{kind} '{name}' is not deployed"))
        } else {
            Ok(Arc::new(SeqPlan::new(Some(cache_key.clone()), steps)))
        };
        self.seq_cache.insert(cache_key, r.clone());
        self.dependency(r, kind, name, from)
    }

    /// A sequence template's steps, compiled once (cached with the sequences under `template:NAME`);
    /// a cycle is reported at `from` as `element`.
    fn template(
        &mut self,
        t: &cfg::Template,
        from: Option<&Location>,
        element: &str,
    ) -> Option<Arc<SeqPlan>> {
        self.compile_once(
            "template",
            &t.name,
            format!("template:{}", t.name),
            &t.sequence,
            t.rejected,
            from,
            element,
            "calls itself",
        )
    }

    /// A clone or iterate target: its sequence, or else its endpoint (Synapse runs the sequence
    /// when there is one, and the endpoint only when there is none).
    fn clone_target(&mut self, t: &cfg::CloneTarget) -> Option<CloneTargetPlan> {
        let sequence = match &t.sequence {
            Some(s) => Some(self.sequence_ref(s, "target")?),
            None => None,
        };
        let endpoint = match (&t.endpoint, &sequence) {
            (Some(_), Some(_)) => {
                self.report(
                    Severity::Warning,
                    &t.loc,
                    "target",
                    "a target with a sequence runs the sequence only; its endpoint is not used",
                );
                None
            }
            (Some(e), None) => Some(self.endpoint_ref(e)?),
            (None, _) => None,
        };
        Some(CloneTargetPlan {
            sequence,
            endpoint,
            to: t.to.clone(),
            soap_action: t.soap_action.clone(),
        })
    }

    /// A `<call-template>`: the template compiled once (cached with the sequences, under
    /// `template:NAME`), each argument checked against its parameters: an unknown one is ignored
    /// and a missing mandatory one fails the call when it runs (a warning each). An unknown
    /// template is an error.
    fn call_template(
        &mut self,
        target: &str,
        args: &[(String, cfg::ValueSrc)],
        loc: &Location,
        el: &str,
    ) -> Option<Arc<TemplateCall>> {
        let Some(t) = self.templates.get(target).copied() else {
            self.report(
                Severity::Error,
                loc,
                el,
                format!("no template named '{target}'"),
            );
            return None;
        };
        // As WSO2 MI: an argument the template does not declare is ignored; a mandatory parameter
        // the call does not pass fails the call when it runs (a warning here).
        for (name, _) in args {
            if !t.params.iter().any(|p| &p.name == name) {
                self.report(
                    Severity::Warning,
                    loc,
                    el,
                    format!("template '{target}' has no parameter '{name}'; ignored"),
                );
            }
        }
        let mut params = Vec::new();
        let mut missing = None;
        for p in &t.params {
            match args.iter().find(|(n, _)| *n == p.name) {
                Some((_, v)) => params.push((p.name.clone(), self.value(v, el)?)),
                None if p.mandatory => {
                    self.report(
                        Severity::Warning,
                        loc,
                        el,
                        format!(
                            "template '{target}' needs its parameter '{}': the call fails when it runs",
                            p.name
                        ),
                    );
                    missing.get_or_insert_with(|| p.name.clone());
                }
                None => {
                    if let Some(d) = &p.default {
                        params.push((p.name.clone(), Value::Literal(d.clone())));
                    }
                }
            }
        }
        let template = self.template(t, Some(loc), el)?;
        Some(Arc::new(TemplateCall {
            name: target.to_owned(),
            template,
            params,
            missing,
        }))
    }

    fn dependency<T>(
        &mut self,
        r: Result<T, Failure>,
        kind: &str,
        key: &str,
        from: Option<&Location>,
    ) -> Option<T> {
        match r {
            Ok(v) => Some(v),
            Err(reason) => {
                if let Some(loc) = from {
                    self.report(
                        Severity::Unsupported,
                        loc,
                        kind,
                        format!("depends on {kind} '{key}', which is not deployed ({reason})"),
                    );
                }
                None
            }
        }
    }

    fn endpoint_ref(&mut self, e: &cfg::EndpointRef) -> Option<Arc<EndpointPlan>> {
        match e {
            cfg::EndpointRef::Key { key, loc } => self.named_endpoint(key, Some(loc)),
            cfg::EndpointRef::Inline(ep) => self.endpoint(ep, None),
        }
    }

    fn named_endpoint(&mut self, key: &str, from: Option<&Location>) -> Option<Arc<EndpointPlan>> {
        if let Some(r) = self.ep_cache.get(key) {
            return self.dependency(r.clone(), "endpoint", key, from);
        }
        let Some(ep) = self.endpoints.get(key).copied() else {
            if let Some(loc) = from {
                self.report(
                    Severity::Error,
                    loc,
                    "endpoint",
                    format!("no endpoint named '{key}'"),
                );
            }
            return None;
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
    fn template_endpoint(
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

    fn endpoint(
        &mut self,
        ep: &cfg::Endpoint,
        override_uri: Option<&str>,
    ) -> Option<Arc<EndpointPlan>> {
        let name = ep
            .name
            .clone()
            .unwrap_or_else(|| format!("anonymous endpoint at {}", ep.loc));
        // Endpoint properties: only an <http> endpoint's template variables are applied.
        let template_kind =
            matches!(&ep.kind, cfg::EndpointKind::Address(a) if a.kind == cfg::AddressKind::Http);
        let mut template_vars = Vec::new();
        for p in &ep.properties {
            if template_kind && is_template_variable(&p.name) {
                template_vars.push((p.name.clone(), p.value.clone()));
            } else {
                self.report(
                    Severity::Warning,
                    &p.loc,
                    "property",
                    format!("endpoint property '{}' is not applied yet (only the uri.var.* and query.param.* of <http> endpoints are); ignored", p.name),
                );
            }
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
            cfg::EndpointKind::Loadbalance { failover, children } => {
                let kind = GroupKind::RoundRobin {
                    failover: *failover,
                };
                return self.group(ep, name, kind, children, override_uri);
            }
        };
        let uri_text = override_uri.unwrap_or(&a.uri);
        let template = if a.kind == cfg::AddressKind::Http {
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
                Ok(t) => Some(Arc::new(t)),
                Err(e) => {
                    self.report(Severity::Error, &a.uri_loc, "http", e);
                    return None;
                }
            }
        } else {
            None
        };
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
        if let Some(f) = &a.format {
            if !matches!(f.as_str(), "soap11" | "soap12" | "pox" | "leave-as-is") {
                self.report(
                    Severity::Unsupported,
                    &a.uri_loc,
                    "address",
                    format!("format '{f}' is not supported yet (message conversion)"),
                );
            }
        }
        let (timeout, timeout_action) = match &a.timeout {
            Some(t) => {
                if t.duration_ms == Some(0) {
                    self.report(
                        Severity::Error,
                        &t.loc,
                        "timeout",
                        "a timeout duration of 0 ms would fail every call",
                    );
                }
                (t.duration_ms.map(Duration::from_millis), t.action)
            }
            None => (None, cfg::TimeoutAction::Fault),
        };
        let mut plan = EndpointPlan::new(
            name,
            uri,
            host,
            timeout,
            timeout_action,
            SuspendPolicy::new(&a.suspend_on_failure, &a.mark_for_suspension),
        );
        plan.retry = a.retry.clone();
        plan.address = match template {
            Some(t) => Address::Template(t),
            None if to_address => Address::To,
            None => Address::Fixed,
        };
        plan.template_vars = template_vars;
        plan.method = a.method.as_deref().and_then(|m| m.parse().ok());
        plan.format = match a.format.as_deref() {
            Some("soap11" | "soap12") => Format::Soap,
            Some("pox") => Format::Pox,
            _ => Format::AsIs,
        };
        Some(Arc::new(plan))
    }

    /// A failover or load-balance endpoint; None (all problems reported) when a child is not
    /// deployable.
    fn group(
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

    fn expr(&mut self, e: &cfg::ExprSrc, element: &str) -> Option<Expr> {
        let registry = |key: &str| self.registry_text(key);
        let r = Expr::compile_with_registry(&e.text, &e.ns, &registry);
        self.compiled(r, &e.loc, element)
    }

    /// A compiled expression, or its error reported (unsupported or an error).
    fn compiled(
        &mut self,
        r: Result<Expr, ExprError>,
        loc: &Location,
        element: &str,
    ) -> Option<Expr> {
        match r {
            Ok(x) => Some(x),
            Err(err) => {
                let sev = if err.kind == ExprErrorKind::Unsupported {
                    Severity::Unsupported
                } else {
                    Severity::Error
                };
                self.report(sev, loc, element, err.message);
                None
            }
        }
    }

    fn value(&mut self, v: &cfg::ValueSrc, element: &str) -> Option<Value> {
        match v {
            cfg::ValueSrc::Literal(s) => Some(Value::Literal(s.clone())),
            cfg::ValueSrc::Expr(e) => self.expr(e, element).map(Value::Expr),
        }
    }

    fn regex(&mut self, pattern: &str, loc: &Location, element: &str) -> Option<FullRegex> {
        match FullRegex::compile(pattern) {
            Ok(r) => Some(r),
            Err(err) => {
                let sev = if err.kind == ExprErrorKind::Unsupported {
                    Severity::Unsupported
                } else {
                    Severity::Error
                };
                self.report(sev, loc, element, err.message);
                None
            }
        }
    }

    fn steps(&mut self, ms: &[cfg::Mediator]) -> Steps {
        let mut out = Vec::with_capacity(ms.len());
        for (i, m) in ms.iter().enumerate() {
            if let Some(s) = self.step(m) {
                let terminal = matches!(
                    s,
                    Step::Send(_)
                        | Step::Respond
                        | Step::Loopback
                        | Step::Drop
                        | Step::Clone(_)
                        | Step::Iterate(_)
                );
                out.push(s);
                if terminal && i + 1 < ms.len() {
                    let next = &ms[i + 1];
                    self.report(
                        Severity::Warning,
                        &next.loc,
                        &next.element,
                        format!(
                            "mediators after <{}> in the same sequence are never run",
                            m.element
                        ),
                    );
                    break;
                }
            }
        }
        out.into()
    }

    fn step(&mut self, m: &cfg::Mediator) -> Option<Step> {
        let el = m.element.as_str();
        Some(match &m.kind {
            cfg::MediatorKind::Send { endpoint } => Step::Send(match endpoint {
                Some(e) => Some(self.endpoint_ref(e)?),
                None => None,
            }),
            cfg::MediatorKind::Call { endpoint, io } => {
                let ep = match endpoint {
                    Some(e) => Some(self.endpoint_ref(e)?),
                    None => None,
                };
                match io {
                    None => Step::CallEndpoint(ep),
                    Some(io) => self.call_io(io, ep, el)?,
                }
            }
            cfg::MediatorKind::Respond => Step::Respond,
            cfg::MediatorKind::Loopback => Step::Loopback,
            cfg::MediatorKind::Drop => Step::Drop,
            cfg::MediatorKind::Log(l) => {
                let mut properties = Vec::new();
                for (n, v) in &l.properties {
                    properties.push((n.clone(), self.value(v, el)?));
                }
                Step::Log(LogPlan {
                    level: l.level,
                    category: l.category,
                    separator: l.separator.clone(),
                    properties,
                })
            }
            cfg::MediatorKind::Property(p) => self.property(p, m)?,
            cfg::MediatorKind::Header(h) => self.header(h, m)?,
            cfg::MediatorKind::Direction { response, body } => Step::Filter {
                cond: Cond::Response(*response),
                then: self.steps(&body.mediators),
                otherwise: Steps::default(),
            },
            cfg::MediatorKind::Filter(f) => {
                let cond = match &f.cond {
                    cfg::FilterCond::Regex {
                        source,
                        regex,
                        regex_loc,
                    } => {
                        let source = self.expr(source, el);
                        let regex = self.regex(regex, regex_loc, el);
                        Cond::Regex {
                            source: source?,
                            regex: regex?,
                        }
                    }
                    cfg::FilterCond::XPath(x) => Cond::XPath(self.expr(x, el)?),
                };
                let then = self.steps(&f.then.mediators);
                let otherwise = f
                    .otherwise
                    .as_ref()
                    .map(|o| self.steps(&o.mediators))
                    .unwrap_or_default();
                Step::Filter {
                    cond,
                    then,
                    otherwise,
                }
            }
            cfg::MediatorKind::Switch(s) => {
                let source = self.expr(&s.source, el);
                let mut cases = Vec::new();
                for c in &s.cases {
                    let r = self.regex(&c.regex, &c.loc, "case");
                    let steps = self.steps(&c.sequence.mediators);
                    if let Some(r) = r {
                        cases.push((r, steps));
                    }
                }
                let default = s
                    .default
                    .as_ref()
                    .map(|d| self.steps(&d.mediators))
                    .unwrap_or_default();
                Step::Switch {
                    source: source?,
                    cases,
                    default,
                }
            }
            cfg::MediatorKind::SequenceRef { key } => {
                Step::Call(self.named_sequence(key, Some(&m.loc))?)
            }
            cfg::MediatorKind::Clone(c) => {
                let mut targets = Vec::new();
                for t in &c.targets {
                    targets.push(self.clone_target(t)?);
                }
                Step::Clone(Arc::new(ClonePlan { targets }))
            }
            cfg::MediatorKind::Foreach(f) => {
                let expression = self.xml_parts(&f.expression, &m.loc, el, "foreach over");
                let sequence = self.sequence_ref(&f.sequence, "foreach");
                let sequence = sequence?;
                if let Some(what) = leaves_message(&sequence.steps) {
                    self.report(
                        Severity::Error,
                        &m.loc,
                        el,
                        format!("a foreach sequence may not {what}: it runs on each part in place"),
                    );
                    return None;
                }
                Step::Foreach(Arc::new(ForeachPlan {
                    prefix: f.id.as_ref().map(|i| format!("{i}_")).unwrap_or_default(),
                    expression: expression?,
                    sequence,
                    continue_on_failure: f.continue_on_failure,
                }))
            }
            cfg::MediatorKind::Iterate(it) => {
                let expression = self.xml_parts(&it.expression, &m.loc, el, "iterating over");
                let target = self.clone_target(&it.target);
                Step::Iterate(Arc::new(IteratePlan {
                    expression: expression?,
                    target: target?,
                }))
            }
            cfg::MediatorKind::Aggregate(a) => {
                if a.timeout_secs.is_some() {
                    self.report(
                        Severity::Note,
                        &m.loc,
                        el,
                        "completeCondition timeout is not applied: the aggregate completes at its count, or when every copy has ended (each within its endpoint's timeout)",
                    );
                }
                let expression = self.expr(&a.expression, el);
                if matches!(expression, Some(Expr::Json(_)))
                    || a.expression.text.contains("json-eval")
                {
                    self.report(
                        Severity::Unsupported,
                        &m.loc,
                        el,
                        "aggregating JSON (a json-eval expression) is not supported yet",
                    );
                    return None;
                }
                let on_complete = self.steps(&a.on_complete.mediators);
                Step::Aggregate(Arc::new(AggregatePlan {
                    max: a
                        .max
                        .and_then(|m| usize::try_from(m).ok())
                        .filter(|&m| m > 0),
                    min: a
                        .min
                        .and_then(|m| usize::try_from(m).ok())
                        .filter(|&m| m > 0),
                    expression: expression?,
                    enclosing: a.enclosing.clone(),
                    on_complete,
                }))
            }
            cfg::MediatorKind::CallTemplate { target, params } => {
                Step::Template(self.call_template(target, params, &m.loc, el)?)
            }
            cfg::MediatorKind::MakeFault(f) => Step::MakeFault(self.makefault(f, el)?),
            cfg::MediatorKind::Xslt(x) => {
                let sheet = self.stylesheet(&x.key, &m.loc, el);
                let source = match &x.source {
                    Some(e) => Some(self.expr(e, el)?),
                    None => None,
                };
                let mut params = Vec::new();
                for (n, v) in &x.params {
                    params.push((n.clone(), self.value(v, el)?));
                }
                Step::Xslt(XsltPlan {
                    sheet: sheet?,
                    key: x.key.clone(),
                    source,
                    params,
                    fast: x.fast,
                })
            }
            cfg::MediatorKind::PayloadFactory(p) => Step::PayloadFactory(self.payload(p, el)?),
            cfg::MediatorKind::Enrich(e) => Step::Enrich(self.enrich(e, &m.loc, el)?),
            cfg::MediatorKind::Validate(v) => {
                let (key, loc) = &v.schemas[0];
                if v.schemas.len() > 1 {
                    self.report(
                        Severity::Unsupported,
                        &v.schemas[1].1,
                        el,
                        "validating against several schemas at once is not supported yet (one <schema> per validate)",
                    );
                }
                let schema = self.schema(key, loc, el);
                let source = match &v.source {
                    Some(e) => {
                        let x = self.expr(e, el)?;
                        if !matches!(x, Expr::XPath(_)) {
                            self.report(
                                Severity::Error,
                                &e.loc,
                                el,
                                "the validate source must be an XPath",
                            );
                            return None;
                        }
                        Some(x)
                    }
                    None => None,
                };
                let on_fail = self.steps(&v.on_fail.mediators);
                Step::Validate(ValidatePlan {
                    schema: schema?,
                    key: key.clone(),
                    source,
                    on_fail,
                })
            }
        })
    }

    /// The text of the local entry or registry resource with `key` and where it comes from, or the
    /// severity and message of why there is none. Formats, schemas and `get-property('registry',
    /// ...)` all read keyed text through this.
    fn keyed(&self, key: &str) -> Result<(&str, String), (Severity, String)> {
        if let Some(le) = self.local_entries.get(key) {
            let origin = format!("local entry '{key}' ({})", le.loc);
            return match &le.value {
                cfg::LocalEntryValue::Xml { text, .. } => Ok((text, origin)),
                cfg::LocalEntryValue::Text(t) => Ok((t, origin)),
                cfg::LocalEntryValue::Src(u) => Err((
                    Severity::Unsupported,
                    format!("local entry '{key}' refers to '{u}', which is not fetched (no network at load)"),
                )),
            };
        }
        if let Some(r) = self.resources.get(normalize_registry_key(key).as_str()) {
            let origin = format!("registry resource '{key}' ({})", r.loc);
            return match std::str::from_utf8(&r.bytes) {
                Ok(t) => Ok((t, origin)),
                Err(_) => Err((Severity::Error, format!("{origin} is not UTF-8 text"))),
            };
        }
        Err((
            Severity::Error,
            format!("no local entry or registry resource '{key}'"),
        ))
    }

    /// What `get-property('registry', key)` reads: the keyed text (Synapse looks up entry
    /// definitions, local entries included, by the key), an XML resource without its declaration.
    fn registry_text(&self, key: &str) -> Result<String, String> {
        match self.keyed(key) {
            Ok((t, _)) => Ok(without_xml_declaration(t).to_owned()),
            Err((_, why)) => Err(why),
        }
    }

    /// The text of a local entry or registry resource, for formats and schemas.
    fn keyed_text(&mut self, key: &str, loc: &Location, el: &str) -> Option<(String, String)> {
        match self.keyed(key) {
            Ok((t, origin)) => Some((t.to_owned(), origin)),
            Err((severity, why)) => {
                self.report(severity, loc, el, why);
                None
            }
        }
    }

    fn payload(&mut self, p: &cfg::PayloadFactory, el: &str) -> Option<PayloadPlan> {
        let format = match &p.format {
            cfg::PayloadFormat::Inline(t) => t.clone(),
            cfg::PayloadFormat::Key(k) => self.keyed_text(k, &p.format_loc, el)?.0,
        };
        let segments = payload_segments(&format, p.args.len());
        if let Some(n) = payload_max_arg(&format) {
            if n > p.args.len() {
                self.report(
                    Severity::Warning,
                    &p.format_loc,
                    el,
                    format!("the format uses ${n} but only {} argument(s) are given; Synapse stops substituting at the first missing one", p.args.len()),
                );
            }
        }
        // JSON and text formats are kept as text (WSO2 checks neither the format nor the result);
        // static values are XML-escaped as WSO2 does for every format.
        let literal: Option<fn(&str, bool) -> String> = match p.media {
            cfg::PayloadMedia::Json => Some(crate::exec::json_literal_arg),
            cfg::PayloadMedia::Text => Some(|s, _| crate::exec::escape_xml(s)),
            cfg::PayloadMedia::Xml => None,
        };
        if let Some(literal) = literal {
            return Some(PayloadPlan {
                segments,
                args: self.payload_args(p, el, literal)?,
                envelope: false,
                media: p.media,
            });
        }
        // The format must be well-formed XML whatever the arguments are.
        let probe: String = segments
            .iter()
            .map(|s| match s {
                Segment::Text(t) => t.as_str(),
                Segment::Arg(_) => "",
            })
            .collect();
        let envelope = match sluice_xml::Fragment::parse(&probe) {
            Ok(f) => {
                let first = f.elements().next();
                first.is_some_and(|e| {
                    e.name() == "Envelope"
                        && matches!(
                            e.namespace_uri(),
                            Some(fault::SOAP11_ENV) | Some(fault::SOAP12_ENV)
                        )
                })
            }
            Err(e) => {
                self.report(
                    Severity::Error,
                    &p.format_loc,
                    el,
                    format!("the payloadFactory format is not well-formed XML: {e}"),
                );
                return None;
            }
        };
        let xml_literal = |s: &str, literal: bool| {
            if literal {
                crate::exec::escape_xml(s)
            } else {
                crate::exec::prepare_payload_arg(s.to_owned())
            }
        };
        Some(PayloadPlan {
            segments,
            args: self.payload_args(p, el, xml_literal)?,
            envelope,
            media: p.media,
        })
    }

    /// A payloadFactory's arguments: values prepared at load by `literal_value` (from the text and
    /// `literal="true"`), expressions, and (`evaluator="json"`) JsonPaths.
    fn payload_args(
        &mut self,
        p: &cfg::PayloadFactory,
        el: &str,
        literal_value: impl Fn(&str, bool) -> String,
    ) -> Option<Vec<PayloadArg>> {
        let mut args = Vec::with_capacity(p.args.len());
        for a in &p.args {
            let value = match &a.value {
                cfg::ValueSrc::Expr(e) if a.json_path => self
                    .compiled(Expr::json(&e.text), &e.loc, el)
                    .map(Value::Expr),
                v => self.value(v, el),
            };
            args.push(match value? {
                Value::Literal(s) => PayloadArg::Ready(literal_value(&s, a.literal)),
                Value::Expr(expr) => PayloadArg::Expr {
                    expr,
                    literal: a.literal,
                },
            });
        }
        Some(args)
    }

    /// The expression that splits a message into parts (iterate, foreach), compiled: XPath only,
    /// as splitting JSON is not done yet.
    fn xml_parts(
        &mut self,
        e: &cfg::ExprSrc,
        loc: &Location,
        el: &str,
        what: &str,
    ) -> Option<Expr> {
        if e.text.contains("json-eval") {
            self.report(
                Severity::Unsupported,
                loc,
                el,
                format!("{what} JSON (a json-eval expression) is not supported yet"),
            );
            return None;
        }
        self.expr(e, el)
    }

    /// A `call` with MI's `<source>` / `<target>`, as the steps MI's call mediator takes around
    /// the call itself, run as one nested list (so that the response goes on through its rest).
    /// A source other than the body makes the payload (`CallSource`); with a property target, the
    /// message is kept aside first (`SaveMessage`) when there is such a source or no `<source>`
    /// at all, and `CallTarget` puts the response into the property and the message back.
    fn call_io(
        &mut self,
        io: &cfg::CallIo,
        ep: Option<Arc<EndpointPlan>>,
        el: &str,
    ) -> Option<Step> {
        let source = match &io.source {
            Some(s) if !matches!(s.kind, cfg::EnrichSourceKind::Body) => {
                Some(self.enrich_source(s, el)?)
            }
            _ => None,
        };
        // MI: a target alone sends the body as it is and still keeps the message aside.
        let restore = io.target.is_some() && (source.is_some() || io.source.is_none());
        let mut steps = Vec::new();
        if restore {
            steps.push(Step::SaveMessage);
        }
        if let Some(source) = source {
            steps.push(Step::CallSource(CallSourcePlan {
                source,
                content_type: io.content_type.clone(),
            }));
        }
        steps.push(Step::CallEndpoint(ep));
        if let Some(property) = &io.target {
            steps.push(Step::CallTarget {
                property: property.clone(),
                restore,
            });
        }
        Some(Step::Call(Arc::new(SeqPlan::new(None, steps.into()))))
    }

    fn enrich(&mut self, e: &cfg::Enrich, loc: &Location, el: &str) -> Option<EnrichPlan> {
        let _ = loc;
        let source = self.enrich_source(&e.source, el)?;
        let target = match &e.target.kind {
            cfg::EnrichTargetKind::Custom(x) => EnrichTargetPlan::Custom(self.expr(x, el)?),
            cfg::EnrichTargetKind::Envelope => EnrichTargetPlan::Envelope,
            cfg::EnrichTargetKind::Body => EnrichTargetPlan::Body,
            cfg::EnrichTargetKind::Property(p) => EnrichTargetPlan::Property(p.clone()),
        };
        Some(EnrichPlan {
            source,
            target,
            action: e.target.action,
        })
    }

    /// An enrich (or `call`) source: inline XML checked well-formed, a key's content read.
    fn enrich_source(&mut self, src: &cfg::EnrichSource, el: &str) -> Option<EnrichSourcePlan> {
        let check_xml = |c: &mut Self, text: &str, l: &Location| -> Option<()> {
            match sluice_xml::Fragment::parse(text) {
                Ok(_) => Some(()),
                Err(err) => {
                    c.report(
                        Severity::Error,
                        l,
                        el,
                        format!("inline content is not well-formed XML: {err}"),
                    );
                    None
                }
            }
        };
        Some(match &src.kind {
            cfg::EnrichSourceKind::Custom(x) => EnrichSourcePlan::Custom(self.expr(x, el)?),
            cfg::EnrichSourceKind::Envelope => EnrichSourcePlan::Envelope,
            cfg::EnrichSourceKind::Body => EnrichSourcePlan::Body,
            cfg::EnrichSourceKind::Property(p) => EnrichSourcePlan::Property(p.clone()),
            cfg::EnrichSourceKind::InlineXml(t) => {
                check_xml(self, t, &src.loc)?;
                EnrichSourcePlan::Xml(t.clone())
            }
            cfg::EnrichSourceKind::InlineText(t) => EnrichSourcePlan::Text(t.clone()),
            cfg::EnrichSourceKind::InlineKey(k) => {
                match self.local_entries.get(k.as_str()).map(|l| l.value.clone()) {
                    Some(cfg::LocalEntryValue::Xml { text, .. }) => {
                        check_xml(self, &text, &src.loc)?;
                        EnrichSourcePlan::Xml(text)
                    }
                    Some(cfg::LocalEntryValue::Text(t)) => EnrichSourcePlan::Text(t),
                    _ => {
                        let (text, _) = self.keyed_text(k, &src.loc, el)?;
                        check_xml(self, &text, &src.loc)?;
                        EnrichSourcePlan::Xml(text)
                    }
                }
            }
        })
    }

    /// The XML Schema for a key (local entry or registry resource), compiled once.
    fn schema(&mut self, key: &str, loc: &Location, el: &str) -> Option<Arc<sluice_xml::Schema>> {
        if let Some(cached) = self.schema_cache.get(key) {
            if cached.is_none() {
                self.failed = true;
            }
            return cached.clone();
        }
        let compiled = match self.keyed_text(key, loc, el) {
            None => None,
            Some((text, origin)) => match sluice_xml::Schema::compile(text.as_bytes()) {
                Ok(s) => Some(Arc::new(s)),
                Err(e) => {
                    self.report(
                        Severity::Error,
                        loc,
                        el,
                        format!("schema {origin} does not compile: {e}"),
                    );
                    None
                }
            },
        };
        self.schema_cache.insert(key.to_owned(), compiled.clone());
        compiled
    }

    fn property(&mut self, p: &cfg::Property, m: &cfg::Mediator) -> Option<Step> {
        let el = m.element.as_str();
        if p.scope == cfg::Scope::Transport {
            let name = match HeaderName::from_bytes(p.name.as_bytes()) {
                Ok(n) => n,
                Err(_) => {
                    self.report(
                        Severity::Error,
                        &m.loc,
                        el,
                        format!("'{}' is not a valid HTTP header name", p.name),
                    );
                    return None;
                }
            };
            return Some(match &p.action {
                cfg::Action::Remove => Step::RemoveHeader(name),
                cfg::Action::Set(v) => {
                    let value = self.value(v, el)?;
                    check_header_value(self, &value, &m.loc, el)?;
                    Step::SetHeader { name, value }
                }
            });
        }
        if p.ty == cfg::PropertyType::Om && p.scope != cfg::Scope::Default {
            self.report(
                Severity::Unsupported,
                &m.loc,
                el,
                "type OM is supported in the default scope only",
            );
            return None;
        }
        Some(match &p.action {
            cfg::Action::Remove => Step::RemoveProperty {
                scope: p.scope,
                name: p.name.clone(),
            },
            cfg::Action::Set(v) => {
                let value = self.value(v, el)?;
                if let (Value::Literal(s), cfg::PropertyType::Om) = (&value, p.ty) {
                    if let Err(e) = crate::exec::om_value(s) {
                        self.report(
                            Severity::Error,
                            &m.loc,
                            el,
                            format!("property {}: {e}", p.name),
                        );
                        return None;
                    }
                }
                if let Value::Literal(s) = &value {
                    if let Err(e) = crate::exec::typed(p.ty, s) {
                        self.report(
                            Severity::Error,
                            &m.loc,
                            el,
                            format!("property {}: {e}", p.name),
                        );
                        return None;
                    }
                    if p.name == "HTTP_SC" && s.parse::<http::StatusCode>().is_err() {
                        self.report(
                            Severity::Error,
                            &m.loc,
                            el,
                            format!("HTTP_SC '{s}' is not an HTTP status code"),
                        );
                        return None;
                    }
                }
                Step::SetProperty {
                    scope: p.scope,
                    name: p.name.clone(),
                    ty: p.ty,
                    value,
                }
            }
        })
    }

    fn header(&mut self, h: &cfg::Header, m: &cfg::Mediator) -> Option<Step> {
        let el = m.element.as_str();
        match h.scope {
            cfg::HeaderScope::Transport => {
                let Ok(name) = HeaderName::from_bytes(h.name.as_bytes()) else {
                    self.report(
                        Severity::Error,
                        &m.loc,
                        el,
                        format!("'{}' is not a valid HTTP header name", h.name),
                    );
                    return None;
                };
                Some(match &h.action {
                    cfg::Action::Remove => Step::RemoveHeader(name),
                    cfg::Action::Set(v) => {
                        let value = self.value(v, el)?;
                        check_header_value(self, &value, &m.loc, el)?;
                        Step::SetHeader { name, value }
                    }
                })
            }
            cfg::HeaderScope::Default => {
                if h.namespace.is_none() && h.name == "To" {
                    return Some(match &h.action {
                        cfg::Action::Remove => Step::RemoveTo,
                        cfg::Action::Set(v) => Step::SetTo(self.value(v, el)?),
                    });
                }
                if h.namespace.is_none() && h.name == "Action" {
                    return Some(match &h.action {
                        cfg::Action::Remove => Step::RemoveAction,
                        cfg::Action::Set(v) => {
                            let value = self.value(v, el)?;
                            check_header_value(self, &value, &m.loc, el)?;
                            Step::SetAction(value)
                        }
                    });
                }
                if let (Some(ns), Some((prefix, local))) = (&h.namespace, h.name.split_once(':')) {
                    return Some(match &h.action {
                        cfg::Action::Remove => Step::RemoveSoapHeader {
                            ns: ns.clone(),
                            local: local.to_owned(),
                        },
                        cfg::Action::Set(v) => Step::SetSoapHeader {
                            ns: ns.clone(),
                            prefix: prefix.to_owned(),
                            local: local.to_owned(),
                            value: self.value(v, el)?,
                        },
                    });
                }
                if h.namespace.is_none()
                    && matches!(
                        h.name.as_str(),
                        "From" | "ReplyTo" | "FaultTo" | "MessageID" | "RelatesTo"
                    )
                {
                    self.report(
                        Severity::Unsupported,
                        &m.loc,
                        el,
                        format!(
                            "the WS-Addressing header '{}' is not supported yet (only To and Action)",
                            h.name
                        ),
                    );
                } else {
                    self.report(Severity::Unsupported, &m.loc, el, format!("SOAP header '{}': a SOAP header needs a namespace-qualified name (prefix:Name with xmlns:prefix)", h.name));
                }
                None
            }
        }
    }

    /// The stylesheet for a key: a local entry holding `xsl:stylesheet`, or a registry resource.
    fn stylesheet(&mut self, key: &str, loc: &Location, el: &str) -> Option<Arc<Sheet>> {
        if let Some(cached) = self.xslt_cache.get(key) {
            if cached.is_none() {
                self.failed = true;
            }
            return cached.clone();
        }
        let (bytes, origin): (Vec<u8>, String) = if let Some(le) = self.local_entries.get(key) {
            match &le.value {
                cfg::LocalEntryValue::Xml { text, .. } => (
                    text.clone().into_bytes(),
                    format!("local entry '{key}' ({})", le.loc),
                ),
                _ => {
                    self.report(
                        Severity::Error,
                        loc,
                        el,
                        format!("local entry '{key}' does not hold an XSLT stylesheet"),
                    );
                    self.xslt_cache.insert(key.to_owned(), None);
                    return None;
                }
            }
        } else if let Some(r) = self.resources.get(normalize_registry_key(key).as_str()) {
            (
                r.bytes.to_vec(),
                format!("registry resource '{key}' ({})", r.loc),
            )
        } else {
            self.report(
                Severity::Error,
                loc,
                el,
                format!("no local entry or registry resource '{key}'"),
            );
            self.xslt_cache.insert(key.to_owned(), None);
            return None;
        };
        let sheet = match sluice_xml::Stylesheet::compile(&bytes, None) {
            Ok(s) => Some(Arc::new(Sheet {
                xslt: s,
                stream: sluice_stx::StreamSheet::compile(&bytes),
            })),
            Err(e) => {
                self.report(
                    Severity::Error,
                    loc,
                    el,
                    format!("stylesheet {origin} does not compile: {e}"),
                );
                None
            }
        };
        self.xslt_cache.insert(key.to_owned(), sheet.clone());
        sheet
    }

    fn makefault(&mut self, f: &cfg::MakeFault, el: &str) -> Option<FaultPlan> {
        let reason = match &f.reason {
            Some(v) => self.value(v, el)?,
            None => Value::Literal(String::new()),
        };
        let detail = match &f.detail {
            None => None,
            Some(cfg::FaultDetail::Xml(x)) => Some(DetailPlan::Xml(x.clone())),
            Some(cfg::FaultDetail::Value(v)) => Some(DetailPlan::Value(self.value(v, el)?)),
        };
        let mut plan = FaultPlan {
            version: f.version,
            response: f.response,
            fixed: None,
            code: f.code.clone(),
            reason,
            role: f.role.clone(),
            node: f.node.clone(),
            detail,
        };
        let detail_literal = match &plan.detail {
            None | Some(DetailPlan::Xml(_)) => Some(None),
            Some(DetailPlan::Value(Value::Literal(d))) => Some(Some(d.as_str())),
            Some(DetailPlan::Value(Value::Expr(_))) => None,
        };
        if let (Value::Literal(r), Some(d)) = (&plan.reason, detail_literal) {
            plan.fixed = Some(plan.render(r, d));
        }
        Some(plan)
    }
}

/// Cuts a payloadFactory format at `$n` (one or more digits, 1-based). Like Synapse, substitution
/// stops at the first placeholder without an argument: it and the rest stay as written.
pub(crate) fn payload_segments(format: &str, nargs: usize) -> Vec<Segment> {
    let mut out = Vec::new();
    let mut text = String::new();
    let b = format.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'$' && i + 1 < b.len() && b[i + 1].is_ascii_digit() {
            let start = i + 1;
            let mut end = start;
            while end < b.len() && b[end].is_ascii_digit() {
                end += 1;
            }
            let n: usize = format[start..end].parse().unwrap_or(usize::MAX);
            if n == 0 || n > nargs {
                text.push_str(&format[i..]);
                break;
            }
            if !text.is_empty() {
                out.push(Segment::Text(std::mem::take(&mut text)));
            }
            out.push(Segment::Arg(n - 1));
            i = end;
            continue;
        }
        let ch = format[i..].chars().next().expect("in bounds");
        text.push(ch);
        i += ch.len_utf8();
    }
    if !text.is_empty() {
        out.push(Segment::Text(text));
    }
    out
}

fn payload_max_arg(format: &str) -> Option<usize> {
    let b = format.as_bytes();
    let mut max = None;
    for (i, _) in format.match_indices('$') {
        let digits: String = b[i + 1..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .map(|&c| c as char)
            .collect();
        if let Ok(n) = digits.parse::<usize>() {
            max = max.max(Some(n));
        }
    }
    max
}

/// A registry resource's text as Synapse's `get-property('registry', ...)` gives an XML resource: the
/// element, without the XML declaration and the white space around it; other text as it is.
fn without_xml_declaration(t: &str) -> &str {
    match t
        .trim_start()
        .strip_prefix("<?xml")
        .and_then(|r| r.split_once("?>"))
    {
        Some((_, rest)) => rest.trim(),
        None => t,
    }
}

/// `conf:/a/b`, `conf:a/b` and `conf://a/b` name the same resource.
fn normalize_registry_key(k: &str) -> String {
    match k.split_once(':') {
        Some((scheme, rest)) => format!("{scheme}:/{}", rest.trim_start_matches('/')),
        None => k.to_owned(),
    }
}

fn check_header_value(c: &mut Compiler, v: &Value, loc: &Location, el: &str) -> Option<()> {
    if let Value::Literal(s) = v {
        if HeaderValue::from_str(s).is_err() {
            c.report(
                Severity::Error,
                loc,
                el,
                format!("'{s}' is not a valid HTTP header value"),
            );
            return None;
        }
    }
    Some(())
}

/// Whether `f` holds for every expression in `steps` that may read the body (the ones `need_of`
/// counts); `false` at once for a step that needs the whole body whatever its expressions.
fn body_exprs_all(steps: &[Step], f: &mut dyn FnMut(&Expr) -> bool) -> bool {
    let value = |v: &Value, f: &mut dyn FnMut(&Expr) -> bool| match v {
        Value::Literal(_) => true,
        Value::Expr(e) => e.body_need() == BodyNeed::None || f(e),
    };
    for s in steps {
        let ok = match s {
            Step::Log(l) => {
                l.level != cfg::LogLevel::Full && l.properties.iter().all(|(_, v)| value(v, f))
            }
            s @ Step::SetProperty { .. } if makes_json(s) => false,
            Step::SetProperty { value: v, .. }
            | Step::SetHeader { value: v, .. }
            | Step::SetTo(v)
            | Step::SetAction(v) => value(v, f),
            Step::Filter {
                cond,
                then,
                otherwise,
            } => {
                cond.source()
                    .is_none_or(|source| source.body_need() == BodyNeed::None || f(source))
                    && body_exprs_all(then, f)
                    && body_exprs_all(otherwise, f)
            }
            Step::Switch {
                source,
                cases,
                default,
            } => {
                (source.body_need() == BodyNeed::None || f(source))
                    && body_exprs_all(default, f)
                    && cases.iter().all(|(_, s)| body_exprs_all(s, f))
            }
            Step::Call(seq) => body_exprs_all(&seq.steps, f),
            Step::Template(t) => {
                t.params.iter().all(|(_, v)| value(v, f)) && body_exprs_all(&t.template.steps, f)
            }
            Step::LeaveTemplate | Step::Clone(_) => true,
            Step::CallSource(c) => c.source.body_exprs_all(f),
            Step::Aggregate(_)
            | Step::Iterate(_)
            | Step::SaveMessage
            | Step::CallTarget { .. }
            | Step::Foreach(_) => false,
            Step::Xslt(_)
            | Step::PayloadFactory(_)
            | Step::Validate(_)
            | Step::SetSoapHeader { .. }
            | Step::RemoveSoapHeader { .. } => false,
            Step::Enrich(e) => {
                e.source.body_exprs_all(f) && matches!(e.target, EnrichTargetPlan::Property(_))
            }
            Step::MakeFault(m) => value(&m.reason, f),
            // What follows a call reads the response.
            Step::CallEndpoint(_) => return true,
            Step::Send(_)
            | Step::Respond
            | Step::Loopback
            | Step::Drop
            | Step::RemoveProperty { .. }
            | Step::RemoveHeader(_)
            | Step::RemoveTo
            | Step::RemoveAction => true,
        };
        if !ok {
            return false;
        }
    }
    true
}

/// What in `steps` (or the lists they run) would send the message to a back-end: a send or a
/// call (Synapse refuses these in a foreach; anything else that ends the flow there fails when it
/// runs). `None` when nothing does.
fn leaves_message(steps: &[Step]) -> Option<&'static str> {
    steps.iter().find_map(|s| match s {
        Step::Send(_) => Some("send"),
        Step::CallEndpoint(_) => Some("call"),
        Step::Filter {
            then, otherwise, ..
        } => leaves_message(then).or_else(|| leaves_message(otherwise)),
        Step::Switch { cases, default, .. } => cases
            .iter()
            .find_map(|(_, s)| leaves_message(s))
            .or_else(|| leaves_message(default)),
        Step::Call(seq) => leaves_message(&seq.steps),
        Step::Template(t) => leaves_message(&t.template.steps),
        Step::Foreach(f) => leaves_message(&f.sequence.steps),
        _ => None,
    })
}

/// The steps reach a `call` whatever the message: one at their top level, or in a sequence they
/// run at their top level.
pub(crate) fn calls(steps: &[Step]) -> bool {
    steps.iter().any(|s| match s {
        Step::CallEndpoint(_) => true,
        Step::Call(seq) => calls(&seq.steps),
        Step::Template(t) => calls(&t.template.steps),
        _ => false,
    })
}

/// Whether the step may make the message leave as JSON: it sets `messageType` or `ContentType`
/// (axis2 scopes) to a JSON type, or to a value computed at run time. An XML body must then be read
/// to be converted ([`crate::json`]).
fn makes_json(s: &Step) -> bool {
    let Step::SetProperty {
        scope: cfg::Scope::Axis2 | cfg::Scope::Axis2Client,
        name,
        value,
        ..
    } = s
    else {
        return false;
    };
    (name == "messageType" || name == "ContentType")
        && match value {
            Value::Literal(v) => crate::json::is_json_type(v),
            Value::Expr(_) => true,
        }
}

/// What the steps read of the message body, up to the first `call` among them (the steps after it
/// read the response: a [`crate::Continuation`] counts them when it resumes). So does a sequence
/// that calls at its top level; a call inside a branch does not stop the count (the steps after the
/// branch may run on the request).
pub(crate) fn need_of(steps: &[Step], json: bool) -> BodyNeed {
    need_until_call(steps, json).0
}

/// [`need_of`], and whether the count stopped at a `call`.
pub(crate) fn need_until_call(steps: &[Step], json: bool) -> (BodyNeed, bool) {
    let mut need = BodyNeed::None;
    for s in steps {
        let n = match s {
            Step::Log(l) => {
                let mut n = if l.level == cfg::LogLevel::Full {
                    BodyNeed::Full
                } else {
                    BodyNeed::None
                };
                for (_, v) in &l.properties {
                    n = n.max(v.body_need());
                }
                n
            }
            // Leaving as JSON: an XML body is read to be converted; a JSON one goes as it is.
            s @ Step::SetProperty { .. } if makes_json(s) && !json => BodyNeed::Full,
            Step::SetProperty { value, .. }
            | Step::SetHeader { value, .. }
            | Step::SetTo(value)
            | Step::SetAction(value) => value.body_need(),
            Step::Filter {
                cond,
                then,
                otherwise,
            } => {
                let c = cond.source().map_or(BodyNeed::None, Expr::body_need);
                c.max(need_of(then, json)).max(need_of(otherwise, json))
            }
            Step::Switch {
                source,
                cases,
                default,
            } => {
                let mut n = source.body_need().max(need_of(default, json));
                for (_, s) in cases {
                    n = n.max(need_of(s, json));
                }
                n
            }
            Step::Call(seq) => {
                if calls(&seq.steps) {
                    return (need.max(seq.need(json)), true);
                }
                seq.need(json)
            }
            Step::Template(t) => {
                let args = t
                    .params
                    .iter()
                    .fold(BodyNeed::None, |n, (_, v)| n.max(v.body_need()));
                if calls(&t.template.steps) {
                    return (need.max(args).max(t.template.need(json)), true);
                }
                args.max(t.template.need(json))
            }
            Step::LeaveTemplate => BodyNeed::None,
            // The body kept aside is the whole of it; so is the response put in a property.
            Step::SaveMessage | Step::CallTarget { .. } => BodyNeed::Full,
            Step::CallSource(c) => c.source.body_need(),
            // The copies are made of the whole message; the aggregate reads each response.
            Step::Clone(_) | Step::Aggregate(_) | Step::Iterate(_) | Step::Foreach(_) => {
                BodyNeed::Full
            }
            Step::Xslt(_)
            | Step::PayloadFactory(_)
            | Step::Validate(_)
            | Step::SetSoapHeader { .. }
            | Step::RemoveSoapHeader { .. } => BodyNeed::Full,
            Step::Enrich(e) => {
                let source = e.source.body_need();
                let target = match &e.target {
                    EnrichTargetPlan::Property(_) => BodyNeed::None,
                    _ => BodyNeed::Full,
                };
                source.max(target)
            }
            Step::MakeFault(f) => f.reason.body_need(),
            // What follows a call reads the response.
            Step::CallEndpoint(_) => return (need, true),
            Step::Send(_)
            | Step::Respond
            | Step::Loopback
            | Step::Drop
            | Step::RemoveProperty { .. }
            | Step::RemoveHeader(_)
            | Step::RemoveTo
            | Step::RemoveAction => BodyNeed::None,
        };
        need = need.max(n);
    }
    (need, false)
}

/// Splits a WSDL at its `location` attributes of `soap:address` / `soap12:address` elements.
fn wsdl_template(text: &str) -> WsdlPlan {
    let mut parts = Vec::new();
    let Ok(doc) = wsdl_scan::addresses(text) else {
        return WsdlPlan {
            parts: vec![text.to_owned()],
        };
    };
    let mut last = 0;
    for (start, end) in doc {
        parts.push(text[last..start].to_owned());
        last = end;
    }
    parts.push(text[last..].to_owned());
    WsdlPlan { parts }
}

/// Finds the byte ranges of the values of `location` attributes on `*:address` elements. The WSDL was
/// already parsed once by the config loader; this is a small scan over well-formed text.
mod wsdl_scan {
    pub fn addresses(text: &str) -> Result<Vec<(usize, usize)>, ()> {
        let mut out = Vec::new();
        let mut i = 0;
        while let Some(p) = text[i..].find('<') {
            let start = i + p;
            let end = text[start..].find('>').map(|e| start + e).ok_or(())?;
            let tag = &text[start + 1..end];
            let name = tag
                .split(|c: char| c.is_whitespace() || c == '/')
                .next()
                .unwrap_or("");
            if name == "address" || name.ends_with(":address") {
                if let Some(a) = tag.find("location=") {
                    let q_at = start + 1 + a + "location=".len();
                    let q = text.as_bytes()[q_at];
                    if q == b'"' || q == b'\'' {
                        let vstart = q_at + 1;
                        let vend = text[vstart..]
                            .find(q as char)
                            .map(|e| vstart + e)
                            .ok_or(())?;
                        out.push((vstart, vend));
                    }
                }
            }
            i = end + 1;
        }
        Ok(out)
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

    #[test]
    fn registry_xml_loses_its_declaration() {
        assert_eq!(
            without_xml_declaration("<?xml version=\"1.0\"?>\n<a>1</a>\n"),
            "<a>1</a>"
        );
        assert_eq!(without_xml_declaration(" plain text\n"), " plain text\n");
        assert_eq!(without_xml_declaration("<a/>"), "<a/>");
    }

    #[test]
    fn payload_formats_are_cut_at_placeholders() {
        use Segment::*;
        assert_eq!(
            payload_segments("<a>$1</a><b x=\"$2\">$10</b>", 10),
            vec![
                Text("<a>".into()),
                Arg(0),
                Text("</a><b x=\"".into()),
                Arg(1),
                Text("\">".into()),
                Arg(9),
                Text("</b>".into())
            ]
        );
        // Substitution stops at the first missing argument, like Synapse's.
        assert_eq!(
            payload_segments("<a>$1 $3 $1</a>", 1),
            vec![Text("<a>".into()), Arg(0), Text(" $3 $1</a>".into())]
        );
        assert_eq!(
            payload_segments("<a>$ $x</a>", 0),
            vec![Text("<a>$ $x</a>".into())]
        );
        assert_eq!(payload_max_arg("$2 $12 $"), Some(12));
    }

    #[test]
    fn wsdl_locations_are_cut_out() {
        let w = wsdl_template("<d><soap:address location=\"http://x:1/EchoProxy\"/><soap12:address location='y'/></d>");
        assert_eq!(
            w.render("U"),
            "<d><soap:address location=\"U\"/><soap12:address location='U'/></d>"
        );
    }
}
