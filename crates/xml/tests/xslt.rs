//! XSLT: the WSO2 perf stylesheets, xsltproc parity, security, threads.

use sluice_xml::{
    canonicalize, canonicalize_with, C14nMode, Document, Node, NodeKind, Stylesheet, XmlErrorKind,
};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

fn perf_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/reference/wso2-perf/performance-ei")
}

fn read(rel: &str) -> Vec<u8> {
    let p = perf_dir().join(rel);
    std::fs::read(&p).unwrap_or_else(|e| panic!("reading {}: {e}", p.display()))
}

fn payload() -> Vec<u8> {
    read("requests/current/1000B_buyStocks.xml")
}

/// The stylesheet inside a `<localEntry>`, as a standalone document (with the
/// namespaces in scope at that element).
fn local_entry_stylesheet(rel: &str) -> Vec<u8> {
    let entry = Document::parse(&read(rel)).unwrap();
    let root = entry.root_element().unwrap();
    assert_eq!(root.name(), "localEntry");
    let sheet = root.first_child_element().unwrap();
    assert_eq!(sheet.name(), "stylesheet");
    sheet.to_document().unwrap().to_bytes().unwrap()
}

const REVERSE: &str = "capp/xslt_transform_reverse_1.0.0/xslt_transform_reverse-1.0.0.xml";
const FORWARD: &str = "capp/xslt_transform_1.0.0/xslt_transform-1.0.0.xml";

/// Structural fingerprint ignoring whitespace-only text and namespace
/// declarations (prefixes are irrelevant; namespace URIs are kept).
fn shape(n: Node<'_>) -> String {
    match n.kind() {
        NodeKind::Element => {
            let mut attrs: Vec<String> = n
                .attributes()
                .map(|a| {
                    format!(
                        "{{{}}}{}={}",
                        a.namespace_uri().unwrap_or(""),
                        a.name(),
                        a.text_content()
                    )
                })
                .collect();
            attrs.sort();
            let kids: String = n.children().map(shape).collect();
            format!(
                "<{{{}}}{} {}>{}</>",
                n.namespace_uri().unwrap_or(""),
                n.name(),
                attrs.join(" "),
                kids
            )
        }
        NodeKind::Text | NodeKind::CData => n.text_content().trim().to_string(),
        _ => String::new(),
    }
}

