//! Synapse configuration text (a proxy, sequence, endpoint or local entry file) as `sluice validate`
//! and `sluice run` read it: any text gets a model or diagnostics, never a panic. Endpoints made
//! from an endpoint template in the text are instantiated too (values put in, positions mapped
//! back), as the plan compile does.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice_config::{EndpointKind, Location};

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let (cfg, mut diags) = sluice_config::load_str("fuzz.xml", text);
        for e in &cfg.endpoints {
            let EndpointKind::Template { template, args } = &e.kind else {
                continue;
            };
            for t in cfg.endpoint_templates.iter().filter(|t| &t.name == template) {
                let _ = sluice_config::parse::instantiate_endpoint(t, args, "fuzz", &mut diags);
            }
        }
        // Every position reported stays a real one.
        for d in &diags.items {
            let Location { line, col, .. } = &d.location;
            assert!(*line >= 1 && *col >= 1, "{d:?}");
        }
    }
});
