//! Tree access, serialisation, replacement and canonicalisation.

use sluice_xml::{
    canonicalize, canonicalize_with, C14nMode, Document, NodeKind, SerializeOptions, XmlErrorKind,
};

/// The result document of a text-method transform that writes `text`.
fn text_result(text: &str) -> Document {
    let sheet = format!(
        r#"<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform"><xsl:output method="text"/><xsl:template match="/">{text}</xsl:template></xsl:stylesheet>"#
    );
    sluice_xml::Stylesheet::compile(sheet.as_bytes(), None)
        .unwrap()
        .transform(&Document::parse(b"<i/>").unwrap(), &[])
        .unwrap()
}

#[test]
fn serialisation_with_and_without_declaration() {
    let doc = Document::parse(
        br#"<?xml version="1.0" encoding="ISO-8859-1"?><a x="1">caf&#233;<b/></a>"#,
    )
    .unwrap();
    let with = String::from_utf8(doc.to_bytes().unwrap()).unwrap();
    assert_eq!(
        with,
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<a x=\"1\">caf\u{e9}<b/></a>\n"
    );
    let without = doc
        .to_bytes_with(SerializeOptions {
            xml_declaration: false,
            indent: false,
        })
        .unwrap();
    assert_eq!(
        String::from_utf8(without).unwrap(),
        "<a x=\"1\">caf\u{e9}<b/></a>\n"
    );
    let indented = Document::parse(b"<a><b/></a>")
        .unwrap()
        .to_bytes_with(SerializeOptions {
            xml_declaration: false,
            indent: true,
        })
        .unwrap();
    assert_eq!(String::from_utf8(indented).unwrap(), "<a>\n  <b/>\n</a>\n");
}

