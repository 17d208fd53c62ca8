//! The secured response, as the policy demands of the recipient's side of an asymmetric binding:
//! signed with our key, the Body's content encrypted to the requester (`useReqSigCert`: the
//! certificate that signed the request), a Timestamp, and a SignatureConfirmation of each request
//! signature where the policy asks for them.
//!
//! The header it adds, in the order a receiver processes it (WSS4J's, and [`crate::inbound`]'s):
//!
//! | Element | Holds |
//! |---|---|
//! | `wsu:Timestamp` | now, and now plus Rampart's TTL |
//! | `wsse11:SignatureConfirmation` | each request signature's value |
//! | `xenc:EncryptedKey` | a fresh AES key for the suite, encrypted to the requester's certificate (referenced by its thumbprint) |
//! | `ds:Signature` | over the Body, the Timestamp and the confirmations (exclusive C14N, the suite's digest), our certificate referenced by its thumbprint |
//!
//! The Body is signed first, then its content encrypted (the policy's sign-before-encrypt order).
//! A policy without `sp:EncryptedParts` (sign only, MI's "Non-repudiation" scenario) gets no
//! `EncryptedKey`, and the Body stays in the clear.

use crate::inbound::{thumbprint, Checked, Keys, DS, WSSE, WSSE11, WSU, X509V3, XENC};
use crate::policy::{Policy, SHA256};
use base64::Engine;
use chrono::{DateTime, SecondsFormat, Utc};
use ring::rand::{SecureRandom, SystemRandom};
use sluice_xml::{Document, Fragment, Placement, SecurityKey, XmlError};

const EXC_C14N: &str = "http://www.w3.org/2001/10/xml-exc-c14n#";
const RSA_SHA1: &str = "http://www.w3.org/2000/09/xmldsig#rsa-sha1";
const RSA_SHA256: &str = "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256";
const CONTENT: &str = "http://www.w3.org/2001/04/xmlenc#Content";
const SOAP12: &str = "http://www.w3.org/2003/05/soap-envelope";
const BASE64: &str =
    "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-soap-message-security-1.0#Base64Binary";

/// Why a response could not be secured (Sluice's side: the client gets a 500 fault).
#[derive(Debug)]
pub enum SecureError {
    /// The response is not a SOAP envelope with a Body.
    NotSoap,
    /// The system gave no random bytes.
    Random,
    /// xmlsec1 or libxml2 failed.
    Xml(XmlError),
}

impl From<XmlError> for SecureError {
    fn from(e: XmlError) -> Self {
        SecureError::Xml(e)
    }
}

impl std::fmt::Display for SecureError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SecureError::NotSoap => write!(f, "the response is not a SOAP envelope with a Body"),
            SecureError::Random => write!(f, "the system gave no random bytes"),
            SecureError::Xml(e) => write!(f, "the response could not be secured: {e}"),
        }
    }
}

/// Secures `doc`, the response to a request whose checks gave `request`, at `now`.
pub fn secure(
    doc: &mut Document,
    policy: &Policy,
    keys: &Keys,
    request: &Checked,
    now: DateTime<Utc>,
) -> Result<(), SecureError> {
    let side = Side::Recipient {
        requester: &request.signer,
        confirm: &request.signature_values,
    };
    protect(doc, policy, keys, side, now)
}

/// Secures `doc`, a request to a back-end, as Rampart's initiator does: signed with our key (our
/// certificate sent as a BinarySecurityToken), the Body's content encrypted to `to` (the policy's
/// `encryptionUser`, referenced by its subject key identifier), a Timestamp, no
/// SignatureConfirmation. Header order as Rampart's: Timestamp, EncryptedKey, token, Signature.
pub fn secure_request(
    doc: &mut Document,
    policy: &Policy,
    keys: &Keys,
    to: &[u8],
    now: DateTime<Utc>,
) -> Result<(), SecureError> {
    protect(doc, policy, keys, Side::Initiator { to }, now)
}

/// Which side of the asymmetric binding a message is secured by.
#[derive(Clone, Copy)]
enum Side<'a> {
    /// Answering a request: encrypted to its signer (or the policy's encryptionUser), each of its
    /// signature values confirmed where the policy asks.
    Recipient {
        requester: &'a [u8],
        confirm: &'a [String],
    },
    /// Sending a request to `to`.
    Initiator { to: &'a [u8] },
}

impl Side<'_> {
    fn encrypt_to(&self) -> &[u8] {
        match self {
            Side::Recipient { requester, .. } => requester,
            Side::Initiator { to } => to,
        }
    }
}

