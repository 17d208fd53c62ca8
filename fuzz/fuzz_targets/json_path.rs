//! JsonPath text and a JSON message: the first line is the path (as `json-eval(...)` or an
//! `evaluator="json"` argument holds it), the rest the body. Any path compiles or is refused with a
//! reason, never a panic; what compiles is evaluated over the body when it is JSON, and what it
//! selects is turned into WSO2's string value and XML mapping, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice_expr::{json_string_value, JsonPath};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (path, body) = text.split_once('\n').unwrap_or((text, "{}"));
    let Ok(p) = JsonPath::compile(path) else {
        return;
    };
    let Ok(v) = serde_json::from_str::<serde_json::Value>(body) else {
        return;
    };
    let found: Vec<serde_json::Value> = p.select(&v).into_iter().cloned().collect();
    let s = json_string_value(&found, p.is_definite());
    if p.is_definite() {
        assert!(found.len() <= 1, "{path}: a definite path selected {}", found.len());
    } else {
        assert!(s.starts_with('['), "{path}: {s}");
    }
    for f in &found {
        let _ = sluice_mediation::exec::json_to_xml(f);
    }
});
