//! The checks a secured request passes before any mediator runs.
//!
//! The `wsse:Security` header's children are processed in document order, as WSS4J does: the
//! last protection applied comes first, so both sign-then-encrypt and encrypt-then-sign read back.
//!
//! | Child | What is done |
//! |---|---|
//! | `xenc:EncryptedKey` | opened with our private key; each `EncryptedData` its `ReferenceList` names is decrypted in place |
//! | `ds:Signature` | the signer's certificate found (below), trusted, and the signature verified by xmlsec1 |
//! | `wsu:Timestamp` | Created not in the future, Expires not past (each with the policy's skew); with `timestampStrict` Created within the TTL |
//! | `wsse:BinarySecurityToken`, `wsse11:SignatureConfirmation` | read when referenced |
//!
//! The signer's certificate: a `wsse:Reference` to a `BinarySecurityToken`, a `KeyIdentifier`
//! holding the certificate (`X509v3`) or its SHA-1 (`ThumbprintSHA1`, looked up among the trusted
//! ones), or `ds:X509Data/ds:X509IssuerSerial` (WSS4J's default, looked up the same way). It must be one of the trusted certificates ([`Keys::new`]), or be issued by one of them and valid (a certificate sent whole, as a BinarySecurityToken or KeyIdentifier).
//!
//! The request's algorithms may be any xmlsec1 is allowed to run (`sluice-xml`'s list), whatever
//! the policy's suite: WSO2's own secured requests use AES-128 under a `Basic256` policy and MI
//! takes them. The suite decides what the response uses.
//!
//! Then the policy: a Timestamp where it asks for one, the Body signed and encrypted where it
//! asks for that. IDs are registered once a document and an ID on two elements is refused, so the
//! element a reference verified is the element the message goes on with: a Body moved aside
//! with its signature (a wrapping attack) leaves the Body in its place unsigned.

use crate::fault::{Fault, FaultCode};
use crate::policy::Policy;
use base64::Engine;
use chrono::{DateTime, Utc};
use sluice_xml::{Document, Node, NodeId, SecurityKey};

pub const WSSE: &str =
    "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-secext-1.0.xsd";
pub const WSU: &str =
    "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-utility-1.0.xsd";
pub const WSSE11: &str = "http://docs.oasis-open.org/wss/oasis-wss-wssecurity-secext-1.1.xsd";
pub const DS: &str = "http://www.w3.org/2000/09/xmldsig#";
pub const XENC: &str = "http://www.w3.org/2001/04/xmlenc#";
pub const X509V3: &str =
    "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-x509-token-profile-1.0#X509v3";
pub const THUMBPRINT: &str =
    "http://docs.oasis-open.org/wss/oasis-wss-soap-message-security-1.1#ThumbprintSHA1";
pub const SKI: &str = "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-x509-token-profile-1.0#X509SubjectKeyIdentifier";

/// Our key and whom we trust, each certificate's public key loaded once (loading one costs
/// OpenSSL 3 more than an RSA signature check: never per request).
pub struct Keys {
    /// Our private key: requests are encrypted to it, responses signed with it.
    pub private: SecurityKey,
    /// Its certificate (DER).
    pub certificate: Vec<u8>,
    /// Our certificate first, then those whose signatures are accepted.
    trusted: Vec<Trusted>,
    /// The trusted certificates as anchors: a signer's certificate one of them issued is
    /// accepted too, as WSS4J's Merlin builds a path to its trust store.
    anchors: Vec<pki_types::TrustAnchor<'static>>,
    /// The store's other private keys: an encrypted key that does not open with ours is tried
    /// with each, as Rampart decrypts with whichever key of its store the message names.
    others: Vec<SecurityKey>,
    /// The stores' certificates by alias, for a policy's `encryptionUser`.
    named: Vec<(String, Vec<u8>)>,
}

/// A certificate whose signatures are accepted, and what is looked up with it.
pub struct Trusted {
    pub der: Vec<u8>,
    /// Its SHA-1 (`ThumbprintSHA1`).
    pub thumbprint: Vec<u8>,
    /// Its subject key identifier (`X509SubjectKeyIdentifier`, [`ski`]).
    pub ski: Vec<u8>,
    /// Its issuer (RFC 2253) and serial number (decimal): `X509IssuerSerial`.
    pub issuer_serial: (String, String),
    /// Its public key.
    pub key: SecurityKey,
}

