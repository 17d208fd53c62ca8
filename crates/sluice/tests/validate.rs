//! `sluice validate` reports every problem at once with file:line:column.

mod common;
use common::setup::*;
use common::*;
use std::process::{Command, Output};

/// `sluice validate` on a folder: its output.
fn validate(dir: &std::path::Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["validate", dir.to_str().unwrap()])
        .output()
        .unwrap()
}

#[test]
fn validate_reports_unknown_mediator_and_malformed_xml() {
    let out = validate(&test_config("invalid"));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stderr: {err}");
    assert!(
        err.contains(
            "unknown-mediator.xml:6:13: error: <frobnicate>: unknown mediator <frobnicate>"
        ),
        "{err}"
    );
    assert!(
        err.contains("broken.xml:5:5: error: malformed XML"),
        "{err}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("2 error(s)") && stdout.contains("would deploy: Fine"),
        "{stdout}"
    );
}

#[test]
fn validate_of_the_wso2_capp_lists_unsupported_features_by_file() {
    let out = validate(&capp());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(1),
        "unsupported features make validate fail: {err}"
    );
    // DatamapperProxy runs its mapping's XSLT form (its missing .dmc is only a warning, as MI
    // reads it only on the JavaScript path).
    assert!(!err.contains("unsupported:"), "{err}");
    assert!(
        err.contains("'gov:/datamapper/DMPerfTest.dmc' is not available"),
        "{err}"
    );
    // Without a key store SecureProxy cannot run: the one error, on its <enableSec/>.
    assert_eq!(err.matches(": error:").count(), 1, "{err}");
    assert!(
        err.contains("SecureProxy-1.0.0.xml:32:5: error: <enableSec>: WS-Security needs our key"),
        "{err}"
    );
    // With WSO2's key store as [keystore.primary], SecureProxy validates too.
    let toml = keystore_settings("validate", "wso2carbon");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["--config", toml.to_str().unwrap(), "validate"])
        .arg(capp())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!err.contains("SecureProxy-1.0.0.xml"), "{err}");
    assert!(stdout.contains("SecureProxy"), "{stdout}");
}

#[test]
fn run_strict_refuses_a_configuration_with_errors() {
    let err = refused_run("invalid", &["--strict"]);
    assert!(err.contains("nothing was started"), "{err}");
}

#[test]
fn validate_reports_template_mistakes() {
    let out = validate(&test_config("template-errors"));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stderr: {err}");
    for want in [
        "synapse.xml:18:17: warning: <call-template>: template 'T' has no parameter 'c'; ignored",
        "synapse.xml:18:17: warning: <call-template>: template 'T' needs its parameter 'a': the call fails when it runs",
        // As MI: a template that is nowhere fails the message that reaches the call.
        "synapse.xml:19:17: warning: <call-template>: no template named 'Missing' in the configuration: as in MI",
        // Reported at its place in the template, for the endpoint that put the value in.
        "synapse.xml:11:70: error: <errorCodes>: 'oops' is not an error code (in endpoint template EndpointTemplate for endpoint FromTemplate)",
        "synapse.xml:14:5: error: <endpoint>: no endpoint template named 'Nowhere'",
        "synapse.xml:37:17: error: <foreach>: a foreach sequence may not send",
        // A template nobody calls is compiled too.
        "synapse.xml:43:19: warning: <call-template>: no template named 'Nowhere2' in the configuration",
    ] {
        assert!(err.contains(want), "{want}\n{err}");
    }
}

/// As WSO2 MI: an artifact with an error is reported and left out; the others deploy and serve.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_deploys_the_artifacts_without_errors() {
    let s = Sluice::start(&["run", test_config("invalid").to_str().unwrap()]);
    let err = s.stderr();
    assert!(
        err.contains(
            "error(s) in the configuration: what they are in is not deployed, the rest is"
        ),
        "{err}"
    );
    assert!(err.contains("unknown-mediator.xml:"), "{err}");
    let mut c = Conn::open(s.addr).await;
    let r = c.get("/services").await.unwrap();
    assert_eq!(r.status, 200);
    let list = r.text();
    assert!(list.contains("Deployed services: Fine"), "{list}");
    assert!(list.contains("Not deployed: Typo:"), "{list}");
    let r = c.get("/services/Typo").await.unwrap();
    assert_eq!(r.status, 404, "{}", r.text());
}

/// The Apache Synapse samples (conformance/third_party/synapse-samples, apache/synapse, Apache License 2.0)
/// that load with no error and nothing unsupported: their number must not fall (70 on 2026-11-29, session 40: the five WS-Security samples 100, 156, 431, 432, 704;
/// raise the floor as more load). `scripts/validate-samples.sh -v` says why each other one does not.
#[test]
fn synapse_samples_load_clean() {
    let dir = workspace_root().join("conformance/third_party/synapse-samples");
    let mut paths: Vec<_> = std::fs::read_dir(dir.join("samples"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "xml"))
        .collect();
    paths.push(dir.join("sample-600"));
    assert!(paths.len() >= 118, "{} samples", paths.len());
    // SYNAPSE_HOME for the samples' relative file: paths (their <registry> root, local entries'
    // src): repository/conf/sample/resources there is the samples' resources/.
    let home = dir.join("home");
    let clean: Vec<_> = paths
        .iter()
        .filter(|p| {
            Command::new(env!("CARGO_BIN_EXE_sluice"))
                .args([
                    "validate",
                    p.to_str().unwrap(),
                    "--home",
                    home.to_str().unwrap(),
                ])
                .output()
                .unwrap()
                .status
                .success()
        })
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert!(clean.len() >= 70, "{} load clean: {clean:?}", clean.len());
    // Samples the fidelity work made load: a regression shows here first.
    for name in [
        "synapse_sample_4.xml",
        "synapse_sample_450.xml",
        "synapse_sample_157.xml",
        // Their <registry> and local entry src files (session 29).
        "synapse_sample_8.xml",
        "synapse_sample_9.xml",
        "synapse_sample_10.xml",
        // Recipient lists, static and from the registry.
        "synapse_sample_61.xml",
        "synapse_sample_62.xml",
        // Throttle: concurrency, rates, a policy from the registry.
        "synapse_sample_370.xml",
        "synapse_sample_372.xml",
        // Static load-balance members.
        "synapse_sample_58.xml",
        // Session affinity.
        "synapse_sample_54.xml",
        "synapse_sample_154.xml",
        // The EIP template library they <import> (home/repository/conf/synapse-libs), its
        // templates taking {{XPath}} parameters and recipient lists per message (session 30).
        "synapse_sample_851.xml",
        "synapse_sample_852.xml",
        "synapse_sample_853.xml",
        "synapse_sample_854.xml",
        "synapse_sample_857.xml",
        // Message stores: store with a sequence, sampling and forwarding processors (session 38).
        "synapse_sample_700.xml",
        "synapse_sample_701.xml",
        "synapse_sample_702.xml",
        "synapse_sample_705.xml",
    ] {
        assert!(
            clean.iter().any(|c| c == name),
            "{name} no longer loads clean"
        );
    }
}
