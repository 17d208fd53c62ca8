//! XSLTProxy and XSLTEnhancedProxy from the WSO2 artifacts, checked against xsltproc.

mod common;
use common::setup::*;
use common::*;
use sluice_xml::testing::without_space_between_tags;
use sluice_xml::{canonicalize, Document};
use std::path::Path;

/// The stylesheet inside a local entry file, exactly as written there (it declares its own namespaces).
fn stylesheet_of(local_entry: &Path) -> Vec<u8> {
    let text = std::fs::read_to_string(local_entry).unwrap();
    let start = text.find("<xsl:stylesheet").unwrap();
    let end = text.find("</xsl:stylesheet>").unwrap() + "</xsl:stylesheet>".len();
    text.as_bytes()[start..end].to_vec()
}

/// xsltproc's output for a stylesheet and an input document.
fn xsltproc(sheet: &[u8], input: &[u8]) -> Vec<u8> {
    let dir = std::env::temp_dir().join(format!(
        "sluice-xslt-{}-{}",
        std::process::id(),
        input.len()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("s.xsl"), sheet).unwrap();
    std::fs::write(dir.join("in.xml"), input).unwrap();
    let out = std::process::Command::new("xsltproc")
        .arg(dir.join("s.xsl"))
        .arg(dir.join("in.xml"))
        .output()
        .expect("xsltproc must be installed (.ci/run installs it)");
    assert!(
        out.status.success(),
        "xsltproc: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
    out.stdout
}

/// C14N of a document, with whitespace between elements dropped (transforms rebuild elements
/// without the original's line breaks).
fn canon(bytes: &[u8]) -> String {
    let c = canonicalize(&Document::parse(bytes).unwrap()).unwrap();
    without_space_between_tags(&String::from_utf8(c).unwrap())
}

fn body_first_child(envelope: &[u8]) -> Vec<u8> {
    let d = Document::parse(envelope).unwrap();
    d.soap_body_first_child()
        .unwrap()
        .to_document()
        .unwrap()
        .to_bytes()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn xslt_proxy_sends_what_xsltproc_makes_and_returns_the_original() {
    let (be, _s, mut c) = on_capp().await;
    let reverse = stylesheet_of(
        &capp().join("xslt_transform_reverse_1.0.0/xslt_transform_reverse-1.0.0.xml"),
    );
    for name in ["1000B_buyStocks.xml", "10000B_buyStocks.xml"] {
        let body = payload(name);
        let r = c
            .soap("/services/XSLTProxy", body.clone())
            .await
            .assert_status(200);
        let sent = be.last_body();
        let expected = xsltproc(&reverse, &body_first_child(&body));
        assert_eq!(
            canon(&body_first_child(&sent)),
            canon(&expected),
            "{name}: the back-end gets xsltproc's result"
        );
        assert!(String::from_utf8_lossy(&sent).contains("skcotSyub"));
        assert_eq!(
            canon(&body_first_child(&r.body)),
            canon(&body_first_child(&body)),
            "{name}: the client gets the original back"
        );
        assert_eq!(r.header("content-length"), r.body.len().to_string());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn xslt_enhanced_proxy_transforms_the_whole_envelope() {
    let (be, _s, mut c) = on_capp().await;
    let reverse = stylesheet_of(
        &capp().join("fastxslt_transform_reverse_1.0.0/fastxslt_transform_reverse-1.0.0.xml"),
    );
    let body = payload("1000B_buyStocks.xml");
    let r = c
        .soap("/services/XSLTEnhancedProxy", body.clone())
        .await
        .assert_status(200);
    let sent = be.last_body();
    assert_eq!(
        canon(&sent),
        canon(&xsltproc(&reverse, &body)),
        "the back-end gets xsltproc's result"
    );
    assert_eq!(
        canon(&r.body),
        canon(&body),
        "the client gets the original envelope back"
    );
}
