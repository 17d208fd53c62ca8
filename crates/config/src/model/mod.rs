//! The typed model of Synapse artifacts. It keeps what the XML says, with locations; it does not decide what
//! the configuration means at run time (that is the mediation crate's compile step).

mod stores;
pub use stores::*;

use crate::diag::Location;
pub use crate::parse::mediators::conditional_router::{ConditionalRoute, ConditionalRouter};
pub use crate::parse::mediators::evaluator::{Condition, ConditionSource, UriPart};
pub use crate::parse::mediators::rewrite::{Rewrite, RewriteAction, RewriteKind, RewriteRule};
use std::sync::Arc;

pub const SYNAPSE_NS: &str = "http://ws.apache.org/ns/synapse";

/// Namespace declarations in scope at an element: (prefix, uri), prefix "" for the default namespace.
pub type Namespaces = Arc<Vec<(String, String)>>;

/// Everything loaded from one PATH.
#[derive(Clone, Debug, Default)]
pub struct Config {
    pub proxies: Vec<Proxy>,
    /// REST APIs (`<api>`).
    pub apis: Vec<Api>,
    pub sequences: Vec<NamedSequence>,
    pub endpoints: Vec<Endpoint>,
    pub local_entries: Vec<LocalEntry>,
    /// Registry resources (`conf:` / `gov:`) from Carbon Applications.
    pub resources: Vec<Resource>,
    /// Sequence templates (`<template>` with a `<sequence>`).
    pub templates: Vec<Template>,
    /// Endpoint templates (`<template>` with an `<endpoint>`).
    pub endpoint_templates: Vec<EndpointTemplate>,
    /// Where Synapse would also look up a key that names nothing here, which Sluice does not read
    /// yet: a `<registry>` or `<import>` (the element and its place).
    pub key_sources: Vec<(String, Location)>,
    /// `<import>`s of Synapse template libraries.
    pub imports: Vec<Import>,
    /// `<registry>`s over a folder (`root` a `file:` URL), read when the configuration loads.
    pub registries: Vec<RegistryRoot>,
    /// WSO2 MI's own `<registry>` (MicroIntegratorRegistry, or the older WSO2Registry): its
    /// folder (`RegRoot`, else `file:registry` under the home), read in MI's layout (`config`
    /// for `conf:` keys, `governance` for `gov:`).
    pub mi_registries: Vec<RegistryRoot>,
    /// Where relative `file:` paths are read from (SYNAPSE_HOME, MI_HOME).
    pub home: std::path::PathBuf,
    /// MI's `HOME/conf/file.properties`, for `get-property('file', KEY)`: its values, or why it
    /// could not be read (`None`: there is none).
    pub file_properties: Option<Result<Vec<(String, String)>, String>>,
    /// `<priorityExecutor>`s, for `enqueue`.
    pub executors: Vec<PriorityExecutor>,
    /// `<messageStore>`s, for `store` and the message processors.
    pub stores: Vec<MessageStore>,
    /// `<messageProcessor>`s.
    pub processors: Vec<MessageProcessor>,
    /// The Carbon Applications read, with the artifacts each holds (the management API lists them).
    pub cars: Vec<Car>,
}

impl Config {
    /// Whether all it holds is `<registry>`s: Synapse then reads its configuration from the
    /// registry ([`crate::load`]).
    pub fn only_registries(&self) -> bool {
        !self.registries.is_empty()
            && self.proxies.is_empty()
            && self.apis.is_empty()
            && self.sequences.is_empty()
            && self.endpoints.is_empty()
            && self.local_entries.is_empty()
            && self.templates.is_empty()
            && self.endpoint_templates.is_empty()
            && self.imports.is_empty()
            && self.stores.is_empty()
            && self.processors.is_empty()
            && self.executors.is_empty()
    }
}

/// A Carbon Application: its name and version (`artifacts.xml`), and each artifact it deploys as
/// (name, type without its `synapse/` prefix: `proxy-service`, `api`, ...).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Car {
    pub name: String,
    pub version: String,
    pub artifacts: Vec<(String, String)>,
}

/// `<priorityExecutor name>`: how many runs of enqueued sequences go at once, and the queues
/// (one a priority) where the others wait.
#[derive(Clone, Debug)]
pub struct PriorityExecutor {
    pub name: String,
    /// By priority, highest first.
    pub queues: Vec<ExecutorQueue>,
    /// `<threads core max>`: runs that start at once, and at most (past `core`, only when the
    /// message's queue is full).
    pub core: usize,
    pub max: usize,
    pub loc: Location,
}

/// One `<queue priority size>` of a [`PriorityExecutor`]; no size when the queues are not fixed.
#[derive(Clone, Debug)]
pub struct ExecutorQueue {
    pub priority: i64,
    pub size: Option<usize>,
}

/// `<enqueue executor priority sequence>` (priority 1 when not given, as Synapse).
#[derive(Clone, Debug)]
pub struct Enqueue {
    pub executor: String,
    pub priority: i64,
    pub sequence: String,
}

