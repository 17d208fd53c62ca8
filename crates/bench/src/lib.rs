//! sluice-bench
