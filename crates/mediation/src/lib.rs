//! Mediation: the message context, the plan compiled from the configuration, and the executor that runs
//! sequences over a message. The transport crate drives it; nothing here does I/O.

pub mod addressing;
pub mod api;
pub mod branches;
pub mod budget;
pub mod compile;
pub mod endpoints;
pub mod error;
pub mod exec;
pub mod fault;
pub mod format;
pub mod health;
pub mod json;
pub mod mediators;
pub mod message;
pub mod plan;
pub mod processors;
pub mod rest;
pub mod secured;
pub mod uritemplate;

pub use compile::compile;
pub use error::{Error, ErrorKind, ErrorSource};
pub use exec::{resume, run, Continuation, Flow};
pub use message::{Body, Direction, Message};
pub use plan::{CompileOptions, EndpointPlan, GroupKind, Plan, ProxyPlan, SeqPlan};