/// A Synapse `<registry>` whose `root` parameter is a `file:` URL: every file below it is a
/// resource, its key the path below the root (`transform/t.xslt`).
#[derive(Clone, Debug)]
pub struct RegistryRoot {
    /// The `root` parameter as written.
    pub root: String,
    pub loc: Location,
}

/// `<import name package>`: a Synapse template library whose templates are named
/// `PACKAGE.NAME` ([`crate::library`]).
#[derive(Clone, Debug)]
pub struct Import {
    pub name: String,
    pub package: String,
    pub loc: Location,
}

/// A `<template>` holding an `<endpoint>`: an endpoint written once with `$param` values, made
/// concrete by each `<endpoint template="..">` that names it ([`crate::parse::instantiate_endpoint`]).
/// As in Synapse, a parameter is put in where it stands as a whole attribute value or as the whole
/// text of an element; anything else is left as written.
#[derive(Clone, Debug)]
pub struct EndpointTemplate {
    pub name: String,
    pub loc: Location,
    /// The declared parameters; `name` and `uri` are always among them.
    pub params: Vec<String>,
    /// The `<endpoint>` element's text as written in its file.
    pub source: Arc<str>,
    /// Where that text starts.
    pub source_loc: Location,
    /// Namespace declarations in scope at the `<endpoint>`.
    pub namespaces: Vec<(String, String)>,
    /// Where a declared `$param` stands in `source`: the byte range of the raw value, the parameter,
    /// and whether it is an attribute value (else element text), for escaping.
    pub slots: Vec<(std::ops::Range<usize>, String, bool)>,
}

/// `<clone>`: each `<target>` gets a copy of the message, run through its sequence or sent to its
/// endpoint (or `to` address).
#[derive(Clone, Debug)]
pub struct CloneMediator {
    pub id: Option<String>,
    pub targets: Vec<CloneTarget>,
    /// The copies go through their targets one after another (`sequential="true"`), not at once.
    pub sequential: bool,
    /// The original goes on after the clone (`continueParent="true"`).
    pub continue_parent: bool,
}

#[derive(Clone, Debug)]
pub struct CloneTarget {
    pub loc: Location,
    /// The copy's WS-Addressing To and SOAP action.
    pub to: Option<String>,
    pub soap_action: Option<String>,
    pub sequence: Option<SequenceRef>,
    pub endpoint: Option<EndpointRef>,
}

/// `<iterate expression>` with one `<target>`: each selected element becomes the payload of a new
/// message, or with `preservePayload` is put back into a copy of the whole message.
#[derive(Clone, Debug)]
pub struct IterateMediator {
    pub id: Option<String>,
    pub expression: ExprSrc,
    pub target: CloneTarget,
    /// Each part goes into a copy of the whole message (the parts taken out), under the first
    /// node `attach_path` selects (default `.`: the envelope), instead of alone in the Body.
    pub preserve_payload: bool,
    pub attach_path: Option<ExprSrc>,
    /// The parts go through the target one after another, not at once.
    pub sequential: bool,
    /// The original goes on after the iterate (`continueParent="true"`).
    pub continue_parent: bool,
}

/// `<aggregate>`: `completeCondition` (`messageCount min max`, `timeout`) and `onComplete`
/// (`expression`, `enclosingElementProperty`, its mediators).
#[derive(Clone, Debug)]
pub struct Aggregate {
    pub id: Option<String>,
    /// `<correlateOn expression>`: which messages this aggregate gathers.
    pub correlate: Option<ExprSrc>,
    pub max: Option<ValueSrc>,
    pub min: Option<ValueSrc>,
    pub timeout_secs: Option<f64>,
    pub expression: ExprSrc,
    pub enclosing: Option<String>,
    pub on_complete: Sequence,
    /// `<onComplete sequence="KEY">`: the named sequence runs on the merged message instead.
    pub on_complete_key: Option<String>,
}

/// `<template name>`: a sequence with parameters, run by `<call-template>`.
#[derive(Clone, Debug)]
pub struct Template {
    pub name: String,
    pub loc: Location,
    pub params: Vec<TemplateParam>,
    pub sequence: Sequence,
    /// Something in it was already reported as an error or unsupported: it must not be deployed.
    pub rejected: bool,
}

/// `<parameter name [defaultValue] [isMandatory]>`.
#[derive(Clone, Debug)]
pub struct TemplateParam {
    pub name: String,
    pub default: Option<String>,
    pub mandatory: bool,
}

#[derive(Clone, Debug)]
pub struct Proxy {
    pub name: String,
    pub loc: Location,
    pub start_on_load: bool,
    pub transports: Vec<String>,
    pub target: Target,
    pub publish_wsdl: Option<PublishWsdl>,
    /// `<enableSec/>` and `<policy key>`: WS-Security.
    pub security: Option<ProxySecurity>,
    /// Something in it was already reported as an error or unsupported: it must not be deployed.
    pub rejected: bool,
}

/// A proxy's `<enableSec/>` and `<policy key="..."/>`s (Synapse engages Rampart with the first).
#[derive(Clone, Debug)]
pub struct ProxySecurity {
    /// Where `<enableSec/>` is, when the proxy has it.
    pub enabled: Option<Location>,
    pub policies: Vec<PolicyRef>,
}

