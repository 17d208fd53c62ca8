//! Load balancing over static `<member>`s: each gets the message's own path on its host, in turn.

mod common;
use common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_take_turns_and_get_the_requests_path() {
    let (one, two) = (backend().await, backend().await);
    let dir = std::env::temp_dir().join(format!("sluice-members-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let member = |addr: std::net::SocketAddr| {
        format!(
            r#"<member hostName="{}" httpPort="{}" httpsPort="1"/>"#,
            addr.ip(),
            addr.port()
        )
    };
    let config = format!(
        r#"<definitions xmlns="http://ws.apache.org/ns/synapse">
  <proxy name="LB"><target><inSequence><send><endpoint><loadbalance failover="true">{}{}</loadbalance></endpoint></send></inSequence></target></proxy>
</definitions>"#,
        member(one.addr),
        member(two.addr)
    );
    std::fs::write(dir.join("synapse.xml"), config).unwrap();
    let s = Sluice::start(&["run", dir.to_str().unwrap()]);
    let mut c = Conn::open(s.addr).await;
    let env = "<soapenv:Envelope xmlns:soapenv=\"http://schemas.xmlsoap.org/soap/envelope/\"><soapenv:Body><ping/></soapenv:Body></soapenv:Envelope>";
    for _ in 0..4 {
        let r = c
            .post("/services/LB?k=v", SOAP_HEADERS, env.into())
            .await
            .unwrap();
        assert_eq!(r.status, 200, "{}", r.text());
    }
    for b in [&one, &two] {
        let seen = b.seen.lock().unwrap();
        assert_eq!(seen.len(), 2, "round robin over the two members");
        assert!(seen
            .iter()
            .all(|r| r.path == "/services/LB" && r.query.as_deref() == Some("k=v")));
    }
    let _ = std::fs::remove_dir_all(&dir);
}
