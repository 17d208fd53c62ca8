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

/// Where the Synapse samples' configurations send: Axis2's SimpleStockQuoteService on port 9000.
const SAMPLE_BACKEND: &str = "http://localhost:9000";

/// Sluice on a suite and the back-end it sends to. A suite with `"synapse_sample": N` runs Synapse's
/// sample N as shipped (`conformance/third_party/synapse-samples`, with that folder's home), its
/// back-end address moved to a back-end that answers as SimpleStockQuoteService
/// (`conformance/stockquote.json`), as `differential/record.py` runs it on Synapse. Any other runs
/// its `synapse/` folder, each endpoint named in `endpoints` re-pointed at the echo back-end.
pub async fn start(
    dir: &std::path::Path,
    endpoints: &[String],
    sample: Option<u32>,
    log_filter: &str,
) -> (super::Sluice, super::Backend) {
    let Some(n) = sample else {
        let be = super::backend().await;
        let s = super::Sluice::on_suite(dir, endpoints, be.addr, log_filter);
        return (s, be);
    };
    let root = super::workspace_root().join("conformance");
    let be = super::backend_answering(super::Canned::load(&root.join("stockquote.json"))).await;
    let samples = root.join("third_party/synapse-samples");
    let shipped = std::fs::read_to_string(samples.join(format!("samples/synapse_sample_{n}.xml")))
        .unwrap()
        .replace(SAMPLE_BACKEND, &format!("http://{}", be.addr));
    let config = super::synapse_xml(&format!("sample-{n}"), &shipped);
    let home = samples.join("home");
    let argv = [
        "run",
        config.to_str().unwrap(),
        "--home",
        home.to_str().unwrap(),
    ];
    (super::Sluice::start_logging(&argv, log_filter), be)
}