fn protect(
    doc: &mut Document,
    policy: &Policy,
    keys: &Keys,
    side: Side<'_>,
    now: DateTime<Utc>,
) -> Result<(), SecureError> {
    let rng = SystemRandom::new();
    let id = |kind: &str| -> Result<String, SecureError> {
        let mut b = [0u8; 12];
        rng.fill(&mut b).map_err(|_| SecureError::Random)?;
        Ok(format!("{kind}-{}", hex(&b)))
    };
    let confirmations = match side {
        Side::Recipient { confirm, .. } if policy.signature_confirmation => confirm.len().max(1),
        _ => 0,
    };
    let ids = Ids {
        body: id("id")?,
        timestamp: id("TS")?,
        key: id("EK")?,
        data: id("ED")?,
        signature: id("SIG")?,
        token: id("X509")?,
        confirmations: (0..confirmations)
            .map(|_| id("SC"))
            .collect::<Result<_, _>>()?,
    };
    let mut session = vec![0u8; key_length(policy.suite.encryption)];
    rng.fill(&mut session).map_err(|_| SecureError::Random)?;

    // A security header the message came with is not ours to pass on.
    crate::inbound::remove_headers(doc)?;
    let header = doc.ensure_soap_header()?.ok_or(SecureError::NotSoap)?;
    let body = doc
        .soap_body()
        .map(|b| b.id())
        .ok_or(SecureError::NotSoap)?;
    doc.set_attribute_ns(body, (WSU, "wsu"), "Id", &ids.body)?;
    // `mustUnderstand` in the envelope's own namespace, as WSS4J and Rampart write the header.
    let must = match doc.root_element().and_then(|r| r.namespace_uri()) {
        Some(SOAP12) => format!(" xmlns:soapenv=\"{SOAP12}\" soapenv:mustUnderstand=\"true\""),
        Some(ns) => format!(" xmlns:soapenv=\"{ns}\" soapenv:mustUnderstand=\"1\""),
        None => String::new(),
    };
    let header_xml = security_header(policy, keys, side, now, (&ids, &must));
    doc.insert(header, &Fragment::parse(&header_xml)?, Placement::LastChild)?;
    doc.register_ids("Id")?;

    // The templates just inserted: always there.
    let by_id = |doc: &Document, id: &str| {
        doc.element_by_id(id)
            .map(|n| n.id())
            .ok_or(SecureError::NotSoap)
    };
    let signature = by_id(doc, &ids.signature)?;
    doc.sign(signature, &keys.private)?;
    // A policy that signs only (MI's "Non-repudiation" scenario) leaves the Body in the clear.
    if !policy.encrypted_body {
        return Ok(());
    }
    // The Body's content into the template, then the key it was encrypted with to the other side.
    let template = Fragment::parse(&format!(
        "<xenc:EncryptedData xmlns:xenc=\"{XENC}\" Id=\"{}\" Type=\"{CONTENT}\">\
         <xenc:EncryptionMethod Algorithm=\"{}\"/><xenc:CipherData><xenc:CipherValue/>\
         </xenc:CipherData></xenc:EncryptedData>",
        ids.data, policy.suite.encryption
    ))?;
    let key_node = by_id(doc, &ids.key)?;
    // After the EncryptedKey (the recipient's layout) or at the end of the header (Rampart's
    // initiator, whose token and Signature follow the key): the data goes in the Body either way.
    doc.insert(key_node, &template, Placement::After)?;
    let data = doc
        .node(key_node)
        .and_then(|k| k.next_sibling())
        .map(|n| n.id())
        .ok_or(SecureError::NotSoap)?;
    doc.encrypt(data, body, &SecurityKey::aes(&session)?)?;
    // The other side's key, loaded when the keys were where it is trusted.
    let to = side.encrypt_to();
    match keys.trusted(to) {
        Some(t) => doc.encrypt_key(key_node, &session, &t.key)?,
        None => doc.encrypt_key(key_node, &session, &SecurityKey::certificate(to)?)?,
    }
    Ok(())
}

/// The `wsu:Id`s of what the response's header names.
struct Ids {
    body: String,
    timestamp: String,
    key: String,
    data: String,
    signature: String,
    /// Our certificate's BinarySecurityToken (the initiator's).
    token: String,
    confirmations: Vec<String>,
}

fn key_length(encryption: &str) -> usize {
    match encryption {
        crate::policy::AES128_CBC => 16,
        crate::policy::AES192_CBC => 24,
        _ => 32,
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02X}")).collect()
}

/// A Timestamp's Created (`now`) and Expires (now plus Rampart's TTL), in Rampart's precision.
pub(crate) fn timestamp_times(policy: &Policy, now: DateTime<Utc>) -> (String, String) {
    let r = &policy.rampart;
    let precision = if r.timestamp_millis {
        SecondsFormat::Millis
    } else {
        SecondsFormat::Secs
    };
    let expires = now + chrono::Duration::seconds(i64::from(r.timestamp_ttl));
    (
        now.to_rfc3339_opts(precision, true),
        expires.to_rfc3339_opts(precision, true),
    )
}