impl Keys {
    /// Our key and certificate, and the certificates (DER) whose signatures are accepted: the
    /// trust store's and the key store's. A certificate that does not load is an error.
    pub fn new(
        private: SecurityKey,
        certificate: Vec<u8>,
        trusted: Vec<Vec<u8>>,
    ) -> Result<Keys, sluice_xml::XmlError> {
        let mut all = vec![certificate.clone()];
        all.extend(trusted.into_iter().filter(|c| *c != certificate));
        let trusted = all
            .into_iter()
            .map(|der| {
                Ok(Trusted {
                    thumbprint: thumbprint(&der),
                    ski: ski(&der),
                    issuer_serial: sluice_xml::certificate_issuer_serial(&der)?,
                    key: SecurityKey::certificate(&der)?,
                    der,
                })
            })
            .collect::<Result<Vec<Trusted>, sluice_xml::XmlError>>()?;
        let anchors = trusted
            .iter()
            .filter_map(|t| {
                let der = pki_types::CertificateDer::from(t.der.as_slice());
                webpki::anchor_from_trusted_cert(&der)
                    .ok()
                    .map(|a| a.to_owned())
            })
            .collect();
        Ok(Keys {
            private,
            certificate,
            trusted,
            anchors,
            others: Vec::new(),
            named: Vec::new(),
        })
    }

    /// The same, with the stores' certificates by alias (a policy's `encryptionUser`).
    pub fn with_named(mut self, named: Vec<(String, Vec<u8>)>) -> Keys {
        self.named = named;
        self
    }

    /// The certificate named `alias` in the stores (Java's aliases are compared without case).
    pub fn named(&self, alias: &str) -> Option<&[u8]> {
        (self.named.iter())
            .find(|(a, _)| a.eq_ignore_ascii_case(alias))
            .map(|(_, c)| c.as_slice())
    }

    /// The same, with the store's other private keys for opening encrypted keys.
    pub fn with_other_keys(mut self, others: Vec<SecurityKey>) -> Keys {
        self.others = others;
        self
    }

    /// The public key of `der`, a certificate not trusted itself, when one of the trusted ones
    /// issued it (directly or through none other) and it is valid at `now`. Its key usages are
    /// not held to a purpose, as Java's path validation (WSS4J's) does not hold them.
    fn issued(&self, der: &[u8], now: DateTime<Utc>) -> Result<SecurityKey, Fault> {
        let refused = |why: String| {
            Fault::new(
                FaultCode::FailedAuthentication,
                format!("the signer's certificate is not trusted: {why}"),
            )
        };
        let cert = pki_types::CertificateDer::from(der);
        let ee = webpki::EndEntityCert::try_from(&cert).map_err(|e| refused(format!("{e:?}")))?;
        let secs = u64::try_from(now.timestamp()).unwrap_or(0);
        let time = pki_types::UnixTime::since_unix_epoch(std::time::Duration::from_secs(secs));
        ee.verify_for_usage(
            webpki::ALL_VERIFICATION_ALGS,
            &self.anchors,
            &[],
            time,
            AnyPurpose,
            None,
            None,
        )
        .map_err(|e| refused(format!("{e:?}")))?;
        SecurityKey::certificate(der).map_err(|e| refused(e.to_string()))
    }

    /// The trusted certificate `der`, ours included.
    pub fn trusted(&self, der: &[u8]) -> Option<&Trusted> {
        self.trusted.iter().find(|t| t.der == der)
    }

    fn by_thumbprint(&self, thumbprint: &[u8]) -> Option<&Trusted> {
        self.trusted.iter().find(|t| t.thumbprint == thumbprint)
    }

    fn by_ski(&self, ski: &[u8]) -> Option<&Trusted> {
        self.trusted
            .iter()
            .find(|t| !t.ski.is_empty() && t.ski == ski)
    }

