//! Interop with an independent WS-Security implementation: a client built on Apache WSS4J
//! (`tools/wss4j`, built by `.ci/run` into `target/tools/wss4j`) secures fresh requests to WSO2's
//! SecureProxy policy (`conformance/ws-security`), its certificate as a BinarySecurityToken and once
//! by issuer and serial number (WSS4J's default), verifies each answer with WSS4J (decryption,
//! signature, Timestamp, SignatureConfirmation), and sends tampered requests whose faults it checks.
//! A second client sends UsernameTokens over HTTPS (MI's "UsernameToken" scenario). A WSS4J
//! service (`SecureStockQuotePeer`) plays Synapse's SecureStockQuoteService for WS-Security
//! towards back-ends (samples 100 and 432).

mod common;
use common::*;

/// Fresh requests the client sends; each must reach the back-end once.
const FRESH: usize = 5;

/// Runs the WSS4J client `class` (`tools/wss4j`, built by `.ci/run` into `target/tools/wss4j`)
/// with `args`; its stdout, the lines of its cases. `more` is shown when it fails.
fn wss4j(class: &str, args: &[std::ffi::OsString], more: &dyn Fn() -> String) -> String {
    let tools = workspace_root().join("target/tools/wss4j");
    assert!(
        tools.join(format!("classes/{class}.class")).is_file(),
        "the WSS4J client is not built: run .ci/run (it builds {})",
        tools.display()
    );
    let out = std::process::Command::new("java")
        .arg("-cp")
        .arg(format!("{0}/lib/*:{0}/classes", tools.display()))
        .arg(class)
        .args(args)
        .output()
        .expect("java runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{text}\n{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        more()
    );
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wss4j_secures_requests_sluice_takes_and_takes_the_answers_sluice_secures() {
    let suite = workspace_root().join("conformance/ws-security");
    let be = backend().await;
    let s = Sluice::on_suite(&suite, &["Backend".to_owned()], be.addr, "info");
    let other = reference().join("apache-synapse/resources/security/store.jks");
    let args = [
        format!("http://{}/services/SecureProxy", s.addr).into(),
        suite.join("wso2carbon.jks").into(),
        other.into(),
        FRESH.to_string().into(),
    ];
    let text = wss4j("WssInterop", &args, &|| s.stderr());
    let lines: Vec<&str> = text.lines().collect();
    let want: Vec<String> = (1..=FRESH)
        .map(|i| format!("fresh-{i}\t200\tanswer verified"))
        .chain(
            [
                "issuer-serial\t200\tanswer verified",
                "body-flipped\t500\twsse:FailedCheck",
                "signature-changed\t500\twsse:FailedCheck",
                "wrapped\t500\twsse:FailedCheck",
                "expired\t500\twsse:MessageExpired",
                "other-ca\t500\twsse:FailedAuthentication",
            ]
            .map(str::to_owned),
        )
        .collect();
    assert_eq!(lines, want, "{text}");
    // Only the fresh requests reached the back-end.
    assert_eq!(be.seen.lock().unwrap().len(), FRESH + 1);
}

/// The same proxy under a policy that signs only (WSO2's policy without `sp:EncryptedParts`, as
/// MI's "Non-repudiation" scenario): WSS4J's signed requests pass, their answers come back signed
/// and in the clear (WSS4J checks both), and a changed signature is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wss4j_and_sluice_agree_on_a_sign_only_policy() {
    let suite = workspace_root().join("conformance/ws-security");
    let text = std::fs::read_to_string(suite.join("synapse/synapse.xml")).unwrap();
    let (start, end) = (
        text.find("<sp:EncryptedParts").unwrap(),
        text.find("</sp:EncryptedParts>").unwrap() + "</sp:EncryptedParts>".len(),
    );
    let dir = std::env::temp_dir().join(format!("sluice-sign-only-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("synapse")).unwrap();
    std::fs::write(
        dir.join("synapse/synapse.xml"),
        format!("{}{}", &text[..start], &text[end..]),
    )
    .unwrap();
    for f in ["deployment.toml", "wso2carbon.jks"] {
        std::fs::copy(suite.join(f), dir.join(f)).unwrap();
    }
    let be = backend().await;
    let s = Sluice::on_suite(&dir, &["Backend".to_owned()], be.addr, "info");
    let args = [
        format!("http://{}/services/SecureProxy", s.addr).into(),
        suite.join("wso2carbon.jks").into(),
        reference()
            .join("apache-synapse/resources/security/store.jks")
            .into(),
        "2".into(),
        "sign-only".into(),
    ];
    let text = wss4j("WssInterop", &args, &|| s.stderr());
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines,
        [
            "sign-only-1\t200\tanswer verified",
            "sign-only-2\t200\tanswer verified",
            "signature-changed\t500\twsse:FailedCheck",
        ],
        "{text}"
    );
    assert_eq!(be.seen.lock().unwrap().len(), 2);
    let _ = std::fs::remove_dir_all(&dir);
}

/// MI's "UsernameToken" security scenario (its integration tests' `scenario1-policy.xml`:
/// `sp:TransportBinding` with `sp:HttpsToken`, a Timestamp, a UsernameToken as a signed
/// supporting token), checked against `[[internal_apis.users]]`: WSS4J's tokens with the
/// password as text and as a digest pass over HTTPS and their answers carry a Timestamp WSS4J
/// takes; a wrong password, an unknown user and a missing token are refused; over http, refused
/// too. Without a security header, HTTP Basic credentials stand for the token (MI's POX
/// security): right ones pass, wrong ones get 401 with a Basic challenge.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wss4j_usernametokens_over_https_are_checked_against_the_users() {
    let policy = r#"<wsp:Policy wsu:Id="UTOverTransport" xmlns:wsp="http://schemas.xmlsoap.org/ws/2004/09/policy" xmlns:wsu="http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-utility-1.0.xsd">
  <wsp:ExactlyOne><wsp:All>
    <sp:TransportBinding xmlns:sp="http://schemas.xmlsoap.org/ws/2005/07/securitypolicy"><wsp:Policy>
      <sp:TransportToken><wsp:Policy><sp:HttpsToken RequireClientCertificate="false"/></wsp:Policy></sp:TransportToken>
      <sp:AlgorithmSuite><wsp:Policy><sp:Basic256/></wsp:Policy></sp:AlgorithmSuite>
      <sp:Layout><wsp:Policy><sp:Lax/></wsp:Policy></sp:Layout>
      <sp:IncludeTimestamp/>
    </wsp:Policy></sp:TransportBinding>
    <sp:SignedSupportingTokens xmlns:sp="http://schemas.xmlsoap.org/ws/2005/07/securitypolicy"><wsp:Policy>
      <sp:UsernameToken sp:IncludeToken="http://schemas.xmlsoap.org/ws/2005/07/securitypolicy/IncludeToken/AlwaysToRecipient"/>
    </wsp:Policy></sp:SignedSupportingTokens>
  </wsp:All></wsp:ExactlyOne>
  <rampart:RampartConfig xmlns:rampart="http://ws.apache.org/rampart/policy">
    <rampart:timestampTTL>300</rampart:timestampTTL><rampart:timestampMaxSkew>300</rampart:timestampMaxSkew>
  </rampart:RampartConfig>
</wsp:Policy>"#;
    let config = synapse_xml(
        "ut-https",
        &format!(
            r#"<definitions xmlns="http://ws.apache.org/ns/synapse">
  <localEntry key="ut_policy">{policy}</localEntry>
  <proxy name="UTProxy" transports="https http">
    <target><inSequence><respond/></inSequence></target>
    <policy key="ut_policy"/>
    <enableSec/>
  </proxy>
</definitions>"#
        ),
    );
    let dir = config.parent().unwrap().to_owned();
    let settings = dir.join("deployment.toml");
    std::fs::write(
        &settings,
        "[[internal_apis.users]]\nuser.name = \"alice\"\nuser.password = \"s3cret\"\n",
    )
    .unwrap();
    let key = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let (cert, pem) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert, key.cert.pem()).unwrap();
    std::fs::write(&pem, key.key_pair.serialize_pem()).unwrap();
    let s = Sluice::start(&[
        "run",
        config.to_str().unwrap(),
        "--config",
        settings.to_str().unwrap(),
        "--https-port",
        "0",
        "--tls-cert",
        cert.to_str().unwrap(),
        "--tls-key",
        pem.to_str().unwrap(),
    ]);
    let https = s.https_addr();
    let args = [
        format!("https://localhost:{}/services/UTProxy", https.port()).into(),
        "alice".into(),
        "s3cret".into(),
    ];
    let text = wss4j("WssUsernameToken", &args, &|| s.stderr());
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines,
        [
            "text\t200\tanswer's Timestamp verified",
            "digest\t200\tanswer's Timestamp verified",
            "wrong-password\t500\twsse:FailedAuthentication",
            "unknown-user\t500\twsse:FailedAuthentication",
            "no-token\t500\twsse:InvalidSecurity",
            "basic\t200",
            "basic-wrong-password\t401",
        ],
        "{text}"
    );
    // The same token over http: refused, HTTPS being the policy's transport.
    let token = r#"<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/"><soapenv:Header><wsse:Security xmlns:wsse="http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-secext-1.0.xsd"><wsse:UsernameToken><wsse:Username>alice</wsse:Username><wsse:Password>s3cret</wsse:Password></wsse:UsernameToken></wsse:Security></soapenv:Header><soapenv:Body><a/></soapenv:Body></soapenv:Envelope>"#;
    let mut c = Conn::open(s.addr).await;
    let r = c.soap("/services/UTProxy", token).await;
    assert_eq!(r.status, 500, "{}", r.text());
    assert!(
        r.text().contains("wsse:InvalidSecurity") && r.text().contains("HTTPS"),
        "{}",
        r.text()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Synapse's samples 100 (an endpoint's `<enableSec policy>`) and 432 (a callout's, one policy
/// per flow) towards a WSS4J service playing SecureStockQuoteService under policy_3 (fresh alice
/// and bob keys in the store both sides read): WSS4J takes Sluice's secured requests (Timestamp,
/// alice's signature with her certificate as a BinarySecurityToken, the Body encrypted to bob by
/// subject key identifier) and Sluice takes its answers (alice's signature named by subject key
/// identifier, the Body encrypted to bob): the client gets the plain answer. An answer in the
/// clear or with a changed encrypted Body is refused (502, MI's 101510); an unsecured wsse fault
/// passes unchecked, as Rampart lets it. The same with MI's way of naming keys: a policy without
/// a key store, our key from `[keystore.primary]`, `encryptionUser` a certificate of it. And
/// sample 704: an order stored, then forwarded secured by a message processor; and sample 156:
/// `send receive` through the secured service, then on to a plain one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wss4j_service_takes_sluices_secured_requests_and_sluice_its_answers() {
    use std::io::BufRead;
    let home = std::env::temp_dir().join(format!("sluice-peer-{}", std::process::id()));
    let res = home.join("repository/conf/sample/resources");
    std::fs::create_dir_all(res.join("policy")).unwrap();
    std::fs::create_dir_all(res.join("security")).unwrap();
    std::fs::copy(
        reference().join("apache-synapse/resources/policy/policy_3.xml"),
        res.join("policy/policy_3.xml"),
    )
    .unwrap();
    let store = res.join("security/store.jks");
    sluice_security::testing::keytool_jks(&store, "password", &["alice", "bob"]);
    let tools = workspace_root().join("target/tools/wss4j");
    assert!(
        tools.join("classes/SecureStockQuotePeer.class").is_file(),
        "the WSS4J peer is not built: run .ci/run"
    );
    let mut peer = std::process::Command::new("java")
        .arg("-cp")
        .arg(format!("{0}/lib/*:{0}/classes", tools.display()))
        .arg("SecureStockQuotePeer")
        .arg(&store)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("java runs");
    let mut out = std::io::BufReader::new(peer.stdout.take().unwrap());
    // (Read by a thread below once the port is known.)
    let mut first = String::new();
    out.read_line(&mut first).unwrap();
    let port: u16 = first
        .trim()
        .strip_prefix("listening ")
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("the peer did not start: {first:?}"));
    // The peer's lines as they come: what it took or refused.
    let (lines, log) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for l in out.lines().map_while(Result::ok) {
            if lines.send(l).is_err() {
                return;
            }
        }
    });
    let service = format!("http://127.0.0.1:{port}/services/SecureStockQuoteService");
    let sample = |n: u32| {
        let text = std::fs::read_to_string(workspace_root().join(format!(
            "conformance/third_party/synapse-samples/samples/synapse_sample_{n}.xml"
        )))
        .unwrap()
        .replace(
            "http://localhost:9000/services/SecureStockQuoteService",
            &service,
        );
        let path = home.join(format!("synapse_sample_{n}.xml"));
        std::fs::write(&path, text).unwrap();
        Sluice::run_at_home(&path, &home)
    };
    let quote = |symbol: &str| {
        format!(
            "<soapenv:Envelope xmlns:soapenv=\"http://schemas.xmlsoap.org/soap/envelope/\">\
             <soapenv:Body><m:getQuote xmlns:m=\"http://services.samples\"><m:request>\
             <m:symbol>{symbol}</m:symbol></m:request></m:getQuote></soapenv:Body></soapenv:Envelope>"
        )
    };
    let s100 = sample(100);
    let mut c = Conn::open(s100.addr).await;
    let r = c.soap("/", quote("IBM")).await;
    let text = r.text();
    assert_eq!(r.status, 200, "{text}\n{}", s100.stderr());
    assert!(
        text.contains("<ns:received>getQuote</ns:received>") && !text.contains("Security"),
        "the plain answer: {text}"
    );
    for (mode, status, says) in [
        ("clear", 502, "Fault processing response message"),
        ("tampered", 502, "Fault processing response message"),
        ("wsse-fault", 500, "wsse:InvalidSecurity"),
    ] {
        let r = c.soap("/", quote(mode)).await;
        assert_eq!(r.status, status, "{mode}: {}", r.text());
        assert!(r.text().contains(says), "{mode}: {}", r.text());
    }
    let s432 = sample(432);
    let mut c = Conn::open(s432.addr).await;
    let r = c.soap("/", quote("IBM")).await;
    let text = r.text();
    assert_eq!(r.status, 200, "{text}\n{}", s432.stderr());
    assert!(
        text.contains("<ns:received>getQuote</ns:received>"),
        "{text}"
    );
    // MI's way: the policy names no key store; our key is [keystore.primary]'s (alice), bob's
    // certificate (encryptionUser) comes from the same store.
    let policy = std::fs::read_to_string(res.join("policy/policy_3.xml")).unwrap();
    let cut = |text: &str, element: &str| {
        let (open, close) = (format!("<ramp:{element}>"), format!("</ramp:{element}>"));
        let (a, b) = (
            text.find(&open).unwrap(),
            text.find(&close).unwrap() + close.len(),
        );
        format!("{}{}", &text[..a], &text[b..])
    };
    let mi_policy = cut(&cut(&policy, "signatureCrypto"), "encryptionCypto");
    std::fs::write(res.join("policy/policy_mi.xml"), mi_policy).unwrap();
    let toml = home.join("deployment.toml");
    std::fs::write(
        &toml,
        format!(
            "[keystore.primary]\nfile_name = \"{}\"\npassword = \"password\"\nalias = \"alice\"\nkey_password = \"password\"\n",
            store.display()
        ),
    )
    .unwrap();
    let text = std::fs::read_to_string(home.join("synapse_sample_100.xml"))
        .unwrap()
        .replace("policy_3.xml", "policy_mi.xml");
    let mi = home.join("mi_sample_100.xml");
    std::fs::write(&mi, text).unwrap();
    let s_mi = Sluice::start(&[
        "run",
        mi.to_str().unwrap(),
        "--home",
        home.to_str().unwrap(),
        "--config",
        toml.to_str().unwrap(),
    ]);
    let mut c = Conn::open(s_mi.addr).await;
    let r = c.soap("/", quote("IBM")).await;
    let text = r.text();
    assert_eq!(r.status, 200, "{text}\n{}", s_mi.stderr());
    assert!(
        text.contains("<ns:received>getQuote</ns:received>"),
        "{text}"
    );
    // Sample 156: the proxy sends to the secured service, whose answer's quote (140.34) is kept
    // while the request goes on to SimpleStockQuoteService (plain, 150.00); the cheaper, the
    // secured service's decrypted answer, goes back to the client.
    let text = std::fs::read_to_string(
        workspace_root()
            .join("conformance/third_party/synapse-samples/samples/synapse_sample_156.xml"),
    )
    .unwrap()
    .replace(
        "http://localhost:9000/services/",
        &format!("http://127.0.0.1:{port}/services/"),
    );
    let path = home.join("synapse_sample_156.xml");
    std::fs::write(&path, text).unwrap();
    let s156 = Sluice::run_at_home(&path, &home);
    let mut c = Conn::open(s156.addr).await;
    let r = c.soap("/services/StockQuoteProxy", quote("IBM")).await;
    let text = r.text();
    assert_eq!(r.status, 200, "{text}\n{}", s156.stderr());
    assert!(
        text.contains("<ns:last>140.34</ns:last>") && !text.contains("Security"),
        "the secured service's quote: {text}"
    );

    // A one-way send (OUT_ONLY, FORCE_SC_ACCEPTED) to the secured endpoint leaves secured too.
    let one_way = std::fs::read_to_string(home.join("synapse_sample_100.xml"))
        .unwrap()
        .replace(
            "<in>",
            r#"<in><property name="FORCE_SC_ACCEPTED" value="true" scope="axis2"/><property name="OUT_ONLY" value="true"/>"#,
        );
    let path = home.join("one_way.xml");
    std::fs::write(&path, one_way).unwrap();
    let s1 = Sluice::run_at_home(&path, &home);
    let order = "<soapenv:Envelope xmlns:soapenv=\"http://schemas.xmlsoap.org/soap/envelope/\">\
        <soapenv:Body><m:placeOrder xmlns:m=\"http://services.samples\"><m:order>\
        <m:symbol>IBM</m:symbol></m:order></m:placeOrder></soapenv:Body></soapenv:Envelope>";
    let mut c = Conn::open(s1.addr).await;
    let r = c.soap("/", order).await;
    assert_eq!(r.status, 202, "{}", r.text());

    // Sample 704: a placeOrder stored (202 at once), then forwarded secured by the message
    // processor (every 100 ms here instead of 10 s) to the secured endpoint.
    let text = std::fs::read_to_string(
        workspace_root()
            .join("conformance/third_party/synapse-samples/samples/synapse_sample_704.xml"),
    )
    .unwrap()
    .replace(
        "http://localhost:9000/services/SecureStockQuoteService",
        &service,
    )
    .replace(">10000<", ">100<");
    let path = home.join("synapse_sample_704.xml");
    std::fs::write(&path, text).unwrap();
    let s704 = Sluice::run_at_home(&path, &home);
    let mut c = Conn::open(s704.addr).await;
    let r = c.soap("/", order).await;
    assert_eq!(r.status, 202, "{}", r.text());
    // The peer took each of Sluice's requests (none refused): the one-way order, then the stored
    // one.
    let mut seen = Vec::new();
    while seen
        .iter()
        .filter(|l: &&String| *l == "taken\tplaceOrder")
        .count()
        < 2
    {
        match log.recv_timeout(std::time::Duration::from_secs(30)) {
            Ok(l) => seen.push(l),
            Err(_) => panic!(
                "the stored order never reached the peer: {seen:?}\n{}",
                s704.stderr()
            ),
        }
    }
    assert_eq!(seen.len(), 10, "{seen:?}");
    assert_eq!(seen[7], "plain\tgetQuote", "{seen:?}");
    assert!(
        (seen.iter().enumerate()).all(|(i, l)| i == 7 || l.starts_with("taken\t")),
        "{seen:?}"
    );
    drop(peer.stdin.take());
    let _ = peer.wait();
    let _ = std::fs::remove_dir_all(&home);
}
