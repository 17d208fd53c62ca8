//! URI templates (`<http uri-template>`): any text compiles or is refused, never a panic. What
//! compiles expands with every variable set or none, always to ASCII (literals and values that a URI
//! cannot hold are percent-encoded).
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice_mediation::uritemplate::UriTemplate;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // The first line is the template, the rest the value of every variable.
    let (template, value) = text.split_once('\n').unwrap_or((text, ""));
    if let Ok(t) = UriTemplate::parse(template) {
        let full = t.expand(|_| Some(value));
        let none = t.expand(|_| None);
        assert!(full.len() >= none.len());
        assert!(full.is_ascii(), "{template:?} with {value:?} gave {full:?}");
    }
});
