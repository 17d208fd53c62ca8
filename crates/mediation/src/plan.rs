//! The executable plan: what the configuration compiles to once at load ([`crate::compile`]),
//! immutable and shared by every request. A sequence is a list of [`Step`]s, one per mediator
//! (`crate::mediators`); endpoints are in `crate::endpoints`. The plan types keep their paths here.

use crate::api::ApiPlan;
use sluice_config::Location;
use sluice_expr::{BodyNeed, Expr};
use std::collections::HashMap;
use std::sync::Arc;

pub use crate::endpoints::{Address, EndpointPlan, Format, Group, GroupKind};
pub use crate::mediators::aggregate::AggregatePlan;
pub use crate::mediators::call::{CallSourcePlan, CallStep};
pub use crate::mediators::clone::{ClonePlan, CloneTargetPlan};
pub use crate::mediators::enrich::{EnrichPlan, EnrichSourcePlan, EnrichTargetPlan};
pub use crate::mediators::filter::{Cond, FilterPlan};
pub use crate::mediators::foreach::ForeachPlan;
pub use crate::mediators::header::HeaderPlan;
pub use crate::mediators::iterate::IteratePlan;
pub use crate::mediators::log::LogPlan;
pub use crate::mediators::makefault::{CodePlan, DetailPlan, FaultPlan};
pub use crate::mediators::payload_factory::{PayloadArg, PayloadPlan, Segment};
pub use crate::mediators::property::PropertyPlan;
pub use crate::mediators::switch::SwitchPlan;
pub use crate::mediators::template::{TemplateCall, TemplateStep};
pub use crate::mediators::validate::ValidatePlan;
pub use crate::mediators::xslt::{Sheet, XsltPlan};
pub use crate::mediators::Step;
pub(crate) use crate::mediators::{body_exprs_all, need_of};

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
    /// `<wsdl>` endpoints whose WSDL is read over the network: fetched when Sluice starts
    /// ([`crate::endpoints::LazyWsdl`]).
    pub wsdls: Vec<Arc<crate::endpoints::LazyWsdl>>,
    /// The deployed proxies and APIs, each once, in the configuration's order: the services
    /// requests are counted for ([`ProxyPlan::stats_slot`] is an index here).
    pub services: Vec<Service>,
    /// The named endpoints that compiled (and those local entries hold), by name.
    pub endpoints: crate::endpoints::EndpointsByName,
    /// The named sequences that compiled, by name (the management API lists them).
    pub sequences: Vec<String>,
    /// The Carbon Applications read, for the management API.
    pub cars: Vec<sluice_config::Car>,
    /// The local entries (key, MI's type name) and templates (name, kind), for the management API.
    pub local_entries: Vec<(String, &'static str)>,
    pub templates: Vec<(String, &'static str)>,
    /// The registry resources read (`conf:/...`, `gov:/...`) with their properties, for the
    /// management API.
    pub registry: Vec<RegistryResource>,
    /// The in-memory message stores, by name.
    pub stores: crate::mediators::store::Stores,
    /// The message processors that deployed.
    pub processors: Vec<Arc<crate::processors::ProcessorPlan>>,
}

/// A registry resource as the management API lists it.
#[derive(Debug, Clone)]
pub struct RegistryResource {
    /// `conf:/path/name` or `gov:/path/name`.
    pub key: String,
    pub properties: Vec<(String, String)>,
}

/// A deployed service requests are counted for: a proxy, or an API (all its resources).
#[derive(Debug, Clone)]
pub struct Service {
    pub name: Arc<str>,
    /// The API's context (`/healthcare`); `None` for a proxy.
    pub api_context: Option<String>,
}

#[derive(Debug)]
pub struct ProxyPlan {
    pub name: Arc<str>,
    pub loc: Location,
    pub started: bool,
    /// Serving now: `started` when deployed, then as the management API sets it (a deactivated
    /// proxy answers 503).
    pub active: std::sync::atomic::AtomicBool,
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
    /// Where requests to it are counted: its proxy's or API's index in [`Plan::services`]; `None`
    /// for the main sequence, which MI does not count.
    pub stats_slot: Option<usize>,
    /// WS-Security (`<enableSec/>` with a policy): requests are checked before the in-sequence,
    /// responses secured ([`crate::secured`]).
    pub security: Option<Arc<sluice_security::Secured>>,
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
            active: true.into(),
            in_seq: SeqPlan::empty(),
            out_seq: None,
            fault_seq: None,
            target: None,
            wsdl: None,
            api_resource: true,
            on_http: true,
            on_https: true,
            stats_slot: None,
            security: None,
        }
    }

    /// What the request path must read of the body before the in-sequence runs (what something in
    /// the in-sequence reads), for this request as it arrived ([`SeqPlan::need_for`]). Decided at
    /// load. A fault sequence that reads the body reads it when it runs, from the stream the failed
    /// call did not touch. A REST `text/xml` request ([`crate::rest`]) whose SOAP header is read is
    /// read whole: what MI reads then is the header of its wrapper around the whole body.
    pub fn request_body_need(&self, msg: &crate::message::Message) -> BodyNeed {
        match self.in_seq.need_for(&msg.headers) {
            BodyNeed::Headers if msg.rest.is_rest() => BodyNeed::Full,
            need => need,
        }
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
    /// The `onError` sequence: it runs when a mediator in this one fails (set once the plan is
    /// compiled, since it may refer back to this sequence).
    pub on_error: OnError,
    /// What can decide its expressions on a message's start ([`SeqPlan::head_names`]).
    head_names: Option<sluice_expr::HeadNames>,
    /// A step in it (or in a list it runs) is [`crate::mediators::Mediator::heavy`]: a run of it
    /// leaves the event loop whatever the message's size. Not seen through a sequence key computed
    /// per message.
    pub heavy: bool,
}

