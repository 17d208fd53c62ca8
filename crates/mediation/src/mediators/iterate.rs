//! `<iterate>`: a message for each element the expression selects (each in an envelope of its
//! own), through the target; mediation of the original ends. The transport sends them.

use crate::mediators::clone::CloneTargetPlan;
use crate::mediators::prelude::*;

/// `<iterate>`: what it splits on, and where each part goes.
#[derive(Debug)]
pub struct IteratePlan {
    pub expression: Expr,
    pub target: CloneTargetPlan,
}

pub(crate) fn compile(
    c: &mut Compiler,
    it: &cfg::IterateMediator,
    m: &cfg::Mediator,
) -> Option<Step> {
    let expression = c.xml_parts(&it.expression, &m.loc, &m.element, "iterating over");
    let target = c.clone_target(&it.target);
    Some(Step::Iterate(Arc::new(IteratePlan {
        expression: expression?,
        target: target?,
    })))
}

impl Mediator for Arc<IteratePlan> {
    fn reads(&self, _json: bool) -> Reads {
        Reads::WHOLE
    }

    fn by_head(&self, _f: &mut dyn FnMut(&Expr) -> bool) -> ByHead {
        ByHead::No
    }

    fn ends_sequence(&self) -> bool {
        true
    }

    #[inline]
    fn run(&self, cx: &mut Cx<'_>) -> Result<Option<Flow>, Error> {
        let parts = self
            .expression
            .eval_nodes_xml_each(&View {
                msg: cx.msg,
                doc: cx.doc,
            })
            .map_err(expr_error)?
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::Mediation,
                    "iterate: the expression selects no nodes",
                )
            })?;
        // One request must not fan out without bound: each part is a back-end call.
        within_parts_cap("iterate", parts.len())?;
        let bodies = parts
            .iter()
            .map(|p| envelope_with(p, cx.msg.soap))
            .collect();
        Ok(Some(Flow::Iterate(self.clone(), bodies)))
    }
}
