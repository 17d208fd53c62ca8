//! Branches a mediator runs to their ends before the message goes on: MI 4.4's `foreach`
//! (`collection`) and `scatter-gather`. Each branch is a message and the steps it runs; a `call`
//! in them is made by the transport and the rest runs on its response. When every branch has
//! ended, the mediator's [`Gather`] puts what they ended with into the message, and the message
//! goes on after the mediator.

use crate::error::Error;
use crate::message::Message;
use crate::plan::Steps;
use std::sync::Arc;

/// The branches of one mediator run (see the module docs).
#[derive(Clone)]
pub struct Branches {
    /// Each branch: the message it starts with and the steps it runs.
    pub runs: Vec<(Message, Steps)>,
    /// All at once (`parallel-execution="true"`), else one after the other in order.
    pub parallel: bool,
    /// A branch not ended this long after the branches start is stopped and gathered as failed.
    pub deadline: Option<std::time::Duration>,
    pub gather: Arc<dyn Gather>,
}

impl std::fmt::Debug for Branches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Branches")
            .field("runs", &self.runs.len())
            .field("parallel", &self.parallel)
            .field("gather", &self.gather)
            .finish()
    }
}

/// How a mediator takes its branches' ends into the message.
pub trait Gather: Send + Sync + std::fmt::Debug {
    /// `ends`, in branch order: the message each branch ended with, or why it failed.
    fn gather(&self, msg: &mut Message, ends: Vec<Result<Message, Error>>) -> Result<(), Error>;
}

/// Why a branch cannot go on: it decided something other than to end or to `call`.
pub fn branch_left(what: &str) -> Error {
    Error::new(
        crate::error::ErrorKind::Mediation,
        format!("a foreach or scatter-gather sequence may only end or call, not {what}"),
    )
}
