//! Synapse / WSO2 Micro Integrator XML artifacts to a typed model, every element with its file:line:column.
//!
//! This crate reads and checks the shape of the configuration. It decides nothing about run-time meaning:
//! the mediation crate compiles the model into an executable plan.

mod check;
pub mod diag;
mod library;
pub mod load;
pub mod model;
pub mod parse;
pub mod throttle;
pub mod wsdl;

pub use diag::{Diagnostic, Diagnostics, Location, Severity};
pub use load::{load_path, load_path_in, load_str};
pub use model::*;
