//! An address endpoint's `format`: how the message leaves for that endpoint, as Synapse converts
//! it before sending.
//!
//! | `format` | The body leaves as | Content-Type | SOAPAction |
//! |---|---|---|---|
//! | none, `leave-as-is` | it is | as it is | as it is |
//! | `soap11` | a SOAP 1.1 envelope: a SOAP 1.2 one renamed, plain XML or JSON (as XML) put in a Body | `text/xml; charset=UTF-8` | kept; from a SOAP 1.2 `action` |
//! | `soap12` | a SOAP 1.2 envelope, likewise | `application/soap+xml; charset=UTF-8` with the action | moved into the Content-Type |
//! | `pox`, `rest` | the first element of the SOAP Body (plain XML as it is; JSON as XML) | `application/xml; charset=UTF-8` | removed |
//! | `json` | JSON made from the payload element (JSON as it is) | `application/json; charset=UTF-8` | removed |
//!
//! `rest` is Synapse's forced REST: the payload as plain XML, as `pox` (a GET that would carry the
//! payload in its URL is not made: the method is the message's).
//!
//! A message already in the format is not read. Otherwise the body is read and converted when it
//! is sent ([`Format::converts`], [`Format::apply`]); the message itself is the converted one
//! afterwards (a failover's next child gets it so).

use crate::budget;
use crate::error::{Error, ErrorKind};
use crate::exec::envelope_with;
use crate::fault::{SOAP11_ENV, SOAP12_ENV};
use crate::json::{is_json_headers, looks_like_xml};
use crate::message::{Body, Message};
use http::header::{HeaderValue, CONTENT_TYPE};
use sluice_config::FaultVersion;

/// An address endpoint's `format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    AsIs,
    Soap11,
    Soap12,
    Pox,
    Json,
}

const SOAPACTION: &str = "soapaction";

impl Format {
    /// The format an endpoint's `format` attribute names; `None` for one Sluice does not convert
    /// to (`get`).
    pub fn named(name: Option<&str>) -> Option<Format> {
        Some(match name {
            None | Some("leave-as-is") => Format::AsIs,
            Some("soap11") => Format::Soap11,
            Some("soap12") => Format::Soap12,
            Some("pox" | "rest") => Format::Pox,
            Some("json") => Format::Json,
            Some(_) => return None,
        })
    }

    /// Whether `msg` must be read and converted to leave in this format, judged by its headers
    /// (and the body's first bytes when it is in memory).
    pub fn converts(self, msg: &Message) -> bool {
        if self == Format::AsIs {
            return false;
        }
        let json = is_json_message(msg);
        match self {
            Format::AsIs => false,
            // A REST request read for mediation holds MI's wrapper, which goes as SOAP 1.1.
            Format::Soap11 => json || msg.soap != FaultVersion::Soap11 || msg.rest.is_held(),
            Format::Soap12 => json || msg.soap != FaultVersion::Soap12,
            // Plain XML stays; a SOAP or JSON message is converted.
            Format::Pox => json || msg.soap != FaultVersion::Pox,
            Format::Json => !json,
        }
    }

    /// Converts `msg` (its body read: bytes or none) to this format. Nothing to do when
    /// [`Format::converts`] says so.
    pub fn apply(self, msg: &mut Message) -> Result<(), Error> {
        if !self.converts(msg) {
            return Ok(());
        }
        let body = match &msg.body {
            Body::Bytes(b) => b.clone(),
            Body::Empty => bytes::Bytes::new(),
            // Not read: nothing to convert (the caller reads it first).
            Body::Stream | Body::Head(_) => return Ok(()),
        };
        let json = is_json_message(msg);
        let action = soap_action(msg);
        let out = match self {
            Format::AsIs => return Ok(()),
            Format::Soap11 | Format::Soap12 => {
                let v = if self == Format::Soap11 {
                    FaultVersion::Soap11
                } else {
                    FaultVersion::Soap12
                };
                to_soap(&body, json, v)?
            }
            Format::Pox => match payload_xml(&body, json)? {
                Some(p) => bytes::Bytes::from(p),
                None => bytes::Bytes::new(),
            },
            Format::Json => to_json(&body)?,
        };
        msg.body = if out.is_empty() {
            Body::Empty
        } else {
            Body::Bytes(out)
        };
        msg.json_out = None;
        // The format decides how it leaves: no REST formatting after it.
        msg.rest = crate::rest::Rest::No;
        for k in ["messageType", "ContentType"] {
            msg.axis2.remove(k);
        }
        msg.headers.remove(SOAPACTION);
        let ct = match self {
            Format::Soap11 => {
                if let Some(a) = &action {
                    if let Ok(v) = HeaderValue::from_str(&format!("\"{a}\"")) {
                        msg.headers.insert(SOAPACTION, v);
                    }
                }
                msg.soap = FaultVersion::Soap11;
                "text/xml; charset=UTF-8".to_owned()
            }
            Format::Soap12 => {
                msg.soap = FaultVersion::Soap12;
                match &action {
                    Some(a) => format!("application/soap+xml; charset=UTF-8; action=\"{a}\""),
                    None => "application/soap+xml; charset=UTF-8".to_owned(),
                }
            }
            Format::Pox => {
                msg.soap = FaultVersion::Pox;
                crate::fault::POX_CONTENT_TYPE.to_owned()
            }
            Format::Json | Format::AsIs => {
                msg.soap = FaultVersion::Pox;
                "application/json; charset=UTF-8".to_owned()
            }
        };
        let ct = HeaderValue::from_str(&ct)
            .unwrap_or(HeaderValue::from_static("application/octet-stream"));
        msg.headers.insert(CONTENT_TYPE, ct);
        Ok(())
    }
}

