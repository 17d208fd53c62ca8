//! Back-end failures: each gives its documented fault within the endpoint timeout, and no descriptor leaks.

mod common;
use common::*;
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;

const BODY: &str = "<soapenv:Envelope xmlns:soapenv=\"http://schemas.xmlsoap.org/soap/envelope/\"><soapenv:Body><a/></soapenv:Body></soapenv:Envelope>";

/// The test body posted to the proxy `Plain`, its answer.
async fn plain(c: &mut Conn) -> Reply {
    c.soap("/services/Plain", BODY).await
}

/// Sluice on the `failures` config, its back-end at `backend`; how many descriptors it holds before
/// any client; and a client connection (to drop before counting them again).
async fn counted(backend: impl std::fmt::Display) -> (Sluice, usize, Conn) {
    let s = Sluice::failures_config(backend);
    let baseline = s.fd_count();
    let c = Conn::open(s.addr).await;
    (s, baseline, c)
}

/// A response head that promises 1,000 bytes of body, and the start of it.
const PARTIAL: &[u8] =
    b"HTTP/1.1 200 OK\r\nContent-Type: text/xml\r\nContent-Length: 1000\r\n\r\n<partial";

/// A raw back-end that writes `answer` to each request and closes the connection (after `hold`
/// when there is one), and [`counted`] in front of it; the back-end's task last.
async fn raw_answering(
    answer: &'static [u8],
    hold: Option<Duration>,
) -> (Sluice, usize, Conn, tokio::task::JoinHandle<()>) {
    let (addr, h) = raw_backend(move |mut s| async move {
        let _ = s.write_all(answer).await;
        if let Some(d) = hold {
            tokio::time::sleep(d).await;
        }
    })
    .await;
    let (s, baseline, c) = counted(addr).await;
    (s, baseline, c, h)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backend_down_gives_502_fault_naming_endpoint() {
    let (s, baseline, mut c) = counted(format!("127.0.0.1:{}", closed_port())).await;
    let r = plain(&mut c).await;
    assert_eq!(r.status, 502);
    let t = r.text();
    assert!(t.contains("<faultcode>soapenv:Server</faultcode>"), "{t}");
    assert!(
        t.contains("endpoint Backend") && t.to_lowercase().contains("refused"),
        "{t}"
    );
    // SOAP 1.2 requests get SOAP 1.2 faults.
    let r12 = c
        .posted(
            "/services/Plain",
            &[("content-type", "application/soap+xml; charset=UTF-8")],
            BODY,
        )
        .await;
    assert_eq!(r12.status, 502);
    assert!(
        r12.text()
            .contains("http://www.w3.org/2003/05/soap-envelope")
            && r12.text().contains("soapenv:Receiver"),
        "{}",
        r12.text()
    );
    // With a fault sequence, it answers instead, with ERROR_CODE and ERROR_MESSAGE set (Synapse's
    // words for a refused connection; the endpoint is named in ERROR_DETAIL and the log).
    let f = c.soap("/services/WithFaultSequence", BODY).await;
    assert_eq!(f.status, 500);
    let t = f.text();
    assert!(
        t.contains("<detail>101503</detail>")
            && t.contains("Error while connecting to the endpoint (Connection Failed)"),
        "{t}"
    );
    drop(c);
    s.assert_fds_back_to(baseline, Duration::from_secs(5));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_endpoint_is_suspended_for_every_reference() {
    let s = Sluice::failures_endpoint("Suspending", format!("127.0.0.1:{}", closed_port()));
    let mut c = Conn::open(s.addr).await;
    let r = c.soap("/services/Guarded", BODY).await.assert_status(502);
    assert!(r.text().to_lowercase().contains("refused"), "{}", r.text());
    // Suspended for a minute: the next send fails at once with 503, through either proxy.
    let r = c.soap("/services/Guarded", BODY).await.assert_status(503);
    assert!(
        r.text().contains("endpoint Suspending") && r.text().contains("is suspended for another"),
        "{}",
        r.text()
    );
    let f = c.soap("/services/GuardedWithFault", BODY).await;
    assert!(f.text().contains("<detail>303001</detail>"), "{}", f.text());
    let log = s.stderr_with("suspending endpoint Suspending", Duration::from_secs(5));
    assert!(
        log.contains("suspending endpoint Suspending")
            && log.contains("for 60000 ms after error 101503"),
        "{log}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeouts_mark_the_endpoint_then_suspend_it() {
    let be = backend().await;
    let s = Sluice::failures_endpoint("Suspending", be.addr);
    let mut c = Conn::open(s.addr).await;
    let slow = [SOAP_HEADERS[0], ("x-test-delay-ms", "2000")];
    // retriesBeforeSuspension 1: the first timeout marks it (still sent to), the second suspends it.
    for i in 0..2 {
        let r = c.posted("/services/Guarded", &slow, BODY).await;
        assert_eq!(r.status, 504, "request {i}: {}", r.text());
    }
    assert_eq!(be.seen.lock().unwrap().len(), 2);
    c.soap("/services/Guarded", BODY).await.assert_status(503);
    assert_eq!(
        be.seen.lock().unwrap().len(),
        2,
        "a suspended endpoint is not sent to"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_upload_is_the_clients_timeout_not_the_endpoints() {
    use tokio::io::AsyncReadExt;
    let be = backend().await;
    let s = Sluice::failures_endpoint("Suspending", be.addr);
    // Twice a client stops halfway through its body for longer than the endpoint's 500 ms. Were that
    // counted as the back-end's timeout (101504), the second would suspend the endpoint.
    for i in 0..2 {
        let mut raw = tokio::net::TcpStream::connect(s.addr).await.unwrap();
        raw.write_all(
            b"POST /services/Guarded HTTP/1.1\r\nHost: x\r\nContent-Type: text/xml\r\nContent-Length: 1000\r\n\r\n<a>",
        )
        .await
        .unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        tokio::time::timeout(Duration::from_secs(5), async {
            while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                match raw.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => got.extend_from_slice(&buf[..n]),
                }
            }
        })
        .await
        .expect("an answer within the timeout");
        let head = String::from_utf8_lossy(&got);
        assert!(head.starts_with("HTTP/1.1 408"), "upload {i}: {head}");
    }
    let mut c = Conn::open(s.addr).await;
    c.soap("/services/Guarded", BODY).await.assert_status(200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_backend_gives_504_within_timeout() {
    let be = backend().await;
    let (s, baseline, mut c) = counted(be.addr.to_string()).await;
    let t0 = Instant::now();
    let r = c
        .posted(
            "/services/Plain",
            &[SOAP_HEADERS[0], ("x-test-delay-ms", "5000")],
            BODY,
        )
        .await;
    let took = t0.elapsed();
    assert_eq!(r.status, 504, "{}", r.text());
    assert!(
        r.text().contains("did not answer within 500 ms"),
        "{}",
        r.text()
    );
    assert!(
        took < Duration::from_millis(2500),
        "answered after {took:?}; the timeout is 500 ms"
    );
    // A fast request afterwards still works on the same connection.
    let ok = plain(&mut c).await;
    assert_eq!(ok.status, 200);
    drop(c);
    // The abandoned back-end connection is closed, not pooled or leaked; the good one may stay pooled.
    assert!(s.wait_fds_at_most(baseline + 1, Duration::from_secs(5)) <= baseline + 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backend_closing_before_response_gives_502() {
    // Closed mid-head.
    let (s, baseline, mut c, _h) = raw_answering(b"HTTP/1.1 200 OK\r\nContent-", None).await;
    let r = plain(&mut c).await.assert_status(502);
    assert!(
        r.text().contains("closed the connection") || r.text().contains("invalid HTTP"),
        "{}",
        r.text()
    );
    drop(c);
    s.assert_fds_back_to(baseline, Duration::from_secs(5));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backend_closing_mid_body_aborts_the_client_response() {
    let (s, baseline, mut c, _h) = raw_answering(PARTIAL, None).await;
    let r = c.post("/services/Plain", SOAP_HEADERS, BODY.into()).await;
    // The head was already relayed, so the only honest signal left is an incomplete body.
    assert!(
        r.is_err(),
        "a truncated back-end body must not look complete: {r:?}"
    );
    drop(c);
    s.assert_fds_back_to(baseline, Duration::from_secs(5));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backend_stalling_mid_body_is_cut_after_the_timeout() {
    let (_s, _, mut c, _h) = raw_answering(PARTIAL, Some(Duration::from_secs(20))).await;
    let t0 = Instant::now();
    let r = c.post("/services/Plain", SOAP_HEADERS, BODY.into()).await;
    assert!(r.is_err());
    assert!(
        t0.elapsed() < Duration::from_secs(5),
        "a stalled body must be cut after the 500 ms timeout, took {:?}",
        t0.elapsed()
    );
}

/// A back-end that answers a `call` with 202 or 204 and no body: the call's property target is
/// empty, and the flow goes on (the client gets the payload built after the call, not a hang or a
/// fault). Each status is sent on its own connection, with and without `Content-Length: 0`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn call_target_with_an_empty_answer() {
    for head in [
        &b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n"[..],
        b"HTTP/1.1 204 No Content\r\n\r\n",
        b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\nContent-Type: text/xml\r\n\r\n",
    ] {
        let calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let seen = calls.clone();
        let (addr, _h) = raw_backend(move |mut s| {
            seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            async move {
                let _ = s.write_all(head).await;
                let _ = s.flush().await;
                // Held open until the client closes: the answer is framed, not ended by a close.
                let mut buf = [0u8; 1024];
                while tokio::io::AsyncReadExt::read(&mut s, &mut buf)
                    .await
                    .is_ok_and(|n| n > 0)
                {}
            }
        })
        .await;
        let s = Sluice::failures_config(addr.to_string());
        let mut c = Conn::open(s.addr).await;
        let r = tokio::time::timeout(
            Duration::from_secs(10),
            c.post("/services/CallToProperty", SOAP_HEADERS, BODY.into()),
        )
        .await
        .expect("an answer within 10 s")
        .unwrap();
        let head = String::from_utf8_lossy(head);
        assert_eq!(r.status, 200, "{head}: {}", r.text());
        assert!(
            r.text().contains("<r:got xmlns:r=\"urn:r\">[]</r:got>"),
            "{head}: {}",
            r.text()
        );
        // The call reached the back-end (an empty property alone could also mean it never ran).
        assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 1, "{head}");
    }
}
