//! WSO2's SecureProxy, deployed from the performance CAR unchanged with the key store its policy
//! names: WSO2's own secured requests reach the echo back-end as plain SOAP and come back secured;
//! tampered and plain requests are refused with their WS-Security fault and never reach it.

mod common;
use common::setup::*;
use common::*;

/// wso2carbon's key and certificate as the requester's side holds them (the requests are signed
/// with it, so the answers are encrypted to it).
fn requester() -> sluice_security::inbound::Keys {
    let jks = std::fs::read(reference().join("keystores/wso2carbon.jks")).unwrap();
    let store = sluice_transport::keystore::KeyStore::read_jks(&jks, "wso2carbon").unwrap();
    let entry = store.key("wso2carbon").unwrap();
    sluice_security::inbound::Keys::new(
        sluice_xml::SecurityKey::private_pkcs8(&entry.key("wso2carbon").unwrap()).unwrap(),
        entry.chain[0].clone(),
        Vec::new(),
    )
    .unwrap()
}

fn policy() -> sluice_security::policy::Policy {
    let text = std::fs::read_to_string(
        reference().join("performance-ei/capp/security_policy_1.0.0/security_policy-1.0.0.xml"),
    )
    .unwrap();
    sluice_security::policy::parse(&text).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wso2_secured_requests_pass_and_their_answers_come_back_secured() {
    let be = backend().await;
    let toml = keystore_settings("secure", "wso2carbon");
    let s = start_on_capp(&capp(), be.addr, &["--config", toml.to_str().unwrap()]);
    let mut c = Conn::open(s.addr).await;
    let keys = requester();
    for size in ["500B", "1024B", "10240B"] {
        let body = request_file(&format!("2019-04_to_2020-08/{size}_buyStocks_secure.xml"));
        let r = c.soap("/services/SecureProxy", body).await;
        assert_eq!(r.status, 200, "{size}: {}", r.text());
        // The back-end got the plain envelope: no security header, the order in the clear.
        let seen = be.seen.lock().unwrap().last().cloned().unwrap();
        let sent = String::from_utf8(seen.body.unwrap().to_vec()).unwrap();
        assert!(
            sent.contains("<order>") && !sent.contains("Security"),
            "{sent}"
        );
        // The answer: encrypted, signed, confirming the request's signature; it reads back.
        let answer = r.text();
        assert!(
            !answer.contains("<order>") && answer.contains("SignatureConfirmation"),
            "{answer}"
        );
        let mut doc = sluice_xml::Document::parse(answer.as_bytes()).unwrap();
        sluice_security::inbound::check(&mut doc, &policy(), &keys, chrono::Utc::now())
            .unwrap_or_else(|f| panic!("{size}: the answer does not check: {f}"));
        let payload = doc.soap_body().unwrap().first_child_element().unwrap();
        assert_eq!(payload.name(), "buyStocks", "{size}");
    }
    let reached = be.seen.lock().unwrap().len();
    assert_eq!(reached, 3);

    // A changed signature value, and a plain request: refused, and the back-end sees neither.
    let good =
        String::from_utf8(request_file("2019-04_to_2020-08/1024B_buyStocks_secure.xml").to_vec())
            .unwrap();
    let at = good.find("<ds:SignatureValue>").unwrap() + 30;
    let mut changed = good.into_bytes();
    changed[at] = if changed[at] == b'A' { b'B' } else { b'A' };
    let r = c.soap("/services/SecureProxy", changed).await;
    assert_eq!(r.status, 500);
    assert!(r.text().contains("wsse:FailedCheck"), "{}", r.text());
    let r = c
        .soap(
            "/services/SecureProxy",
            request_file("2019-04_to_2020-08/1024B_buyStocks.xml"),
        )
        .await;
    assert_eq!(r.status, 500);
    assert!(r.text().contains("wsse:InvalidSecurity"), "{}", r.text());
    assert_eq!(be.seen.lock().unwrap().len(), reached);
    // The connection still serves the other proxies.
    let body = payload("1000B_buyStocks.xml");
    let r = c.soap("/services/DirectProxy", body.clone()).await;
    assert_eq!(r.body, body);
}

/// The same key store as PKCS#12 (what `keytool` makes of wso2carbon.jks, Java's default store
/// type), named by `[keystore.primary]` with `type = "PKCS12"`: SecureProxy serves with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pkcs12_primary_key_store_serves_the_secure_proxy() {
    let dir = std::env::temp_dir().join(format!("sluice-secure-p12-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p12 = dir.join("wso2carbon.p12");
    let jks = reference().join("keystores/wso2carbon.jks");
    sluice_security::testing::keytool_pkcs12(&jks, "wso2carbon", &p12, false);
    let toml = dir.join("deployment.toml");
    let settings = format!(
        "[keystore.primary]\nfile_name = \"{}\"\ntype = \"PKCS12\"\npassword = \"wso2carbon\"\nalias = \"wso2carbon\"\n",
        p12.display()
    );
    std::fs::write(&toml, settings).unwrap();
    let be = backend().await;
    let s = start_on_capp(&capp(), be.addr, &["--config", toml.to_str().unwrap()]);
    let mut c = Conn::open(s.addr).await;
    let body = request_file("2019-04_to_2020-08/1024B_buyStocks_secure.xml");
    let r = c.soap("/services/SecureProxy", body).await;
    assert_eq!(r.status, 200, "{}\n{}", r.text(), s.stderr());
    let mut doc = sluice_xml::Document::parse(r.text().as_bytes()).unwrap();
    sluice_security::inbound::check(&mut doc, &policy(), &requester(), chrono::Utc::now())
        .unwrap_or_else(|f| panic!("the answer does not check: {f}"));
    assert_eq!(be.seen.lock().unwrap().len(), 1);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A SYNAPSE_HOME for Synapse's security samples: policy_3.xml and its key store `store.jks`
/// (alice and bob, password "password") under `repository/conf/sample/resources`. Returns the
/// home and that folder.
fn sample_home(name: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let samples = reference().join("apache-synapse");
    let home = std::env::temp_dir().join(format!("sluice-{name}-{}", std::process::id()));
    let res = home.join("repository/conf/sample/resources");
    std::fs::create_dir_all(res.join("policy")).unwrap();
    std::fs::create_dir_all(res.join("security")).unwrap();
    for (from, to) in [
        ("resources/policy/policy_3.xml", "policy/policy_3.xml"),
        ("resources/security/store.jks", "security/store.jks"),
    ] {
        std::fs::copy(samples.join(from), res.join(to)).unwrap();
    }
    (home, res)
}

/// Apache Synapse's sample 100 (an endpoint's `<enableSec policy>`: the request leaves signed by
/// alice and encrypted to bob, policy_3's encryptionUser, and the answer is checked before the
/// out-sequence sends it back), towards sample 200's secured proxy as the secure service (Sluice
/// too, for now: a WSS4J peer is the next step): the client sends plain SOAP and gets the plain
/// answer; the echo back-end behind the secured proxy got the plain request. A secured service
/// that answers in the clear is refused (MI's 101510), and the client still gets an answer.
/// Sample 432's callout (`outboundPolicy` and `inboundPolicy`) goes the same way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn synapse_sample_100_secures_its_send_and_checks_the_answer() {
    let samples = reference().join("apache-synapse");
    let (home, _) = sample_home("s100");
    let be = backend().await;
    // The secure service: sample 200's proxy in front of the echo back-end.
    let service = std::fs::read_to_string(samples.join("synapse_sample_200.xml"))
        .unwrap()
        .replace("http://localhost:9000", &format!("http://{}", be.addr));
    let service_config = home.join("service.xml");
    std::fs::write(&service_config, service).unwrap();
    let secure = Sluice::run_at_home(&service_config, &home);
    let sample = std::fs::read_to_string(
        workspace_root()
            .join("conformance/third_party/synapse-samples/samples/synapse_sample_100.xml"),
    )
    .unwrap()
    .replace(
        "http://localhost:9000/services/SecureStockQuoteService",
        &format!("http://{}/services/StockQuoteProxy", secure.addr),
    );
    let config = home.join("synapse_sample_100.xml");
    std::fs::write(&config, &sample).unwrap();
    let s = Sluice::run_at_home(&config, &home);
    let plain = request_file("2019-04_to_2020-08/1024B_buyStocks.xml");
    let mut c = Conn::open(s.addr).await;
    let r = c.soap("/", plain.clone()).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let text = r.text();
    assert!(text.contains("<order>"), "the answer is plain: {text}");
    assert!(
        !text.contains("wsse:Security") && !text.contains("EncryptedData"),
        "{text}"
    );
    let seen = be.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    let sent = String::from_utf8(seen[0].body.clone().unwrap().to_vec()).unwrap();
    assert!(
        sent.contains("<order>") && !sent.contains("Security"),
        "{sent}"
    );

    // Sample 432: a callout's <enableSec> with one policy per flow, towards the same service; its
    // answer's payload replaces the request's, which `respond` sends back.
    let callout = std::fs::read_to_string(
        workspace_root()
            .join("conformance/third_party/synapse-samples/samples/synapse_sample_432.xml"),
    )
    .unwrap()
    .replace(
        "http://localhost:9000/services/SecureStockQuoteService",
        &format!("http://{}/services/StockQuoteProxy", secure.addr),
    );
    let callout_config = home.join("synapse_sample_432.xml");
    std::fs::write(&callout_config, &callout).unwrap();
    let s432 = Sluice::run_at_home(&callout_config, &home);
    let mut c = Conn::open(s432.addr).await;
    let r = c.soap("/", plain.clone()).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let text = r.text();
    assert!(
        text.contains("<order>") && !text.contains("EncryptedData"),
        "{text}"
    );
    assert_eq!(
        be.seen.lock().unwrap().len(),
        2,
        "the secure service passed it on"
    );

    // A "secure service" that answers in the clear: refused.
    let plain_service = synapse_xml(
        "s100-plain",
        r#"<definitions xmlns="http://ws.apache.org/ns/synapse"><proxy name="Plain"><target>
        <inSequence><payloadFactory media-type="xml"><format><r xmlns="">plain</r></format>
        <args/></payloadFactory><respond/></inSequence></target></proxy></definitions>"#,
    );
    let plain_service = Sluice::start(&["run", plain_service.to_str().unwrap()]);
    let clear = sample.replace(
        &format!("http://{}/services/StockQuoteProxy", secure.addr),
        &format!("http://{}/services/Plain", plain_service.addr),
    );
    std::fs::write(&config, &clear).unwrap();
    let s = Sluice::run_at_home(&config, &home);
    let mut c = Conn::open(s.addr).await;
    let r = c.soap("/", plain).await;
    assert_eq!(r.status, 502, "{}", r.text());
    assert!(
        r.text().contains("Fault processing response message"),
        "{}",
        r.text()
    );
}

/// Apache Synapse's sample 200 (its policy_3.xml names its own key store, `store.jks`, relative
/// to SYNAPSE_HOME: alice is the service, bob the client), its address pointed at the echo
/// back-end: a request bob signs and encrypts to alice passes, and the answer comes back signed
/// by alice and encrypted to bob, the policy's encryptionUser; so does one as Synapse's sample
/// client sends it (alice signs, encrypted to bob: opened with bob's key from the store).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn synapse_sample_200_serves_with_its_policys_key_store() {
    let samples = reference().join("apache-synapse");
    let (home, res) = sample_home("s200");
    let be = backend().await;
    let sample = std::fs::read_to_string(samples.join("synapse_sample_200.xml"))
        .unwrap()
        .replace("http://localhost:9000", &format!("http://{}", be.addr));
    let config = home.join("synapse_sample_200.xml");
    std::fs::write(&config, sample).unwrap();
    let s = Sluice::run_at_home(&config, &home);
    // bob's side: his key, alice's certificate.
    let store = sluice_transport::keystore::KeyStore::read_jks(
        &std::fs::read(res.join("security/store.jks")).unwrap(),
        "password",
    )
    .unwrap();
    let key = |alias: &str| store.key(alias).unwrap();
    let bob = sluice_security::inbound::Keys::new(
        sluice_xml::SecurityKey::private_pkcs8(&key("bob").key("password").unwrap()).unwrap(),
        key("bob").chain[0].clone(),
        vec![key("alice").chain[0].clone()],
    )
    .unwrap();
    let mut policy = sluice_security::policy::parse(
        &std::fs::read_to_string(res.join("policy/policy_3.xml")).unwrap(),
    )
    .unwrap();
    policy.signature_confirmation = false;
    let to_alice = sluice_security::inbound::Checked {
        signer: key("alice").chain[0].clone(),
        signature_values: Vec::new(),
    };
    let plain = request_file("2019-04_to_2020-08/1024B_buyStocks.xml");
    let mut doc = sluice_xml::Document::parse(&plain).unwrap();
    let now = chrono::Utc::now();
    sluice_security::outbound::secure(&mut doc, &policy, &bob, &to_alice, now).unwrap();
    let mut c = Conn::open(s.addr).await;
    let r = c
        .soap("/services/StockQuoteProxy", doc.to_bytes().unwrap())
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let mut answer = sluice_xml::Document::parse(&r.body).unwrap();
    let checked = sluice_security::inbound::check(&mut answer, &policy, &bob, now)
        .unwrap_or_else(|f| panic!("bob cannot read the answer: {f}\n{}", r.text()));
    assert_eq!(checked.signer, key("alice").chain[0], "alice signed it");
    let payload = answer.soap_body().unwrap().first_child_element().unwrap();
    assert_eq!(payload.name(), "buyStocks");
    // As Synapse's own sample client sends (client_policy_3.xml): signed by alice, encrypted to
    // bob. Opened with bob's key from the policy's store; the answer goes to bob.
    let alice = sluice_security::inbound::Keys::new(
        sluice_xml::SecurityKey::private_pkcs8(&key("alice").key("password").unwrap()).unwrap(),
        key("alice").chain[0].clone(),
        vec![key("bob").chain[0].clone()],
    )
    .unwrap();
    let to_bob = sluice_security::inbound::Checked {
        signer: key("bob").chain[0].clone(),
        signature_values: Vec::new(),
    };
    let mut doc = sluice_xml::Document::parse(&plain).unwrap();
    sluice_security::outbound::secure(&mut doc, &policy, &alice, &to_bob, now).unwrap();
    let r = c
        .soap("/services/StockQuoteProxy", doc.to_bytes().unwrap())
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let mut answer = sluice_xml::Document::parse(&r.body).unwrap();
    sluice_security::inbound::check(&mut answer, &policy, &bob, now)
        .unwrap_or_else(|f| panic!("bob cannot read the answer: {f}\n{}", r.text()));
    // The back-end got the plain envelopes, without the processed security header.
    let seen = be.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    let sent = String::from_utf8(seen[0].body.clone().unwrap().to_vec()).unwrap();
    assert!(
        sent.contains("<order>") && !sent.contains("Security"),
        "{sent}"
    );
}

/// MI's `[truststore]`: a request signed with a key only the trust store knows (Synapse's sample
/// key alice, referenced by its thumbprint) is refused without it (no certificate has that
/// thumbprint: wsse:SecurityTokenUnavailable) and taken with it, its answer encrypted to alice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_trust_store_decides_whose_signatures_are_taken() {
    let samples = reference().join("apache-synapse/resources/security/store.jks");
    let store = sluice_transport::keystore::KeyStore::read_jks(
        &std::fs::read(&samples).unwrap(),
        "password",
    )
    .unwrap();
    let alice = store.key("alice").unwrap();
    let service = requester(); // wso2carbon, the service's key
    let keys = sluice_security::inbound::Keys::new(
        sluice_xml::SecurityKey::private_pkcs8(&alice.key("password").unwrap()).unwrap(),
        alice.chain[0].clone(),
        vec![service.certificate.clone()],
    )
    .unwrap();
    let mut policy = policy();
    policy.signature_confirmation = false;
    let to_service = sluice_security::inbound::Checked {
        signer: service.certificate.clone(),
        signature_values: Vec::new(),
    };
    let request = || {
        let plain = request_file("2019-04_to_2020-08/1024B_buyStocks.xml");
        let mut doc = sluice_xml::Document::parse(&plain).unwrap();
        sluice_security::outbound::secure(
            &mut doc,
            &policy,
            &keys,
            &to_service,
            chrono::Utc::now(),
        )
        .unwrap();
        doc.to_bytes().unwrap()
    };
    let be = backend().await;
    let without = keystore_settings("trust-none", "wso2carbon");
    let s = start_on_capp(&capp(), be.addr, &["--config", without.to_str().unwrap()]);
    let mut c = Conn::open(s.addr).await;
    let r = c.soap("/services/SecureProxy", request()).await;
    assert_eq!(r.status, 500);
    assert!(
        r.text().contains("wsse:SecurityTokenUnavailable"),
        "{}",
        r.text()
    );
    drop(s);
    let with = keystore_settings("trust-alice", "wso2carbon");
    let mut text = std::fs::read_to_string(&with).unwrap();
    text.push_str(&format!(
        "[truststore]\nfile_name = \"{}\"\npassword = \"password\"\n",
        samples.display()
    ));
    std::fs::write(&with, text).unwrap();
    let s = start_on_capp(&capp(), be.addr, &["--config", with.to_str().unwrap()]);
    let mut c = Conn::open(s.addr).await;
    let r = c.soap("/services/SecureProxy", request()).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let mut answer = sluice_xml::Document::parse(&r.body).unwrap();
    sluice_security::inbound::check(&mut answer, &policy, &keys, chrono::Utc::now())
        .unwrap_or_else(|f| panic!("alice cannot read the answer: {f}"));
}
