//! 2,000 concurrent keep-alive client connections through DirectProxy, with no tuning of Sluice.

mod common;
use common::setup::*;
use common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_thousand_concurrent_keepalive_connections_without_errors() {
    // The test process holds both ends' sockets (clients and the in-process back-end): give it room.
    // Sluice raises its own limit; that is part of what is tested.
    let _ = rlimit::increase_nofile_limit(16384);
    const CONNS: usize = 2000;
    const PER_CONN: usize = 3;
    let be = backend().await;
    let s = start_on_capp(&capp(), be.addr, &[]);
    let body = payload("1000B_buyStocks.xml");
    // Open every connection first, so all 2,000 are open at once.
    let mut conns = Vec::with_capacity(CONNS);
    for _ in 0..CONNS {
        conns.push(Conn::open(s.addr).await);
    }
    let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(CONNS));
    let mut tasks = Vec::with_capacity(CONNS);
    for mut c in conns {
        let body = body.clone();
        let barrier = barrier.clone();
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            let mut errors = Vec::new();
            for _ in 0..PER_CONN {
                match c
                    .post("/services/DirectProxy", SOAP_HEADERS, body.clone())
                    .await
                {
                    Ok(r) if r.status == 200 && r.body == body => {}
                    Ok(r) => errors.push(format!("status {}: {}", r.status, r.text())),
                    Err(e) => errors.push(e),
                }
            }
            errors
        }));
    }
    let mut errors = Vec::new();
    for t in tasks {
        errors.extend(t.await.unwrap());
    }
    assert!(
        errors.is_empty(),
        "{} errors, first: {:?}",
        errors.len(),
        errors.first()
    );
    assert_eq!(be.seen.lock().unwrap().len(), CONNS * PER_CONN);
}
