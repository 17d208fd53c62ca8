//! JsonPath text and a JSON message: the first line is the path (as `json-eval(...)` or an
//! `evaluator="json"` argument holds it), the rest the body. Any path compiles or is refused with a
//! reason, never a panic; what compiles is evaluated over the body when it is JSON, and what it
//! selects is turned into WSO2's string value and XML mapping, never a panic, and that XML written
//! back as JSON (WSO2's formatter mapping) is JSON.
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
    let found = p.select(&v);
    if p.is_definite() {
        assert!(found.len() <= 1, "{path}: a definite path selected {}", found.len());
    }
    if let Ok(s) = json_string_value(&found, p.is_definite()) {
        assert!(p.is_definite() || s.starts_with('['), "{path}: {s}");
    }
    for f in &found {
        if let Ok(xml) = sluice_mediation::json::json_to_xml(f) {
            // What the mapping makes is markup only where the JSON had names.
            assert!(f.is_object() || f.is_array() || !xml.contains('<'), "{path}: {xml}");
            // And written back as JSON (WSO2's formatter mapping), it is JSON.
            let wrapped = format!("<jsonObject>{xml}</jsonObject>");
            if let Ok(doc) = sluice_xml::Document::parse(wrapped.as_bytes()) {
                if let Some(root) = doc.root_element() {
                    if let Ok(text) = sluice_mediation::json::xml_to_json(root) {
                        // JSON syntax: numbers of any size (WSO2 prints `2E+3508313` as
                        // BigDecimal does, which is JSON though no f64 holds it).
                        assert!(
                            serde_json::from_str::<serde::de::IgnoredAny>(&text).is_ok(),
                            "{path}: {xml} gave {text}"
                        );
                    }
                }
            }
        }
    }
});
