//! Helpers for the workspace's tests (not part of the crate's API).

use std::path::Path;

/// Converts the JKS store `jks` into a PKCS#12 store `out` with Java's `keytool` (the same
/// password for both): as Java 17 writes it (PBES2, AES-256, HMAC-SHA256), or `legacy` (3DES and
/// RC2, HMAC-SHA1). Needs a JDK on the path (`.ci/run` installs one).
pub fn keytool_pkcs12(jks: &Path, password: &str, out: &Path, legacy: bool) {
    let _ = std::fs::remove_file(out);
    let mut keytool = std::process::Command::new("keytool");
    if legacy {
        keytool.arg("-J-Dkeystore.pkcs12.legacy");
    }
    let done = keytool
        .args(["-importkeystore", "-noprompt", "-srcstoretype", "JKS"])
        .args(["-srcstorepass", password, "-deststorepass", password])
        .args(["-deststoretype", "PKCS12", "-srckeystore"])
        .arg(jks)
        .arg("-destkeystore")
        .arg(out)
        .output()
        .expect("keytool (a JDK; .ci/run installs one)");
    assert!(done.status.success(), "keytool -importkeystore: {done:?}");
}

/// A fresh JKS store `out` with an RSA 2048 key and a self-signed certificate (valid 30 days,
/// with a subject key identifier, as `keytool` makes them) for each alias, store and keys
/// under `password`: Synapse's sample store.jks as it should be today (its certificates expired
/// in 2025, and WSS4J refuses expired signers).
pub fn keytool_jks(out: &Path, password: &str, aliases: &[&str]) {
    let _ = std::fs::remove_file(out);
    for alias in aliases {
        let done = std::process::Command::new("keytool")
            .args([
                "-genkeypair",
                "-noprompt",
                "-keyalg",
                "RSA",
                "-keysize",
                "2048",
            ])
            .args(["-validity", "30", "-storetype", "JKS", "-alias", alias])
            .args(["-dname", &format!("CN={alias}, O=Sluice tests")])
            .args(["-storepass", password, "-keypass", password, "-keystore"])
            .arg(out)
            .output()
            .expect("keytool (a JDK; .ci/run installs one)");
        assert!(done.status.success(), "keytool -genkeypair: {done:?}");
    }
}