    /// The trusted certificate an `X509IssuerSerial` names: the serial number equal, the issuer
    /// the same name once white space after commas and the case of attribute types are set aside.
    fn by_issuer_serial(&self, issuer: &str, serial: &str) -> Option<&Trusted> {
        let name = |n: &str| -> Vec<String> {
            n.split(',')
                .map(|rdn| match rdn.trim().split_once('=') {
                    Some((t, v)) => format!("{}={}", t.trim().to_ascii_uppercase(), v.trim()),
                    None => rdn.trim().to_owned(),
                })
                .collect()
        };
        let (issuer, serial) = (name(issuer), serial.trim());
        self.trusted
            .iter()
            .find(|t| t.issuer_serial.1 == serial && name(&t.issuer_serial.0) == issuer)
    }
}

/// Any extended key usage (or none) will do.
struct AnyPurpose;

impl webpki::ExtendedKeyUsageValidator for AnyPurpose {
    fn validate(&self, _: webpki::KeyPurposeIdIter<'_, '_>) -> Result<(), webpki::Error> {
        Ok(())
    }
}

/// What a request's checks found, for its response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    /// The signer's certificate (DER), to encrypt the response to (`useReqSigCert`).
    pub signer: Vec<u8>,
    /// Each signature's SignatureValue, for the response's SignatureConfirmation.
    pub signature_values: Vec<String>,
}

/// What the header's children have shown so far.
#[derive(Default)]
struct Seen {
    signer: Option<Vec<u8>>,
    signature_values: Vec<String>,
    signed: Vec<NodeId>,
    body_decrypted: bool,
    timestamp: bool,
}

/// Takes the `wsse:Security` headers out of `doc`: after the checks (Synapse sends no processed
/// header on, and WSO2's SecureProxy removes it itself), and before an answer gets its own.
pub fn remove_headers(doc: &mut Document) -> Result<(), sluice_xml::XmlError> {
    loop {
        let found = doc.soap_header().and_then(|h| {
            h.child_elements()
                .find(|c| c.name() == "Security" && c.namespace_uri() == Some(WSSE))
                .map(|c| c.id())
        });
        match found {
            Some(id) => doc.remove(id)?,
            None => return Ok(()),
        }
    }
}