/// A proxy's `<policy key="..." type="in|out"/>`.
#[derive(Clone, Debug)]
pub struct PolicyRef {
    /// Empty when the element has none.
    pub key: String,
    /// `type`: the flow it is for, when not both.
    pub flow: Option<String>,
    pub loc: Location,
}

/// `<api name context>`: a REST API, its resources tried in order.
#[derive(Clone, Debug)]
pub struct Api {
    pub name: String,
    pub loc: Location,
    /// The context with its version applied (`version-type="context"` fills `{version}`, `"url"`
    /// appends `/version`): the path prefix the API answers under.
    pub context: String,
    pub resources: Vec<ApiResource>,
    /// `hostname` and `port`: the API takes only requests whose Host header names them.
    pub host: Option<String>,
    pub port: Option<u16>,
    /// Something in it was already reported as an error or unsupported: it must not be deployed.
    pub rejected: bool,
}

/// `<resource>` of an API.
#[derive(Clone, Debug)]
pub struct ApiResource {
    pub loc: Location,
    /// HTTP methods in upper case; empty: every method.
    pub methods: Vec<String>,
    pub pattern: ResourcePattern,
    pub in_sequence: Option<SequenceRef>,
    pub out_sequence: Option<SequenceRef>,
    pub fault_sequence: Option<SequenceRef>,
}

/// Which request paths (after the API's context) a resource takes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ResourcePattern {
    /// Neither attribute: any path.
    Any,
    /// `uri-template="/orders/{id}"`.
    UriTemplate(String),
    /// `url-mapping="/orders/*"`, `"*.jsp"` or an exact path.
    UrlMapping(String),
}

#[derive(Clone, Debug, Default)]
pub struct Target {
    pub endpoint: Option<EndpointRef>,
    pub in_sequence: Option<SequenceRef>,
    pub out_sequence: Option<SequenceRef>,
    pub fault_sequence: Option<SequenceRef>,
}

#[derive(Clone, Debug)]
pub struct PublishWsdl {
    pub loc: Location,
    pub source: WsdlSource,
}

#[derive(Clone, Debug)]
pub enum WsdlSource {
    /// `key="..."`: a local entry.
    Key(String),
    /// The WSDL inline, serialised with its in-scope namespaces.
    Inline(String),
    /// `uri="..."`: not fetched (no network at load).
    Uri(String),
}

#[derive(Clone, Debug)]
pub enum SequenceRef {
    Key { key: String, loc: Location },
    Inline(Sequence),
}

#[derive(Clone, Debug)]
pub enum EndpointRef {
    Key { key: String, loc: Location },
    Inline(Box<Endpoint>),
}

#[derive(Clone, Debug)]
pub struct Sequence {
    pub loc: Location,
    pub mediators: Vec<Mediator>,
    pub on_error: Option<String>,
}

#[derive(Clone, Debug)]
pub struct NamedSequence {
    pub name: String,
    pub sequence: Sequence,
    /// Something in it was already reported as an error or unsupported: it must not be deployed.
    pub rejected: bool,
}

#[derive(Clone, Debug)]
pub struct Endpoint {
    pub name: Option<String>,
    pub loc: Location,
    pub kind: EndpointKind,
    /// `<property name value>` children: the values of an `<http>` endpoint's `uri.var.*` and
    /// `query.param.*` template variables (others are reported as not applied).
    pub properties: Vec<EndpointProperty>,
}

#[derive(Clone, Debug)]
pub struct EndpointProperty {
    pub name: String,
    /// The `value` ("" with an `expression`).
    pub value: String,
    /// `expression`: evaluated on each message sent.
    pub expression: Option<ExprSrc>,
    /// `scope`: default, transport (a header of the request sent), axis2, axis2-client.
    pub scope: Scope,
    pub loc: Location,
}

#[derive(Clone, Debug)]
pub enum EndpointKind {
    Address(Box<AddressEndpoint>),
    /// `<endpoint key="..."/>` nested inside another endpoint definition.
    Indirect(String),
    /// `<endpoint key-expression="..."/>`: the endpoint each message names (Synapse's
    /// ResolvingEndpoint).
    ByKey(ExprSrc),
    /// `<failover>`: the first ready child; when a send fails, the next ready one. `dynamic` (the
    /// default) goes back to the first child once it is ready again; static stays on the one that
    /// worked.
    Failover {
        dynamic: bool,
        children: Vec<Endpoint>,
    },
    /// `<loadbalance>` with the round-robin algorithm: the next ready child in turn; when `failover`
    /// (the default), a failed send goes to the next ready one. `weighted`: Synapse's
    /// `WeightedRoundRobin`, each child its `loadbalance.weight` property's turns in a row.
    Loadbalance {
        failover: bool,
        children: Vec<Endpoint>,
        weighted: bool,
        /// `<session>` beside it: a client stays on the child it was first sent to.
        session: Option<Session>,
    },
    /// `<recipientlist>`: a copy of the message to every child (Synapse's RecipientListEndpoint,
    /// for `send`); `list`: `<endpoints value>`, comma-separated addresses (an expression in braces).
    RecipientList {
        children: Vec<Endpoint>,
        list: Option<ValueSrc>,
    },
    /// `<endpoint template="..">`: the named endpoint template with these parameter values (the
    /// endpoint's `name` and `uri` attributes among them), instantiated when the plan is compiled.
    Template {
        template: String,
        args: Vec<(String, String)>,
    },
    /// Already reported as an error or unsupported; kept so references to it resolve.
    Rejected,
}

