//! Failover and load-balance endpoints against real back-ends: which child gets each message, the
//! message resent whole after a failure, suspension of failed children, retryConfig, nesting, and the
//! errors when no child is left.

mod common;
use common::*;
use std::time::Duration;

const BODY: &str = "<soapenv:Envelope xmlns:soapenv=\"http://schemas.xmlsoap.org/soap/envelope/\"><soapenv:Body><m:order xmlns:m=\"urn:o\"><m:symbol>IBM</m:symbol></m:order></soapenv:Body></soapenv:Envelope>";

/// Sluice on the `endpoints` config: One and Two at the two back-ends, the Down endpoints at closed
/// ports.
fn sluice(one: &Backend, two: &Backend) -> Sluice {
    let mut eps = vec![
        format!("One=http://{}/one", one.addr),
        format!("Two=http://{}/two", two.addr),
        format!(
            "Orders=http://{}/orders/{{uri.var.id}}?q={{query.param.q}}",
            one.addr
        ),
        format!("Fixed=http://{}/fixed/{{uri.var.kind}}", two.addr),
    ];
    for down in ["Down", "DownToo", "DownNoRetry", "DownKept"] {
        eps.push(format!("{down}=http://127.0.0.1:{}/down", closed_port()));
    }
    Sluice::with_endpoints("endpoints", &eps)
}

/// Two back-ends, Sluice on the `endpoints` config in front of them ([`sluice`]), and a connection
/// to Sluice.
async fn rig() -> (Backend, Backend, Sluice, Conn) {
    let (one, two) = (backend().await, backend().await);
    let s = sluice(&one, &two);
    let c = Conn::open(s.addr).await;
    (one, two, s, c)
}

/// The test body to a proxy.
async fn send(c: &mut Conn, proxy: &str) -> Reply {
    c.soap(&format!("/services/{proxy}"), BODY).await
}

/// The test body to a proxy `n` times, each answered 200: the answers.
async fn send_ok(c: &mut Conn, proxy: &str, n: usize) -> Vec<Reply> {
    let mut answers = Vec::new();
    for i in 0..n {
        let r = send(c, proxy).await;
        assert_eq!(r.status, 200, "request {i}: {}", r.text());
        answers.push(r);
    }
    answers
}

/// The test body to a proxy with the SOAP Content-Type and one more header (no SOAPAction).
async fn send_with(c: &mut Conn, proxy: &str, header: (&str, &str)) -> Reply {
    let headers = [SOAP_HEADERS[0], header];
    let r = c
        .post(&format!("/services/{proxy}"), &headers, BODY.into())
        .await;
    r.unwrap()
}

/// A body of `kib` KiB (many frames on the way in) to `proxy`: answered 200 with all of it,
/// and One got it.
async fn comes_back_whole(proxy: &str, kib: usize) {
    let (one, _two, _s, mut c) = rig().await;
    let big = BODY.replace("IBM", &"IBM ".repeat(kib * 1024 / 4));
    let r = c
        .soap(&format!("/services/{proxy}"), big.clone())
        .await
        .assert_status(200);
    assert!(
        r.body == big.as_bytes(),
        "{} bytes back of {}",
        r.body.len(),
        big.len()
    );
    assert_eq!(count(&one), 1);
}

