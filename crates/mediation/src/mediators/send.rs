//! `<send>`: the message goes to the endpoint (without one: a response to the client, a request to
//! its `To`, else the proxy's target), and the sequence ends. With `receive="SEQ"` the response goes
//! through that sequence instead of the out-sequence (it is then a call whose continuation is that
//! sequence).

use crate::mediators::prelude::*;

#[derive(Debug)]
pub struct SendPlan {
    pub endpoint: Option<Arc<EndpointPlan>>,
    /// `receive`: the sequence for the response.
    pub receive: Option<Arc<SeqPlan>>,
}

pub(crate) fn compile(
    c: &mut Compiler,
    endpoint: Option<&cfg::EndpointRef>,
    receive: Option<&cfg::SequenceRef>,
) -> Option<Step> {
    let endpoint = match endpoint {
        Some(e) => Some(c.endpoint_ref(e)?),
        None => None,
    };
    let receive = match receive {
        Some(r) => Some(c.sequence_ref(r, "send receive")?),
        None => None,
    };
    Some(Step::Send(SendPlan { endpoint, receive }))
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
        Ok(Some(match &self.receive {
            None => Flow::Send(self.endpoint.clone()),
            Some(seq) => Flow::Call(
                self.endpoint.clone(),
                Continuation::from_steps(seq.steps.clone()),
            ),
        }))
    }
}
