//! One module per mediator: its plan type, how it compiles from the configuration model, what it
//! reads of the body, and how it runs.
//!
//! The executor runs a [`Step`]: an enum with one variant per mediator, made by the `mediators!`
//! list below. Each variant holds its module's plan type, which implements [`Mediator`]. The list
//! writes the `match` that calls into the module, so a step costs one jump and no allocation or
//! virtual call. Adding a mediator: its module, one line in the list, one arm in
//! [`Compiler::step`] for its configuration element (see docs/ARCHITECTURE.md).

use crate::compile::Compiler;
use crate::error::Error;
use crate::exec::{Cx, Flow};
use crate::plan::Value;
use sluice_config as cfg;
use sluice_expr::{BodyNeed, Expr};

pub mod aggregate;
pub mod cache;
pub mod call;
pub mod callout;
pub mod clone;
pub mod conditional_router;
pub mod datamapper;
pub mod drop;
pub mod enqueue;
pub mod enrich;
pub mod evaluator;
pub mod filter;
pub mod foreach;
pub mod foreach_collection;
pub mod header;
pub mod iterate;
pub mod json_transform;
pub mod log;
pub mod loopback;
pub mod makefault;
pub mod missing;
pub mod payload_factory;
pub mod property;
pub mod respond;
pub mod rewrite;
pub mod scatter_gather;
pub mod script;
pub mod send;
pub mod sequence;
pub mod store;
pub mod switch;
pub mod template;
pub mod throttle;
pub mod validate;
pub mod variable;
pub mod xslt;

/// What the mediator modules share.
pub(crate) mod prelude {
    pub(crate) use super::{
        body_exprs_all, calls, heavy, leaves_message, need_of, value_by_head, ByHead, Mediator,
        Reads, Step,
    };
    pub(crate) use crate::compile::Compiler;
    pub(crate) use crate::endpoints::EndpointPlan;
    pub(crate) use crate::error::{Error, ErrorKind};
    pub(crate) use crate::exec::{
        envelope_with, escape_xml, eval_expr, eval_value, expr_error, json_becomes_xml,
        message_bytes, new_message_doc, payload_node, put_doc, run_steps, take_doc, unread_body,
        within_parts_cap, xml_error, Continuation, Cx, DocCache, Flow, View,
    };
    pub(crate) use crate::mediators::sequence::SequencePlan;
    pub(crate) use crate::message::{Body, Message};
    pub(crate) use crate::plan::{SeqPlan, Steps, Value};
    pub(crate) use sluice_config::{self as cfg, Location, Severity};
    pub(crate) use sluice_expr::{BodyNeed, Env, Expr, FullRegex};
    pub(crate) use std::borrow::Cow;
    pub(crate) use std::sync::Arc;
}

/// What a step reads of the message body, and whether the steps after it read the response
/// instead (it reaches a `call` whatever the message).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Reads {
    pub need: BodyNeed,
    pub then_response: bool,
}

impl Reads {
    pub const NOTHING: Reads = Reads::of(BodyNeed::None);
    pub const WHOLE: Reads = Reads::of(BodyNeed::Full);
    /// A `call`: nothing of the request; what follows reads the response.
    pub const THEN_RESPONSE: Reads = Reads {
        need: BodyNeed::None,
        then_response: true,
    };

    pub const fn of(need: BodyNeed) -> Reads {
        Reads {
            need,
            then_response: false,
        }
    }
}

/// Whether the start of a message decides a step's expressions that read the body
/// ([`crate::SeqPlan::decided_by_head`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ByHead {
    Yes,
    No,
    /// A `call`: yes, and the steps after it read the response, not this message.
    StopHere,
}

impl From<bool> for ByHead {
    fn from(yes: bool) -> ByHead {
        if yes {
            ByHead::Yes
        } else {
            ByHead::No
        }
    }
}

/// A compiled mediator.
pub(crate) trait Mediator {
    /// What it reads of the body (`json`: the message is JSON by its Content-Type). By default
    /// the whole body: the safe answer for a step that works on the message.
    fn reads(&self, _json: bool) -> Reads {
        Reads::WHOLE
    }
    /// Whether `f` holds for each of its expressions that read the body; [`ByHead::No`] (the
    /// default) for a step that needs the whole body whatever its expressions.
    fn by_head(&self, _f: &mut dyn FnMut(&Expr) -> bool) -> ByHead {
        ByHead::No
    }
    /// What in it would send the message to a back-end ("send", "call"; a foreach refuses them).
    fn leaves(&self) -> Option<&'static str> {
        None
    }
    /// It reaches a `call` whatever the message.
    fn calls(&self) -> bool {
        false
    }
    /// It, or a list it runs, holds work that leaves the event loop whatever the message's size (a
    /// script: its time is the script's to decide).
    fn heavy(&self) -> bool {
        false
    }
    /// Nothing after it in the same list runs (send, respond, loopback, drop, clone, iterate).
    fn ends_sequence(&self) -> bool {
        false
    }
    /// Runs it: `Some` when it decides where the message goes (the list stops there).
    fn run(&self, cx: &mut Cx<'_>) -> Result<Option<Flow>, Error>;
}

