//! `<loopback>`: the message turns into a response and goes through the out-sequence; the rest
//! of the in-sequence is skipped.

use crate::mediators::prelude::*;

#[derive(Debug)]
pub struct LoopbackPlan;

impl Mediator for LoopbackPlan {
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
        Ok(Some(Flow::Loopback))
    }
}
