//! The throttle mediator's concurrency limit, with requests really at once (the conformance
//! suite `throttle` has the sequential cases).

mod common;
use common::*;
use std::time::Duration;

#[tokio::test]
async fn a_request_past_the_concurrency_limit_is_refused_until_the_first_is_answered() {
    let be = backend().await;
    let suite = workspace_root().join("conformance/throttle");
    let s = Sluice::on_suite(&suite, &["Backend".to_owned()], be.addr, "info");
    let env = "<soapenv:Envelope xmlns:soapenv=\"http://schemas.xmlsoap.org/soap/envelope/\"><soapenv:Body><ping>7</ping></soapenv:Body></soapenv:Envelope>";
    let slow: &[(&str, &str)] = &[
        ("content-type", "text/xml; charset=UTF-8"),
        ("soapaction", "urn:mediate"),
        ("x-test-delay-ms", "400"),
    ];
    let mut first = Conn::open(s.addr).await;
    let held = tokio::spawn(async move {
        first
            .post("/services/Concurrent", slow, env.into())
            .await
            .unwrap()
    });
    // The first is at the back-end, holding the one place (MaximumConcurrentAccess 1).
    assert_eq!(be.wait_seen(1, Duration::from_secs(10)).await, 1);
    let mut second = Conn::open(s.addr).await;
    let r = second
        .post("/services/Concurrent", SOAP_HEADERS, env.into())
        .await
        .unwrap();
    assert_eq!(r.status, 500, "{}", r.text());
    assert!(r.text().contains("**Access Denied**"), "{}", r.text());
    let r = held.await.unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
    // Its response gave the place back.
    let r = second
        .post("/services/Concurrent", SOAP_HEADERS, env.into())
        .await
        .unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        be.seen.lock().unwrap().len(),
        2,
        "the refused one never reached the back-end"
    );
}
