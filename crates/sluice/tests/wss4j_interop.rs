//! Interop with an independent WS-Security implementation: a client built on Apache WSS4J
//! (`tools/wss4j`, built by `.ci/run` into `target/tools/wss4j`) secures fresh requests to WSO2's
//! SecureProxy policy (`conformance/ws-security`), its certificate as a BinarySecurityToken and once
//! by issuer and serial number (WSS4J's default), verifies each answer with WSS4J (decryption,
//! signature, Timestamp, SignatureConfirmation), and sends tampered requests whose faults it checks.

mod common;
use common::*;

/// Fresh requests the client sends; each must reach the back-end once.
const FRESH: usize = 5;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wss4j_secures_requests_sluice_takes_and_takes_the_answers_sluice_secures() {
    let tools = workspace_root().join("target/tools/wss4j");
    assert!(
        tools.join("classes/WssInterop.class").is_file(),
        "the WSS4J client is not built: run .ci/run (it builds {})",
        tools.display()
    );
    let suite = workspace_root().join("conformance/ws-security");
    let be = backend().await;
    let s = Sluice::on_suite(&suite, &["Backend".to_owned()], be.addr, "info");
    let other = reference().join("apache-synapse/resources/security/store.jks");
    let out = std::process::Command::new("java")
        .arg("-cp")
        .arg(format!("{0}/lib/*:{0}/classes", tools.display()))
        .arg("WssInterop")
        .arg(format!("http://{}/services/SecureProxy", s.addr))
        .arg(suite.join("wso2carbon.jks"))
        .arg(other)
        .arg(FRESH.to_string())
        .output()
        .expect("java runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
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
