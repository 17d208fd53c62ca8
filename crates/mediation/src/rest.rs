//! A `text/xml` request without a `SOAPAction` header is plain XML (REST) to Synapse and WSO2 MI,
//! not SOAP 1.1: Axis2's `disableREST` is `false` in both distributions, and its HTTP transport then
//! marks such a request as REST (`HTTPTransportUtils.initializeMessageContext`). An empty
//! `SOAPAction` (`""`) is a SOAPAction: only a missing header counts. The response to such a
//! request is REST too (the pass-through transport copies the mark), whatever its Content-Type.
//!
//! What the mark changes, as WSO2 MI 4.x does it (wso2-synapse's `DeferredMessageBuilder` picks the
//! builder through Axis2's `MessageProcessorSelector`, which takes the `application/xml` one for a
//! REST `text/xml` message without SOAPAction, and the formatter likewise):
//!
//! | Message | Nothing read, nothing made | Built: a mediator read the body, or made a new one |
//! |---|---|---|
//! | REST request, sent to a back-end or answered (`respond`, `loopback`, `send` as a response) | relayed byte for byte | held as plain XML: the document received, whatever it is (a SOAP envelope, `<a/>`), as the payload in the Body of a SOAP 1.1 envelope of MI's own, which XPath, `$body`, `$header` and the header mediator see (`$body/*[1]` is the envelope received; a header block added goes into MI's envelope and is lost). It leaves as that Body's first element: the document as it came (the bytes received when no mediator changed it), or what a mediator put in its place (`payloadFactory`, `enrich` to the body, a `call` source) |
//! | its response, from the back-end | relayed byte for byte | read as SOAP, as any response; leaves (to the client, or to another back-end) as its Body's first element, without the envelope; a body that is no envelope leaves as it is |
//! | a SOAP fault answered to the client of a REST request (`makefault`, then `respond` or `send`) | `<Exception>`: the fault's detail text (as XML when it is an element), else its reason; status 500 | the same |
//! | a POX fault (`makefault version="pox"`) on a REST message | keeps the message's Content-Type (`text/xml`) | the same |
//! | a request with a `SOAPAction` (even `""`), SOAP 1.2, any other type | none of the above | none of the above |
//!
//! A REST request whose in-sequence reads only the SOAP header is read whole (the header MI reads
//! is its own envelope's). Sequences that run later on the same request (the out-sequence after
//! `loopback`, the fault sequence after a failed send) see it held the same way.
//!
//! An endpoint `format` converts what is held (MI's formatters see its wrapper too): `pox` sends
//! the document received as `application/xml`, `soap11` / `soap12` the wrapper with the document
//! in its Body. Sluice's own faults (no fault sequence answered) stay SOAP faults.
//!
//! Apache Synapse 3.0.1 marks the same messages REST but builds them with the SOAP builder (its
//! `DeferredMessageBuilder` looks the builder up by Content-Type alone): a built message leaves as
//! its Body's first element, the envelope dropped, and a `text/xml` body that is no envelope
//! cannot be read. Sluice follows MI (README, "Where Sluice differs from Synapse").
//!
//! Cost: a message nothing reads is never touched (one test of the mark where it leaves). A read
//! one is copied once into the wrapper (at the start of the first sequence run that has it in
//! memory, `enter`) and, unchanged, leaves as the bytes received ([`outgoing`]); only a changed
//! one is parsed to take its first Body element out. The bytes received are kept until it leaves.
//! Measured (`crates/bench/instructions.sh`, 1 KiB): CBRProxy without a SOAPAction costs about
//! 2,000 instructions more per request than with one (the copy, and the two levels XPath reads
//! through); with one, and DirectProxy, within the run-to-run spread of before.

use crate::fault::{self, SOAP11_ENV, SOAP12_ENV};
use crate::message::{Body, Direction, Message};
use bytes::Bytes;
use http::{HeaderMap, HeaderName};
use sluice_config::FaultVersion;

/// Where a message stands with REST (see the module docs).
#[derive(Clone, Debug, Default)]
pub enum Rest {
    /// Not a REST `text/xml` message: SOAP with a SOAPAction, SOAP 1.2, POX, JSON, ...
    #[default]
    No,
    /// A REST `text/xml` message (or the response to one) whose body no sequence run has held in
    /// memory yet, or whose held form has been taken apart to leave.
    Unbuilt,
    /// A REST request read for mediation: the body holds the wrapper, made of the bytes received
    /// (`Some`), or a body a mediator made in place of one nothing read (`None`). (Boxed: every
    /// message carries the mark, and is moved whole between the awaits.)
    Held(Option<Box<Held>>),
    /// A response to a REST request, read for mediation.
    Built,
}

