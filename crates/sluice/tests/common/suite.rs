//! A conformance case's request as `conformance/*/cases.json` writes it, for the tests that read
//! the suites (conformance.rs, differential.rs).

use serde::Deserialize;
use std::collections::BTreeMap;

#[derive(Deserialize)]
pub struct Req {
    #[serde(default = "post")]
    pub method: String,
    pub path: String,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    #[serde(default)]
    pub body: String,
    /// The body from this file of the suite's folder instead (a message too large to write
    /// inline, or not text).
    pub body_file: Option<String>,
}

fn post() -> String {
    "POST".into()
}

/// The suites under `conformance/` that hold `file` (`cases.json`, `synapse-golden.json`), in
/// name order; at least one, or the test fails here.
pub fn suites_with(file: &str) -> Vec<std::path::PathBuf> {
    let root = super::workspace_root().join("conformance");
    let mut suites: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join(file).is_file())
        // SLUICE_SUITES=a,b runs only those suites (a local run; CI runs every one).
        .filter(|p| {
            std::env::var("SLUICE_SUITES")
                .map_or(true, |only| only.split(',').any(|n| p.ends_with(n.trim())))
        })
        .collect();
    suites.sort();
    assert!(!suites.is_empty(), "no {file} under {}", root.display());
    suites
}