/// A sequence's `onError` sequence, once known.
#[derive(Default)]
pub struct OnError(pub(crate) std::sync::OnceLock<Arc<SeqPlan>>);

impl OnError {
    pub fn get(&self) -> Option<&Arc<SeqPlan>> {
        self.0.get()
    }
}

impl std::fmt::Debug for OnError {
    // By name only: the sequences may refer to each other.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.get().and_then(|s| s.name.as_deref()).unwrap_or("-"))
    }
}

impl SeqPlan {
    pub(crate) fn new(name: Option<String>, steps: Steps) -> SeqPlan {
        let mut names = Vec::new();
        let head_names = body_exprs_all(&steps, &mut |e| e.head_names(&mut names))
            .then(|| sluice_expr::HeadNames::new(names));
        SeqPlan {
            name,
            heavy: crate::mediators::heavy(&steps),
            body_need: need_of(&steps, false),
            body_need_json: need_of(&steps, true),
            steps,
            on_error: OnError::default(),
            head_names,
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

    /// The names whose tags can decide [`SeqPlan::decided_by_head`] ([`sluice_expr::HeadNames`]):
    /// `None` when any element's may.
    pub fn head_names(&self) -> Option<&sluice_expr::HeadNames> {
        self.head_names.as_ref()
    }
}

#[derive(Debug)]
pub enum Value {
    Literal(String),
    Expr(Expr),
}

impl Value {
    pub(crate) fn body_need(&self) -> BodyNeed {
        match self {
            Value::Literal(_) => BodyNeed::None,
            Value::Expr(e) => e.body_need(),
        }
    }
}

/// A list of steps, shared so that a continuation after `call` can hold on to where it resumes.
pub type Steps = Arc<[Step]>;

/// Options of the compile step that do not come from the files.
#[derive(Debug, Default, Clone)]
pub struct CompileOptions {
    /// Named endpoint -> replacement address URI (`--endpoint NAME=URI`).
    pub endpoint_overrides: HashMap<String, String>,
    /// The correlation ID's header, when not MI's `activityid`: a cache leaves it out of its
    /// hashes, as MI does (it is new with every request).
    pub correlation_header: Option<String>,
    /// Our keys for secured proxies (the server's `[keystore.primary]`), read on first need.
    pub security_keys: Option<sluice_security::KeySource>,
}
