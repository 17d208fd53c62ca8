//! Start-up on the embedded default, and graceful shutdown.

mod common;
use common::setup::*;
use common::*;
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_embedded_default_serves_its_examples() {
    let s = Sluice::start(&[]);
    let mut c = Conn::open(s.addr).await;
    let body = bytes::Bytes::from_static(b"<soapenv:Envelope xmlns:soapenv=\"http://schemas.xmlsoap.org/soap/envelope/\"><soapenv:Body><hello>world</hello></soapenv:Body></soapenv:Envelope>");
    let r = c.soap("/services/EchoProxy", body.clone()).await;
    assert_eq!((r.status, &r.body), (200, &body));
    let gold = c
        .posted(
            "/services/HeaderRoutingProxy",
            &[SOAP_HEADERS[0], ("routing", "gold")],
            body.clone(),
        )
        .await;
    assert_eq!((gold.status, &gold.body), (200, &body));
    let none = c.soap("/services/HeaderRoutingProxy", body.clone()).await;
    assert_eq!(none.status, 500);
    assert!(
        none.text().contains("soapenv:Client") && none.text().contains("routing: gold"),
        "{}",
        none.text()
    );
    // The REST API: a uri-template variable in a built answer, and call + respond.
    let order = c.get("/orders/42").await.unwrap();
    assert_eq!(order.status, 200, "{}", order.text());
    assert!(
        order
            .text()
            .contains("<id>42</id><status>open</status></order>"),
        "{}",
        order.text()
    );
    let xml = bytes::Bytes::from_static(b"<order><id>7</id></order>");
    let echoed = c
        .posted(
            "/orders",
            &[("content-type", "application/xml")],
            xml.clone(),
        )
        .await;
    assert_eq!((echoed.status, &echoed.body), (200, &xml));
    // The banner comes after the listening line, on the other stream: wait for it (bounded).
    let err = s.stderr_with("curl", Duration::from_secs(10));
    assert!(err.contains("curl"), "the banner shows a curl line: {err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_finishes_in_flight_requests_then_exits_zero() {
    // The exit is bounded at 10 s below, a third of the grace period (30 s).
    let be = backend().await;
    let mut s = start_on_capp(&capp(), be.addr, &[]);
    let mut c = Conn::open(s.addr).await;
    let body = payload("1000B_buyStocks.xml");
    let b2 = body.clone();
    let inflight = tokio::spawn(async move {
        c.post(
            "/services/DirectProxy",
            &[SOAP_HEADERS[0], ("x-test-delay-ms", "1000")],
            b2,
        )
        .await
    });
    // Two connections with no request in flight, which must not hold the exit (hyper alone would
    // wait for their first head up to the 30 s header read timeout): one that sent nothing, one
    // halfway through its head. Both stay open until the end of the test.
    let _silent = tokio::net::TcpStream::connect(s.addr).await.unwrap();
    let mut _half = tokio::net::TcpStream::connect(s.addr).await.unwrap();
    tokio::io::AsyncWriteExt::write_all(
        &mut _half,
        b"POST /services/DirectProxy HTTP/1.1\r\nHost: x\r\n",
    )
    .await
    .unwrap();
    // Wait (bounded) until the back-end has the request, then signal.
    let seen = be.wait_seen(1, Duration::from_secs(10)).await;
    assert_eq!(seen, 1, "request never reached the back-end");
    s.terminate();
    let r = inflight.await.unwrap().unwrap();
    assert_eq!(
        (r.status, r.body),
        (200, body),
        "the in-flight request completes"
    );
    // New connections are refused once shutdown started.
    assert!(
        tokio::net::TcpStream::connect(s.addr).await.is_err()
            || s.child.try_wait().unwrap().is_some()
    );
    let t1 = Instant::now();
    let status = loop {
        if let Some(st) = s.child.try_wait().unwrap() {
            break st;
        }
        assert!(
            t1.elapsed() < Duration::from_secs(10),
            "sluice did not exit after SIGTERM"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(status.code(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_flag_sets_the_event_loops() {
    let s = Sluice::start(&["--workers", "3"]);
    let tasks = std::fs::read_dir(format!("/proc/{}/task", s.child.id())).unwrap();
    let mut names: Vec<String> = tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .map(|n| n.trim().to_owned())
        // The workers (the health probes' thread is sluice-health).
        .filter(|n| {
            n.strip_prefix("sluice-")
                .is_some_and(|k| k.parse::<u32>().is_ok())
        })
        .collect();
    names.sort();
    assert_eq!(names, ["sluice-0", "sluice-1", "sluice-2"]);
    let mut c = Conn::open(s.addr).await;
    let body = bytes::Bytes::from_static(b"<a/>");
    let r = c.soap("/services/EchoProxy", body.clone()).await;
    assert_eq!((r.status, &r.body), (200, &body));
    let zero = std::process::Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["--workers", "0", "validate", "."])
        .output()
        .unwrap();
    assert!(!zero.status.success());
    assert!(
        String::from_utf8_lossy(&zero.stderr).contains("--workers"),
        "{}",
        String::from_utf8_lossy(&zero.stderr)
    );
}
