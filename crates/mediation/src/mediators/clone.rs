//! `<clone>`: a copy of the message for each target (its sequence, else its endpoint, else its
//! `To`); mediation of the original ends. The transport sends the copies.

use crate::mediators::prelude::*;

/// `<clone>`'s targets, each a sequence, else an endpoint, else a `to` address.
#[derive(Debug)]
pub struct ClonePlan {
    pub targets: Vec<CloneTargetPlan>,
    /// The copies go through their targets one after another.
    pub sequential: bool,
    /// The original goes on after the clone (`continueParent`).
    pub continue_parent: bool,
}

#[derive(Debug)]
pub struct CloneTargetPlan {
    pub sequence: Option<Arc<SeqPlan>>,
    pub endpoint: Option<Arc<EndpointPlan>>,
    /// The copy's To address (where a send without an endpoint goes) and action.
    pub to: Option<String>,
    pub soap_action: Option<String>,
}

pub(crate) fn compile(c: &mut Compiler, cl: &cfg::CloneMediator) -> Option<Step> {
    let mut targets = Vec::new();
    for t in &cl.targets {
        targets.push(c.clone_target(t)?);
    }
    Some(Step::Clone(Arc::new(ClonePlan {
        targets,
        sequential: cl.sequential,
        continue_parent: cl.continue_parent,
    })))
}

impl Compiler<'_> {
    /// A clone or iterate target: its sequence, or else its endpoint (Synapse runs the sequence
    /// when there is one, and the endpoint only when there is none).
    pub(crate) fn clone_target(&mut self, t: &cfg::CloneTarget) -> Option<CloneTargetPlan> {
        let sequence = match &t.sequence {
            Some(s) => Some(self.sequence_ref(s, "target")?),
            None => None,
        };
        let endpoint = match (&t.endpoint, &sequence) {
            (Some(_), Some(_)) => {
                self.report(
                    Severity::Warning,
                    &t.loc,
                    "target",
                    "a target with a sequence runs the sequence only; its endpoint is not used",
                );
                None
            }
            (Some(e), None) => Some(self.endpoint_ref(e)?),
            (None, _) => None,
        };
        Some(CloneTargetPlan {
            sequence,
            endpoint,
            to: t.to.clone(),
            soap_action: t.soap_action.clone(),
        })
    }
}

impl Mediator for Arc<ClonePlan> {
    fn heavy(&self) -> bool {
        self.targets
            .iter()
            .any(|t| t.sequence.as_ref().is_some_and(|s| s.heavy))
    }

    fn reads(&self, _json: bool) -> Reads {
        // The copies are made of the whole message.
        Reads::WHOLE
    }

    fn by_head(&self, _f: &mut dyn FnMut(&Expr) -> bool) -> ByHead {
        ByHead::Yes
    }

    fn ends_sequence(&self) -> bool {
        !self.continue_parent
    }

    #[inline]
    fn run(&self, cx: &mut Cx<'_>) -> Result<Option<Flow>, Error> {
        let fork = Flow::Clone(self.clone());
        if self.continue_parent {
            return Ok(Some(Flow::ForkThen(Box::new(fork), cx.after_this())));
        }
        Ok(Some(fork))
    }
}
