//! Message stores and processors on the real binary: what `<store>` kept leaves through a
//! forwarding processor (tried, retried, given up) or a sampling processor's sequence, and the
//! management API shows and switches them. The conformance suite `message-stores` has the
//! answers a storing request gets.

mod common;
use bytes::Bytes;
use common::*;
use serde_json::Value;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(10);

fn quote(symbol: &str) -> Bytes {
    format!("<soapenv:Envelope xmlns:soapenv=\"http://schemas.xmlsoap.org/soap/envelope/\"><soapenv:Body><m0:getQuote xmlns:m0=\"http://services.samples\"><m0:request><m0:symbol>{symbol}</m0:symbol></m0:request></m0:getQuote></soapenv:Body></soapenv:Envelope>").into()
}

/// A configuration with a proxy `P` that stores into `S` after `before` (mediators), the
/// back-end endpoint `Backend`, and `more` (stores, processors, sequences).
fn config(name: &str, be: std::net::SocketAddr, before: &str, more: &str) -> std::path::PathBuf {
    synapse_xml(
        name,
        &format!(
            r#"<definitions xmlns="http://ws.apache.org/ns/synapse">
  <endpoint name="Backend"><address uri="http://{be}/backend"/></endpoint>
  <messageStore name="S"/>
  <proxy name="P"><target><inSequence>
    <property name="FORCE_SC_ACCEPTED" value="true" scope="axis2"/>
    {before}
    <store messageStore="S"/>
  </inSequence></target></proxy>
  {more}
</definitions>"#
        ),
    )
}

async fn store(s: &Sluice, symbol: &str) {
    let mut c = Conn::open(s.addr).await;
    let r = c
        .post("/services/P", SOAP_HEADERS, quote(symbol))
        .await
        .unwrap();
    assert_eq!(r.status, 202, "{}", r.text());
}