/// The `wsse:Security` header's text: the templates xmlsec1 fills in.
fn security_header(
    policy: &Policy,
    keys: &Keys,
    side: Side<'_>,
    now: DateTime<Utc>,
    (ids, must): (&Ids, &str),
) -> String {
    let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
    let (created, expires) = timestamp_times(policy, now);
    let key_id = |value_type: &str, value: &[u8]| {
        format!(
            "<wsse:SecurityTokenReference><wsse:KeyIdentifier EncodingType=\"{BASE64}\" \
             ValueType=\"{value_type}\">{}</wsse:KeyIdentifier></wsse:SecurityTokenReference>",
            b64(value)
        )
    };
    let thumb = |cert: &[u8]| key_id(crate::inbound::THUMBPRINT, &thumbprint(cert));
    let mut confirmations = String::new();
    let mut signed = vec![ids.body.as_str(), ids.timestamp.as_str()];
    if let Side::Recipient { confirm, .. } = side {
        let values = confirm.iter().map(Some).chain(std::iter::repeat(None));
        for (id, value) in ids.confirmations.iter().zip(values) {
            let value = value.map(|v| format!(" Value=\"{v}\"")).unwrap_or_default();
            confirmations.push_str(&format!(
                "<wsse11:SignatureConfirmation xmlns:wsse11=\"{WSSE11}\" wsu:Id=\"{id}\"{value}/>"
            ));
            signed.push(id);
        }
    }
    let (signature_method, digest) = if policy.suite.digest == SHA256 {
        (RSA_SHA256, SHA256)
    } else {
        (RSA_SHA1, crate::policy::SHA1)
    };
    let references: String = signed
        .iter()
        .map(|id| {
            format!(
                "<ds:Reference URI=\"#{id}\"><ds:Transforms><ds:Transform Algorithm=\"{EXC_C14N}\"/>\
                 </ds:Transforms><ds:DigestMethod Algorithm=\"{digest}\"/><ds:DigestValue/></ds:Reference>"
            )
        })
        .collect();
    // The initiator names the recipient's certificate by its subject key identifier (Rampart's
    // choice for policy_3's Wss10 MustSupportRefKeyIdentifier), the recipient the requester's by
    // its thumbprint.
    let recipient = match side {
        Side::Initiator { to } => match crate::inbound::ski(to) {
            ski if !ski.is_empty() => key_id(crate::inbound::SKI, &ski),
            _ => thumb(to),
        },
        Side::Recipient { requester, .. } => thumb(requester),
    };
    // The key the Body's content is encrypted with, where the policy encrypts it.
    let encrypted_key = if policy.encrypted_body {
        format!(
            "<xenc:EncryptedKey xmlns:xenc=\"{XENC}\" Id=\"{ek}\">\
             <xenc:EncryptionMethod Algorithm=\"{wrap}\"/>\
             <ds:KeyInfo xmlns:ds=\"{DS}\">{recipient}</ds:KeyInfo>\
             <xenc:CipherData><xenc:CipherValue/></xenc:CipherData>\
             <xenc:ReferenceList><xenc:DataReference URI=\"#{ed}\"/></xenc:ReferenceList>\
             </xenc:EncryptedKey>",
            ek = ids.key,
            wrap = policy.suite.key_wrap,
            ed = ids.data,
        )
    } else {
        String::new()
    };
    // The initiator sends its certificate, and its signature refers to it.
    let (token, ours) = match side {
        Side::Initiator { .. } => (
            format!(
                "<wsse:BinarySecurityToken EncodingType=\"{BASE64}\" ValueType=\"{X509V3}\" \
                 wsu:Id=\"{id}\">{cert}</wsse:BinarySecurityToken>",
                id = ids.token,
                cert = b64(&keys.certificate)
            ),
            format!(
                "<wsse:SecurityTokenReference><wsse:Reference URI=\"#{}\" ValueType=\"{X509V3}\"/>\
                 </wsse:SecurityTokenReference>",
                ids.token
            ),
        ),
        Side::Recipient { .. } => (String::new(), thumb(&keys.certificate)),
    };
    format!(
        "<wsse:Security xmlns:wsse=\"{WSSE}\" xmlns:wsu=\"{WSU}\"{must}>\
         <wsu:Timestamp wsu:Id=\"{ts}\"><wsu:Created>{created}</wsu:Created>\
         <wsu:Expires>{expires}</wsu:Expires></wsu:Timestamp>{confirmations}{encrypted_key}{token}\
         <ds:Signature xmlns:ds=\"{DS}\" Id=\"{sig}\"><ds:SignedInfo>\
         <ds:CanonicalizationMethod Algorithm=\"{EXC_C14N}\"/>\
         <ds:SignatureMethod Algorithm=\"{signature_method}\"/>{references}</ds:SignedInfo>\
         <ds:SignatureValue/><ds:KeyInfo>{ours}</ds:KeyInfo></ds:Signature></wsse:Security>",
        ts = ids.timestamp,
        sig = ids.signature,
    )
}
