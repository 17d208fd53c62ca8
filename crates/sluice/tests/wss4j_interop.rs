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

/// A WSS4J service playing Synapse's SecureStockQuoteService under policy_3
/// (`tools/wss4j/src/SecureStockQuotePeer.java`), in a SYNAPSE_HOME of its own: policy_3 and a
/// fresh store.jks (alice and bob, made by keytool: the shipped ones expired in 2025) that both
/// it and Sluice read. Its log lines (what it took or refused) arrive on `log`; it stops when
/// dropped.
struct Peer {
    child: std::process::Child,
    port: u16,
    home: std::path::PathBuf,
    log: std::sync::mpsc::Receiver<String>,
}

impl Peer {
    fn start(name: &str) -> Peer {
        use std::io::BufRead;
        let home = std::env::temp_dir().join(format!("sluice-peer-{name}-{}", std::process::id()));
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
        let mut child = std::process::Command::new("java")
            .arg("-cp")
            .arg(format!("{0}/lib/*:{0}/classes", tools.display()))
            .arg("SecureStockQuotePeer")
            .arg(&store)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("java runs");
        let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut first = String::new();
        out.read_line(&mut first).unwrap();
        let port = (first.trim().strip_prefix("listening "))
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("the peer did not start: {first:?}"));
        let (lines, log) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for l in out.lines().map_while(Result::ok) {
                if lines.send(l).is_err() {
                    return;
                }
            }
        });
        Peer {
            child,
            port,
            home,
            log,
        }
    }

    /// Synapse's sample `n`, its `localhost:9000` services pointed at the peer and `changes`
    /// made, written as `name.xml` in the home; Sluice runs it with the home as SYNAPSE_HOME (and
    /// `more` arguments).
    fn sluice(&self, n: u32, name: &str, changes: &[(&str, &str)], more: &[&str]) -> Sluice {
        let mut text = std::fs::read_to_string(workspace_root().join(format!(
            "conformance/third_party/synapse-samples/samples/synapse_sample_{n}.xml"
        )))
        .unwrap()
        .replace(
            "http://localhost:9000/services/",
            &format!("http://127.0.0.1:{}/services/", self.port),
        );
        for (from, to) in changes {
            text = text.replace(from, to);
        }
        let path = self.home.join(format!("{name}.xml"));
        std::fs::write(&path, text).unwrap();
        let (config, home) = (path.to_str().unwrap(), self.home.to_str().unwrap());
        let mut args = vec!["run", config, "--home", home];
        args.extend_from_slice(more);
        Sluice::start(&args)
    }

    /// The peer's next `n` log lines (what it took or refused), waiting at most 30 s for each.
    fn lines(&self, n: usize) -> Vec<String> {
        (0..n)
            .map(|_| {
                (self.log.recv_timeout(std::time::Duration::from_secs(30)))
                    .expect("the peer logged too few requests")
            })
            .collect()
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.home);
    }
}

/// A getQuote for `symbol` (the peer's modes are symbols: clear, tampered, wsse-fault).
fn quote(symbol: &str) -> String {
    format!(
        "<soapenv:Envelope xmlns:soapenv=\"http://schemas.xmlsoap.org/soap/envelope/\">\
         <soapenv:Body><m:getQuote xmlns:m=\"http://services.samples\"><m:request>\
         <m:symbol>{symbol}</m:symbol></m:request></m:getQuote></soapenv:Body></soapenv:Envelope>"
    )
}

const ORDER: &str =
    "<soapenv:Envelope xmlns:soapenv=\"http://schemas.xmlsoap.org/soap/envelope/\">\
    <soapenv:Body><m:placeOrder xmlns:m=\"http://services.samples\"><m:order>\
    <m:symbol>IBM</m:symbol></m:order></m:placeOrder></soapenv:Body></soapenv:Envelope>";

/// Asserts `r` is a 200 whose plain body holds `want`.
fn plain_answer(r: &Reply, want: &str, s: &Sluice) {
    let text = r.text();
    assert_eq!(r.status, 200, "{text}\n{}", s.stderr());
    assert!(
        text.contains(want) && !text.contains("Security") && !text.contains("EncryptedData"),
        "a plain answer with {want}: {text}"
    );
}