/// Checks `doc`, a secured request, against `policy` at `now`: decrypted in place, signatures
/// verified. The header stays; [`remove_headers`] takes it out.
pub fn check(
    doc: &mut Document,
    policy: &Policy,
    keys: &Keys,
    now: DateTime<Utc>,
) -> Result<Checked, Fault> {
    let security = security_header(doc)?;
    doc.register_ids("Id")
        .map_err(|e| Fault::new(FaultCode::InvalidSecurity, e.to_string()))?;
    let children: Vec<(Option<String>, String, NodeId)> = doc
        .node(security)
        .map(|s| {
            s.child_elements()
                .map(|c| {
                    (
                        c.namespace_uri().map(str::to_owned),
                        c.name().to_owned(),
                        c.id(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    let mut seen = Seen::default();
    for (ns, local, id) in children {
        match (ns.as_deref().unwrap_or(""), local.as_str()) {
            (XENC, "EncryptedKey") => open(doc, id, keys, &mut seen)?,
            (DS, "Signature") => verify(doc, id, (keys, now), &mut seen)?,
            (WSU, "Timestamp") => {
                if seen.timestamp {
                    return Err(Fault::new(
                        FaultCode::InvalidSecurity,
                        "the header has two Timestamps",
                    ));
                }
                timestamp(doc, id, policy, now)?;
                seen.timestamp = true;
            }
            (WSSE, "BinarySecurityToken") | (WSSE11, "SignatureConfirmation") => {}
            (WSSE, "UsernameToken") => {
                return Err(Fault::new(
                    FaultCode::UnsupportedSecurityToken,
                    "a UsernameToken is not supported with this policy",
                ))
            }
            (XENC, "EncryptedData") => {
                return Err(Fault::new(
                    FaultCode::UnsupportedAlgorithm,
                    "an encrypted header element is not supported",
                ))
            }
            _ => {}
        }
    }
    required(doc, policy, seen)
}

/// The policy's demands on what the header showed.
fn required(doc: &Document, policy: &Policy, seen: Seen) -> Result<Checked, Fault> {
    if policy.timestamp && !seen.timestamp {
        return Err(Fault::new(
            FaultCode::InvalidSecurity,
            "the policy requires a Timestamp and the request has none",
        ));
    }
    let Some(signer) = seen.signer else {
        return Err(Fault::new(
            FaultCode::InvalidSecurity,
            "the policy requires a signature and the request has none",
        ));
    };
    let body = doc.soap_body().map(|b| b.id());
    if policy.signed_body && !body.is_some_and(|b| seen.signed.contains(&b)) {
        return Err(Fault::new(FaultCode::FailedCheck, "the Body is not signed"));
    }
    if policy.encrypted_body && !seen.body_decrypted {
        return Err(Fault::new(
            FaultCode::FailedCheck,
            "the Body is not encrypted",
        ));
    }
    Ok(Checked {
        signer,
        signature_values: seen.signature_values,
    })
}

/// The one `wsse:Security` header, in an envelope with one Body.
pub(crate) fn security_header(doc: &Document) -> Result<NodeId, Fault> {
    let invalid = |why: &str| Fault::new(FaultCode::InvalidSecurity, why);
    let envelope = doc.root_element().ok_or_else(|| invalid("no envelope"))?;
    let bodies = envelope
        .child_elements()
        .filter(|c| c.name() == "Body")
        .count();
    if bodies != 1 {
        return Err(invalid("the envelope must have one Body"));
    }
    let header = doc
        .soap_header()
        .ok_or_else(|| invalid("the request has no wsse:Security header"))?;
    let mut found = header
        .child_elements()
        .filter(|c| c.name() == "Security" && c.namespace_uri() == Some(WSSE));
    let security = found
        .next()
        .ok_or_else(|| invalid("the request has no wsse:Security header"))?;
    if found.next().is_some() {
        return Err(invalid("the request has two wsse:Security headers"));
    }
    Ok(security.id())
}

pub(crate) fn child<'a>(n: Node<'a>, ns: &str, local: &str) -> Option<Node<'a>> {
    n.child_elements()
        .find(|c| c.name() == local && c.namespace_uri() == Some(ns))
}

/// The element a same-document reference (`#id`) names.
fn referenced<'a>(doc: &'a Document, uri: &str) -> Result<Node<'a>, Fault> {
    let id = uri.strip_prefix('#').ok_or_else(|| {
        Fault::new(
            FaultCode::InvalidSecurity,
            format!("the reference {uri} is not to this message"),
        )
    })?;
    doc.element_by_id(id).ok_or_else(|| {
        Fault::new(
            FaultCode::InvalidSecurity,
            format!("no element has the Id {id}"),
        )
    })
}

/// Opens an `EncryptedKey` with our key and decrypts the data it names.
fn open(doc: &mut Document, id: NodeId, keys: &Keys, seen: &mut Seen) -> Result<(), Fault> {
    let (session, references) = {
        let ek = doc.node(id).ok_or_else(gone)?;
        // Ours first; then the store's other keys.
        let carried = doc.decrypt_key(ek, &keys.private).or_else(|first| {
            (keys.others.iter())
                .find_map(|k| doc.decrypt_key(ek, k).ok())
                .ok_or_else(|| {
                    Fault::new(
                        FaultCode::FailedCheck,
                        format!("the encrypted key does not open with our keys: {first}"),
                    )
                })
        })?;
        let session = SecurityKey::aes(&carried)
            .map_err(|e| Fault::new(FaultCode::FailedCheck, e.to_string()))?;
        let references: Vec<String> = child(ek, XENC, "ReferenceList")
            .map(|l| {
                l.child_elements()
                    .filter(|r| r.name() == "DataReference")
                    .filter_map(|r| r.attribute("URI"))
                    .collect()
            })
            .unwrap_or_default();
        (session, references)
    };
    for uri in references {
        let (data, in_body) = {
            let data = referenced(doc, &uri)?;
            if data.name() != "EncryptedData" || data.namespace_uri() != Some(XENC) {
                return Err(Fault::new(
                    FaultCode::InvalidSecurity,
                    format!("{uri} is not an EncryptedData"),
                ));
            }
            let body = doc.soap_body();
            (data.id(), data.parent().is_some() && data.parent() == body)
        };
        doc.decrypt(data, &session).map_err(|e| {
            Fault::new(
                FaultCode::FailedCheck,
                format!("the encrypted data {uri} does not decrypt: {e}"),
            )
        })?;
        seen.body_decrypted |= in_body;
    }
    // The decrypted elements' IDs, for the signatures after this.
    doc.register_ids("Id")
        .map_err(|e| Fault::new(FaultCode::InvalidSecurity, e.to_string()))
}

fn gone() -> Fault {
    Fault::new(FaultCode::InvalidSecurity, "a header element went away")
}

/// Verifies a `Signature` with its signer's certificate, which must be trusted.
fn verify(
    doc: &mut Document,
    id: NodeId,
    (keys, now): (&Keys, DateTime<Utc>),
    seen: &mut Seen,
) -> Result<(), Fault> {
    let sig = doc.node(id).ok_or_else(gone)?;
    let cert = signer_certificate(doc, sig, keys)?;
    // Trusted itself, or issued by a trusted certificate (its key then loaded for this request).
    let issued;
    let key = match keys.trusted(&cert) {
        Some(t) => &t.key,
        None => {
            issued = keys.issued(&cert, now)?;
            &issued
        }
    };
    let info = child(sig, DS, "SignedInfo")
        .ok_or_else(|| Fault::new(FaultCode::InvalidSecurity, "a Signature without SignedInfo"))?;
    let references: Vec<Node<'_>> = info
        .child_elements()
        .filter(|r| r.name() == "Reference")
        .collect();
    match doc.verify_signature(sig, key) {
        Ok(true) => {}
        Ok(false) => {
            return Err(Fault::new(
                FaultCode::FailedCheck,
                "the signature does not verify",
            ))
        }
        Err(e) => return Err(Fault::new(FaultCode::FailedCheck, e.to_string())),
    }
    for r in references {
        let uri = r.attribute("URI").unwrap_or_default();
        seen.signed.push(referenced(doc, &uri)?.id());
    }
    let value: String = child(sig, DS, "SignatureValue")
        .map(|v| v.text_content())
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    seen.signature_values.push(value);
    seen.signer = Some(cert);
    Ok(())
}

/// The certificate a signature's `KeyInfo` names (DER).
fn signer_certificate(doc: &Document, sig: Node<'_>, keys: &Keys) -> Result<Vec<u8>, Fault> {
    let token = |why: &str| Fault::new(FaultCode::InvalidSecurityToken, why);
    let str_ = child(sig, DS, "KeyInfo")
        .and_then(|k| child(k, WSSE, "SecurityTokenReference"))
        .ok_or_else(|| {
            Fault::new(
                FaultCode::UnsupportedSecurityToken,
                "the signature's KeyInfo has no SecurityTokenReference",
            )
        })?;
    let decode = |text: String| {
        let text: String = text.split_whitespace().collect();
        base64::engine::general_purpose::STANDARD
            .decode(text)
            .map_err(|_| token("a token that is not base64"))
    };
    if let Some(r) = child(str_, WSSE, "Reference") {
        let bst = referenced(doc, &r.attribute("URI").unwrap_or_default())?;
        if bst.name() != "BinarySecurityToken"
            || bst.attribute("ValueType").as_deref() != Some(X509V3)
        {
            return Err(Fault::new(
                FaultCode::UnsupportedSecurityToken,
                "the signature's token is not an X.509 v3 BinarySecurityToken",
            ));
        }
        return decode(bst.text_content());
    }
    if let Some(k) = child(str_, WSSE, "KeyIdentifier") {
        let value = decode(k.text_content())?;
        return match k.attribute("ValueType").as_deref() {
            Some(X509V3) => Ok(value),
            Some(THUMBPRINT) => keys
                .by_thumbprint(&value)
                .map(|t| t.der.clone())
                .ok_or_else(|| {
                    Fault::new(
                        FaultCode::SecurityTokenUnavailable,
                        "no trusted certificate has the signature's thumbprint",
                    )
                }),
            Some(SKI) => keys.by_ski(&value).map(|t| t.der.clone()).ok_or_else(|| {
                Fault::new(
                    FaultCode::SecurityTokenUnavailable,
                    "no trusted certificate has the signature's subject key identifier",
                )
            }),
            other => Err(Fault::new(
                FaultCode::UnsupportedSecurityToken,
                format!("a KeyIdentifier of type {}", other.unwrap_or("(none)")),
            )),
        };
    }
    if let Some(is) = child(str_, DS, "X509Data").and_then(|d| child(d, DS, "X509IssuerSerial")) {
        let text = |local: &str| {
            child(is, DS, local)
                .map(|n| n.text_content())
                .unwrap_or_default()
        };
        return keys
            .by_issuer_serial(&text("X509IssuerName"), &text("X509SerialNumber"))
            .map(|t| t.der.clone())
            .ok_or_else(|| {
                Fault::new(
                    FaultCode::SecurityTokenUnavailable,
                    "no trusted certificate has the signature's issuer and serial number",
                )
            });
    }
    Err(Fault::new(
        FaultCode::UnsupportedSecurityToken,
        "the signature's SecurityTokenReference is no Reference, KeyIdentifier or X509IssuerSerial",
    ))
}

/// A certificate's subject key identifier, as WSS4J finds it: its SubjectKeyIdentifier extension,
/// else the SHA-1 of its public key's bits. Empty for what is not a certificate.
pub fn ski(der: &[u8]) -> Vec<u8> {
    use x509_parser::prelude::{FromDer, ParsedExtension, X509Certificate};
    let Ok((_, cert)) = X509Certificate::from_der(der) else {
        return Vec::new();
    };
    for ext in cert.extensions() {
        if let ParsedExtension::SubjectKeyIdentifier(id) = ext.parsed_extension() {
            return id.0.to_vec();
        }
    }
    let bits = &cert.public_key().subject_public_key.data;
    ring::digest::digest(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY, bits)
        .as_ref()
        .to_vec()
}

/// A certificate's SHA-1 (`ThumbprintSHA1`).
pub fn thumbprint(der: &[u8]) -> Vec<u8> {
    ring::digest::digest(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY, der)
        .as_ref()
        .to_vec()
}

/// Checks a `wsu:Timestamp` at `now` with the policy's skew and TTL.
pub(crate) fn timestamp(
    doc: &Document,
    id: NodeId,
    policy: &Policy,
    now: DateTime<Utc>,
) -> Result<(), Fault> {
    let ts = doc.node(id).ok_or_else(gone)?;
    let time = |local: &str| -> Result<Option<DateTime<Utc>>, Fault> {
        child(ts, WSU, local)
            .map(|n| {
                DateTime::parse_from_rfc3339(n.text_content().trim())
                    .map(|t| t.with_timezone(&Utc))
                    .map_err(|_| {
                        Fault::new(
                            FaultCode::InvalidSecurity,
                            format!("the Timestamp's {local} is not a date and time"),
                        )
                    })
            })
            .transpose()
    };
    let r = &policy.rampart;
    let skew = chrono::Duration::seconds(i64::from(r.timestamp_max_skew));
    let created = time("Created")?
        .ok_or_else(|| Fault::new(FaultCode::InvalidSecurity, "a Timestamp without Created"))?;
    if created > now + skew {
        return Err(Fault::new(
            FaultCode::InvalidSecurity,
            "the Timestamp is created in the future",
        ));
    }
    if time("Expires")?.is_some_and(|e| e + skew < now) {
        return Err(Fault::new(
            FaultCode::MessageExpired,
            "the message has expired",
        ));
    }
    let ttl = chrono::Duration::seconds(i64::from(r.timestamp_ttl));
    if r.timestamp_strict && created + ttl + skew < now {
        return Err(Fault::new(
            FaultCode::MessageExpired,
            "the message is older than the policy's timestamp TTL",
        ));
    }
    Ok(())
}
