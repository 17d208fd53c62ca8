//! `<respond>`: the current message goes back to the client.

use crate::mediators::prelude::*;

#[derive(Debug)]
pub struct RespondPlan;

impl Mediator for RespondPlan {
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
        Ok(Some(Flow::Respond))
    }
}
