//! The WS-Security scenario's requests (WSO2's SecureProxy): WSO2's own pre-made secured requests
//! (`SecureProxy`: the same bytes every time, as WSO2's runs sent them), or requests secured here
//! with a fresh key each (`SecureProxyFresh`: what real clients send; nothing a server could cache
//! for identical requests helps). Both are signed with and encrypted to `wso2carbon`, the key the
//! policy names, which Sluice gets as `[keystore.primary]`.

use std::path::Path;

/// The scenarios of this module, and the proxy both are served by.
pub const SCENARIOS: [&str; 2] = ["SecureProxy", "SecureProxyFresh"];

/// How many fresh requests a cell sends in turn.
pub const FRESH: usize = 256;

/// Whether `scenario` is one of the secured ones.
pub fn is_secure(scenario: &str) -> bool {
    SCENARIOS.contains(&scenario)
}

/// The settings file (MI's `deployment.toml`) that gives Sluice WSO2's key store, written in `dir`.
pub fn settings(reference: &Path, dir: &Path) -> std::io::Result<std::path::PathBuf> {
    let toml = dir.join("secure-deployment.toml");
    std::fs::write(
        &toml,
        format!(
            "[keystore.primary]\nfile_name = \"{}\"\npassword = \"wso2carbon\"\nalias = \"wso2carbon\"\n",
            reference.join("keystores/wso2carbon.jks").display()
        ),
    )?;
    Ok(toml)
}

/// WSO2's request file of the secured scenarios for `size` (500, 1024, 10240 bytes of payload).
fn file(size: usize, secured: bool) -> String {
    let size = match size {
        0..=700 => "500B",
        701..=4096 => "1024B",
        _ => "10240B",
    };
    let tail = if secured { "_secure" } else { "" };
    format!("performance-ei/requests/2019-04_to_2020-08/{size}_buyStocks{tail}.xml")
}

/// The bodies a cell of `scenario` sends (the first, then the others in turn).
pub fn bodies(scenario: &str, size: usize, reference: &Path) -> Result<Vec<Vec<u8>>, String> {
    let read = |rel: String| std::fs::read(reference.join(&rel)).map_err(|e| format!("{rel}: {e}"));
    if scenario == "SecureProxy" {
        return Ok(vec![read(file(size, true))?]);
    }
    let plain = read(file(size, false))?;
    let jks = read("keystores/wso2carbon.jks".into())?;
    let store = sluice_security::keystore::KeyStore::read_jks(&jks, "wso2carbon")
        .map_err(|e| e.to_string())?;
    let entry = store.key("wso2carbon").ok_or("no wso2carbon key")?;
    let pkcs8 = entry.key("wso2carbon").map_err(|e| e.to_string())?;
    let private = sluice_xml::SecurityKey::private_pkcs8(&pkcs8).map_err(|e| e.to_string())?;
    let keys = sluice_security::inbound::Keys::new(private, entry.chain[0].clone(), Vec::new())
        .map_err(|e| e.to_string())?;
    let policy_text =
        read("performance-ei/capp/security_policy_1.0.0/security_policy-1.0.0.xml".into())?;
    let mut policy = sluice_security::policy::parse(&String::from_utf8_lossy(&policy_text))
        .map_err(|e| format!("{e:?}"))?;
    // A request confirms no signature; it is encrypted to the service (wso2carbon again).
    policy.signature_confirmation = false;
    let to_service = sluice_security::inbound::Checked {
        signer: keys.certificate.clone(),
        signature_values: Vec::new(),
    };
    let mut out = Vec::with_capacity(FRESH);
    for _ in 0..FRESH {
        let mut doc = sluice_xml::Document::parse(&plain).map_err(|e| e.to_string())?;
        let now = chrono::Utc::now();
        sluice_security::outbound::secure(&mut doc, &policy, &keys, &to_service, now)
            .map_err(|e| e.to_string())?;
        out.push(doc.to_bytes().map_err(|e| e.to_string())?);
    }
    Ok(out)
}
