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
