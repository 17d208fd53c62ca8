//! WSO2 MI's health probes (`/liveness`, `/healthz`) on the internal HTTP API port: as MI answers
//! them, readiness false for a configuration with artifacts left out, and while draining.

mod common;
use common::setup::*;
use common::*;
use std::time::{Duration, Instant};

/// (status, body) of `GET path` on the probes' listener.
async fn probe(s: &Sluice, path: &str) -> (u16, String) {
    let mut c = Conn::open(s.health_addr()).await;
    let r = c.get(path).await.unwrap();
    (r.status, r.text())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probes_answer_as_mi_and_readiness_drops_while_draining() {
    let be = backend().await;
    // WSO2's CAR holds a proxy Sluice leaves out without a key store (SecureProxy): alive, not
    // ready, naming it.
    let capp = start_on_capp(&capp(), be.addr, &[]);
    assert_eq!(
        probe(&capp, "/liveness").await,
        (200, r#"{"server" : "started"}"#.to_owned())
    );
    let (status, body) = probe(&capp, "/healthz").await;
    assert_eq!(status, 500, "{body}");
    assert!(
        body.contains(r#""status": "not ready, faulty CAPPs detected""#)
            && body.contains("SecureProxy"),
        "{body}"
    );
    assert_eq!(probe(&capp, "/nothing").await.0, 404);

    // Everything deployed: ready; once SIGTERM came, not ready while a request finishes.
    let mut s = Sluice::failures_config(be.addr);
    let (status, body) = probe(&s, "/healthz").await;
    assert_eq!(status, 200, "{body}");
    assert!(body.ends_with(r#""status" : "ready"}"#), "{body}");
    let addr = s.addr;
    let inflight = tokio::spawn(async move {
        let mut c = Conn::open(addr).await;
        c.post(
            "/services/Plain",
            &[SOAP_HEADERS[0], ("x-test-delay-ms", "450")],
            payload("1000B_buyStocks.xml"),
        )
        .await
    });
    let seen = be.wait_seen(1, Duration::from_secs(10)).await;
    assert_eq!(seen, 1, "no request reached the back-end");
    s.terminate();
    // Readiness turns false as the drain begins (the request takes under half a second more: the
    // endpoint times out at 500 ms).
    let t1 = Instant::now();
    loop {
        let (status, body) = probe(&s, "/healthz").await;
        if status == 503 {
            assert!(body.ends_with(r#""status": "not ready"}"#), "{body}");
            break;
        }
        assert_eq!(status, 200, "{body}");
        assert!(
            t1.elapsed() < Duration::from_millis(400),
            "still ready while draining"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(probe(&s, "/liveness").await.0, 200, "alive while draining");
    let r = inflight.await.unwrap().unwrap();
    assert_eq!(r.status, 200, "the in-flight request completes");
    let t2 = Instant::now();
    while s.child.try_wait().unwrap().is_none() {
        assert!(
            t2.elapsed() < Duration::from_secs(10),
            "sluice did not exit"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