fn xsltproc(stylesheet: &[u8], input: &[u8], tag: &str) -> Option<Vec<u8>> {
    let dir = std::env::temp_dir().join(format!("sluice-xml-{}-{tag}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let xsl = dir.join("s.xsl");
    let xml = dir.join("in.xml");
    std::fs::write(&xsl, stylesheet).unwrap();
    std::fs::write(&xml, input).unwrap();
    let out = Command::new("xsltproc").arg(&xsl).arg(&xml).output();
    let _ = std::fs::remove_dir_all(&dir);
    match out {
        Ok(o) => {
            assert!(
                o.status.success(),
                "xsltproc failed: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            Some(o.stdout)
        }
        Err(e) => {
            panic!("xsltproc must be installed for this comparison (.ci/run installs it): {e}")
        }
    }
}

#[test]
fn version_2_stylesheets_compile_in_forwards_compatible_mode() {
    let reverse = local_entry_stylesheet(REVERSE);
    assert!(String::from_utf8_lossy(&reverse).contains(r#"version="2.0""#));
    let sheet = Stylesheet::compile(&reverse, Some("reverse.xsl")).unwrap();
    // libxslt says so, as a compile-time notice that is not an error.
    assert!(
        sheet
            .warnings()
            .iter()
            .any(|w| w.contains("xsl:version: only 1.1 features are supported")),
        "{:?}",
        sheet.warnings()
    );
    let doc = Document::parse(&payload()).unwrap();
    let out = sheet.transform(&doc, &[]).unwrap();
    let body = out.soap_body_first_child().unwrap();
    assert_eq!(body.name(), "skcotSyub");
    assert_eq!(body.namespace_uri(), Some("http://services.samples/xsd"));
    let redros: Vec<_> = body.child_elements().collect();
    assert_eq!(redros.len(), 7);
    assert!(redros
        .iter()
        .all(|r| r.name() == "redro" && r.namespace_uri().is_none()));
    let symbols: Vec<String> = redros
        .iter()
        .map(|r| {
            r.first_child_element()
                .unwrap()
                .text_content()
                .trim()
                .to_string()
        })
        .collect();
    assert_eq!(symbols, ["N", "SUN", "MSFT", "IBM", "N", "SUN", "MSFT"]);
    // The SOAP header is copied by the identity template.
    assert_eq!(
        out.soap_header()
            .unwrap()
            .first_child_element()
            .unwrap()
            .text_content(),
        "xadmin;server1;community#1.0##"
    );
}

#[test]
fn reverse_then_forward_gives_back_the_original_payload() {
    let reverse = Stylesheet::compile(&local_entry_stylesheet(REVERSE), None).unwrap();
    let forward = Stylesheet::compile(&local_entry_stylesheet(FORWARD), None).unwrap();
    let original = Document::parse(&payload()).unwrap();
    let reversed = reverse.transform(&original, &[]).unwrap();
    let back = forward.transform(&reversed, &[]).unwrap();

    let orig_payload = original.soap_body_first_child().unwrap();
    let back_payload = back.soap_body_first_child().unwrap();
    assert_eq!(back_payload.name(), "buyStocks");
    assert_eq!(shape(back_payload), shape(orig_payload));
    // And the whole envelope (header included).
    assert_eq!(
        shape(back.root_element().unwrap()),
        shape(original.root_element().unwrap())
    );
    // The price text survives exactly.
    assert!(String::from_utf8(back.to_bytes().unwrap())
        .unwrap()
        .contains("<price>140.34</price>"));
}

#[test]
fn output_matches_xsltproc_after_canonicalisation() {
    for (rel, input) in [(REVERSE, payload()), (FORWARD, Vec::new())] {
        let xsl = local_entry_stylesheet(rel);
        let sheet = Stylesheet::compile(&xsl, None).unwrap();
        // Forward is checked on the output of the reverse transform.
        let input = if input.is_empty() {
            let rev = Stylesheet::compile(&local_entry_stylesheet(REVERSE), None).unwrap();
            rev.transform_to_bytes(&Document::parse(&payload()).unwrap(), &[])
                .unwrap()
        } else {
            input
        };
        let ours = sheet
            .transform_to_bytes(&Document::parse(&input).unwrap(), &[])
            .unwrap();
        assert!(
            ours.starts_with(b"<?xml version=\"1.0\""),
            "xsl:output honoured"
        );
        let Some(theirs) = xsltproc(&xsl, &input, rel.split('/').nth(1).unwrap()) else {
            continue;
        };
        let ours_doc = Document::parse(&ours).unwrap();
        let theirs_doc = Document::parse(&theirs).unwrap();
        assert_eq!(
            canonicalize(&ours_doc).unwrap(),
            canonicalize(&theirs_doc).unwrap(),
            "{}\n---\n{}",
            String::from_utf8_lossy(&ours),
            String::from_utf8_lossy(&theirs)
        );
        // Byte-identical, in fact.
        assert_eq!(ours, theirs);
    }
}

#[test]
fn one_stylesheet_shared_by_four_threads() {
    let sheet = Arc::new(Stylesheet::compile(&local_entry_stylesheet(REVERSE), None).unwrap());
    let input = payload();
    let expected = sheet
        .transform_to_bytes(&Document::parse(&input).unwrap(), &[])
        .unwrap();
    assert!(String::from_utf8_lossy(&expected).contains("<lobmys>MSFT</lobmys>"));
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let sheet = Arc::clone(&sheet);
            let input = input.clone();
            let expected = expected.clone();
            std::thread::spawn(move || {
                for _ in 0..200 {
                    let doc = Document::parse(&input).unwrap();
                    let out = sheet.transform_to_bytes(&doc, &[]).unwrap();
                    assert_eq!(out, expected);
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
}

const ECHO_PARAM: &str = r#"<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
  <xsl:output method="text"/>
  <xsl:param name="greeting" select="'default'"/>
  <xsl:param name="who"/>
  <xsl:template match="/"><xsl:value-of select="concat($greeting, ',', $who, ',', /r/@v)"/></xsl:template>
</xsl:stylesheet>"#;

#[test]
fn params_are_literal_strings_and_text_output_has_no_declaration() {
    let sheet = Stylesheet::compile(ECHO_PARAM.as_bytes(), None).unwrap();
    let doc = Document::parse(br#"<r v="7"/>"#).unwrap();
    let out = sheet.transform_to_bytes(&doc, &[]).unwrap();
    assert_eq!(String::from_utf8(out).unwrap(), "default,,7");
    let tricky = r#"it's "quoted" & <odd>"#;
    let out = sheet
        .transform_to_bytes(&doc, &[("greeting", "hi"), ("who", tricky)])
        .unwrap();
    assert_eq!(String::from_utf8(out).unwrap(), format!("hi,{tricky},7"));
    // The DOM result of a text-method transform holds a text node.
    let res = sheet.transform(&doc, &[("greeting", "x")]).unwrap();
    assert_eq!(res.as_node().text_content(), "x,,7");
}

#[test]
fn compile_errors_are_reported_with_libxslt_messages() {
    let bad_xpath = r#"<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
  <xsl:template match="/">
    <xsl:value-of select="1 +"/>
  </xsl:template>
</xsl:stylesheet>"#;
    let err = Stylesheet::compile(bad_xpath.as_bytes(), Some("bad.xsl")).unwrap_err();
    assert_eq!(err.kind(), XmlErrorKind::XsltCompile);
    let all = err.details().join("\n");
    assert!(
        all.contains("could not compile select expression '1 +'"),
        "{all}"
    );
    assert_eq!(err.line(), Some(3), "{err} / {all}");

    // libxml2 only checks function arity when evaluating: this compiles and
    // then fails at transform time, with the position of the instruction.
    let arity = bad_xpath.replace("1 +", "concat(1)");
    let sheet = Stylesheet::compile(arity.as_bytes(), Some("arity.xsl")).unwrap();
    let err = sheet
        .transform(&Document::parse(b"<a/>").unwrap(), &[])
        .unwrap_err();
    assert_eq!(err.kind(), XmlErrorKind::XsltTransform);
    assert!(
        err.details()
            .join("\n")
            .contains("Invalid number of arguments"),
        "{:?}",
        err.details()
    );
    assert_eq!(err.line(), Some(3), "{err} {:?}", err.details());

    let not_xslt = Stylesheet::compile(b"<html><body/></html>", None).unwrap_err();
    assert_eq!(not_xslt.kind(), XmlErrorKind::XsltCompile);
    assert!(
        not_xslt.details().join("\n").contains("not a stylesheet"),
        "{not_xslt} {:?}",
        not_xslt.details()
    );

    let malformed = Stylesheet::compile(b"<xsl:stylesheet\n<oops", None).unwrap_err();
    assert_eq!(malformed.kind(), XmlErrorKind::XsltCompile);
    assert_eq!(malformed.line(), Some(2), "{malformed}");
}

#[test]
fn document_function_cannot_read_files_or_network() {
    for uri in [
        "file:///etc/passwd",
        "/etc/passwd",
        "http://127.0.0.1:9/x.xml",
    ] {
        let xsl = format!(
            r#"<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
  <xsl:template match="/"><out><xsl:copy-of select="document('{uri}')"/></out></xsl:template>
</xsl:stylesheet>"#
        );
        let sheet = Stylesheet::compile(xsl.as_bytes(), None).unwrap();
        let doc = Document::parse(b"<in/>").unwrap();
        let err = sheet.transform_to_bytes(&doc, &[]).unwrap_err();
        assert_eq!(err.kind(), XmlErrorKind::XsltTransform, "{uri}: {err}");
        let all = format!("{err} {:?}", err.details());
        assert!(
            all.contains("refused") || all.contains("denied"),
            "{uri}: {all}"
        );
        assert!(!all.contains("root:x"), "{all}");
    }
}

#[test]
fn include_and_import_cannot_read_files() {
    for kind in ["include", "import"] {
        let xsl = format!(
            r#"<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
  <xsl:{kind} href="file:///etc/passwd"/>
</xsl:stylesheet>"#
        );
        let err = Stylesheet::compile(xsl.as_bytes(), None).unwrap_err();
        assert_eq!(err.kind(), XmlErrorKind::XsltCompile);
        let all = err.details().join("\n");
        assert!(all.contains("denied") || all.contains("refused"), "{all}");
    }
}

#[test]
fn result_documents_cannot_be_written() {
    let xsl = r#"<xsl:stylesheet version="1.1" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
  <xsl:template match="/"><xsl:document href="/tmp/sluice-xml-should-not-exist.xml"><x/></xsl:document><ok/></xsl:template>
</xsl:stylesheet>"#;
    let sheet = Stylesheet::compile(xsl.as_bytes(), None).unwrap();
    let doc = Document::parse(b"<in/>").unwrap();
    let err = sheet.transform(&doc, &[]).unwrap_err();
    assert_eq!(err.kind(), XmlErrorKind::XsltTransform);
    assert!(!Path::new("/tmp/sluice-xml-should-not-exist.xml").exists());
}

#[test]
fn terminating_message_fails_the_transform_with_its_text() {
    let xsl = r#"<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
  <xsl:template match="/"><xsl:message terminate="yes">stop here: <xsl:value-of select="name(*)"/></xsl:message></xsl:template>
</xsl:stylesheet>"#;
    let sheet = Stylesheet::compile(xsl.as_bytes(), None).unwrap();
    let doc = Document::parse(b"<in/>").unwrap();
    let err = sheet.transform(&doc, &[]).unwrap_err();
    assert_eq!(err.kind(), XmlErrorKind::XsltTransform);
    assert!(
        err.details().join("\n").contains("stop here: in"),
        "{:?}",
        err.details()
    );
    // A failed transform leaves the stylesheet usable.
    let ok = Stylesheet::compile(ECHO_PARAM.as_bytes(), None).unwrap();
    assert!(ok.transform(&doc, &[]).is_ok());
    assert!(sheet.transform(&doc, &[]).is_err());
}

#[test]
fn xslt_result_replaces_the_source_payload() {
    let sheet = Stylesheet::compile(&local_entry_stylesheet(REVERSE), None).unwrap();
    let mut msg = Document::parse(&payload()).unwrap();
    // Transform only the payload, like Synapse's XSLT mediator with a source.
    let source = msg.soap_body_first_child().unwrap().to_document().unwrap();
    let result = sheet.transform(&source, &[]).unwrap();
    let target = msg.soap_body_first_child().unwrap().id();
    msg.replace_node(target, &result).unwrap();
    let payload = msg.soap_body_first_child().unwrap();
    assert_eq!(payload.name(), "skcotSyub");
    assert_eq!(payload.child_elements().count(), 7);
    // The new subtree serialises with its namespace bound.
    let bytes = String::from_utf8(payload.to_bytes().unwrap()).unwrap();
    assert!(bytes.starts_with("<m0:skcotSyub"), "{bytes}");
    assert!(
        bytes.contains("xmlns:m0=\"http://services.samples/xsd\""),
        "{bytes}"
    );
    // The rest of the envelope is untouched.
    assert_eq!(
        msg.soap_header()
            .unwrap()
            .first_child_element()
            .unwrap()
            .name(),
        "routing"
    );
    // Canonical forms agree across C14N modes on the replaced tree.
    let c = canonicalize(&msg).unwrap();
    let e = canonicalize_with(&msg, C14nMode::Exclusive, false).unwrap();
    assert!(String::from_utf8(c)
        .unwrap()
        .contains("<lobmys>IBM</lobmys>"));
    assert!(String::from_utf8(e)
        .unwrap()
        .contains("<lobmys>IBM</lobmys>"));
}

#[test]
fn stylesheet_and_xpath_are_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Stylesheet>();
    assert_send_sync::<sluice_xml::XPath>();
}
