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

/// Where the Synapse samples' configurations send: Axis2's SimpleStockQuoteService on port 9000,
/// and the servers 9001 to 9003 of the load-balance and failover samples; all go to one back-end.
const SAMPLE_BACKENDS: [&str; 4] = [
    "http://localhost:9000",
    "http://localhost:9001",
    "http://localhost:9002",
    "http://localhost:9003",
];

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
    let to = format!("http://{}", be.addr);
    let rewrite = |text: String| {
        SAMPLE_BACKENDS
            .iter()
            .fold(text, |t, old| t.replace(old, &to))
    };
    let shipped = std::fs::read_to_string(samples.join(format!("samples/synapse_sample_{n}.xml")));
    let text = sample_replace(dir, be.addr)
        .into_iter()
        .fold(rewrite(shipped.unwrap()), |t, (old, new)| {
            t.replace(&old, &new)
        });
    let config = super::synapse_xml(&format!("sample-{n}"), &text);
    // The home's registry resources name the back-end too.
    let home = config.parent().unwrap().join("home");
    copy_rewritten(&samples.join("home"), &home, &rewrite);
    let argv = [
        "run",
        config.to_str().unwrap(),
        "--home",
        home.to_str().unwrap(),
    ];
    (super::Sluice::start_logging(&argv, log_filter), be)
}

/// The suite's `sample_replace` pairs, for a sample that names the back-end by its parts (sample
/// 452's rewrite sets host and port), `{backend_host}` and `{backend_port}` filled in; as
/// `differential/record.py` applies them.
fn sample_replace(dir: &std::path::Path, backend: std::net::SocketAddr) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(dir.join("cases.json")).unwrap();
    let spec: serde_json::Value = serde_json::from_str(&text).unwrap();
    let Some(pairs) = spec["sample_replace"].as_array() else {
        return Vec::new();
    };
    pairs
        .iter()
        .map(|p| {
            let new = p[1].as_str().unwrap();
            let new = new
                .replace("{backend_host}", &backend.ip().to_string())
                .replace("{backend_port}", &backend.port().to_string());
            (p[0].as_str().unwrap().to_owned(), new)
        })
        .collect()
}

/// A copy of the tree `from` at `to` (symbolic links followed), every file that is UTF-8 text
/// passed through `rewrite`.
fn copy_rewritten(
    from: &std::path::Path,
    to: &std::path::Path,
    rewrite: &dyn Fn(String) -> String,
) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let target = to.join(path.file_name().unwrap());
        if path.is_dir() {
            copy_rewritten(&path, &target, rewrite);
            continue;
        }
        let bytes = std::fs::read(&path).unwrap();
        match String::from_utf8(bytes) {
            Ok(text) => std::fs::write(&target, rewrite(text)).unwrap(),
            Err(e) => std::fs::write(&target, e.into_bytes()).unwrap(),
        }
    }
}
