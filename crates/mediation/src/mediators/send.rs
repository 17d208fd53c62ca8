//! `<send>`: the message goes to the endpoint (without one: a response to the client, a request to
//! its `To`, else the proxy's target), and the sequence ends.

use crate::mediators::prelude::*;

#[derive(Debug)]
pub struct SendPlan {
    pub endpoint: Option<Arc<EndpointPlan>>,
}

pub(crate) fn compile(c: &mut Compiler, endpoint: Option<&cfg::EndpointRef>) -> Option<Step> {
    let endpoint = match endpoint {
        Some(e) => Some(c.endpoint_ref(e)?),
        None => None,
    };
    Some(Step::Send(SendPlan { endpoint }))
}

impl Mediator for SendPlan {
    fn reads(&self, _json: bool) -> Reads {
        Reads::NOTHING
    }

    fn by_head(&self, _f: &mut dyn FnMut(&Expr) -> bool) -> ByHead {
        ByHead::Yes
    }

    fn leaves(&self) -> Option<&'static str> {
        Some("send")
    }

    fn ends_sequence(&self) -> bool {
        true
    }

    #[inline]
    fn run(&self, _cx: &mut Cx<'_>) -> Result<Option<Flow>, Error> {
        Ok(Some(Flow::Send(self.endpoint.clone())))
    }
}
