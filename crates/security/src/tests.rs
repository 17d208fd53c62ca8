//! xmlsec1 through `sluice-xml` on WSO2's own secured requests.

use crate::fault::FaultCode;
use crate::inbound::{check, Keys};
use crate::keystore::KeyStore;
use crate::policy::{self, Policy};
use chrono::{DateTime, Utc};
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

fn secure_request(size: &str) -> String {
    let path = reference().join(format!(
        "performance-ei/requests/2019-04_to_2020-08/{size}_buyStocks_secure.xml"
    ));
    std::fs::read_to_string(path).unwrap()
}

/// WSO2's plain 1 KiB buyStocks request.
fn plain_request() -> String {
    std::fs::read_to_string(
        reference().join("performance-ei/requests/2019-04_to_2020-08/1024B_buyStocks.xml"),
    )
    .unwrap()
}

fn wso2_policy() -> Policy {
    let path =
        reference().join("performance-ei/capp/security_policy_1.0.0/security_policy-1.0.0.xml");
    policy::parse(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn wso2_keys() -> Keys {
    let (key, cert) = wso2carbon();
    Keys::new(SecurityKey::private_pkcs8(&key).unwrap(), cert, Vec::new()).unwrap()
}

fn at(time: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(time)
        .unwrap()
        .with_timezone(&Utc)
}

/// `check` on `text` at 2026-11-28 with WSO2's policy and key.
fn checked(
    text: &str,
    keys: &Keys,
) -> Result<(Document, crate::inbound::Checked), crate::fault::Fault> {
    let mut doc = Document::parse(text.as_bytes()).unwrap();
    let c = check(&mut doc, &wso2_policy(), keys, at("2026-11-28T12:00:00Z"))?;
    Ok((doc, c))
}

fn refused(text: &str, keys: &Keys) -> (FaultCode, String) {
    match checked(text, keys) {
        Ok(_) => panic!("accepted"),
        Err(f) => (f.code, f.reason),
    }
}

/// WSO2's three secured requests pass SecureProxy's policy: the Body is the plain buyStocks
/// payload after the checks, the signer is wso2carbon, the signature value is kept.
#[test]
fn wso2_secured_requests_pass_the_policy() {
    let keys = wso2_keys();
    for size in ["500B", "1024B", "10240B"] {
        let (doc, c) = checked(&secure_request(size), &keys).unwrap();
        let payload = doc.soap_body().unwrap().first_child_element().unwrap();
        assert_eq!(payload.name(), "buyStocks", "{size}");
        assert_eq!(c.signer, keys.certificate);
        assert_eq!(c.signature_values.len(), 1);
        assert!(
            c.signature_values[0].len() > 300,
            "{:?}",
            c.signature_values
        );
    }
}

/// Each way a request can be wrong gets its fault.
#[test]
fn tampered_requests_get_their_faults() {
    let keys = wso2_keys();
    let good = secure_request("1024B");
    // A changed byte of the encrypted Body.
    let at = good.find("<xenc:CipherValue>").unwrap();
    let body_cipher = good[at..]
        .find("</xenc:EncryptedKey>")
        .map(|k| at + k)
        .unwrap();
    let data = good[body_cipher..].find("<xenc:CipherValue>").unwrap() + body_cipher + 40;
    let mut flipped = good.clone().into_bytes();
    flipped[data] = if flipped[data] == b'A' { b'B' } else { b'A' };
    let flipped = String::from_utf8(flipped).unwrap();
    assert_eq!(refused(&flipped, &keys).0, FaultCode::FailedCheck);
    // A changed signature value.
    let sv = good.find("<ds:SignatureValue>").unwrap() + 30;
    let mut changed = good.clone().into_bytes();
    changed[sv] = if changed[sv] == b'A' { b'B' } else { b'A' };
    let changed = String::from_utf8(changed).unwrap();
    assert_eq!(
        refused(&changed, &keys),
        (
            FaultCode::FailedCheck,
            "the signature does not verify".into()
        )
    );
    // Expired: the Timestamp expires in 2030.
    let mut doc = Document::parse(good.as_bytes()).unwrap();
    let late = check(
        &mut doc,
        &wso2_policy(),
        &keys,
        at_time("2031-01-01T00:00:00Z"),
    );
    assert_eq!(late.unwrap_err().code, FaultCode::MessageExpired);
    // No Timestamp, and no header at all.
    let ts = good.find("<wsu:Timestamp").unwrap();
    let ts_end = good.find("</wsu:Timestamp>").unwrap() + "</wsu:Timestamp>".len();
    let untimed = format!("{}{}", &good[..ts], &good[ts_end..]);
    assert_eq!(refused(&untimed, &keys).0, FaultCode::InvalidSecurity);
    let plain = std::fs::read_to_string(
        reference().join("performance-ei/requests/2019-04_to_2020-08/1024B_buyStocks.xml"),
    )
    .unwrap();
    assert_eq!(refused(&plain, &keys).0, FaultCode::InvalidSecurity);
    // A signer nobody trusts: our own certificate is another one, the trust list empty.
    let store = KeyStore::read_jks(
        &std::fs::read(reference().join("keystores/wso2carbon.jks")).unwrap(),
        "wso2carbon",
    )
    .unwrap();
    let (key, cert) = wso2carbon();
    let private = || SecurityKey::private_pkcs8(&key).unwrap();
    let stranger = Keys::new(private(), store.trusted[0].cert.clone(), Vec::new()).unwrap();
    assert_eq!(refused(&good, &stranger).0, FaultCode::FailedAuthentication);
    // The same with the signer trusted: accepted.
    let trusting = Keys::new(private(), store.trusted[0].cert.clone(), vec![cert]).unwrap();
    assert!(checked(&good, &trusting).is_ok());
}

fn at_time(t: &str) -> DateTime<Utc> {
    at(t)
}

/// The signed Body moved into the header and a Body of the attacker's in its place: the
/// signature still verifies, over the moved one, and the Body the message goes on with is
/// refused as unsigned. The same Id on both is refused outright.
#[test]
fn a_wrapped_body_is_refused() {
    let keys = wso2_keys();
    let good = secure_request("1024B");
    let body = good.find("<soapenv:Body").unwrap();
    let body_end = good.find("</soapenv:Body>").unwrap() + "</soapenv:Body>".len();
    let signed = &good[body..body_end];
    let wrapper = format!("<w:Wrapper xmlns:w=\"urn:w\">{signed}</w:Wrapper>");
    let evil = "<soapenv:Body><m:sell xmlns:m=\"urn:evil\"/></soapenv:Body>";
    let moved = format!(
        "{}{}{}{}",
        &good[..good.find("<routing").unwrap()],
        wrapper,
        &good[good.find("<routing").unwrap()..body],
        evil
    ) + &good[body_end..];
    assert_eq!(
        refused(&moved, &keys),
        (FaultCode::FailedCheck, "the Body is not signed".into())
    );
    let id = "wsu:Id=\"id-1EF37DE1A7444E7F7F153959926244361\"";
    assert!(good.contains(id));
    let twice = moved.replace(
        "<soapenv:Body><m:sell",
        &format!(
            "<soapenv:Body {id} xmlns:wsu=\"{}\"><m:sell",
            crate::inbound::WSU
        ),
    );
    let (code, reason) = refused(&twice, &keys);
    assert_eq!(code, FaultCode::InvalidSecurity, "{reason}");
    assert!(reason.contains("two elements"), "{reason}");
}

/// A response secured for the request WSO2's 1 KiB secured request: it passes the same checks
/// on the requester's side (wso2carbon is both ends here), its Body comes back, and its
/// SignatureConfirmation carries the request's signature value.
#[test]
fn a_secured_response_reads_back() {
    let keys = wso2_keys();
    let (_, request) = checked(&secure_request("1024B"), &keys).unwrap();
    let plain = plain_request();
    let mut doc = Document::parse(plain.as_bytes()).unwrap();
    let now = at("2026-11-28T12:00:00Z");
    crate::outbound::secure(&mut doc, &wso2_policy(), &keys, &request, now).unwrap();
    let wire = String::from_utf8(doc.to_bytes().unwrap()).unwrap();
    assert!(!wire.contains("<order>"), "the Body is encrypted: {wire}");
    assert!(wire.contains("SignatureConfirmation"), "{wire}");
    assert!(wire.contains(&request.signature_values[0]), "{wire}");
    let mut back = Document::parse(wire.as_bytes()).unwrap();
    let c = check(&mut back, &wso2_policy(), &keys, now).unwrap();
    assert_eq!(c.signer, keys.certificate);
    let payload = back.soap_body().unwrap().first_child_element().unwrap();
    assert_eq!(payload.name(), "buyStocks");
    // A second response gets other IDs and another key: not the same bytes.
    let mut again = Document::parse(plain.as_bytes()).unwrap();
    crate::outbound::secure(&mut again, &wso2_policy(), &keys, &request, now).unwrap();
    assert_ne!(again.to_bytes().unwrap(), wire.as_bytes());
}

/// A policy that signs only (no `sp:EncryptedParts`: MI's "Non-repudiation" scenario): the
/// answer is signed with a Timestamp and its Body stays in the clear; it reads back.
#[test]
fn a_sign_only_policy_signs_the_answer_and_leaves_it_in_the_clear() {
    let keys = wso2_keys();
    let text = std::fs::read_to_string(
        reference().join("performance-ei/capp/security_policy_1.0.0/security_policy-1.0.0.xml"),
    )
    .unwrap();
    let start = text.find("<sp:EncryptedParts").unwrap();
    let end = text.find("</sp:EncryptedParts>").unwrap() + "</sp:EncryptedParts>".len();
    let sign_only = policy::parse(&format!("{}{}", &text[..start], &text[end..])).unwrap();
    assert!(sign_only.signed_body && !sign_only.encrypted_body);
    let (_, request) = checked(&secure_request("1024B"), &keys).unwrap();
    let plain = plain_request();
    let mut doc = Document::parse(plain.as_bytes()).unwrap();
    let now = at("2026-11-28T12:00:00Z");
    crate::outbound::secure(&mut doc, &sign_only, &keys, &request, now).unwrap();
    let wire = String::from_utf8(doc.to_bytes().unwrap()).unwrap();
    assert!(
        wire.contains("<order>") && !wire.contains("EncryptedKey"),
        "{wire}"
    );
    assert!(
        wire.contains("ds:Signature") && wire.contains("wsu:Timestamp"),
        "{wire}"
    );
    let mut back = Document::parse(wire.as_bytes()).unwrap();
    let c = check(&mut back, &sign_only, &keys, now).unwrap();
    assert_eq!(c.signer, keys.certificate);
    // The encrypting policy refuses it: its Body is not encrypted.
    let mut back = Document::parse(wire.as_bytes()).unwrap();
    let refused = check(&mut back, &wso2_policy(), &keys, now).unwrap_err();
    assert_eq!(refused.code, FaultCode::FailedCheck);
}

/// A signer whose certificate is not trusted itself but issued by a trusted CA (sent whole as a
/// BinarySecurityToken) is accepted, as WSS4J's Merlin builds a path to its trust store; without
/// the CA among the trusted, refused.
#[test]
fn a_signer_issued_by_a_trusted_ca_is_accepted() {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair, PKCS_RSA_SHA256};
    let (service_key, service_cert) = wso2carbon();
    // A CA and a client it issues, RSA as WS-Security's RSA-SHA1 signatures need.
    let rsa = |pkcs8: &[u8]| {
        KeyPair::from_pkcs8_der_and_sign_algo(&pkcs8.into(), &PKCS_RSA_SHA256).unwrap()
    };
    let ca_key = rsa(&service_key);
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let client_pkcs8 = {
        let jks =
            std::fs::read(reference().join("apache-synapse/resources/security/store.jks")).unwrap();
        let store = crate::keystore::KeyStore::read(&jks, "password").unwrap();
        store.key("alice").unwrap().key("password").unwrap()
    };
    let client_key = rsa(&client_pkcs8);
    let client = CertificateParams::new(vec!["client".to_owned()])
        .unwrap()
        .signed_by(&client_key, &ca, &ca_key)
        .unwrap();
    let client_keys = Keys::new(
        SecurityKey::private_pkcs8(&client_pkcs8).unwrap(),
        client.der().to_vec(),
        vec![service_cert.clone()],
    )
    .unwrap();
    // The client secures its request as Rampart's initiator: its certificate sent whole, as a
    // BinarySecurityToken the signature's KeyInfo refers to.
    let plain = plain_request();
    let mut doc = Document::parse(plain.as_bytes()).unwrap();
    let now = Utc::now();
    crate::outbound::secure_request(&mut doc, &wso2_policy(), &client_keys, &service_cert, now)
        .unwrap();
    let wire = String::from_utf8(doc.to_bytes().unwrap()).unwrap();
    assert!(wire.contains("<wsse:BinarySecurityToken"), "{wire}");
    let service = |trusted: Vec<Vec<u8>>| {
        Keys::new(
            SecurityKey::private_pkcs8(&service_key).unwrap(),
            service_cert.clone(),
            trusted,
        )
        .unwrap()
    };
    let with_ca = service(vec![ca.der().to_vec()]);
    let mut back = Document::parse(wire.as_bytes()).unwrap();
    let c = check(&mut back, &wso2_policy(), &with_ca, now).unwrap();
    assert_eq!(c.signer, client.der().to_vec());
    let payload = back.soap_body().unwrap().first_child_element().unwrap();
    assert_eq!(payload.name(), "buyStocks");
    let without = service(Vec::new());
    let mut back = Document::parse(wire.as_bytes()).unwrap();
    let refused = check(&mut back, &wso2_policy(), &without, now).unwrap_err();
    assert_eq!(
        refused.code,
        FaultCode::FailedAuthentication,
        "{}",
        refused.reason
    );
}

/// Synapse's sample keys (alice and bob, `store.jks`): alice secures a request to bob as Rampart's
/// initiator does (policy_3: bob's certificate named by its subject key identifier, alice's sent
/// as a BinarySecurityToken, Rampart's header order, no SignatureConfirmation); bob's side reads
/// it back. A signature naming its signer by subject key identifier (Rampart's recipient) is
/// checked too.
#[test]
fn an_initiators_request_reads_back_at_its_recipient() {
    let jks =
        std::fs::read(reference().join("apache-synapse/resources/security/store.jks")).unwrap();
    let store = KeyStore::read(&jks, "password").unwrap();
    let key = |alias: &str| {
        let e = store.key(alias).unwrap();
        (
            SecurityKey::private_pkcs8(&e.key("password").unwrap()).unwrap(),
            e.chain[0].clone(),
        )
    };
    let ((alice_key, alice), (bob_key, bob)) = (key("alice"), key("bob"));
    let alice_keys = Keys::new(alice_key, alice.clone(), vec![bob.clone()]).unwrap();
    let bob_keys = Keys::new(bob_key, bob.clone(), vec![alice.clone()]).unwrap();
    let policy3 =
        std::fs::read_to_string(reference().join("apache-synapse/resources/policy/policy_3.xml"))
            .unwrap();
    let policy3 = policy::parse(&policy3).unwrap();
    let now = Utc::now();
    let mut doc = Document::parse(plain_request().as_bytes()).unwrap();
    crate::outbound::secure_request(&mut doc, &policy3, &alice_keys, &bob, now).unwrap();
    let wire = String::from_utf8(doc.to_bytes().unwrap()).unwrap();
    let at = |what: &str| {
        wire.find(what)
            .unwrap_or_else(|| panic!("no {what}: {wire}"))
    };
    assert!(
        at("<wsu:Timestamp") < at("<xenc:EncryptedKey")
            && at("<xenc:EncryptedKey") < at("<wsse:BinarySecurityToken")
            && at("<wsse:BinarySecurityToken") < at("<ds:Signature"),
        "{wire}"
    );
    assert!(wire.contains(crate::inbound::SKI), "{wire}");
    // The header must be understood, in the envelope's namespace (as WSS4J writes it).
    let security = &wire[at("<wsse:Security")..];
    let start = &security[..security.find('>').unwrap()];
    assert!(start.contains(":mustUnderstand=\"1\""), "{start}");
    assert!(
        !wire.contains("SignatureConfirmation") && !wire.contains("<order>"),
        "{wire}"
    );
    let mut back = Document::parse(wire.as_bytes()).unwrap();
    let c = check(&mut back, &policy3, &bob_keys, now).unwrap();
    assert_eq!(c.signer, alice);
    let payload = back.soap_body().unwrap().first_child_element().unwrap();
    assert_eq!(payload.name(), "buyStocks");

    // Bob answers; his signature's KeyInfo rewritten to name him by subject key identifier (the
    // KeyInfo is outside what is signed): alice finds him among her trusted certificates.
    let mut answer = Document::parse(plain_request().as_bytes()).unwrap();
    let request = crate::inbound::Checked {
        signer: alice.clone(),
        signature_values: Vec::new(),
    };
    crate::outbound::secure(&mut answer, &policy3, &bob_keys, &request, now).unwrap();
    let wire = String::from_utf8(answer.to_bytes().unwrap()).unwrap();
    let b64 = |b: &[u8]| {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.encode(b)
    };
    let thumb = format!(
        "ValueType=\"{}\">{}<",
        crate::inbound::THUMBPRINT,
        b64(&crate::inbound::thumbprint(&bob))
    );
    assert!(wire.contains(&thumb), "{wire}");
    let by_ski = format!(
        "ValueType=\"{}\">{}<",
        crate::inbound::SKI,
        b64(&crate::inbound::ski(&bob))
    );
    let wire = wire.replace(&thumb, &by_ski);
    let mut back = Document::parse(wire.as_bytes()).unwrap();
    let c = check(&mut back, &policy3, &alice_keys, now).unwrap();
    assert_eq!(c.signer, bob);
}

/// WSO2's secured requests and one of Sluice's secured answers, mutated thousands of ways (bytes
/// changed, ranges cut out, doubled or moved: duplicated IDs, headers and keys, cut-off
/// ciphertexts): every one that parses gets the plain envelope or a fault, never a panic, and the
/// test ends (no mutation makes the checks loop).
#[test]
fn mutated_secured_messages_never_panic() {
    let keys = wso2_keys();
    let policy = wso2_policy();
    let now = at("2026-11-28T12:00:00Z");
    let (_, request) = checked(&secure_request("500B"), &keys).unwrap();
    let mut answer = Document::parse(secure_request("500B").as_bytes()).unwrap();
    check(&mut answer, &policy, &keys, now).unwrap();
    crate::outbound::secure(&mut answer, &policy, &keys, &request, now).unwrap();
    let seeds = [
        secure_request("500B").into_bytes(),
        secure_request("1024B").into_bytes(),
        answer.to_bytes().unwrap(),
    ];
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = |n: usize| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % n.max(1) as u64) as usize
    };
    let (mut parsed, mut passed) = (0, 0);
    for round in 0..1500 {
        let mut m = seeds[round % seeds.len()].clone();
        for _ in 0..1 + next(3) {
            let len = m.len();
            let (a, b) = (next(len), next(len));
            let (from, to) = (a.min(b), a.max(b).min(a.min(b) + 400));
            // A whole element of the header or Body, for doubling, moving and removing.
            let names: [&[u8]; 6] = [
                b"xenc:EncryptedKey",
                b"ds:Signature",
                b"wsu:Timestamp",
                b"xenc:EncryptedData",
                b"ds:Reference",
                b"wsse11:SignatureConfirmation",
            ];
            let name = names[next(names.len())];
            let element = find(&m, name);
            match (next(5), element) {
                (0 | 1, _) => {
                    // A letter or digit changed: still XML, the bytes under the crypto differ.
                    let at = (a..len).chain(0..a).find(|&i| m[i].is_ascii_alphanumeric());
                    if let Some(i) = at {
                        m[i] = if m[i] == b'A' { b'B' } else { b'A' };
                    }
                }
                (2, Some((s, e))) => {
                    // The element doubled right after itself (IDs on two elements, two keys).
                    let piece = m[s..e].to_vec();
                    m.splice(e..e, piece);
                }
                (3, Some((s, e))) => {
                    m.drain(s..e);
                }
                _ => match next(3) {
                    0 => m[a] = b"<>/=\"'&#x0aZ"[next(12)],
                    1 => {
                        m.drain(from..to);
                    }
                    _ => {
                        let piece = m[from..to].to_vec();
                        let at = next(m.len());
                        m.splice(at..at, piece);
                    }
                },
            }
        }
        let Ok(mut doc) = sluice_xml::parse_untrusted(&m, &Default::default()) else {
            continue;
        };
        parsed += 1;
        if check(&mut doc, &policy, &keys, now).is_ok() {
            passed += 1;
            assert!(doc.soap_body().is_some());
        }
    }
    // Enough of them parse to reach the checks; a few changes leave a message that still passes
    // (a change in text nothing signs, such as the Timestamp's).
    assert!(parsed > 700, "{parsed} parsed");
    assert!(passed < parsed, "{passed} of {parsed} passed");
}

/// The first element named `name` (qualified, as written) in `m`: its start and just after its end.
fn find(m: &[u8], name: &[u8]) -> Option<(usize, usize)> {
    let open = [b"<", name].concat();
    let close = [b"</", name, b">"].concat();
    let s = m.windows(open.len()).position(|w| w == open.as_slice())?;
    let e = m[s..]
        .windows(close.len())
        .position(|w| w == close.as_slice())?
        + s
        + close.len();
    Some((s, e))
}
