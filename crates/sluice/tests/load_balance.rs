//! Load balancing: over static `<member>`s (each gets the message's own path on its host, in turn),
//! and with client sessions (a client stays on the child it was first sent to).

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

/// A SOAP request carrying Synapse's ClientID header block (as the samples' client sends it).
fn with_client(id: &str) -> String {
    format!(
        "<soapenv:Envelope xmlns:soapenv=\"http://schemas.xmlsoap.org/soap/envelope/\"><soapenv:Header><syn:ClientID xmlns:syn=\"http://ws.apache.org/ns/synapse\">{id}</syn:ClientID></soapenv:Header><soapenv:Body><ping/></soapenv:Body></soapenv:Envelope>"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_session_stays_on_its_child() {
    let (one, two) = (backend().await, backend().await);
    let dir = std::env::temp_dir().join(format!("sluice-sessions-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = format!(
        r#"<definitions xmlns="http://ws.apache.org/ns/synapse">
  <proxy name="LB"><target><inSequence><send><endpoint>
    <session type="simpleClientSession"/>
    <loadbalance>
      <endpoint><address uri="http://{}/one"/></endpoint>
      <endpoint><address uri="http://{}/two"/></endpoint>
    </loadbalance>
  </endpoint></send></inSequence></target></proxy>
</definitions>"#,
        one.addr, two.addr
    );
    std::fs::write(dir.join("synapse.xml"), config).unwrap();
    let s = Sluice::start(&["run", dir.to_str().unwrap()]);
    let mut c = Conn::open(s.addr).await;
    // a's first request binds it to the first child, and it stays there (round robin alone would
    // alternate); b's first goes to the next child in turn, and stays there too.
    for client in ["a", "a", "a", "b", "b", "a", "b", "a"] {
        let r = c
            .post("/services/LB", SOAP_HEADERS, with_client(client).into())
            .await
            .unwrap();
        assert_eq!(r.status, 200, "{}", r.text());
    }
    let paths = |b: &Backend| {
        let seen = b.seen.lock().unwrap();
        let ids: Vec<bool> = seen
            .iter()
            .map(|r| String::from_utf8_lossy(r.body.as_ref().unwrap()).contains(">a<"))
            .collect();
        ids
    };
    assert_eq!(paths(&one), [true; 5], "client a always on the first child");
    assert_eq!(paths(&two), [false; 3], "client b always on the second");
    let _ = std::fs::remove_dir_all(&dir);
}
