//! `<sequence key="..."/>`: a named sequence runs here (also the nested list a `call` with
//! `<source>` / `<target>` compiles to). When a mediator in it fails and it has an `onError`
//! sequence, that one runs, as Synapse's error handler.

use crate::mediators::prelude::*;

#[derive(Debug)]
pub struct SequencePlan(pub Arc<SeqPlan>);

pub(crate) fn compile(c: &mut Compiler, key: &str, m: &cfg::Mediator) -> Option<Step> {
    Some(Step::Sequence(SequencePlan(
        c.named_sequence(key, Some(&m.loc))?,
    )))
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

    fn calls(&self) -> bool {
        calls(&self.0.steps)
    }

    #[inline]
    fn run(&self, cx: &mut Cx<'_>) -> Result<Option<Flow>, Error> {
        match cx.branch(&self.0.steps) {
            Err(e) => match self.0.on_error.get() {
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
}
