//! Synapse expressions as a mediator attribute holds them (`$ctx:`, `get-property()`, `$body` inside
//! XPath, ...): any text compiles or is refused with an error, never a panic. What compiles is
//! evaluated against a SOAP envelope with a few properties: a value or an error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice_expr::{Env, Expr, ExprError, PropScope};
use std::borrow::Cow;
use std::sync::OnceLock;

struct Message(sluice_xml::Document);

impl Env for Message {
    fn property(&self, _: PropScope, name: &str) -> Option<Cow<'_, str>> {
        (name.len() % 2 == 0).then(|| Cow::Owned(format!("v-{name}")))
    }
    fn url_param(&self, name: &str) -> Option<Cow<'_, str>> {
        (name == "q").then_some(Cow::Borrowed("1"))
    }
    fn document(&self) -> Result<&sluice_xml::Document, ExprError> {
        Ok(&self.0)
    }
}

fn ns() -> &'static [(String, String)] {
    static NS: OnceLock<Vec<(String, String)>> = OnceLock::new();
    NS.get_or_init(|| {
        [
            ("soapenv", "http://schemas.xmlsoap.org/soap/envelope/"),
            ("m", "http://services.samples/xsd"),
            ("fn", "http://www.w3.org/2005/xpath-functions"),
        ]
        .iter()
        .map(|(p, u)| (p.to_string(), u.to_string()))
        .collect()
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(e) = Expr::compile(text, ns()) {
        let doc = sluice_xml::Document::parse(
            b"<soapenv:Envelope xmlns:soapenv=\"http://schemas.xmlsoap.org/soap/envelope/\"><soapenv:Header><h>t</h></soapenv:Header><soapenv:Body><m:buyStocks xmlns:m=\"http://services.samples/xsd\"><order><symbol>IBM</symbol></order></m:buyStocks></soapenv:Body></soapenv:Envelope>",
        )
        .expect("the envelope parses");
        let msg = Message(doc);
        let _ = e.eval_string(&msg);
        let _ = e.eval_bool(&msg);
        let _ = e.eval_xml_aware(&msg);
    }
});