#[derive(Clone, Debug)]
pub struct AddressEndpoint {
    /// The URI, or for an `<http>` endpoint its `uri-template`.
    pub uri: String,
    pub uri_loc: Location,
    pub format: Option<String>,
    /// Which element it is, and so what `uri` holds.
    pub kind: AddressKind,
    /// `<http method>`, upper case; None keeps the request's method.
    pub method: Option<String>,
    pub timeout: Option<EndpointTimeout>,
    pub suspend_on_failure: SuspendOnFailure,
    pub mark_for_suspension: MarkForSuspension,
    /// `<retryConfig>`: which error codes let a failover or load-balance parent try another child.
    pub retry: RetryConfig,
    /// A `<wsdl>` endpoint: which port of which service (`uri` is then the WSDL's, empty when the
    /// WSDL is written inside).
    pub wsdl: Option<Box<WsdlPort>>,
    /// `<enableAddressing [version]>`: the request leaves with WS-Addressing headers.
    pub addressing: Option<WsaVersion>,
    /// `<enableSec policy | inboundPolicy outboundPolicy>`: WS-Security towards the back-end.
    pub security: Option<EndpointSecurity>,
}

/// An endpoint's `<enableSec>` (Synapse's `policy` wins over the two per flow): the policy the
/// request is secured with, and the one the response is checked with. A key left out: that flow
/// is not secured (Rampart finds no policy for it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EndpointSecurity {
    pub outbound: Option<String>,
    pub inbound: Option<String>,
    pub loc: Location,
}

/// The WS-Addressing an endpoint writes: 1.0 (`final`, the default) or the 2004/08 submission.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WsaVersion {
    Final,
    Submission,
}

impl AddressEndpoint {
    /// An `<address uri>` with nothing else set.
    pub fn plain(uri: String, uri_loc: Location) -> AddressEndpoint {
        AddressEndpoint {
            uri,
            uri_loc,
            format: None,
            kind: AddressKind::Address,
            method: None,
            timeout: None,
            suspend_on_failure: SuspendOnFailure::default(),
            mark_for_suspension: MarkForSuspension::default(),
            retry: RetryConfig::default(),
            wsdl: None,
            addressing: None,
            security: None,
        }
    }
}

/// Where a `<wsdl>` endpoint's address comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WsdlPort {
    pub service: Option<String>,
    pub port: Option<String>,
    /// The WSDL written inside the element.
    pub inline: Option<String>,
}

/// The endpoint elements that send to one address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddressKind {
    /// `<address uri>`.
    Address,
    /// `<http uri-template>`: `uri` is an RFC 6570 template over the `uri.var.*` and
    /// `query.param.*` properties.
    Http,
    /// `<default>`: the message's To address (`uri` is empty).
    Default,
    /// `<wsdl uri service port>`: the address the WSDL gives the port.
    Wsdl,
    /// A load-balance `<member>`: `uri` is `scheme://host:port`, the path the message's.
    Member,
}

impl AddressKind {
    /// The element's name.
    pub fn element(self) -> &'static str {
        match self {
            AddressKind::Address => "address",
            AddressKind::Http => "http",
            AddressKind::Default => "default",
            AddressKind::Wsdl => "wsdl",
            AddressKind::Member => "member",
        }
    }
}

/// A load-balance endpoint's session affinity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Session {
    pub kind: SessionKind,
    /// `sessionTimeout`: a session unused this long is forgotten.
    pub timeout_ms: Option<u64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SessionKind {
    /// `http`: the cookies the child's responses set (`Set-Cookie`), sent back by the client.
    Http,
    /// `simpleClientSession`: the client's `syn:ClientID` SOAP header.
    ClientId,
}

