//! Sluice's measuring kit: the load generator, the WSO2 benchmark matrix with peers, payloads and
//! reports. `cargo run --release -p sluice-bench -- --help`.

pub mod adversarial;
pub mod hostile;
pub mod hot_deploy;
pub mod load;
pub mod matrix;
pub mod micro;
pub mod payload;
pub mod procfs;
pub mod report;
pub mod secure;
pub mod stats;
pub mod stress;
pub mod stress_client;