/// The request as received and the wrapper made of it: a body still the wrapper leaves as the
/// bytes received.
#[derive(Clone, Debug)]
pub struct Held {
    original: Bytes,
    wrapped: Bytes,
}

const OPEN: &str =
    "<soapenv:Envelope xmlns:soapenv=\"http://schemas.xmlsoap.org/soap/envelope/\"><soapenv:Body>";
const CLOSE: &str = "</soapenv:Body></soapenv:Envelope>";

impl Rest {
    /// The mark of a request with these headers and SOAP version: `text/xml` without a SOAPAction
    /// header.
    pub fn of_request(soap: FaultVersion, headers: &HeaderMap) -> Rest {
        // A header name made once: looking one up by text parses it first.
        const SOAPACTION: HeaderName = HeaderName::from_static("soapaction");
        if soap == FaultVersion::Soap11 && !headers.contains_key(&SOAPACTION) {
            Rest::Unbuilt
        } else {
            Rest::No
        }
    }

    #[inline]
    pub fn is_rest(&self) -> bool {
        !matches!(self, Rest::No)
    }

    /// A REST request read for mediation: what it holds is the wrapper.
    pub fn is_held(&self) -> bool {
        matches!(self, Rest::Held(_))
    }

    /// The mark of the response to a message with this one.
    #[inline]
    pub(crate) fn for_response(&self) -> Rest {
        match self {
            Rest::No => Rest::No,
            _ => Rest::Unbuilt,
        }
    }
}

/// At the start of a sequence run: a REST message whose body is in memory becomes built. A
/// request's body is put in the wrapper (once: a later run finds it held).
#[inline]
pub(crate) fn enter(msg: &mut Message) {
    if matches!(msg.rest, Rest::Unbuilt) {
        build(msg);
    }
}

// Out of line: every sequence run passes `enter`, few REST messages get here.
#[cold]
#[inline(never)]
fn build(msg: &mut Message) {
    let Body::Bytes(b) = &msg.body else {
        return;
    };
    match msg.direction {
        Direction::Request => {
            let wrapped = wrap(b);
            msg.rest = Rest::Held(Some(Box::new(Held {
                original: b.clone(),
                wrapped: wrapped.clone(),
            })));
            msg.body = Body::Bytes(wrapped);
        }
        Direction::Response => msg.rest = Rest::Built,
    }
}

/// At the end of a sequence run: a REST message nothing had read whose body a mediator made
/// (`payloadFactory` on a body not read) is built too, as MI builds the message for any mediator
/// that works on the body.
#[inline]
pub(crate) fn leave_run(msg: &mut Message) {
    if matches!(msg.rest, Rest::Unbuilt) && matches!(msg.body, Body::Bytes(_)) {
        msg.rest = match msg.direction {
            Direction::Request => Rest::Held(None),
            Direction::Response => Rest::Built,
        };
    }
}

/// `doc` inside the Body of a SOAP 1.1 envelope; its XML declaration (and byte order mark) stays
/// first, so the encoding it names still applies.
fn wrap(doc: &[u8]) -> Bytes {
    let at = prolog_end(doc);
    let mut out = Vec::with_capacity(doc.len() + OPEN.len() + CLOSE.len());
    out.extend_from_slice(&doc[..at]);
    out.extend_from_slice(OPEN.as_bytes());
    out.extend_from_slice(&doc[at..]);
    out.extend_from_slice(CLOSE.as_bytes());
    Bytes::from(out)
}

/// Where a document's byte order mark and XML declaration end (0 without them).
fn prolog_end(doc: &[u8]) -> usize {
    let bom = if doc.starts_with(b"\xEF\xBB\xBF") {
        3
    } else {
        0
    };
    let rest = &doc[bom..];
    let is_decl = rest.starts_with(b"<?xml") && rest.get(5).is_some_and(u8::is_ascii_whitespace);
    if !is_decl {
        return bom;
    }
    match memchr::memmem::find(rest, b"?>") {
        Some(end) => bom + end + 2,
        None => bom,
    }
}

/// As the message leaves (to a back-end, or to the client when `to_client`): a built REST
/// message goes as its Body's first element (a held request unchanged: the bytes received), and
/// a SOAP fault answered to a REST client as `<Exception>`. Nothing to do for other messages.
/// The message is then what left, no longer built: a later sequence run (a fault sequence after
/// the send failed) holds it anew.
#[inline]
pub fn outgoing(msg: &mut Message, to_client: bool) {
    if msg.rest.is_rest() {
        leave(msg, to_client);
    }
}