/// `<retryConfig>`: a failure with a code in `disabled` is not sent to another child; when `enabled`
/// is not empty, only its codes are.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RetryConfig {
    pub disabled: Vec<i64>,
    pub enabled: Vec<i64>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EndpointTimeout {
    pub loc: Location,
    /// Milliseconds, signed as Synapse reads them (0 and below set no timeout of the endpoint's
    /// own); `None` when `<duration>` is absent.
    pub duration_ms: Option<i64>,
    /// MI's `<duration>{expression}</duration>`: milliseconds computed for each message.
    pub dynamic: Option<ExprSrc>,
    /// `None` when `<responseAction>` is absent.
    pub action: Option<TimeoutAction>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeoutAction {
    Fault,
    Discard,
    Never,
}

/// `<suspendOnFailure>`. Numbers are kept signed as Synapse reads them: WSO2 tooling writes
/// `<initialDuration>-1</initialDuration>` and `<progressionFactor>-1</progressionFactor>`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SuspendOnFailure {
    pub error_codes: Vec<i64>,
    pub initial_duration_ms: Option<i64>,
    pub progression_factor: Option<f64>,
    pub maximum_duration_ms: Option<i64>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct MarkForSuspension {
    pub error_codes: Vec<i64>,
    pub retries_before_suspension: Option<i64>,
    pub retry_delay_ms: Option<i64>,
}

#[derive(Clone, Debug)]
pub struct LocalEntry {
    pub key: String,
    pub loc: Location,
    pub value: LocalEntryValue,
    /// A Synapse `<sequence>` or `<endpoint>` the entry holds, read as one: a key that names the
    /// entry names it (Synapse's `getSequence` and `getEndpoint` look in local entries too).
    pub artifact: Option<EntryArtifact>,
}

/// What a local entry holds when it is a sequence or an endpoint, named by the entry's key.
#[derive(Clone, Debug)]
pub enum EntryArtifact {
    Sequence(NamedSequence),
    /// [`EndpointKind::Rejected`] when it had an error or an unsupported feature.
    Endpoint(Endpoint),
}

#[derive(Clone, Debug)]
pub enum LocalEntryValue {
    Text(String),
    /// An inline XML element, serialised with every in-scope namespace declared on its root.
    Xml {
        root: String,
        text: String,
    },
    /// `src="..."`: a URL, not fetched (no network at load).
    Src(String),
}

#[derive(Clone, Debug)]
pub struct Resource {
    /// `conf:/path/name` or `gov:/path/name`.
    pub key: String,
    pub loc: Location,
    pub bytes: Arc<[u8]>,
    /// Its properties (MI keeps them in `NAME.properties` beside it), which
    /// `get-property('registry', 'KEY@NAME')` reads.
    pub properties: Vec<(String, String)>,
}

/// An expression as written, with what is needed to compile it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExprSrc {
    pub text: String,
    pub ns: Namespaces,
    pub loc: Location,
}

#[derive(Clone, Debug)]
pub enum ValueSrc {
    Literal(String),
    Expr(ExprSrc),
}

#[derive(Clone, Debug)]
pub struct Mediator {
    /// The element name as written (`filter`, `send` ...).
    pub element: String,
    pub loc: Location,
    pub kind: MediatorKind,
}

#[derive(Clone, Debug)]
pub enum MediatorKind {
    Send {
        endpoint: Option<EndpointRef>,
        /// `receive="SEQ"`: the sequence the response goes through, instead of the out-sequence.
        receive: Option<SequenceRef>,
    },
    /// `<call>`: the message goes to the endpoint (or its `To`), and mediation goes on with the
    /// response after this mediator.
    Call {
        endpoint: Option<EndpointRef>,
        /// MI's `<source>` and `<target>`: what is sent instead of the body, and where the
        /// response goes instead of the body.
        io: Option<Box<CallIo>>,
    },
    Respond,
    /// `<clone>`: a copy of the message for each target.
    Clone(CloneMediator),
    /// `<aggregate>`: gathers the responses of the copies a clone made.
    Aggregate(Aggregate),
    /// `<iterate expression>`: a message for each node the expression selects, through the target.
    Iterate(IterateMediator),
    /// `<foreach expression>`: each node the expression selects, in turn the payload of the
    /// message, through the sequence; the results replace them.
    Foreach(Foreach),
    /// MI 4.4's `<foreach collection>`.
    ForeachCollection(ForeachCollection),
    /// MI 4.4's `<scatter-gather>`.
    ScatterGather(ScatterGather),
    /// MI's `<jsontransform schema>` with its `<property name value>`s.
    JsonTransform(JsonTransform),
    /// `<call-template target>`: the template's sequence, with `<with-param name value>` (a value
    /// in braces is an expression; `passed`: one in double braces, an expression the template
    /// evaluates wherever it reads the parameter).
    CallTemplate {
        target: String,
        params: Vec<(String, ValueSrc)>,
        passed: Vec<(String, ExprSrc)>,
    },
    /// `<loopback>`: the message turns into a response and goes through the out-sequence, the rest of
    /// the in-sequence skipped.
    Loopback,
    Drop,
    Log(Log),
    Property(Property),
    Header(Header),
    Filter(Filter),
    /// `<in>` (`response` false) or `<out>`: its mediators run only on that path.
    Direction {
        response: bool,
        body: Sequence,
    },
    Switch(Switch),
    Callout(Callout),
    Cache(Cache),
    /// `<throttle>`: concurrency and per-caller rate limits, `onAccept` / `onReject`.
    Throttle(Throttle),
    /// `<sequence key="..."/>`; a key in braces is an expression naming the sequence per
    /// message (`dynamic`, the text inside the braces).
    SequenceRef {
        key: String,
        dynamic: Option<ExprSrc>,
    },
    MakeFault(MakeFault),
    /// `<xslt>` (result replaces the source node) or `<fastXSLT>` (whole envelope in, bytes out).
    Xslt(Xslt),
    /// `<payloadFactory>` (media-type xml, json or text).
    PayloadFactory(PayloadFactory),
    Enrich(Enrich),
    Validate(Validate),
    /// `<rewrite>`: a URI rewritten part by part.
    Rewrite(Rewrite),
    /// `<conditionalRouter>`: routes by condition to targets.
    ConditionalRouter(ConditionalRouter),
    /// `<enqueue executor priority sequence>`: the sequence runs on the message when the priority
    /// executor lets it.
    Enqueue(Enqueue),
    /// MI 4.4's `<variable>`: sets or removes a variable of the message.
    Variable(Variable),
    /// `<script language>`: JavaScript run on the message.
    Script(Script),
    /// `<store messageStore>`: a copy of the message into a message store.
    Store(Store),
    /// MI's `<datamapper>`.
    Datamapper(Datamapper),
}

