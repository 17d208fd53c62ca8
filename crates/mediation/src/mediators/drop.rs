//! `<drop>`: mediation of this message stops (a request gets an empty 202 from the transport).

use crate::mediators::prelude::*;

#[derive(Debug)]
pub struct DropPlan;

impl Mediator for DropPlan {
    fn reads(&self, _json: bool) -> Reads {
        Reads::NOTHING
    }

    fn by_head(&self, _f: &mut dyn FnMut(&Expr) -> bool) -> ByHead {
        ByHead::Yes
    }

    fn ends_sequence(&self) -> bool {
        true
    }

    #[inline]
    fn run(&self, _cx: &mut Cx<'_>) -> Result<Option<Flow>, Error> {
        Ok(Some(Flow::Drop))
    }
}
