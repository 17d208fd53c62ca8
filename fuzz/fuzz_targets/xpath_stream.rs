//! The streaming XPath reader on any bytes, for the expression shapes the WSO2 proxies and the
//! conformance cases use: it may answer or decline (`None`, libxml2 decides), never panic or hang.
//! The paths are compiled once, so a reading may start from the memo an earlier input left (inputs
//! often share their beginning): its answer must be that of a path compiled afresh, which has none.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice_expr::StreamPath;
use std::sync::OnceLock;

const EXPRESSIONS: &[&str] = &[
    "/soapenv:Envelope/soapenv:Header/t:routing",
    "/soapenv:Envelope/soapenv:Body/m:buyStocks/order[1]/symbol",
    "//order[1]/symbol",
    "//order[symbol='IBM']/@id",
    "//symbol/text()",
    "count(//*) > 3",
    "boolean(//m:buyStocks)",
    "normalize-space(//symbol)",
    "string(/*/*[2])",
];

fn ns() -> Vec<(String, String)> {
    [
        ("soapenv", "http://schemas.xmlsoap.org/soap/envelope/"),
        ("m", "http://services.samples/xsd"),
        ("t", "http://someuri"),
    ]
    .iter()
    .map(|(p, u)| (p.to_string(), u.to_string()))
    .collect()
}

fn paths() -> &'static [(&'static str, StreamPath)] {
    static PATHS: OnceLock<Vec<(&'static str, StreamPath)>> = OnceLock::new();
    PATHS.get_or_init(|| {
        EXPRESSIONS
            .iter()
            .filter_map(|e| Some((*e, StreamPath::compile(e, &ns())?)))
            .collect()
    })
}

fuzz_target!(|data: &[u8]| {
    let ns = ns();
    for (text, p) in paths() {
        let s = p.eval_string(data);
        let b = p.eval_bool(data);
        // Its first reading in each mode (a memo per mode) starts from nothing.
        let fresh = StreamPath::compile(text, &ns).expect("compiled once already");
        assert_eq!(s, fresh.eval_string(data), "{text}");
        assert_eq!(b, fresh.eval_bool(data), "{text}");
    }
});
