//! REST API routing: any uri-template compiles or is refused, never a panic; any request path is
//! routed or missed, never a panic, and a route's postfix is the end of the request's path.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice_mediation::api::{route, ApiPlan, Pattern, ResourcePlan, Template};
use sluice_mediation::ProxyPlan;
use std::sync::Arc;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // The first line is a uri-template (also tried as a url-mapping), the rest the request's path.
    let (pattern, path) = text.split_once('\n').unwrap_or((text, "/api/x"));
    let service = Arc::new(ProxyPlan::empty("A"));
    let mut resources = vec![ResourcePlan {
        methods: vec![http::Method::POST],
        pattern: Pattern::mapping(pattern),
        service: service.clone(),
    }];
    if let Ok(t) = Template::parse(pattern) {
        resources.push(ResourcePlan {
            methods: vec![http::Method::GET],
            pattern: Pattern::Template(t),
            service: service.clone(),
        });
    }
    let apis = vec![Arc::new(ApiPlan {
        name: "A".into(),
        context: "/api".into(),
        resources,
    })];
    for m in [http::Method::GET, http::Method::OPTIONS, http::Method::PUT] {
        if let Ok(r) = route(&apis, &m, path) {
            assert!(path.ends_with(r.postfix), "{path:?} {:?}", r.postfix);
        }
    }
});