/// The [`Mediator`] of a step that reads nothing and ends its sequence with `$flow`
/// (respond, drop, loopback).
macro_rules! ends_with {
    ($plan:ty, $flow:expr) => {
        impl $crate::mediators::Mediator for $plan {
            fn reads(&self, _json: bool) -> $crate::mediators::Reads {
                $crate::mediators::Reads::NOTHING
            }

            fn by_head(
                &self,
                _f: &mut dyn FnMut(&sluice_expr::Expr) -> bool,
            ) -> $crate::mediators::ByHead {
                $crate::mediators::ByHead::Yes
            }

            fn ends_sequence(&self) -> bool {
                true
            }

            #[inline]
            fn run(
                &self,
                _cx: &mut $crate::exec::Cx<'_>,
            ) -> Result<Option<$crate::exec::Flow>, $crate::error::Error> {
                Ok(Some($flow))
            }
        }
    };
}
use ends_with;

macro_rules! mediators {
    ($($(#[$doc:meta])* $variant:ident($ty:ty),)*) => {
        /// One compiled mediator: a variant per mediator module.
        #[derive(Debug)]
        pub enum Step {
            $($(#[$doc])* $variant($ty),)*
        }

        impl Step {
            /// The step as its module's [`Mediator`], for what is decided at load.
            pub(crate) fn mediator(&self) -> &dyn Mediator {
                match self {
                    $(Step::$variant(p) => p,)*
                }
            }

            /// Runs the step (a `match`, not a virtual call: this is per request).
            #[inline(always)]
            pub(crate) fn run(&self, cx: &mut Cx<'_>) -> Result<Option<Flow>, Error> {
                match self {
                    $(Step::$variant(p) => p.run(cx),)*
                }
            }
        }
    };
}

mediators! {
    Send(send::SendPlan),
    /// `call`, and the steps a `call` with `<source>` / `<target>` compiles to.
    Call(call::CallStep),
    /// `cache`: a response cached for the request answers it; the collector caches responses.
    Cache(cache::CachePlan),
    /// The last step of a `callout`: the response put where its target says.
    Callout(callout::CalloutResultPlan),
    Respond(respond::RespondPlan),
    Loopback(loopback::LoopbackPlan),
    Drop(drop::DropPlan),
    Log(log::LogPlan),
    Property(property::PropertyPlan),
    Header(header::HeaderPlan),
    /// `filter`, `in` and `out`.
    Filter(filter::FilterPlan),
    Switch(switch::SwitchPlan),
    Sequence(sequence::SequencePlan),
    /// `<sequence key="{...}"/>`: the sequence each message names.
    SequenceByKey(sequence::PerMessagePlan),
    Template(template::TemplateStep),
    Clone(std::sync::Arc<clone::ClonePlan>),
    Iterate(std::sync::Arc<iterate::IteratePlan>),
    Aggregate(std::sync::Arc<aggregate::AggregatePlan>),
    Foreach(std::sync::Arc<foreach::ForeachPlan>),
    /// MI 4.4's `foreach collection`: copies through the sequence, gathered back.
    ForeachCollection(std::sync::Arc<foreach_collection::ForeachCollectionPlan>),
    /// MI 4.4's `scatter-gather`: a copy through each sequence, gathered.
    ScatterGather(std::sync::Arc<scatter_gather::ScatterGatherPlan>),
    /// MI's `jsontransform`.
    JsonTransform(json_transform::JsonTransformPlan),
    Xslt(xslt::XsltPlan),
    PayloadFactory(payload_factory::PayloadPlan),
    Enrich(enrich::EnrichPlan),
    Validate(validate::ValidatePlan),
    MakeFault(makefault::FaultPlan),
    /// A reference to a sequence or template the configuration does not define: fails the message.
    Missing(missing::MissingPlan),
    Rewrite(rewrite::RewritePlan),
    ConditionalRouter(conditional_router::RouterPlan),
    Enqueue(enqueue::EnqueuePlan),
    Variable(variable::VariablePlan),
    Throttle(throttle::ThrottlePlan),
    Script(script::ScriptPlan),
    Store(store::StorePlan),
    /// MI's `datamapper`, on its XSLT path.
    Datamapper(datamapper::DatamapperPlan),
}

impl Compiler<'_> {
    /// The step for one configured mediator, from its module; `None` when it cannot deploy
    /// (reported).
    pub(crate) fn step(&mut self, m: &cfg::Mediator) -> Option<Step> {
        let el = m.element.as_str();
        match &m.kind {
            cfg::MediatorKind::Send { endpoint, receive } => {
                send::compile(self, endpoint.as_ref(), receive.as_ref())
            }
            cfg::MediatorKind::Call { endpoint, io } => {
                call::compile(self, endpoint.as_ref(), io.as_deref(), el)
            }
            cfg::MediatorKind::Respond => Some(Step::Respond(respond::RespondPlan)),
            cfg::MediatorKind::Loopback => Some(Step::Loopback(loopback::LoopbackPlan)),
            cfg::MediatorKind::Drop => Some(Step::Drop(drop::DropPlan)),
            cfg::MediatorKind::Log(l) => log::compile(self, l, el),
            cfg::MediatorKind::Property(p) => property::compile(self, p, m),
            cfg::MediatorKind::Header(h) => header::compile(self, h, m),
            cfg::MediatorKind::Direction { response, body } => {
                filter::compile_direction(self, *response, body)
            }
            cfg::MediatorKind::Filter(f) => filter::compile(self, f, el),
            cfg::MediatorKind::Switch(s) => switch::compile(self, s, el),
            cfg::MediatorKind::Callout(co) => callout::compile(self, co, m),
            cfg::MediatorKind::Cache(k) => cache::compile(self, k, m),
            cfg::MediatorKind::SequenceRef { key, dynamic } => {
                sequence::compile(self, key, dynamic.as_ref(), m)
            }
            cfg::MediatorKind::Clone(c) => clone::compile(self, c),
            cfg::MediatorKind::Foreach(f) => foreach::compile(self, f, m),
            cfg::MediatorKind::ForeachCollection(f) => foreach_collection::compile(self, f, m),
            cfg::MediatorKind::ScatterGather(s) => scatter_gather::compile(self, s, m),
            cfg::MediatorKind::JsonTransform(t) => json_transform::compile(self, t, m),
            cfg::MediatorKind::Iterate(it) => iterate::compile(self, it, m),
            cfg::MediatorKind::Aggregate(a) => aggregate::compile(self, a, m),
            cfg::MediatorKind::CallTemplate {
                target,
                params,
                passed,
            } => template::compile(self, target, params, passed, m),
            cfg::MediatorKind::MakeFault(f) => makefault::compile(self, f, el),
            cfg::MediatorKind::Xslt(x) => xslt::compile(self, x, m),
            cfg::MediatorKind::PayloadFactory(p) => payload_factory::compile(self, p, el),
            cfg::MediatorKind::Enrich(e) => enrich::compile(self, e, el),
            cfg::MediatorKind::Validate(v) => validate::compile(self, v, el),
            cfg::MediatorKind::Rewrite(r) => rewrite::compile(self, r, el),
            cfg::MediatorKind::ConditionalRouter(r) => conditional_router::compile(self, r, el),
            cfg::MediatorKind::Enqueue(e) => enqueue::compile(self, e, m),
            cfg::MediatorKind::Variable(v) => variable::compile(self, v, m),
            cfg::MediatorKind::Throttle(t) => throttle::compile(self, t, m),
            cfg::MediatorKind::Script(s) => script::compile(self, s, m),
            cfg::MediatorKind::Store(s) => store::compile(self, s, m),
            cfg::MediatorKind::Datamapper(d) => datamapper::compile(self, d, m),
        }
    }
}

/// A value is decided by the head when it is a literal, reads no body, or `f` holds for it.
pub(crate) fn value_by_head(v: &Value, f: &mut dyn FnMut(&Expr) -> bool) -> bool {
    match v {
        Value::Literal(_) => true,
        Value::Expr(e) => e.body_need() == BodyNeed::None || f(e),
    }
}

/// Whether `f` holds for every expression in `steps` that may read the body (the ones `need_of`
/// counts); `false` at once for a step that needs the whole body whatever its expressions.
pub(crate) fn body_exprs_all(steps: &[Step], f: &mut dyn FnMut(&Expr) -> bool) -> bool {
    for s in steps {
        match s.mediator().by_head(f) {
            ByHead::Yes => {}
            ByHead::No => return false,
            // What follows a call reads the response.
            ByHead::StopHere => return true,
        }
    }
    true
}

/// What in `steps` (or the lists they run) would send the message to a back-end: a send or a
/// call (Synapse refuses these in a foreach; anything else that ends the flow there fails when it
/// runs). `None` when nothing does.
pub(crate) fn leaves_message(steps: &[Step]) -> Option<&'static str> {
    steps.iter().find_map(|s| s.mediator().leaves())
}

/// Whether any of `steps` (or a list they run) is [`Mediator::heavy`].
pub(crate) fn heavy(steps: &[Step]) -> bool {
    steps.iter().any(|s| s.mediator().heavy())
}

/// The steps reach a `call` whatever the message: one at their top level, or in a sequence they
/// run at their top level.
pub(crate) fn calls(steps: &[Step]) -> bool {
    steps.iter().any(|s| s.mediator().calls())
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
        let r = s.mediator().reads(json);
        need = need.max(r.need);
        if r.then_response {
            return (need, true);
        }
    }
    (need, false)
}