/// Whether the message's body is JSON: its Content-Type says so, or its bytes in memory are no
/// XML.
fn is_json_message(msg: &Message) -> bool {
    match &msg.body {
        Body::Bytes(b) => !looks_like_xml(b),
        _ => is_json_headers(&msg.headers),
    }
}

/// The message's SOAP action without quotes: the SOAPAction header, else a SOAP 1.2 Content-Type's
/// `action` parameter.
fn soap_action(msg: &Message) -> Option<String> {
    let trim = |s: &str| s.trim().trim_matches('"').to_owned();
    if let Some(a) = msg.headers.get(SOAPACTION).and_then(|v| v.to_str().ok()) {
        return Some(trim(a)).filter(|a| !a.is_empty());
    }
    let ct = msg.headers.get(CONTENT_TYPE)?.to_str().ok()?;
    ct.split(';')
        .filter_map(|p| p.trim().split_once('='))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("action"))
        .map(|(_, v)| trim(v))
        .filter(|a| !a.is_empty())
}

fn failed(why: impl std::fmt::Display) -> Error {
    Error::new(
        ErrorKind::Mediation,
        format!("converting the message to the endpoint's format: {why}"),
    )
}

/// The payload as XML text: the first element of a SOAP Body, the root of plain XML, JSON
/// converted as Synapse reads it (`jsonObject`). `None` for an empty body or Body.
fn payload_xml(body: &[u8], json: bool) -> Result<Option<String>, Error> {
    if body.trim_ascii().is_empty() {
        return Ok(None);
    }
    if json {
        let _held = budget::json_guard(body)?;
        let v: serde_json::Value = serde_json::from_slice(body).map_err(failed)?;
        return crate::json::json_to_xml(&v).map(Some).map_err(failed);
    }
    let _held = budget::xml_guard(body)?;
    let doc = sluice_xml::parse_untrusted(body, &sluice_xml::Limits::default()).map_err(failed)?;
    let Some(p) = crate::exec::payload_node(&doc) else {
        return Ok(None);
    };
    // Copied alone, it declares the namespaces it uses (not the envelope's).
    let own = sluice_xml::Fragment::from_nodes(&[p]).map_err(failed)?;
    own.to_xml_string().map(Some).map_err(failed)
}

/// The body as a SOAP envelope of version `v`: a SOAP envelope of the other version renamed
/// (its Header kept), anything else as the payload of a new envelope.
fn to_soap(body: &[u8], json: bool, v: FaultVersion) -> Result<bytes::Bytes, Error> {
    if !json && !body.trim_ascii().is_empty() {
        let _held = budget::xml_guard(body)?;
        let doc =
            sluice_xml::parse_untrusted(body, &sluice_xml::Limits::default()).map_err(failed)?;
        if doc.soap_version().is_some() {
            let (from, to) = match v {
                FaultVersion::Soap12 => (SOAP11_ENV, SOAP12_ENV),
                _ => (SOAP12_ENV, SOAP11_ENV),
            };
            return Ok(bytes::Bytes::from(rename_namespace(body, from, to)));
        }
    }
    let payload = payload_xml(body, json)?.unwrap_or_default();
    Ok(envelope_with(&payload, v))
}

