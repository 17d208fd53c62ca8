//! Secure parsing: well-formed input, attacks refused, errors located.

use sluice_xml::{parse_untrusted, Document, Limits, NodeKind, XmlErrorKind};
use std::time::{Duration, Instant};

const SOAP: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/">
  <soapenv:Header><t:routing xmlns:t="http://someuri">r1</t:routing></soapenv:Header>
  <soapenv:Body>
    <m:getQuote xmlns:m="http://services.samples"><m:request><m:symbol>IBM</m:symbol></m:request></m:getQuote>
  </soapenv:Body>
</soapenv:Envelope>"#;

#[test]
fn soap_envelope_parses_and_exposes_header_and_body() {
    let doc = parse_untrusted(SOAP.as_bytes(), &Limits::default()).unwrap();
    let root = doc.root_element().unwrap();
    assert_eq!(root.name(), "Envelope");
    assert_eq!(root.prefix(), Some("soapenv"));
    assert_eq!(
        root.namespace_uri(),
        Some("http://schemas.xmlsoap.org/soap/envelope/")
    );
    assert_eq!(doc.soap_version(), Some(sluice_xml::SoapVersion::Soap11));
    let header = doc.soap_header().unwrap();
    assert_eq!(header.first_child_element().unwrap().text_content(), "r1");
    let payload = doc.soap_body_first_child().unwrap();
    assert_eq!(payload.name(), "getQuote");
    assert_eq!(payload.namespace_uri(), Some("http://services.samples"));
    assert_eq!(payload.text_content(), "IBM");
    assert_eq!(payload.line(), Some(5));
}

#[test]
fn soap12_envelope_is_recognised() {
    let xml = r#"<e:Envelope xmlns:e="http://www.w3.org/2003/05/soap-envelope"><e:Body><p/></e:Body></e:Envelope>"#;
    let doc = Document::parse(xml.as_bytes()).unwrap();
    assert_eq!(doc.soap_version(), Some(sluice_xml::SoapVersion::Soap12));
    assert!(doc.soap_header().is_none());
    assert_eq!(doc.soap_body_first_child().unwrap().name(), "p");
    // Not SOAP: no helpers.
    let plain = Document::parse(b"<Envelope><Body><p/></Body></Envelope>").unwrap();
    assert_eq!(plain.soap_version(), None);
    assert!(plain.soap_body().is_none());
}

/// Ten levels of entities, each ten references to the one below: a billion `lol`s expanded.
const BILLION_LAUGHS: &str = include_str!("data/billion-laughs.xml");

#[test]
fn billion_laughs_is_rejected_quickly() {
    let start = Instant::now();
    let err = parse_untrusted(BILLION_LAUGHS.as_bytes(), &Limits::default()).unwrap_err();
    assert_eq!(err.kind(), XmlErrorKind::EntityDeclaration, "{err}");
    assert_eq!(err.line(), Some(3), "{err}");
    assert!(start.elapsed() < Duration::from_secs(2));
}

#[test]
fn billion_laughs_is_still_bounded_when_entities_are_allowed() {
    // Even when declarations are accepted, entities are never substituted and
    // libxml2's amplification checks stay on: either an error or a document
    // without the expansion, never gigabytes.
    let limits = Limits {
        allow_entity_declarations: true,
        ..Limits::default()
    };
    let start = Instant::now();
    match parse_untrusted(BILLION_LAUGHS.as_bytes(), &limits) {
        Err(e) => assert_eq!(e.kind(), XmlErrorKind::Malformed, "{e}"),
        Ok(doc) => {
            let bytes = doc.to_bytes().unwrap();
            assert!(bytes.len() < 10_000, "{} bytes", bytes.len());
        }
    }
    assert!(start.elapsed() < Duration::from_secs(5));
}

fn xxe(path: &str) -> String {
    format!(
        r#"<?xml version="1.0"?>
<!DOCTYPE foo [ <!ENTITY xxe SYSTEM "file://{path}"> ]>
<foo>&xxe;</foo>"#
    )
}

#[test]
fn external_entity_is_rejected_and_file_never_read() {
    let err = parse_untrusted(xxe("/etc/passwd").as_bytes(), &Limits::default()).unwrap_err();
    assert_eq!(err.kind(), XmlErrorKind::EntityDeclaration);
    let text = format!("{err} {:?}", err.details());
    assert!(!text.contains("root:"), "{text}");
}

#[test]
fn external_entity_is_not_loaded_even_when_declarations_are_allowed() {
    let limits = Limits {
        allow_entity_declarations: true,
        ..Limits::default()
    };
    let doc = parse_untrusted(xxe("/etc/passwd").as_bytes(), &limits).unwrap();
    let out = String::from_utf8(doc.to_bytes().unwrap()).unwrap();
    assert!(!out.contains("root:"), "{out}");
    let root = doc.root_element().unwrap();
    assert!(!root.text_content().contains("root:"));
    // The reference is kept as an (unexpanded) entity reference.
    assert_eq!(root.first_child().unwrap().kind(), NodeKind::EntityRef);
}

