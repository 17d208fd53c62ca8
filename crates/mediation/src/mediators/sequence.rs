//! `<sequence key="..."/>`: a named sequence runs here (also the nested list a `call` with
//! `<source>` / `<target>` compiles to). When a mediator in it fails and it has an `onError`
//! sequence, that one runs, as Synapse's error handler.
//!
//! A key in braces (`key="{//m:route}"`) is an expression: each message runs the named sequence
//! its value names ([`PerMessagePlan`]), looked up among every named sequence of the
//! configuration; a name that is none fails the message, in Synapse's words.

use crate::mediators::prelude::*;
use std::collections::HashMap;
use std::sync::OnceLock;

#[derive(Debug)]
pub struct SequencePlan(pub Arc<SeqPlan>);

/// Every named sequence of the configuration by name, filled once the configuration is compiled
/// (a sequence may name itself per message).
pub(crate) type ByName = Arc<OnceLock<HashMap<String, Arc<SeqPlan>>>>;

/// `<sequence key="{expression}"/>`.
#[derive(Debug)]
pub struct PerMessagePlan {
    key: Expr,
    all: ByName,
}

pub(crate) fn compile(
    c: &mut Compiler,
    key: &str,
    dynamic: Option<&cfg::ExprSrc>,
    m: &cfg::Mediator,
) -> Option<Step> {
    if let Some(e) = dynamic {
        return Some(per_message(
            c.expr(e, &m.element)?,
            c.sequences_by_name.clone(),
        ));
    }
    Some(Step::Sequence(SequencePlan(
        c.named_sequence(key, Some(&m.loc))?,
    )))
}

/// The step that runs the named sequence `key` names, for a key given in braces anywhere a
/// sequence is referenced (`send receive`, a target's `sequence`, a proxy's `inSequence`).
pub(crate) fn per_message(key: Expr, all: ByName) -> Step {
    Step::SequenceByKey(PerMessagePlan { key, all })
}

/// Runs `seq`'s steps here; on a failure its `onError` sequence, if it has one.
fn run_here(seq: &SeqPlan, cx: &mut Cx<'_>) -> Result<Option<Flow>, Error> {
    let run = run_steps_here(seq, cx);
    if let Ok(Some(flow)) = &run {
        crate::exec::keep_handler(seq, flow, cx.msg);
    }
    run
}

/// [`run_here`]'s run.
fn run_steps_here(seq: &SeqPlan, cx: &mut Cx<'_>) -> Result<Option<Flow>, Error> {
    match cx.branch(&seq.steps) {
        Err(e) => match seq.on_error.get() {
            Some(h) if e.kind != ErrorKind::Stopped => {
                // As Synapse's error handler: the onError sequence runs on the message as it
                // is; what it decides is the flow, else the error stands, handled.
                *cx.doc = DocCache::new();
                crate::exec::set_error_props(cx.msg, &e);
                match cx.branch(&h.steps)? {
                    Some(f) => Ok(Some(f)),
                    None => Err(e.handled()),
                }
            }
            _ => Err(e),
        },
        r => r,
    }
}

impl Mediator for SequencePlan {
    fn reads(&self, json: bool) -> Reads {
        Reads {
            need: self.0.need(json),
            then_response: calls(&self.0.steps),
        }
    }

    fn by_head(&self, f: &mut dyn FnMut(&Expr) -> bool) -> ByHead {
        body_exprs_all(&self.0.steps, f).into()
    }

    fn leaves(&self) -> Option<&'static str> {
        leaves_message(&self.0.steps)
    }

    fn heavy(&self) -> bool {
        self.0.heavy
    }

    fn calls(&self) -> bool {
        calls(&self.0.steps)
    }

    #[inline]
    fn run(&self, cx: &mut Cx<'_>) -> Result<Option<Flow>, Error> {
        run_here(&self.0, cx)
    }
}

impl Mediator for PerMessagePlan {
    /// Any sequence may run: the body is read, and so is a response a call in it gets.
    fn reads(&self, _json: bool) -> Reads {
        Reads {
            need: BodyNeed::Full,
            then_response: true,
        }
    }

    fn run(&self, cx: &mut Cx<'_>) -> Result<Option<Flow>, Error> {
        let name = eval_expr(&self.key, cx.msg, cx.doc)?;
        let seq = self
            .all
            .get()
            .and_then(|all| all.get(name.as_str()))
            .cloned()
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::Mediation,
                    format!("Sequence named {name} cannot be found"),
                )
            })?;
        run_here(&seq, cx)
    }
}
