//! The streaming XPath reader on any bytes, for the expression shapes the WSO2 proxies and the
//! conformance cases use: it may answer or decline (`None`, libxml2 decides), never panic or hang.
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

fn paths() -> &'static [StreamPath] {
    static PATHS: OnceLock<Vec<StreamPath>> = OnceLock::new();
    PATHS.get_or_init(|| {
        let ns: Vec<(String, String)> = [
            ("soapenv", "http://schemas.xmlsoap.org/soap/envelope/"),
            ("m", "http://services.samples/xsd"),
            ("t", "http://someuri"),
        ]
        .iter()
        .map(|(p, u)| (p.to_string(), u.to_string()))
        .collect();
        EXPRESSIONS
            .iter()
            .filter_map(|e| StreamPath::compile(e, &ns))
            .collect()
    })
}

fuzz_target!(|data: &[u8]| {
    for p in paths() {
        let _ = p.eval_string(data);
        let _ = p.eval_bool(data);
    }
});