/// Synapse's samples 100 (an endpoint's `<enableSec policy>`) and 432 (a callout's, one policy
/// per flow) towards the WSS4J service: WSS4J takes Sluice's secured requests (Timestamp, alice's
/// signature with her certificate as a BinarySecurityToken, the Body encrypted to bob by subject
/// key identifier) and Sluice takes its answers (alice's signature named by subject key
/// identifier, the Body encrypted to bob): the client gets the plain answer. An answer in the
/// clear or with a changed encrypted Body is refused (502, MI's 101510); an unsecured wsse fault
/// passes unchecked, as Rampart lets it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wss4j_service_takes_sluices_secured_requests_and_sluice_its_answers() {
    let peer = Peer::start("100");
    let s100 = peer.sluice(100, "s100", &[], &[]);
    let mut c = Conn::open(s100.addr).await;
    let r = c.soap("/", quote("IBM")).await;
    plain_answer(&r, "<ns:received>getQuote</ns:received>", &s100);
    for (mode, status, says) in [
        ("clear", 502, "Fault processing response message"),
        ("tampered", 502, "Fault processing response message"),
        ("wsse-fault", 500, "wsse:InvalidSecurity"),
    ] {
        let r = c.soap("/", quote(mode)).await;
        assert_eq!(r.status, status, "{mode}: {}", r.text());
        assert!(r.text().contains(says), "{mode}: {}", r.text());
    }
    let s432 = peer.sluice(432, "s432", &[], &[]);
    let mut c = Conn::open(s432.addr).await;
    let r = c.soap("/", quote("IBM")).await;
    plain_answer(&r, "<ns:received>getQuote</ns:received>", &s432);
    // The peer took each of Sluice's requests (none refused).
    let seen = peer.lines(5);
    assert!(seen.iter().all(|l| l.starts_with("taken\t")), "{seen:?}");
}

/// MI's way of naming keys: policy_3 without its key stores, our key from `[keystore.primary]`
/// (alice), `encryptionUser` (bob) a certificate of the same store.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mi_style_keys_secure_towards_the_wss4j_service() {
    let peer = Peer::start("mi");
    let res = peer.home.join("repository/conf/sample/resources");
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
    let toml = peer.home.join("deployment.toml");
    let store = res.join("security/store.jks");
    std::fs::write(
        &toml,
        format!(
            "[keystore.primary]\nfile_name = \"{}\"\npassword = \"password\"\nalias = \"alice\"\nkey_password = \"password\"\n",
            store.display()
        ),
    )
    .unwrap();
    let changes = [("policy_3.xml", "policy_mi.xml")];
    let s = peer.sluice(100, "mi", &changes, &["--config", toml.to_str().unwrap()]);
    let mut c = Conn::open(s.addr).await;
    let r = c.soap("/", quote("IBM")).await;
    plain_answer(&r, "<ns:received>getQuote</ns:received>", &s);
    assert_eq!(peer.lines(1), ["taken\tgetQuote"]);
}

/// Sample 156: `send receive` through the secured service, whose decrypted quote (140.34) is kept
/// while the request goes on to a plain SimpleStockQuoteService (the peer answers 150.00 on that
/// path); the cheaper, the secured service's answer, goes back to the client.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sample_156_receives_through_the_wss4j_service_then_a_plain_one() {
    let peer = Peer::start("156");
    let s = peer.sluice(156, "s156", &[], &[]);
    let mut c = Conn::open(s.addr).await;
    let r = c.soap("/services/StockQuoteProxy", quote("IBM")).await;
    plain_answer(&r, "<ns:last>140.34</ns:last>", &s);
    assert_eq!(peer.lines(2), ["taken\tgetQuote", "plain\tgetQuote"]);
}

/// A one-way send (`OUT_ONLY`, `FORCE_SC_ACCEPTED`) to the secured endpoint leaves secured too
/// (the peer refuses an unsecured one); and sample 704: an order stored (202 at once), then
/// forwarded secured by the message processor (every 100 ms here instead of 10 s).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_way_and_stored_orders_reach_the_wss4j_service_secured() {
    let peer = Peer::start("704");
    let one_way = r#"<in><property name="FORCE_SC_ACCEPTED" value="true" scope="axis2"/><property name="OUT_ONLY" value="true"/>"#;
    let s = peer.sluice(100, "one_way", &[("<in>", one_way)], &[]);
    let mut c = Conn::open(s.addr).await;
    let r = c.soap("/", ORDER).await;
    assert_eq!(r.status, 202, "{}", r.text());
    assert_eq!(peer.lines(1), ["taken\tplaceOrder"], "{}", s.stderr());
    let s = peer.sluice(704, "s704", &[(">10000<", ">100<")], &[]);
    let mut c = Conn::open(s.addr).await;
    let r = c.soap("/", ORDER).await;
    assert_eq!(r.status, 202, "{}", r.text());
    assert_eq!(peer.lines(1), ["taken\tplaceOrder"], "{}", s.stderr());
}