/// `body` with every namespace declaration of `from` declaring `to` instead: the envelope's
/// elements and attributes (and anything else in that namespace) change namespace, their prefixes
/// stay.
fn rename_namespace(body: &[u8], from: &str, to: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + 16);
    let mut rest = body;
    let needle = from.as_bytes();
    while let Some(k) = memchr::memmem::find(rest, needle) {
        let before = &rest[..k];
        // A declaration's value: `xmlns[:p] = "from"` with the quote right before.
        let is_decl = before
            .last()
            .filter(|&&q| q == b'"' || q == b'\'')
            .and_then(|&q| {
                let b = before[..before.len() - 1].trim_ascii_end();
                let b = b.strip_suffix(b"=")?.trim_ascii_end();
                let name_start = b
                    .iter()
                    .rposition(|c| c.is_ascii_whitespace())
                    .map_or(0, |i| i + 1);
                let name = &b[name_start..];
                let closed = rest.get(k + needle.len()) == Some(&q);
                (closed && (name == b"xmlns" || name.starts_with(b"xmlns:"))).then_some(())
            })
            .is_some();
        out.extend_from_slice(before);
        out.extend_from_slice(if is_decl { to.as_bytes() } else { needle });
        rest = &rest[k + needle.len()..];
    }
    out.extend_from_slice(rest);
    out
}

/// The payload as JSON: the first element of a SOAP Body, or the root of plain XML.
fn to_json(body: &[u8]) -> Result<bytes::Bytes, Error> {
    if body.trim_ascii().is_empty() {
        return Ok(bytes::Bytes::new());
    }
    let _held = budget::xml_guard(body)?;
    let doc = sluice_xml::parse_untrusted(body, &sluice_xml::Limits::default()).map_err(failed)?;
    let p = crate::exec::payload_node(&doc).ok_or_else(|| failed("no payload element"))?;
    crate::json::xml_to_json(p)
        .map(bytes::Bytes::from)
        .map_err(failed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_declarations_change_namespace() {
        let body = format!(
            r#"<e:Envelope xmlns:e="{SOAP11_ENV}"><e:Body><m:a xmlns:m="urn:m">{SOAP11_ENV}</m:a><b x='{SOAP11_ENV}' xmlns:q = '{SOAP11_ENV}'/></e:Body></e:Envelope>"#
        );
        let out =
            String::from_utf8(rename_namespace(body.as_bytes(), SOAP11_ENV, SOAP12_ENV)).unwrap();
        assert_eq!(
            out,
            format!(
                r#"<e:Envelope xmlns:e="{SOAP12_ENV}"><e:Body><m:a xmlns:m="urn:m">{SOAP11_ENV}</m:a><b x='{SOAP11_ENV}' xmlns:q = '{SOAP12_ENV}'/></e:Body></e:Envelope>"#
            )
        );
    }

    /// A REST text/xml request a mediator read holds MI's wrapper, and MI's formatters see it: a
    /// `pox` endpoint gets the document received, a `soap11` one the wrapper with it inside.
    #[test]
    fn a_rest_request_read_for_mediation_converts_what_mi_holds() {
        let env = format!(
            "<soapenv:Envelope xmlns:soapenv=\"{SOAP11_ENV}\"><soapenv:Body><a/></soapenv:Body></soapenv:Envelope>"
        );
        let message = |read: bool| {
            let mut h = http::HeaderMap::new();
            h.insert(CONTENT_TYPE, HeaderValue::from_static("text/xml"));
            let mut m = Message::request("P".into(), http::Method::POST, "/".into(), h);
            m.body = Body::Bytes(bytes::Bytes::from(env.clone()));
            if read {
                crate::rest::enter(&mut m);
            }
            m
        };
        let text = |m: &Message| match &m.body {
            Body::Bytes(b) => String::from_utf8(b.to_vec()).unwrap(),
            _ => panic!(),
        };
        let mut m = message(true);
        Format::Pox.apply(&mut m).unwrap();
        assert_eq!(text(&m), env);
        assert_eq!(m.headers[CONTENT_TYPE], crate::fault::POX_CONTENT_TYPE);
        assert!(!m.rest.is_rest(), "the format decides how it leaves");
        let mut m = message(true);
        assert!(Format::Soap11.converts(&m));
        Format::Soap11.apply(&mut m).unwrap();
        assert_eq!(
            text(&m).matches(":Envelope xmlns").count(),
            2,
            "{}",
            text(&m)
        );
        // Not read: a SOAP 1.1 message already.
        let m = message(false);
        assert!(!Format::Soap11.converts(&m));
    }

    #[test]
    fn formats_are_named_as_in_synapse() {
        assert_eq!(Format::named(None), Some(Format::AsIs));
        assert_eq!(Format::named(Some("soap12")), Some(Format::Soap12));
        assert_eq!(Format::named(Some("json")), Some(Format::Json));
        assert_eq!(Format::named(Some("rest")), Some(Format::Pox));
        assert_eq!(Format::named(Some("get")), None);
    }
}
