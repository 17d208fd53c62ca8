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
}

fn post() -> String {
    "POST".into()
}