#[test]
fn parameter_entity_and_external_dtd_are_not_fetched() {
    let pe = r#"<!DOCTYPE foo [ <!ENTITY % p SYSTEM "file:///etc/passwd"> %p; ]><foo/>"#;
    let err = parse_untrusted(pe.as_bytes(), &Limits::default()).unwrap_err();
    assert_eq!(err.kind(), XmlErrorKind::EntityDeclaration);
    // An external DTD reference without entity declarations parses, but the
    // DTD is not loaded (no network, no file).
    let ext = r#"<!DOCTYPE foo SYSTEM "http://127.0.0.1:9/evil.dtd"><foo>x</foo>"#;
    let doc = parse_untrusted(ext.as_bytes(), &Limits::default()).unwrap();
    assert_eq!(doc.root_element().unwrap().text_content(), "x");
}

#[test]
fn xinclude_is_not_processed() {
    let xml = r#"<a xmlns:xi="http://www.w3.org/2001/XInclude"><xi:include href="file:///etc/passwd" parse="text"/></a>"#;
    let doc = Document::parse(xml.as_bytes()).unwrap();
    let out = String::from_utf8(doc.to_bytes().unwrap()).unwrap();
    assert!(out.contains("xi:include"));
    assert!(!out.contains("root:"));
}

#[test]
fn deep_nesting_is_rejected_with_bounded_work() {
    let n = 10_000;
    let xml = format!("{}{}", "<a>".repeat(n), "</a>".repeat(n));
    let start = Instant::now();
    let err = parse_untrusted(xml.as_bytes(), &Limits::default()).unwrap_err();
    assert_eq!(err.kind(), XmlErrorKind::TooDeep, "{err}");
    assert!(start.elapsed() < Duration::from_secs(2));

    // Our own (lower) limit applies exactly.
    let limits = Limits {
        max_depth: 10,
        ..Limits::default()
    };
    let ok = format!("{}{}", "<a>".repeat(10), "</a>".repeat(10));
    assert!(parse_untrusted(ok.as_bytes(), &limits).is_ok());
    let deep = format!("{}{}", "<a>".repeat(11), "</a>".repeat(11));
    let err = parse_untrusted(deep.as_bytes(), &limits).unwrap_err();
    assert_eq!(err.kind(), XmlErrorKind::TooDeep);
    assert!(err.message().contains("10"), "{err}");
}

#[test]
fn oversized_input_is_rejected_before_parsing() {
    let limits = Limits {
        max_bytes: 16,
        ..Limits::default()
    };
    let err = parse_untrusted(b"<a>0123456789abcdef</a>", &limits).unwrap_err();
    assert_eq!(err.kind(), XmlErrorKind::InputTooLarge);
    assert!(parse_untrusted(b"<a>0123</a>", &limits).is_ok());
}

#[test]
fn malformed_xml_reports_libxml2_message_and_line() {
    let xml = "<a>\n  <b>\n    <c></b>\n</a>";
    let err = parse_untrusted(xml.as_bytes(), &Limits::default()).unwrap_err();
    assert_eq!(err.kind(), XmlErrorKind::Malformed);
    assert_eq!(err.line(), Some(3), "{err}");
    assert!(err.message().contains("mismatch"), "{err}");
    assert!(err.to_string().contains("line 3"), "{err}");

    let err = Document::parse(b"").unwrap_err();
    assert_eq!(err.kind(), XmlErrorKind::Malformed);
    let err = Document::parse(b"<a>&undefined;</a>").unwrap_err();
    assert!(err.message().contains("undefined"), "{err}");
}

#[test]
fn errors_of_concurrent_parses_do_not_mix() {
    let handles: Vec<_> = (0..4)
        .map(|t| {
            std::thread::spawn(move || {
                for i in 0..200 {
                    let line = 1 + (t + i) % 7;
                    let xml = format!("{}<a><b></a>", "\n".repeat(line - 1));
                    let err = Document::parse(xml.as_bytes()).unwrap_err();
                    assert_eq!(err.line(), Some(line as u32), "{err}");
                    let ok = Document::parse(b"<ok/>").unwrap();
                    assert_eq!(ok.root_element().unwrap().name(), "ok");
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
}

#[test]
fn utf16_input_is_guarded_too() {
    // The entity check runs inside the parser, so a non-UTF-8 encoding does
    // not smuggle a declaration past it.
    let text =
        "<?xml version=\"1.0\" encoding=\"UTF-16\"?><!DOCTYPE a [<!ENTITY e \"x\">]><a>&e;</a>";
    let mut bytes = vec![0xFF, 0xFE];
    for u in text.encode_utf16() {
        bytes.extend_from_slice(&u.to_le_bytes());
    }
    let err = Document::parse(&bytes).unwrap_err();
    assert_eq!(err.kind(), XmlErrorKind::EntityDeclaration, "{err}");
}
