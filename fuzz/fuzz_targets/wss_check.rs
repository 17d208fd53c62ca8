//! A secured SOAP request as a secured proxy reads it: any bytes that parse go through the
//! WS-Security checks (`sluice_security::inbound::check`) with WSO2's policy and key, and get the
//! plain envelope or a fault, never a panic. Seed the corpus with
//! `conformance/ws-security/requests/*_secure.xml`: most mutations then reach the decryption and
//! the signature.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

struct Setup {
    policy: sluice_security::policy::Policy,
    keys: sluice_security::inbound::Keys,
}

fn setup() -> &'static Setup {
    static S: OnceLock<Setup> = OnceLock::new();
    S.get_or_init(|| {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let suite = root.join("conformance/ws-security");
        let jks = std::fs::read(suite.join("wso2carbon.jks")).unwrap();
        let store = sluice_security::keystore::KeyStore::read_jks(&jks, "wso2carbon").unwrap();
        let entry = store.key("wso2carbon").unwrap();
        let keys = sluice_security::inbound::Keys::new(sluice_xml::SecurityKey::private_pkcs8(&entry.key("wso2carbon").unwrap())
                .unwrap(), entry.chain[0].clone(), Vec::new()).unwrap();
        let text = std::fs::read_to_string(suite.join("synapse/synapse.xml")).unwrap();
        let at = text.find("<wsp:Policy").unwrap();
        let end = text.find("</wsp:Policy>").unwrap() + "</wsp:Policy>".len();
        let policy = format!(
            "<r xmlns:wsu=\"http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-utility-1.0.xsd\">{}</r>",
            &text[at..end]
        );
        Setup {
            policy: sluice_security::policy::parse(&policy).unwrap(),
            keys,
        }
    })
}

fuzz_target!(|data: &[u8]| {
    let s = setup();
    let Ok(mut doc) = sluice_xml::parse_untrusted(data, &Default::default()) else {
        return;
    };
    let now = chrono::DateTime::parse_from_rfc3339("2026-11-28T12:00:00Z")
        .unwrap()
        .with_timezone(&chrono::Utc);
    if sluice_security::inbound::check(&mut doc, &s.policy, &s.keys, now).is_ok() {
        // Whatever passes has a Body to go on with.
        assert!(doc.soap_body().is_some());
    }
});
