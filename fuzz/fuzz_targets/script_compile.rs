//! A script as the script mediator loads it: any text goes through the E4X rewrite and QuickJS's
//! parse (`sluice_script::Script::compile`) and is taken or refused with a reason, never a panic;
//! what compiles runs over a small payload within its limits. Seed the corpus with the scripts of
//! `conformance/script/synapse/synapse.xml` and Synapse's `stockquoteTransform.js`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(script) = sluice_script::Script::compile(text, vec![], None) {
        let snap = sluice_script::Snapshot {
            xml: Some("<m:q xmlns:m=\"urn:m\"><m:s>IBM</m:s></m:q>".into()),
            ..Default::default()
        };
        let _ = script.run(&snap, None);
    }
});