/// The management API's view of processor `name` (or store), polled until `done` holds.
async fn until(s: &Sluice, path: &str, mut done: impl FnMut(&Value) -> bool) -> Value {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let v = management_get(s, path).await;
        if done(&v) || tokio::time::Instant::now() > deadline {
            return v;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_forwarding_processor_sends_stored_messages_in_order_with_their_transport_headers() {
    let be = backend().await;
    let cfg = config(
        "store-forward",
        be.addr,
        r#"<property name="OUT_ONLY" value="true"/>
           <property name="customHeader" value="customHeaderValue" scope="transport"/>"#,
        r#"<messageProcessor name="F" messageStore="S" targetEndpoint="Backend"
             class="org.apache.synapse.message.processor.impl.forwarder.ScheduledMessageForwardingProcessor">
             <parameter name="interval">50</parameter>
           </messageProcessor>"#,
    );
    let s = Sluice::start(&["run", cfg.to_str().unwrap()]);
    for sym in ["IBM", "MSFT", "SUN"] {
        store(&s, sym).await;
    }
    assert_eq!(be.wait_seen(3, WAIT).await, 3);
    let seen = be.seen.lock().unwrap().clone();
    for (x, sym) in seen.iter().zip(["IBM", "MSFT", "SUN"]) {
        let body = String::from_utf8_lossy(x.body.as_deref().unwrap()).into_owned();
        assert!(
            body.contains(&format!("<m0:symbol>{sym}</m0:symbol>")),
            "{body}"
        );
        assert_eq!(x.headers["customheader"], "customHeaderValue");
        assert_eq!(x.path, "/backend");
    }
    let v = until(&s, "/management/message-stores?name=S", |v| v["size"] == 0).await;
    assert_eq!(v["size"], 0, "{v}");
    let _ = std::fs::remove_dir_all(cfg.parent().unwrap());
}

#[tokio::test]
async fn a_message_not_delivered_is_tried_max_attempts_times_then_the_processor_deactivates_keeping_it(
) {
    let be = backend().await;
    // The back-end answers 500 to what carries x-test-status (a transport header stored with it).
    let cfg = config(
        "store-retry",
        be.addr,
        r#"<property name="OUT_ONLY" value="true"/>
           <property name="x-test-status" value="500" scope="transport"/>"#,
        r#"<messageProcessor name="F" messageStore="S" targetEndpoint="Backend"
             class="org.apache.synapse.message.processor.impl.forwarder.ScheduledMessageForwardingProcessor">
             <parameter name="interval">50</parameter>
             <parameter name="max.delivery.attempts">3</parameter>
             <parameter name="client.retry.interval">50</parameter>
             <parameter name="message.processor.deactivate.sequence">gaveUp</parameter>
           </messageProcessor>
           <sequence name="gaveUp"><log><property name="gave up on" expression="//m0:symbol" xmlns:m0="http://services.samples"/></log></sequence>"#,
    );
    let s = Sluice::start(&["run", cfg.to_str().unwrap()]);
    store(&s, "IBM").await;
    let v = until(&s, "/management/message-processors?name=F", |v| {
        v["status"] == "inactive"
    })
    .await;
    assert_eq!(v["status"], "inactive", "{v}");
    assert_eq!(v["messageStore"], "S");
    assert_eq!(be.seen.lock().unwrap().len(), 3, "three tries");
    assert!(s
        .stderr_with("gave up on = IBM", WAIT)
        .contains("gave up on = IBM"));
    // The message stays in the store; activated again, the processor tries it afresh.
    let v = management_get(&s, "/management/message-stores").await;
    assert_eq!(v["list"][0]["size"], 1, "{v}");
    let on = r#"{"name": "F", "status": "active"}"#;
    let v = management_call(&s, "POST", "/management/message-processors", on.into()).await;
    assert_eq!(v["Message"], "F : is activated", "{v}");
    assert_eq!(be.wait_seen(6, WAIT).await, 6, "three more tries");
    let _ = std::fs::remove_dir_all(cfg.parent().unwrap());
}

#[tokio::test]
async fn with_drop_enabled_a_message_given_up_on_is_removed_and_the_next_one_goes() {
    let be = backend().await;
    let cfg = config(
        "store-drop",
        be.addr,
        r#"<property name="OUT_ONLY" value="true"/>
           <filter xpath="//*[local-name()='symbol'] = 'BAD'">
             <property name="x-test-status" value="503" scope="transport"/>
           </filter>"#,
        r#"<messageProcessor name="F" messageStore="S" targetEndpoint="Backend"
             class="org.apache.synapse.message.processor.impl.forwarder.ScheduledMessageForwardingProcessor">
             <parameter name="interval">50</parameter>
             <parameter name="max.delivery.attempts">2</parameter>
             <parameter name="client.retry.interval">50</parameter>
             <parameter name="max.delivery.drop">Enabled</parameter>
             <parameter name="non.retry.status.codes">404</parameter>
           </messageProcessor>"#,
    );
    let s = Sluice::start(&["run", cfg.to_str().unwrap()]);
    store(&s, "BAD").await;
    store(&s, "GOOD").await;
    // Two tries of BAD, then GOOD once.
    assert_eq!(be.wait_seen(3, WAIT).await, 3);
    let bodies: Vec<String> = (be.seen.lock().unwrap().iter())
        .map(|x| String::from_utf8_lossy(x.body.as_deref().unwrap()).into_owned())
        .collect();
    assert!(
        bodies[0].contains("BAD") && bodies[1].contains("BAD"),
        "{bodies:?}"
    );
    assert!(bodies[2].contains("GOOD"), "{bodies:?}");
    let v = management_get(&s, "/management/message-processors").await;
    assert_eq!(v["list"][0]["status"], "active", "{v}");
    let _ = std::fs::remove_dir_all(cfg.parent().unwrap());
}

#[tokio::test]
async fn a_sampling_processor_runs_its_sequence_on_each_stored_message() {
    let be = backend().await;
    // Synapse's sample 701: the sequence sends each message on.
    let cfg = config(
        "store-sample",
        be.addr,
        r#"<property name="OUT_ONLY" value="true"/>"#,
        r#"<sequence name="send_seq"><send><endpoint key="Backend"/></send></sequence>
           <messageProcessor name="Sampler" messageStore="S"
             class="org.apache.synapse.message.processors.sampler.SamplingProcessor">
             <parameter name="interval">1000</parameter>
             <parameter name="concurrency">2</parameter>
             <parameter name="sequence">send_seq</parameter>
           </messageProcessor>"#,
    );
    let s = Sluice::start(&["run", cfg.to_str().unwrap()]);
    store(&s, "IBM").await;
    store(&s, "MSFT").await;
    assert_eq!(be.wait_seen(2, WAIT).await, 2);
    let v = management_get(&s, "/management/message-processors?searchKey=SAMP").await;
    assert_eq!(v["count"], 1, "{v}");
    assert_eq!(v["list"][0]["type"], "Sampling-processor", "{v}");
    let _ = std::fs::remove_dir_all(cfg.parent().unwrap());
}

#[tokio::test]
async fn a_two_way_message_runs_the_reply_sequence_on_the_response() {
    let be = backend().await;
    let cfg = config(
        "store-reply",
        be.addr,
        "",
        r#"<messageProcessor name="F" messageStore="S" targetEndpoint="Backend"
             class="org.apache.synapse.message.processor.impl.forwarder.ScheduledMessageForwardingProcessor">
             <parameter name="interval">50</parameter>
             <parameter name="message.processor.reply.sequence">reply</parameter>
           </messageProcessor>
           <sequence name="reply"><log><property name="reply" expression="//m0:symbol" xmlns:m0="http://services.samples"/></log><drop/></sequence>"#,
    );
    let s = Sluice::start(&["run", cfg.to_str().unwrap()]);
    store(&s, "IBM").await;
    // The echo back-end answers with the message: the reply sequence reads its symbol (the
    // back-end runs on this test's thread: waited for without blocking it).
    assert_eq!(be.wait_seen(1, WAIT).await, 1);
    let v = until(&s, "/management/message-stores?name=S", |v| v["size"] == 0).await;
    assert_eq!(v["size"], 0, "delivered once: {v}");
    let said = s.stderr_with("reply = IBM", WAIT);
    assert!(said.contains("reply = IBM"), "{said}");
    assert_eq!(be.seen.lock().unwrap().len(), 1);
    let _ = std::fs::remove_dir_all(cfg.parent().unwrap());
}

#[tokio::test]
async fn a_reload_keeps_the_stored_messages_and_the_processors_state() {
    let be = backend().await;
    let cfg = config(
        "store-reload",
        be.addr,
        r#"<property name="OUT_ONLY" value="true"/>"#,
        r#"<messageProcessor name="F" messageStore="S" targetEndpoint="Backend"
             class="org.apache.synapse.message.processor.impl.forwarder.ScheduledMessageForwardingProcessor">
             <parameter name="interval">50</parameter>
             <parameter name="is.active">false</parameter>
           </messageProcessor>"#,
    );
    let s = Sluice::start(&["run", cfg.to_str().unwrap()]);
    store(&s, "IBM").await;
    let hup = std::process::Command::new("kill")
        .args(["-HUP", &s.pid().to_string()])
        .status()
        .unwrap();
    assert!(hup.success());
    let log = s.stderr_with("reloaded in", WAIT);
    assert!(log.contains("reloaded in"), "{log}");
    let v = management_get(&s, "/management/message-stores?name=S").await;
    assert_eq!(v["size"], 1, "the new plan's store has the message: {v}");
    let v = management_get(&s, "/management/message-processors?name=F").await;
    assert_eq!(v["status"], "inactive", "{v}");
    // The new plan's processor runs once activated.
    let on = r#"{"name": "F", "status": "active"}"#;
    management_call(&s, "POST", "/management/message-processors", on.into()).await;
    assert_eq!(be.wait_seen(1, WAIT).await, 1);
    let _ = std::fs::remove_dir_all(cfg.parent().unwrap());
}

#[tokio::test]
async fn a_processor_a_reload_brings_into_a_configuration_without_any_runs() {
    let be = backend().await;
    let only_out = r#"<property name="OUT_ONLY" value="true"/>"#;
    let cfg = config("store-later", be.addr, only_out, "");
    let s = Sluice::start(&["run", cfg.to_str().unwrap()]);
    store(&s, "IBM").await;
    let forward = r#"<messageProcessor name="F" messageStore="S" targetEndpoint="Backend"
         class="org.apache.synapse.message.processor.impl.forwarder.ScheduledMessageForwardingProcessor">
         <parameter name="interval">50</parameter>
       </messageProcessor>"#;
    config("store-later", be.addr, only_out, forward);
    let hup = std::process::Command::new("kill")
        .args(["-HUP", &s.pid().to_string()])
        .status()
        .unwrap();
    assert!(hup.success());
    assert_eq!(be.wait_seen(1, WAIT).await, 1, "{}", s.stderr());
    let _ = std::fs::remove_dir_all(cfg.parent().unwrap());
}

#[test]
fn a_second_processor_on_one_store_is_refused() {
    let cfg = synapse_xml(
        "store-two",
        r#"<definitions xmlns="http://ws.apache.org/ns/synapse">
  <messageStore name="S"/>
  <sequence name="q"><drop/></sequence>
  <messageProcessor name="A" messageStore="S" class="org.apache.synapse.message.processor.impl.sampler.SamplingProcessor"><parameter name="sequence">q</parameter></messageProcessor>
  <messageProcessor name="B" messageStore="S" class="org.apache.synapse.message.processor.impl.sampler.SamplingProcessor"><parameter name="sequence">q</parameter></messageProcessor>
</definitions>"#,
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["validate", cfg.to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("message store 'S' is already taken by message processor 'A'"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(cfg.parent().unwrap());
}
