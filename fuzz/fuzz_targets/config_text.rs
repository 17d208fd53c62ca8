//! Synapse configuration text (a proxy, sequence, endpoint or local entry file) as `sluice validate`
//! and `sluice run` read it: any text gets a model or diagnostics, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = sluice_config::load_str("fuzz.xml", text);
    }
});