#[test]
fn node_serialisation_and_self_contained_copies() {
    let xml = br#"<r xmlns:p="urn:p" xmlns="urn:d"><p:x a="v"><y>t</y></p:x><!--c--></r>"#;
    let doc = Document::parse(xml).unwrap();
    let x = doc.root_element().unwrap().first_child_element().unwrap();
    // Fragment dump: no declaration, ancestors' namespace declarations not repeated.
    assert_eq!(
        String::from_utf8(x.to_bytes().unwrap()).unwrap(),
        r#"<p:x a="v"><y>t</y></p:x>"#
    );
    // Standalone copy: every in-scope namespace declared on the new root.
    let copy = x.to_document().unwrap();
    let out = String::from_utf8(
        copy.to_bytes_with(SerializeOptions {
            xml_declaration: false,
            indent: false,
        })
        .unwrap(),
    )
    .unwrap();
    assert!(out.starts_with("<p:x"), "{out}");
    assert!(out.contains(r#"xmlns:p="urn:p""#), "{out}");
    assert!(out.contains(r#"xmlns="urn:d""#), "{out}");
    let root = copy.root_element().unwrap();
    assert_eq!(root.namespace_uri(), Some("urn:p"));
    assert_eq!(
        root.first_child_element().unwrap().namespace_uri(),
        Some("urn:d")
    );
    // Comments are nodes too.
    let last = doc.root_element().unwrap().children().last().unwrap();
    assert_eq!(last.kind(), NodeKind::Comment);
    assert_eq!(last.text_content(), "c");
    assert!(last.to_document().is_err());
}

#[test]
fn attributes_and_navigation() {
    let doc = Document::parse(br#"<r><e a="1" q:b="2" xmlns:q="urn:q">x<f/>y</e></r>"#).unwrap();
    let e = doc.root_element().unwrap().first_child_element().unwrap();
    assert_eq!(e.attribute("a").as_deref(), Some("1"));
    assert_eq!(e.attribute("b"), None);
    assert_eq!(e.attribute_ns("b", "urn:q").as_deref(), Some("2"));
    let attrs: Vec<_> = e
        .attributes()
        .map(|a| (a.name(), a.prefix(), a.text_content()))
        .collect();
    assert_eq!(
        attrs,
        [
            ("a", None, "1".to_string()),
            ("b", Some("q"), "2".to_string())
        ]
    );
    let kinds: Vec<_> = e.children().map(|c| c.kind()).collect();
    assert_eq!(kinds, [NodeKind::Text, NodeKind::Element, NodeKind::Text]);
    let f = e.first_child_element().unwrap();
    assert_eq!(f.parent(), Some(e));
    assert_eq!(f.prev_sibling().unwrap().text_content(), "x");
    assert_eq!(f.next_sibling().unwrap().text_content(), "y");
    assert_eq!(
        doc.root_element().unwrap().parent().unwrap().kind(),
        NodeKind::Document
    );
    assert_eq!(doc.as_node().text_content(), "xy");
}

#[test]
fn replace_inner_node_with_all_top_level_nodes() {
    let mut doc = Document::parse(br#"<r><a/><old>x</old><z/></r>"#).unwrap();
    let repl = Document::parse(br#"<!--note--><n:new xmlns:n="urn:n"><k/></n:new>"#).unwrap();
    let target = doc
        .root_element()
        .unwrap()
        .child_elements()
        .nth(1)
        .unwrap()
        .id();
    doc.replace_node(target, &repl).unwrap();
    let out = doc
        .to_bytes_with(SerializeOptions {
            xml_declaration: false,
            indent: false,
        })
        .unwrap();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "<r><a/><!--note--><n:new xmlns:n=\"urn:n\"><k/></n:new><z/></r>\n"
    );
    // The old id no longer names a node of the document.
    let err = doc.replace_node(target, &repl).unwrap_err();
    assert_eq!(err.kind(), XmlErrorKind::InvalidArgument);
    // Replacing with the result of a text transform inserts the text.
    let text_doc = text_result("hello");
    let z = doc.root_element().unwrap().children().last().unwrap().id();
    doc.replace_node(z, &text_doc).unwrap();
    assert_eq!(
        doc.root_element()
            .unwrap()
            .children()
            .last()
            .unwrap()
            .text_content(),
        "hello"
    );
}

#[test]
fn replace_root_and_refuse_foreign_or_special_nodes() {
    let mut doc = Document::parse(b"<old><x/></old>").unwrap();
    let other = Document::parse(b"<new><y/></new>").unwrap();
    // A node of another document is refused.
    let foreign = other.root_element().unwrap().id();
    assert_eq!(
        doc.replace_node(foreign, &other).unwrap_err().kind(),
        XmlErrorKind::InvalidArgument
    );
    // The document node is refused.
    let docnode = doc.as_node().id();
    assert!(doc.replace_node(docnode, &other).is_err());
    // An attribute is refused.
    let d2 = Document::parse(br#"<a k="v"/>"#).unwrap();
    let attr = d2.root_element().unwrap().attributes().next().unwrap().id();
    let mut d2 = d2;
    assert!(d2.replace_node(attr, &other).is_err());
    // The root element is replaced by the other root element.
    let root = doc.root_element().unwrap().id();
    doc.replace_node(root, &other).unwrap();
    assert_eq!(doc.root_element().unwrap().name(), "new");
    assert_eq!(
        doc.root_element()
            .unwrap()
            .first_child_element()
            .unwrap()
            .name(),
        "y"
    );
    // `other` is unchanged (a copy was inserted).
    assert_eq!(other.root_element().unwrap().name(), "new");
}

#[test]
fn canonicalisation_modes() {
    let doc = Document::parse(
        br#"<?xml version="1.0"?><r xmlns:u="urn:unused" b='2' a="1"><!--c--><e/></r>"#,
    )
    .unwrap();
    assert_eq!(
        String::from_utf8(canonicalize(&doc).unwrap()).unwrap(),
        r#"<r xmlns:u="urn:unused" a="1" b="2"><e></e></r>"#
    );
    assert_eq!(
        String::from_utf8(canonicalize_with(&doc, C14nMode::Exclusive, true).unwrap()).unwrap(),
        r#"<r a="1" b="2"><!--c--><e></e></r>"#
    );
    assert!(canonicalize_with(&doc, C14nMode::Inclusive11, false).is_ok());
}

#[test]
fn duplicate_is_independent() {
    let doc = Document::parse(b"<a><b/></a>").unwrap();
    let mut copy = doc.duplicate().unwrap();
    let b = copy
        .root_element()
        .unwrap()
        .first_child_element()
        .unwrap()
        .id();
    copy.replace_node(b, &Document::parse(b"<c/>").unwrap())
        .unwrap();
    assert_eq!(canonicalize(&copy).unwrap(), b"<a><c></c></a>");
    assert_eq!(canonicalize(&doc).unwrap(), b"<a><b></b></a>");
    // And it can be handed to the libxml crate.
    let lx = doc.into_libxml();
    assert_eq!(lx.get_root_element().unwrap().get_name(), "a");
}

#[test]
fn replace_text_with_text_and_refuse_doctype_and_top_level_comments() {
    let mut doc = Document::parse(b"<!DOCTYPE r><!--top--><r>before<b/>after</r>").unwrap();
    let repl = Document::parse(b"<x/>").unwrap();
    // The doctype and a top-level comment are not replaceable.
    let ids: Vec<_> = doc
        .as_node()
        .children()
        .map(|n| (n.kind(), n.id()))
        .collect();
    assert_eq!(ids[0].0, NodeKind::DocumentType);
    assert_eq!(ids[1].0, NodeKind::Comment);
    assert!(doc.replace_node(ids[0].1, &repl).is_err());
    assert!(doc.replace_node(ids[1].1, &repl).is_err());
    // Text replaced by (text-method) text result keeps the new text.
    let text = text_result("NEW");
    let before = doc.root_element().unwrap().first_child().unwrap().id();
    doc.replace_node(before, &text).unwrap();
    assert_eq!(doc.root_element().unwrap().text_content(), "NEWafter");
    assert_eq!(
        canonicalize(&doc).unwrap(),
        b"<r>NEW<b></b>after</r>".to_vec()
    );
}
