//! Failover and load-balance endpoints against real back-ends: which child gets each message, the
//! message resent whole after a failure, suspension of failed children, retryConfig, and 303000 when
//! no child is left.

mod common;
use common::*;

const BODY: &str = "<soapenv:Envelope xmlns:soapenv=\"http://schemas.xmlsoap.org/soap/envelope/\"><soapenv:Body><m:order xmlns:m=\"urn:o\"><m:symbol>IBM</m:symbol></m:order></soapenv:Body></soapenv:Envelope>";

/// Sluice on the `endpoints` config: One and Two at the two back-ends, the Down endpoints at closed
/// ports.
fn sluice(one: &Backend, two: &Backend) -> Sluice {
    let eps = [
        format!("One=http://{}/one", one.addr),
        format!("Two=http://{}/two", two.addr),
        format!("Down=http://127.0.0.1:{}/down", closed_port()),
        format!("DownNoRetry=http://127.0.0.1:{}/down", closed_port()),
        format!("DownKept=http://127.0.0.1:{}/down", closed_port()),
    ];
    let mut args = vec!["run", test_config_str("endpoints")];
    for e in &eps {
        args.extend(["--endpoint", e.as_str()]);
    }
    Sluice::start(&args)
}

fn test_config_str(name: &str) -> &'static str {
    Box::leak(
        test_config(name)
            .to_str()
            .unwrap()
            .to_owned()
            .into_boxed_str(),
    )
}

fn count(b: &Backend) -> usize {
    b.seen.lock().unwrap().len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failover_sends_the_whole_message_to_the_next_ready_child() {
    let (one, two) = (backend().await, backend().await);
    let s = sluice(&one, &two);
    let mut c = Conn::open(s.addr).await;
    for i in 0..3 {
        let r = c
            .post("/services/Failover", SOAP_HEADERS, BODY.into())
            .await
            .unwrap();
        assert_eq!(r.status, 200, "request {i}: {}", r.text());
        assert_eq!(r.text(), BODY, "request {i}: the body is resent whole");
    }
    // Down refused the first message and is suspended: the others go straight to One, and Two,
    // the last child, gets nothing.
    assert_eq!((count(&one), count(&two)), (3, 0));
    let log = s.stderr_with("trying another child", std::time::Duration::from_secs(5));
    assert_eq!(log.matches("trying another child").count(), 1, "{log}");
    assert!(log.contains("suspending endpoint Down"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_that_is_never_suspended_is_tried_by_each_message() {
    let (one, two) = (backend().await, backend().await);
    let s = sluice(&one, &two);
    let mut c = Conn::open(s.addr).await;
    for i in 0..2 {
        let r = c
            .post("/services/FailoverKept", SOAP_HEADERS, BODY.into())
            .await
            .unwrap();
        assert_eq!(r.status, 200, "request {i}: {}", r.text());
    }
    assert_eq!(count(&one), 2);
    let log = s.stderr_with("trying another child", std::time::Duration::from_secs(5));
    assert!(log.contains("endpoint DownKept"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn round_robin_alternates_between_the_children() {
    let (one, two) = (backend().await, backend().await);
    let s = sluice(&one, &two);
    let mut c = Conn::open(s.addr).await;
    for i in 0..6 {
        let r = c
            .post("/services/RoundRobin", SOAP_HEADERS, BODY.into())
            .await
            .unwrap();
        assert_eq!(r.status, 200, "request {i}: {}", r.text());
        assert_eq!(r.text(), BODY);
    }
    assert_eq!((count(&one), count(&two)), (3, 3));
    let paths: Vec<String> = one
        .seen
        .lock()
        .unwrap()
        .iter()
        .map(|x| x.path.clone())
        .collect();
    assert!(paths.iter().all(|p| p == "/one"), "{paths:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_config_keeps_a_failure_from_going_to_another_child() {
    let (one, two) = (backend().await, backend().await);
    let s = sluice(&one, &two);
    let mut c = Conn::open(s.addr).await;
    let r = c
        .post("/services/NoRetry", SOAP_HEADERS, BODY.into())
        .await
        .unwrap();
    assert_eq!(r.status, 502, "{}", r.text());
    assert!(r.text().contains("endpoint DownNoRetry"), "{}", r.text());
    assert_eq!(count(&one), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_ready_child_is_error_303000() {
    let (one, two) = (backend().await, backend().await);
    let s = sluice(&one, &two);
    let mut c = Conn::open(s.addr).await;
    let r = c
        .post("/services/NoneReady", SOAP_HEADERS, BODY.into())
        .await
        .unwrap();
    let t = r.text();
    assert!(t.contains("<detail>303000</detail>"), "{t}");
    assert!(
        t.contains("loadbalance endpoint Nothing has no ready child endpoint")
            && t.contains("last failure"),
        "{t}"
    );
}