/// `<script language key function>`: the source inline or a key's, with `<include key>`s.
#[derive(Clone, Debug)]
pub struct Script {
    /// `js`, `graalJs`, `rhinoJs` or `nashornJs` (the parser refuses the rest).
    pub language: String,
    pub source: ScriptSource,
    /// The included sources' keys, run after a keyed source (Synapse ignores them inline).
    pub includes: Vec<String>,
}

#[derive(Clone, Debug)]
pub enum ScriptSource {
    /// The element's text: run as it is for each message.
    Inline(String),
    /// A local entry or registry resource, and the function called in it (`mediate` by default).
    Key { key: String, function: String },
}

/// `<variable name action value|expression type>` (MI 4.4).
#[derive(Clone, Debug)]
pub struct Variable {
    pub name: String,
    /// `None`: `action="remove"`.
    pub set: Option<(ValueSrc, VariableType)>,
}

/// What a variable holds (MI's `type`; `INT`, `SHORT`, `BYTE` and `FLOAT` from the 4.4 previews).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VariableType {
    String,
    Boolean,
    Integer,
    Long,
    Double,
    Json,
    Xml,
}

#[derive(Clone, Debug)]
pub enum PayloadFormat {
    /// The format's element, serialised with the namespaces it uses (an unprefixed element without
    /// `xmlns=""` is in the Synapse namespace, as in Synapse).
    Inline(String),
    /// `<format key="..."/>`: a local entry or registry resource.
    Key(String),
}

#[derive(Clone, Debug)]
pub struct PayloadFactory {
    /// `media-type`: what the format is and the result becomes.
    pub media: PayloadMedia,
    pub format: PayloadFormat,
    pub format_loc: Location,
    /// `$1`, `$2`, ... in order.
    pub args: Vec<PayloadArgSrc>,
}

/// A payloadFactory's `media-type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PayloadMedia {
    Xml,
    /// The format is JSON text; the result is the message, `application/json`.
    Json,
    /// The format is plain text; the result is the message, `text/plain`.
    Text,
}

/// A payloadFactory argument: `value="..."` or `expression="..."`.
#[derive(Clone, Debug)]
pub struct PayloadArgSrc {
    pub value: ValueSrc,
    /// `evaluator="json"`: the expression is a JsonPath over the JSON body (else XPath).
    pub json_path: bool,
    /// `literal="true"`: the value goes in as a string, never as JSON or XML.
    pub literal: bool,
}

#[derive(Clone, Debug)]
pub enum EnrichSourceKind {
    /// `type="custom" xpath="..."`.
    Custom(ExprSrc),
    Envelope,
    /// The first element of the SOAP Body.
    Body,
    Property(String),
    /// `type="inline"` with an element (serialised with the namespaces it uses).
    InlineXml(String),
    /// `type="inline"` with text only.
    InlineText(String),
    /// `type="inline" key="..."`: a local entry.
    InlineKey(String),
}

#[derive(Clone, Debug)]
pub struct EnrichSource {
    pub kind: EnrichSourceKind,
    pub clone: bool,
    pub loc: Location,
}