fn count(b: &Backend) -> usize {
    b.seen.lock().unwrap().len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failover_sends_the_whole_message_to_the_next_ready_child() {
    let (one, two, s, mut c) = rig().await;
    for (i, r) in send_ok(&mut c, "Failover", 3).await.iter().enumerate() {
        assert_eq!(r.text(), BODY, "request {i}: the body is resent whole");
    }
    // Down refused the first message and is suspended: the others go straight to One, and Two,
    // the last child, gets nothing.
    assert_eq!((count(&one), count(&two)), (3, 0));
    let log = s.stderr_with("trying endpoint One", Duration::from_secs(5));
    assert_eq!(log.matches("trying endpoint One").count(), 1, "{log}");
    assert!(log.contains("suspending endpoint Down"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failover_resends_a_large_body_whole() {
    // 300 KiB: all of it reaches One after Down refused it.
    comes_back_whole("Failover", 300).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_that_is_never_suspended_is_tried_by_each_message() {
    let (one, _two, s, mut c) = rig().await;
    send_ok(&mut c, "FailoverKept", 2).await;
    assert_eq!(count(&one), 2);
    let log = s.stderr_with("trying endpoint One", Duration::from_secs(5));
    assert!(log.contains("endpoint DownKept"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn round_robin_alternates_between_the_children() {
    let (one, two, _s, mut c) = rig().await;
    for r in send_ok(&mut c, "RoundRobin", 6).await {
        assert_eq!(r.text(), BODY);
    }
    assert_eq!((count(&one), count(&two)), (3, 3));
    let paths = one.paths();
    assert!(paths.iter().all(|p| p == "/one"), "{paths:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_group_above_a_failed_child_takes_the_failure() {
    // A failover inside a load-balance endpoint that does not fail over: the failover tries its
    // next child.
    let (one, _two, _s, mut c) = rig().await;
    send(&mut c, "Nested").await.assert_status(200);
    assert_eq!(count(&one), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_config_keeps_a_failure_from_going_to_another_child() {
    let (one, _two, _s, mut c) = rig().await;
    let r = send(&mut c, "NoRetry").await.assert_status(502);
    assert!(r.text().contains("endpoint DownNoRetry"), "{}", r.text());
    assert_eq!(count(&one), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_no_child_is_ready_the_error_is_the_last_childs_then_303000() {
    let (_one, _two, _s, mut c) = rig().await;
    for (code, why) in [
        // Both children tried and refused: as in Synapse, ERROR_CODE is the last child's, and
        // ERROR_MESSAGE its words for a refused connection.
        (
            "101503",
            "Error while connecting to the endpoint (Connection Failed)",
        ),
        // Both are suspended now: nothing is tried, 303000 (503 without a fault sequence).
        (
            "303000",
            "loadbalance endpoint Nothing has no ready child endpoint",
        ),
    ] {
        let t = send(&mut c, "NoneReady").await.text();
        assert!(t.contains(&format!("<detail>{code}</detail>")), "{t}");
        assert!(t.contains(why), "{t}");
    }
    let r = send(&mut c, "NoneReadyPlain").await.assert_status(503);
    assert!(
        r.text().contains("has no ready child endpoint"),
        "{}",
        r.text()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_aborts_its_upload_does_not_suspend_the_endpoint() {
    use tokio::io::AsyncWriteExt;
    let (_one, _two, s, mut c) = rig().await;
    let mut raw = tokio::net::TcpStream::connect(s.addr).await.unwrap();
    raw.write_all(
        b"POST /services/Plain HTTP/1.1\r\nHost: x\r\nContent-Type: text/xml\r\nContent-Length: 100000\r\n\r\n<a>",
    )
    .await
    .unwrap();
    // Cut off: the rest of the body never comes.
    drop(raw);
    let log = s.stderr_with("reading the request body", Duration::from_secs(5));
    assert!(log.contains("reading the request body"), "{log}");
    // One has Synapse's default suspension (any back-end error), yet still takes requests.
    send(&mut c, "Plain").await.assert_status(200);
    let log = s.stderr();
    assert!(!log.contains("suspending"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_way_sends_fail_over_in_the_background() {
    let (_one, two, _s, mut c) = rig().await;
    send(&mut c, "OneWay").await.assert_status(202);
    // DownKept refuses it; Two gets it, whole.
    tokio::time::timeout(Duration::from_secs(5), async {
        while count(&two) == 0 {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the one-way message reached Two");
    let seen = two.seen.lock().unwrap();
    assert_eq!(seen[0].body.as_deref(), Some(BODY.as_bytes()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_endpoints_expand_their_uri_template_per_message() {
    let (one, two, _s, mut c) = rig().await;
    let r = send_with(&mut c, "Http", ("x-q", "x&y"))
        .await
        .assert_status(200);
    assert_eq!(r.text(), BODY);
    {
        let seen = one.seen.lock().unwrap();
        assert_eq!(seen[0].method, "PUT");
        assert_eq!(seen[0].path, "/orders/a%20b%2Fc");
        assert_eq!(seen[0].query.as_deref(), Some("q=x%26y"));
    }
    // A whole URL from a property, kept as it is (reserved expansion).
    let url = format!("http://{}/any/where?a=1&b=2", two.addr);
    send_with(&mut c, "HttpAnywhere", ("x-url", url.as_str()))
        .await
        .assert_status(200);
    {
        let seen = two.seen.lock().unwrap();
        assert_eq!(seen[0].method, "POST");
        assert_eq!(
            (seen[0].path.as_str(), seen[0].query.as_deref()),
            ("/any/where", Some("a=1&b=2"))
        );
    }
    // No URL: the message cannot be sent; the client is told why.
    let r = send(&mut c, "HttpAnywhere").await.assert_status(500);
    assert!(
        r.text().contains("uri-template of endpoint Anywhere"),
        "{}",
        r.text()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_endpoint_variables_of_its_own_and_a_host_from_the_message() {
    let (one, two, _s, mut c) = rig().await;
    // The endpoint's <property name="uri.var.kind" value="gold"/> wins over the message's "silver".
    send(&mut c, "HttpFixed").await.assert_status(200);
    assert_eq!(two.seen.lock().unwrap()[0].path, "/fixed/gold");
    // http://{+uri.var.host}/vh loads (its host is not known until a message comes) and goes where
    // the message says.
    let host = one.addr.to_string();
    send_with(&mut c, "HttpVarHost", ("x-host", host.as_str()))
        .await
        .assert_status(200);
    assert_eq!(one.seen.lock().unwrap()[0].path, "/vh");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_way_send_with_no_ready_child_is_answered_at_once() {
    let (_one, _two, s, mut c) = rig().await;
    // Both children ready: accepted, then both refuse it in the background and are suspended.
    send(&mut c, "OneWayNone").await.assert_status(202);
    let log = s.stderr_with("suspending endpoint DownToo", Duration::from_secs(5));
    let log = if log.contains("suspending endpoint Down (") {
        log
    } else {
        s.stderr_with("suspending endpoint Down (", Duration::from_secs(5))
    };
    assert!(
        log.contains("suspending endpoint Down (") && log.contains("suspending endpoint DownToo"),
        "{log}"
    );
    // None ready now: the fault sequence answers with 303000 instead of a 202 for a lost message.
    let r = send(&mut c, "OneWayNone").await;
    assert!(
        r.text().contains("<detail>303000</detail>"),
        "{} {}",
        r.status,
        r.text()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fault_sequence_sends_the_unread_request_through_a_failover() {
    // DownKept refuses the in-sequence's send; the fault sequence's failover tries it again, then
    // One, which gets the request whole.
    comes_back_whole("FaultToGroup", 100).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_default_endpoint_sends_to_each_messages_to_address() {
    let (one, two, _s, mut c) = rig().await;
    for (b, path) in [(&one, "/to/one"), (&two, "/to/two")] {
        let to = format!("http://{}{path}", b.addr);
        send_with(&mut c, "ToDefault", ("x-to", to.as_str()))
            .await
            .assert_status(200);
        assert_eq!(b.seen.lock().unwrap()[0].path, path);
    }
    // No To address: nowhere to send it, and the client is told so.
    let r = send(&mut c, "ToDefault").await.assert_status(500);
    assert!(r.text().contains("has none"), "{}", r.text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_out_sequence_sends_the_response_on_through_a_failover() {
    let (one, two, _s, mut c) = rig().await;
    // One echoes the request; the out-sequence sends that response through the failover, whose
    // first child refuses it; Two echoes it back to the client.
    let r = send(&mut c, "OutToGroup").await.assert_status(200);
    assert_eq!(r.text(), BODY);
    assert_eq!((count(&one), count(&two)), (1, 1));
    assert_eq!(
        two.seen.lock().unwrap()[0].body.as_deref(),
        Some(BODY.as_bytes())
    );
}