#[cold]
#[inline(never)]
fn leave(msg: &mut Message, to_client: bool) {
    let built = !matches!(msg.rest, Rest::Unbuilt);
    let held = match std::mem::replace(&mut msg.rest, Rest::Unbuilt) {
        Rest::Held(h) => h,
        _ => None,
    };
    // JSON made from the message goes out instead of its body.
    if msg.json_out.is_some() {
        return;
    }
    let Body::Bytes(b) = &msg.body else {
        return;
    };
    if let Some(h) = &held {
        if b.as_ptr() == h.wrapped.as_ptr() && b.len() == h.wrapped.len() {
            msg.body = Body::Bytes(h.original.clone());
            return;
        }
    }
    let out = if to_client && msg.is_fault {
        pox_fault(b).map(Some)
    } else {
        None
    };
    let out = match out {
        Some(o) => o,
        None if built => match first_body_element(b) {
            Some(p) => p,
            None => return,
        },
        None => return,
    };
    msg.body = match out {
        Some(p) => Body::Bytes(p),
        None => Body::Empty,
    };
    msg.headers.remove(http::header::CONTENT_LENGTH);
}

/// The first element of a SOAP envelope's Body, alone (declaring the namespaces it uses): `None`
/// when `b` is no envelope (or no XML), `Some(None)` for an empty Body.
fn first_body_element(b: &[u8]) -> Option<Option<Bytes>> {
    if !crate::json::looks_like_xml(b) {
        return None;
    }
    let _held = crate::budget::xml_guard(b).ok()?;
    let doc = sluice_xml::parse_untrusted(b, &sluice_xml::Limits::default()).ok()?;
    let body = doc.soap_body()?;
    let Some(p) = body.first_child_element() else {
        return Some(None);
    };
    let own = sluice_xml::Fragment::from_nodes(&[p]).ok()?;
    own.to_xml_string().ok().map(|s| Some(Bytes::from(s)))
}

/// A SOAP fault (the first element of the Body) as the `<Exception>` Synapse and MI answer a REST
/// client with (`POXUtils.convertSOAPFaultToPOX`): the fault's detail text, as XML when it is
/// an element, else its reason; `None` when `b` holds no SOAP fault.
fn pox_fault(b: &[u8]) -> Option<Bytes> {
    let _held = crate::budget::xml_guard(b).ok()?;
    let doc = sluice_xml::parse_untrusted(b, &sluice_xml::Limits::default()).ok()?;
    let f = doc.soap_body()?.first_child_element()?;
    let ns = f.namespace_uri()?;
    if f.name() != "Fault" || (ns != SOAP11_ENV && ns != SOAP12_ENV) {
        return None;
    }
    let soap12 = ns == SOAP12_ENV;
    let child = |local: &str, in_env: bool| {
        f.child_elements().find(|c| {
            c.name() == local
                && (if in_env {
                    c.namespace_uri() == Some(ns)
                } else {
                    c.namespace_uri().is_none()
                })
        })
    };
    // Only the detail's own text, not its elements' (Axiom's getText).
    let detail = if soap12 {
        child("Detail", true)
    } else {
        child("detail", false)
    }
    .map(|d| {
        d.children()
            .filter(|c| {
                c.kind() == sluice_xml::NodeKind::Text || c.kind() == sluice_xml::NodeKind::CData
            })
            .map(|c| c.text_content())
            .collect::<String>()
    })
    .filter(|t| !t.is_empty());
    let reason = if soap12 {
        child("Reason", true).and_then(|r| {
            r.child_elements()
                .find(|t| t.name() == "Text" && t.namespace_uri() == Some(ns))
        })
    } else {
        child("faultstring", false)
    }
    .map(|r| r.text_content())
    .filter(|t| !t.is_empty());
    let mut out = String::from("<Exception>");
    match (detail, reason) {
        (Some(d), _) => match as_element(&d) {
            Some(x) => out.push_str(&x),
            None => fault::escape(&d, &mut out),
        },
        (None, Some(r)) => fault::escape(&r, &mut out),
        (None, None) => return Some(Bytes::from_static(b"<Exception/>")),
    }
    out.push_str("</Exception>");
    Some(Bytes::from(out))
}

/// `text` when it is one XML element (WSO2's `AXIOMUtil.stringToOM` succeeds), as it is.
fn as_element(text: &str) -> Option<String> {
    let doc =
        sluice_xml::parse_untrusted(text.trim().as_bytes(), &sluice_xml::Limits::default()).ok()?;
    let root = doc.root_element()?;
    sluice_xml::Fragment::from_nodes(&[root])
        .ok()?
        .to_xml_string()
        .ok()
}

#[cfg(test)]
#[path = "rest_tests.rs"]
mod tests;