#[derive(Clone, Debug)]
pub enum EnrichTargetKind {
    Custom(ExprSrc),
    Envelope,
    Body,
    Property(String),
    /// MI's `type="key"`: the member a `json-eval` path ends at renamed to the source's text.
    Key(ExprSrc),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EnrichAction {
    Replace,
    Child,
    Sibling,
    /// MI's `remove`: what the source's `json-eval` paths select is removed from the JSON body
    /// or property.
    Remove,
}

#[derive(Clone, Debug)]
pub struct EnrichTarget {
    pub kind: EnrichTargetKind,
    pub action: EnrichAction,
    pub loc: Location,
}

/// `<foreach expression [sequence] [id] [continueLoopOnFailure]>` (Synapse's first form).
#[derive(Clone, Debug)]
pub struct Foreach {
    pub id: Option<String>,
    pub expression: ExprSrc,
    /// The `sequence` key, or the inline `<sequence>`.
    pub sequence: SequenceRef,
    pub continue_on_failure: bool,
}

/// MI 4.4's `<foreach collection>`: each element of the collection (a JSON array, or the nodes of
/// an XPath) through the sequence as the payload of a copy of the message; the payloads they end
/// with replace the elements, or go into a variable.
#[derive(Clone, Debug)]
pub struct ForeachCollection {
    pub collection: ExprSrc,
    /// `parallel-execution` (default true).
    pub parallel: bool,
    /// `counter-variable`: the element's index (from 0) in each copy (sequential only).
    pub counter: Option<String>,
    pub output: BranchOutput,
    /// `continue-without-aggregation="true"`: what the copies end with is not gathered.
    pub without_aggregation: bool,
    pub sequence: Sequence,
}

/// MI 4.4's `<scatter-gather>`: a copy of the message through each `<sequence>`; the aggregation
/// expression's value on each copy's end, gathered into the body or a variable.
#[derive(Clone, Debug)]
pub struct ScatterGather {
    /// `parallel-execution` (default true).
    pub parallel: bool,
    /// `None`: into the body; else the variable.
    pub variable: Option<String>,
    /// The result is XML (an element named `enclosing`), else a JSON array.
    pub xml: bool,
    pub enclosing: String,
    /// `<aggregation expression>`.
    pub expression: ExprSrc,
    /// `<aggregation condition>`: a copy counts only when it is true.
    pub condition: Option<ExprSrc>,
    /// `<aggregation timeout>` in milliseconds (0: none).
    pub timeout_ms: u64,
    /// `<aggregation max-messages>`: at most this many copies count.
    pub max: Option<usize>,
    pub sequences: Vec<Sequence>,
}

/// MI's `<jsontransform>`: the payload written as JSON with these `synapse.commons.json.*`
/// settings, and/or checked and typed by a JSON Schema.
#[derive(Clone, Debug)]
pub struct JsonTransform {
    /// The schema's key (`schema`).
    pub schema: Option<(String, Location)>,
    /// `<property name value>`s, with where each is.
    pub properties: Vec<(String, String, Location)>,
}

/// Where MI 4.4's `foreach` and `scatter-gather` put what their branches end with.
#[derive(Clone, Debug)]
pub enum BranchOutput {
    /// In place: the collection's elements (foreach), or the body (scatter-gather).
    Original,
    /// A variable: a JSON array, or an XML element named `enclosing` holding them.
    Variable {
        name: String,
        xml: bool,
        enclosing: String,
    },
}

/// `<cache>` (MI 4.x): on the request path, a response cached for an identical request answers it
/// (through `on_hit` when there is one); on the response path (`collector`), the response is
/// cached for the request that caused it.
#[derive(Clone, Debug)]
pub struct Cache {
    pub collector: bool,
    /// How long a response stays cached, in seconds.
    pub timeout_secs: u64,
    /// Responses larger than this (bytes) are not cached.
    pub max_message_size: Option<usize>,
    /// `<implementation maxSize>`: the most responses kept.
    pub max_size: usize,
    pub on_hit: Option<SequenceRef>,
    /// `<protocol type="http">`: the request methods cached (`None`: all), the response codes
    /// cached (a Java regex over the status; `None`: all), and which request headers make the
    /// hash (all but `exclude`, or only `include` when it is set).
    pub methods: Option<Vec<String>>,
    pub response_codes: Option<String>,
    pub headers_exclude: Vec<String>,
    pub headers_include: Vec<String>,
    /// `<protocol><enableCacheControl>`: the Cache-Control of requests and responses is obeyed.
    pub cache_control: bool,
    /// `<protocol><includeAgeHeader>`: a cached answer carries `Age`.
    pub age_header: bool,
    pub loc: Location,
}

/// `<callout>` (Synapse's blocking call with its own request and where the answer goes): the
/// request is a copy of the message, or with `source` a new envelope holding that node (or the
/// XML in that property); the response's payload replaces the `target` node, goes into the
/// `target` property, or (no target) becomes the message's body. Mediation goes on after it.
#[derive(Clone, Debug)]
pub struct Callout {
    /// `serviceURL` (as an inline address endpoint) or the `<endpoint>` child; `None`: the
    /// message's To address.
    pub endpoint: Option<EndpointRef>,
    pub action: Option<String>,
    pub source: Option<CalloutPart>,
    pub target: Option<CalloutPart>,
}

/// A callout's `<source>` or `<target>`.
#[derive(Clone, Debug)]
pub enum CalloutPart {
    XPath(ExprSrc),
    Key(String),
}

/// A `call`'s `<source>` and `<target>` (WSO2 MI).
#[derive(Clone, Debug)]
pub struct CallIo {
    /// `<source type="custom|property|inline|body">`: the payload sent instead of the body
    /// (`None`: no `<source>`).
    pub source: Option<EnrichSource>,
    /// `<source contentType>`: the Content-Type the request goes out with.
    pub content_type: Option<String>,
    /// `<target type="property">NAME</target>`: the response payload goes into this property
    /// (`None`: the response replaces the body). With a source other than the body, or no
    /// `<source>`, the message is then the one from before the call again, as in MI.
    pub target: Option<String>,
}

#[derive(Clone, Debug)]
pub struct Enrich {
    pub source: EnrichSource,
    pub target: EnrichTarget,
}

#[derive(Clone, Debug)]
pub struct Validate {
    /// XPath to the element validated, evaluated with the SOAP Envelope as context node (default:
    /// the first element of the SOAP Body).
    pub source: Option<ExprSrc>,
    /// `<schema key="..."/>`, with where each is written.
    pub schemas: Vec<(String, Location)>,
    /// `<schema key="{expression}"/>` (the only schema): the key each message gives.
    pub dynamic_key: Option<ExprSrc>,
    /// `<resource location key>`: the document an `xs:import` / `xs:include` `schemaLocation`
    /// names, read from a key (location, key, where it is written).
    pub resources: Vec<(String, String, Location)>,
    pub on_fail: Sequence,
}

#[derive(Clone, Debug)]
pub struct Xslt {
    /// A local entry, or a `conf:` / `gov:` registry resource.
    pub key: String,
    /// `key="{expression}"`: the key each message gives.
    pub dynamic_key: Option<ExprSrc>,
    /// XPath to the node transformed (default: the first child of the SOAP Body).
    pub source: Option<ExprSrc>,
    /// `<property name value|expression>` children: stylesheet parameters.
    pub params: Vec<(String, ValueSrc)>,
    /// `<fastXSLT>`.
    pub fast: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogLevel {
    Simple,
    Headers,
    Full,
    Custom,
}

#[derive(Clone, Debug)]
pub struct Log {
    pub level: LogLevel,
    pub category: LogCategory,
    pub separator: String,
    pub properties: Vec<(String, ValueSrc)>,
    /// MI 4.4's `<message>` template: text and `${...}` expressions in order (`None`: no template).
    pub message: Option<Vec<ValueSrc>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogCategory {
    Trace,
    Debug,
    Info,
    Warn,
    Error,
    Fatal,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scope {
    Default,
    Transport,
    Axis2,
    Axis2Client,
    Operation,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PropertyType {
    String,
    Integer,
    Boolean,
    Long,
    Double,
    Float,
    Short,
    Om,
    /// MI's JSON: a JSON text, stored as its compact form.
    Json,
}

#[derive(Clone, Debug)]
pub enum Action {
    Set(ValueSrc),
    Remove,
}

#[derive(Clone, Debug)]
pub struct Property {
    pub name: String,
    /// MI's `name="{expression}"`: the name each message gives.
    pub dynamic_name: Option<ExprSrc>,
    pub scope: Scope,
    pub ty: PropertyType,
    pub action: Action,
}

#[derive(Clone, Debug)]
pub struct Header {
    /// As written: `To`, `Content-Type`, or `prefix:local` for a SOAP header; empty with `inline`.
    pub name: String,
    /// Synapse's header with inline XML and no name: these elements (serialised, declaring the
    /// namespaces they use) are added to the SOAP Header; `action` is then `Set` and unused.
    pub inline: Option<String>,
    /// The namespace of a prefixed name, resolved from the element's in-scope declarations.
    pub namespace: Option<String>,
    pub scope: HeaderScope,
    pub action: Action,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeaderScope {
    /// SOAP / WS-Addressing headers.
    Default,
    Transport,
}

#[derive(Clone, Debug)]
pub enum FilterCond {
    /// `source` + `regex`: the string value of source must match the whole regex (Java `matches()`).
    Regex {
        source: ExprSrc,
        regex: String,
        regex_loc: Location,
    },
    /// `xpath`: the boolean value of the expression.
    XPath(ExprSrc),
}

#[derive(Clone, Debug)]
pub struct Filter {
    pub cond: FilterCond,
    pub then: Sequence,
    pub otherwise: Option<Sequence>,
}

#[derive(Clone, Debug)]
pub struct Case {
    pub regex: String,
    pub loc: Location,
    pub sequence: Sequence,
}

#[derive(Clone, Debug)]
pub struct Switch {
    pub source: ExprSrc,
    pub cases: Vec<Case>,
    pub default: Option<Sequence>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultVersion {
    Soap11,
    Soap12,
    Pox,
}

#[derive(Clone, Debug)]
pub struct MakeFault {
    pub version: FaultVersion,
    pub code: Option<FaultCode>,
    pub reason: Option<ValueSrc>,
    pub role: Option<String>,
    pub node: Option<String>,
    pub detail: Option<FaultDetail>,
    /// `response="true"`: the fault is a response (to the client).
    pub response: bool,
}

/// A fault's `<code>`.
#[derive(Clone, Debug)]
pub enum FaultCode {
    /// `value="prefix:local"`: (namespace uri, local name, prefix or "").
    QName(String, String, String),
    /// `expression`: its string value, per message, is the local name of a code in the fault's
    /// SOAP envelope namespace (Synapse's FaultMediator).
    Expr(ExprSrc),
}

#[derive(Clone, Debug)]
pub enum FaultDetail {
    Value(ValueSrc),
    /// Child elements, serialised with their in-scope namespaces.
    Xml(String),
}

/// `<throttle id onAccept onReject>` with its `<policy>` (none on the response path, where it
/// only gives back the concurrency its request took).
#[derive(Clone, Debug)]
pub struct Throttle {
    pub id: String,
    pub policy: Option<ThrottlePolicySrc>,
    pub on_accept: Option<SequenceRef>,
    pub on_reject: Option<SequenceRef>,
    pub loc: Location,
}

#[derive(Clone, Debug)]
pub enum ThrottlePolicySrc {
    /// `<policy key>`: a local entry or registry resource holding the policy.
    Key(String),
    /// The WS-Policy written inside `<policy>`, as text.
    Inline(String),
}
