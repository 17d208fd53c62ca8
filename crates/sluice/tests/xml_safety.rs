//! Hostile XML sent to a proxy that reads the body: each gets a fault, memory stays bounded, nothing leaks.

mod common;
use common::setup::*;
use common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn entity_bombs_external_entities_and_deep_nesting_get_faults() {
    let (be, s, mut c) = on_capp().await;
    let rss_before = s.status_kb("VmHWM");

    // The billion laughs the XML parser's own tests refuse, with a SOAP envelope as its root.
    let laughs = include_str!("../../xml/tests/data/billion-laughs.xml").replace(
        "<lolz>&lol9;</lolz>",
        r#"<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/"><soapenv:Body><order><symbol>&lol9;</symbol></order></soapenv:Body></soapenv:Envelope>"#,
    );
    c.soap("/services/CBRProxy", laughs)
        .await
        .assert_status(400);

    let xxe = r#"<?xml version="1.0"?><!DOCTYPE d [<!ENTITY x SYSTEM "file:///etc/passwd">]><soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/"><soapenv:Body><order><symbol>&x;</symbol></order></soapenv:Body></soapenv:Envelope>"#;
    let r = c.soap("/services/CBRProxy", xxe).await.assert_status(400);
    assert!(
        !r.text().contains("root:"),
        "file content must never appear: {}",
        r.text()
    );

    let deep = format!(
        "<soapenv:Envelope xmlns:soapenv=\"http://schemas.xmlsoap.org/soap/envelope/\"><soapenv:Body>{}{}</soapenv:Body></soapenv:Envelope>",
        "<a>".repeat(10_000),
        "</a>".repeat(10_000)
    );
    c.soap("/services/CBRProxy", deep).await.assert_status(400);

    // None of them reached the back-end, the connection still serves, and memory stayed bounded.
    assert!(be.seen.lock().unwrap().is_empty());
    let ok = c
        .soap("/services/CBRProxy", payload("1000B_buyStocks.xml"))
        .await;
    assert_eq!(ok.status, 200);
    let growth = s.status_kb("VmHWM").saturating_sub(rss_before);
    assert!(
        growth < 20 * 1024,
        "peak RSS grew {growth} kB on hostile documents"
    );
}
