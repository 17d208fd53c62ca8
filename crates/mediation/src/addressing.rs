//! The WS-Addressing headers a request came with, as Synapse reads them: its `To` is where a
//! `send` that names no endpoint goes (Synapse's samples route this way).
//!
//! | Request | Its To (Synapse 3.0.1) |
//! |---|---|
//! | a SOAP Header with `wsa:To` (the 2005/08 or the 2004/08 namespace) | that address |
//! | anything else | the request line's URI ([`Message::path_and_query`]) |
//!
//! A header mediator's `To` comes before either ([`Message::to`]). Where Sluice reads it:
//!
//! | Reader | What it sees |
//! |---|---|
//! | a `send` or `call` with no endpoint, no To and no target | the `wsa:To` (the body is read for it) |
//! | `rewrite` without `inProperty` ([`Message::to_address`]) | the `wsa:To`, else the URI |
//! | `get-property('To')` | the header mediator's To, else the URI: not the `wsa:To`, which would mean reading the body at each call (a predicate calls it once per node) |

use crate::exec::{eval_expr, DocCache};
use crate::message::Message;
use sluice_expr::Expr;
use std::sync::LazyLock;

/// WS-Addressing 1.0 and the 2004/08 submission: Axis2's addressing module answers with headers
/// of its own in them.
pub const NAMESPACES: [&str; 2] = [
    "http://www.w3.org/2005/08/addressing",
    "http://schemas.xmlsoap.org/ws/2004/08/addressing",
];

/// The `wsa:To` of a SOAP 1.1 or 1.2 Header, in either WS-Addressing namespace.
static WSA_TO: LazyLock<Expr> = LazyLock::new(|| {
    let ns = [
        ("s11", "http://schemas.xmlsoap.org/soap/envelope/"),
        ("s12", "http://www.w3.org/2003/05/soap-envelope"),
        ("wsa", NAMESPACES[0]),
        ("sub", NAMESPACES[1]),
    ]
    .map(|(p, u)| (p.to_owned(), u.to_owned()));
    let path = "/s11:Envelope/s11:Header/wsa:To | /s11:Envelope/s11:Header/sub:To \
                | /s12:Envelope/s12:Header/wsa:To | /s12:Envelope/s12:Header/sub:To";
    Expr::compile(path, &ns).expect("a fixed XPath")
});

/// The `wsa:To` of the request's SOAP Header, if it has one (the body must be in memory: a body
/// not read yet has none here).
pub fn received_to(msg: &Message) -> Option<String> {
    let to = eval_expr(&WSA_TO, msg, &DocCache::new()).ok()?;
    let to = to.trim();
    (!to.is_empty()).then(|| to.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Body;

    fn soap(header: &str) -> Message {
        let mut h = http::HeaderMap::new();
        h.insert("content-type", "text/xml".parse().unwrap());
        let mut msg = Message::request("P".into(), http::Method::POST, "/".into(), h);
        msg.body = Body::Bytes(
            format!(
                "<s:Envelope xmlns:s=\"http://schemas.xmlsoap.org/soap/envelope/\"><s:Header>{header}</s:Header><s:Body><a/></s:Body></s:Envelope>"
            )
            .into(),
        );
        msg
    }

    #[test]
    fn the_to_of_either_addressing_namespace_is_read() {
        let final_ns =
            "<wsa:To xmlns:wsa=\"http://www.w3.org/2005/08/addressing\"> http://h:9000/s </wsa:To>";
        assert_eq!(
            received_to(&soap(final_ns)).as_deref(),
            Some("http://h:9000/s")
        );
        let submission =
            "<w:To xmlns:w=\"http://schemas.xmlsoap.org/ws/2004/08/addressing\">http://h/t</w:To>";
        assert_eq!(
            received_to(&soap(submission)).as_deref(),
            Some("http://h/t")
        );
        // Another namespace's To, or none at all, is no address.
        assert_eq!(
            received_to(&soap("<To xmlns=\"urn:x\">http://h/x</To>")),
            None
        );
        assert_eq!(received_to(&soap("")), None);
    }
}
