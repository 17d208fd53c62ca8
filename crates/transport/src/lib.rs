//! HTTP transport: the listener, the pooled back-end client, and the request life that drives mediation.

pub mod access_log;
pub mod body;
pub mod buffered;
pub mod client;
pub mod correlation;
pub mod deploy;
pub mod engine;
pub mod error;
pub mod h1;
pub mod headers;
/// Key stores, read by the security crate (MI's `[keystore.primary]` and `[truststore]`).
pub use sluice_security::keystore;
pub mod metered;
pub mod metrics;
pub mod offload;
pub mod otel;
pub mod processors;
pub mod server;
pub mod tls;
pub mod wsdl;

pub use deploy::{Deployment, WorkerEngine};
pub use engine::{Engine, EngineOptions, Transport};
pub use server::{serve, ServerOptions, TlsListener};
