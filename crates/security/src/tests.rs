//! xmlsec1 through `sluice-xml` on WSO2's own secured requests.

use crate::keystore::KeyStore;
use sluice_xml::{Document, SecurityKey};
use std::path::{Path, PathBuf};

fn reference() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/reference/wso2-perf")
}

/// wso2carbon's private key and certificate (DER).
fn wso2carbon() -> (Vec<u8>, Vec<u8>) {
    let jks = std::fs::read(reference().join("keystores/wso2carbon.jks")).unwrap();
    let store = KeyStore::read_jks(&jks, "wso2carbon").unwrap();
    let entry = store.key("wso2carbon").unwrap();
    (entry.key("wso2carbon").unwrap(), entry.chain[0].clone())
}

fn first<'a>(node: sluice_xml::Node<'a>, local: &str) -> Option<sluice_xml::Node<'a>> {
    if node.is_element() && node.name() == local {
        return Some(node);
    }
    node.children().find_map(|c| first(c, local))
}

/// WSO2's 1 KiB secured request: its EncryptedKey opens with wso2carbon's key, the Body then
/// decrypts to the plain buyStocks payload, and the signature over the Body holds for
/// wso2carbon's certificate; a changed byte in the Body makes it fail.
#[test]
fn wso2_secured_request_decrypts_and_verifies() {
    let (key, cert) = wso2carbon();
    let private = SecurityKey::private_pkcs8(&key).unwrap();
    let public = SecurityKey::certificate(&cert).unwrap();
    let path =
        reference().join("performance-ei/requests/2019-04_to_2020-08/1024B_buyStocks_secure.xml");
    let text = std::fs::read(path).unwrap();
    let mut doc = Document::parse(&text).unwrap();
    doc.register_ids("Id").unwrap();
    let root = doc.root_element().unwrap();
    // A public key cannot open it: refused, with xmlsec's reason.
    let wrong = doc
        .decrypt_key(first(root, "EncryptedKey").unwrap(), &public)
        .unwrap_err();
    assert!(
        wrong.to_string().len() > "the encrypted key could not be decrypted: ".len(),
        "{wrong}"
    );
    let carried = doc
        .decrypt_key(first(root, "EncryptedKey").unwrap(), &private)
        .unwrap();
    assert!([16, 32].contains(&carried.len()), "{}", carried.len());
    let session = SecurityKey::aes(&carried).unwrap();
    let data = first(doc.root_element().unwrap(), "EncryptedData")
        .unwrap()
        .id();
    doc.decrypt(data, &session).unwrap();
    let body = doc.soap_body().unwrap();
    let payload = body.first_child_element().unwrap();
    assert_eq!(payload.name(), "buyStocks");
    let signature = first(doc.root_element().unwrap(), "Signature").unwrap();
    assert!(doc.verify_signature(signature, &public).unwrap());

    // The same with one byte of the decrypted Body changed.
    let plain = doc.to_bytes().unwrap();
    let at = plain.windows(7).position(|w| w == b"<symbol").unwrap();
    let mut changed = plain.clone();
    let v = changed[at + 8..]
        .iter()
        .position(|b| b.is_ascii_alphanumeric())
        .unwrap()
        + at
        + 8;
    changed[v] ^= 1;
    let mut doc = Document::parse(&changed).unwrap();
    doc.register_ids("Id").unwrap();
    let signature = first(doc.root_element().unwrap(), "Signature").unwrap();
    assert!(!doc.verify_signature(signature, &public).unwrap());
}
