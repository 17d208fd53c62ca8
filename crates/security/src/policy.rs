//! WS-SecurityPolicy as MI's Rampart reads it: the assertions a secured proxy's policy may hold,
//! read into what the checks need. An assertion Sluice does not implement is reported with its
//! line (an `unsupported` diagnostic where the policy is deployed), never passed over.
//!
//! | Assertion | Read as |
//! |---|---|
//! | `sp:AsymmetricBinding` (X.509 initiator and recipient tokens) | [`Policy::sign_and_encrypt`] |
//! | `sp:TransportBinding` with `sp:HttpsToken` (no client certificate) | [`Policy::transport`] |
//! | `sp:SupportingTokens`, `sp:SignedSupportingTokens` with `sp:UsernameToken`, with a transport binding | [`Policy::username_token`] |
//! | `sp:AlgorithmSuite` `Basic128`, `Basic192`, `Basic256`, `Basic256Sha256`, `Basic128Rsa15`, `Basic256Rsa15` | [`Suite`] |
//! | `sp:IncludeTimestamp` | [`Policy::timestamp`] |
//! | `sp:Layout`, `sp:OnlySignEntireHeadersAndBody`, token inclusion and reference kinds | accepted: any layout and reference kind Sluice reads is taken |
//! | `sp:Wss10`, `sp:Wss11` (`RequireSignatureConfirmation`) | [`Policy::signature_confirmation`] |
//! | `sp:SignedParts`, `sp:EncryptedParts` with `sp:Body` | [`Policy::signed_body`], [`Policy::encrypted_body`] |
//! | `rampart:RampartConfig` | [`Rampart`] |
//! | WSO2's `sec:CarbonSecConfig` with `sec:Authorization` (`org.wso2.carbon.security.allowedroles`) | [`Policy::allowed_roles`] |
//!
//! Not implemented (reported): the symmetric binding, a transport binding with client
//! certificates, UsernameToken with the asymmetric binding, signed or encrypted headers and
//! elements, SAML, Kerberos, secure conversation.

use roxmltree::Node;

const SP: [&str; 2] = [
    "http://schemas.xmlsoap.org/ws/2005/07/securitypolicy",
    "http://docs.oasis-open.org/ws-sx/ws-securitypolicy/200702",
];
const WSP: [&str; 2] = [
    "http://schemas.xmlsoap.org/ws/2004/09/policy",
    "http://www.w3.org/ns/ws-policy",
];
const RAMPART: &str = "http://ws.apache.org/rampart/policy";
const CARBON_SEC: &str = "http://www.wso2.org/products/carbon/security";

/// A policy's requirements, as the request checks and the response's securing use them.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    /// An asymmetric binding: requests signed with the initiator's key and encrypted to ours,
    /// responses signed with ours and encrypted to the initiator's.
    pub sign_and_encrypt: bool,
    /// A transport binding: the request must come over HTTPS; the message itself is neither
    /// signed nor encrypted.
    pub transport: bool,
    /// A UsernameToken the request must carry, its password checked against the server's users.
    pub username_token: bool,
    /// The roles one of which a UsernameToken's user must hold (WSO2's `CarbonSecConfig`);
    /// `None`: any user.
    pub allowed_roles: Option<Vec<String>>,
    pub suite: Suite,
    pub timestamp: bool,
    pub signature_confirmation: bool,
    pub signed_body: bool,
    pub encrypted_body: bool,
    pub rampart: Rampart,
}

/// The algorithms of an `sp:AlgorithmSuite`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Suite {
    pub name: &'static str,
    /// The data encryption algorithm's URI.
    pub encryption: &'static str,
    /// The key transport algorithm's URI.
    pub key_wrap: &'static str,
    /// The digest algorithm's URI.
    pub digest: &'static str,
}

pub const AES128_CBC: &str = "http://www.w3.org/2001/04/xmlenc#aes128-cbc";
pub const AES192_CBC: &str = "http://www.w3.org/2001/04/xmlenc#aes192-cbc";
pub const AES256_CBC: &str = "http://www.w3.org/2001/04/xmlenc#aes256-cbc";
pub const RSA_OAEP: &str = "http://www.w3.org/2001/04/xmlenc#rsa-oaep-mgf1p";
pub const RSA_15: &str = "http://www.w3.org/2001/04/xmlenc#rsa-1_5";
pub const SHA1: &str = "http://www.w3.org/2000/09/xmldsig#sha1";
pub const SHA256: &str = "http://www.w3.org/2001/04/xmlenc#sha256";

impl Suite {
    const ALL: [Suite; 6] = [
        Suite::new("Basic256", AES256_CBC, RSA_OAEP, SHA1),
        Suite::new("Basic192", AES192_CBC, RSA_OAEP, SHA1),
        Suite::new("Basic128", AES128_CBC, RSA_OAEP, SHA1),
        Suite::new("Basic256Sha256", AES256_CBC, RSA_OAEP, SHA256),
        Suite::new("Basic256Rsa15", AES256_CBC, RSA_15, SHA1),
        Suite::new("Basic128Rsa15", AES128_CBC, RSA_15, SHA1),
    ];

    const fn new(
        name: &'static str,
        encryption: &'static str,
        key_wrap: &'static str,
        digest: &'static str,
    ) -> Suite {
        Suite {
            name,
            encryption,
            key_wrap,
            digest,
        }
    }

    /// The suite of this name.
    pub fn named(name: &str) -> Option<Suite> {
        Suite::ALL.into_iter().find(|s| s.name == name)
    }
}

/// Rampart's own settings (`rampart:RampartConfig`), with Rampart's defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rampart {
    /// The alias of our key (`rampart:user`).
    pub user: Option<String>,
    /// Whom responses are encrypted to: `useReqSigCert` (the request's signer) or an alias.
    pub encryption_user: Option<String>,
    /// Seconds a Timestamp we make is valid (`timestampTTL`).
    pub timestamp_ttl: u32,
    /// Seconds of clock difference allowed (`timestampMaxSkew`).
    pub timestamp_max_skew: u32,
    /// Whether a request's Timestamp must also be younger than the TTL (`timestampStrict`).
    pub timestamp_strict: bool,
    /// Milliseconds in the Timestamps we make (`timestampPrecisionInMilliseconds`).
    pub timestamp_millis: bool,
    /// The key store `signatureCrypto` names with Merlin's properties, as Synapse's samples do
    /// (MI's policies name MI's own stores instead: Sluice then uses `[keystore.primary]`).
    pub signature_crypto: Option<Crypto>,
    /// The same for `encryptionCrypto` (Rampart spells it `encryptionCypto`).
    pub encryption_crypto: Option<Crypto>,
}

/// A key store a policy names: Merlin's `...merlin.file`, `...keystore.password`,
/// `...keystore.type`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Crypto {
    /// Relative to SYNAPSE_HOME when not absolute.
    pub file: String,
    pub password: Option<String>,
    pub kind: Option<String>,
}

impl Default for Rampart {
    fn default() -> Self {
        Rampart {
            user: None,
            encryption_user: None,
            timestamp_ttl: 300,
            timestamp_max_skew: 300,
            timestamp_strict: false,
            timestamp_millis: true,
            signature_crypto: None,
            encryption_crypto: None,
        }
    }
}

/// What in a policy Sluice does not implement, with its line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsupported {
    pub line: u32,
    pub what: String,
}

/// Reads a policy (a `wsp:Policy` element, as a local entry holds it). `Err` lists what is not
/// implemented, or says why the text is no policy.
pub fn parse(xml: &str) -> Result<Policy, Vec<Unsupported>> {
    let doc = roxmltree::Document::parse(xml).map_err(|e| {
        vec![Unsupported {
            line: e.pos().row,
            what: format!("the policy is not well-formed XML: {e}"),
        }]
    })?;
    let Some(root) = doc.descendants().find(|n| is(n, &WSP, "Policy")) else {
        return Err(vec![Unsupported {
            line: 1,
            what: "no wsp:Policy element".into(),
        }]);
    };
    let mut reader = Reader {
        doc: &doc,
        policy: Policy {
            sign_and_encrypt: false,
            transport: false,
            username_token: false,
            allowed_roles: None,
            suite: Suite::ALL[0],
            timestamp: false,
            signature_confirmation: false,
            signed_body: false,
            encrypted_body: false,
            rampart: Rampart::default(),
        },
        unsupported: Vec::new(),
    };
    reader.assertions(root);
    let p = &reader.policy;
    let what = match (p.sign_and_encrypt, p.transport, p.username_token) {
        (false, false, _) => Some("a policy without sp:AsymmetricBinding or sp:TransportBinding"),
        (true, _, true) => Some("a UsernameToken with sp:AsymmetricBinding"),
        _ if p.allowed_roles.is_some() && !p.username_token => {
            Some("sec:CarbonSecConfig's roles without a UsernameToken")
        }
        _ => None,
    };
    if let (Some(what), true) = (what, reader.unsupported.is_empty()) {
        reader.unsupported.push(Unsupported {
            line: reader.line(root),
            what: what.into(),
        });
    }
    if reader.unsupported.is_empty() {
        Ok(reader.policy)
    } else {
        Err(reader.unsupported)
    }
}

fn is(n: &Node<'_, '_>, namespaces: &[&str], local: &str) -> bool {
    n.is_element()
        && n.tag_name().name() == local
        && n.tag_name()
            .namespace()
            .is_some_and(|ns| namespaces.contains(&ns))
}

struct Reader<'a, 'input> {
    doc: &'a roxmltree::Document<'input>,
    policy: Policy,
    unsupported: Vec<Unsupported>,
}

impl Reader<'_, '_> {
    fn line(&self, n: Node<'_, '_>) -> u32 {
        self.doc.text_pos_at(n.range().start).row
    }

    fn unsupported(&mut self, n: Node<'_, '_>, what: impl Into<String>) {
        let line = self.line(n);
        self.unsupported.push(Unsupported {
            line,
            what: what.into(),
        });
    }

    /// The assertions in a `wsp:Policy` (through `wsp:ExactlyOne` / `wsp:All`: the first
    /// alternative).
    fn assertions(&mut self, policy: Node<'_, '_>) {
        for n in policy.children().filter(Node::is_element) {
            let ns = n.tag_name().namespace().unwrap_or("");
            let local = n.tag_name().name();
            if WSP.contains(&ns) {
                match local {
                    "ExactlyOne" => {
                        if let Some(first) = n.children().find(Node::is_element) {
                            self.assertions(first);
                        }
                    }
                    "All" | "Policy" => self.assertions(n),
                    _ => self.unsupported(n, format!("wsp:{local}")),
                }
            } else if SP.contains(&ns) {
                self.security_assertion(n, local);
            } else if ns == RAMPART && local == "RampartConfig" {
                self.rampart(n);
            } else if ns == CARBON_SEC && local == "CarbonSecConfig" {
                self.carbon(n);
            } else if n.attribute(("http://schemas.xmlsoap.org/ws/2004/09/policy", "Optional"))
                != Some("true")
            {
                self.unsupported(n, format!("the policy assertion {{{ns}}}{local}"));
            }
        }
    }

    fn security_assertion(&mut self, n: Node<'_, '_>, local: &str) {
        match local {
            "AsymmetricBinding" => {
                self.policy.sign_and_encrypt = true;
                self.binding(n);
            }
            "TransportBinding" => {
                self.policy.transport = true;
                self.binding(n);
            }
            "SupportingTokens" | "SignedSupportingTokens" => self.supporting(n, local),
            "Wss10" => {}
            "Wss11" => {
                self.policy.signature_confirmation = n
                    .descendants()
                    .any(|d| is(&d, &SP, "RequireSignatureConfirmation"));
            }
            "SignedParts" | "EncryptedParts" => {
                for p in n.children().filter(Node::is_element) {
                    if is(&p, &SP, "Body") {
                        if local == "SignedParts" {
                            self.policy.signed_body = true;
                        } else {
                            self.policy.encrypted_body = true;
                        }
                    } else {
                        let what = format!("sp:{local} with sp:{}", p.tag_name().name());
                        self.unsupported(p, what);
                    }
                }
            }
            _ => self.unsupported(n, format!("sp:{local}")),
        }
    }

    /// The tokens of `sp:SupportingTokens` or `sp:SignedSupportingTokens` (`local`): a
    /// UsernameToken (its password as text or digest, WSS 1.0 or 1.1).
    fn supporting(&mut self, n: Node<'_, '_>, local: &str) {
        let tokens = n
            .children()
            .filter(|c| is(c, &WSP, "Policy"))
            .flat_map(|p| p.children().filter(Node::is_element));
        for t in tokens {
            if is(&t, &SP, "UsernameToken") {
                self.policy.username_token = true;
            } else {
                let what = format!("sp:{} in sp:{local}", t.tag_name().name());
                self.unsupported(t, what);
            }
        }
    }

    /// The assertions inside a binding's policy (asymmetric or transport).
    fn binding(&mut self, binding: Node<'_, '_>) {
        let inner = binding
            .children()
            .filter(|c| is(c, &WSP, "Policy"))
            .flat_map(|p| p.children().filter(Node::is_element));
        for n in inner {
            match n.tag_name().name() {
                "TransportToken" => {
                    let https = n.descendants().find(|d| is(d, &SP, "HttpsToken"));
                    match https {
                        Some(h)
                            if h.attribute("RequireClientCertificate") != Some("true")
                                && !h
                                    .descendants()
                                    .any(|d| is(&d, &SP, "RequireClientCertificate")) => {}
                        Some(_) => self.unsupported(n, "sp:HttpsToken with client certificates"),
                        None => self.unsupported(n, "a transport token other than sp:HttpsToken"),
                    }
                }
                "InitiatorToken" | "RecipientToken" => {
                    if !n.descendants().any(|d| is(&d, &SP, "X509Token")) {
                        self.unsupported(n, "a token other than sp:X509Token");
                    }
                }
                "AlgorithmSuite" => {
                    let name = n
                        .descendants()
                        .filter(|d| {
                            d.is_element() && SP.contains(&d.tag_name().namespace().unwrap_or(""))
                        })
                        .map(|d| d.tag_name().name())
                        .find(|name| *name != "AlgorithmSuite");
                    match name.and_then(Suite::named) {
                        Some(s) => self.policy.suite = s,
                        None => self.unsupported(
                            n,
                            format!("the algorithm suite {}", name.unwrap_or("(none)")),
                        ),
                    }
                }
                "IncludeTimestamp" => self.policy.timestamp = true,
                "Layout" | "OnlySignEntireHeadersAndBody" => {}
                "EncryptBeforeSigning" | "EncryptSignature" | "ProtectTokens" => {
                    let what = format!("sp:{}", n.tag_name().name());
                    self.unsupported(n, what);
                }
                other => {
                    let what = format!("sp:{other} in sp:{}", binding.tag_name().name());
                    self.unsupported(n, what);
                }
            }
        }
    }

    /// WSO2's `CarbonSecConfig`: its `Authorization`'s allowed roles.
    fn carbon(&mut self, config: Node<'_, '_>) {
        for n in config.children().filter(Node::is_element) {
            if !is(&n, &[CARBON_SEC], "Authorization") {
                let what = format!("sec:{} in sec:CarbonSecConfig", n.tag_name().name());
                self.unsupported(n, what);
                continue;
            }
            let roles = n
                .children()
                .filter(|p| p.attribute("name") == Some("org.wso2.carbon.security.allowedroles"))
                .flat_map(|p| p.text().unwrap_or("").split(','))
                .map(|r| r.trim().to_owned())
                .filter(|r| !r.is_empty());
            self.policy.allowed_roles = Some(roles.collect());
        }
    }

    fn rampart(&mut self, config: Node<'_, '_>) {
        let r = &mut self.policy.rampart;
        for n in config.children().filter(Node::is_element) {
            let text = n.text().unwrap_or("").trim();
            let number = |default: u32| text.parse().unwrap_or(default);
            match n.tag_name().name() {
                "user" => r.user = Some(text.to_owned()),
                "encryptionUser" => r.encryption_user = Some(text.to_owned()),
                "timestampTTL" => r.timestamp_ttl = number(r.timestamp_ttl),
                "timestampMaxSkew" => r.timestamp_max_skew = number(r.timestamp_max_skew),
                "timestampStrict" => r.timestamp_strict = text == "true",
                "timestampPrecisionInMilliseconds" => r.timestamp_millis = text != "false",
                "signatureCrypto" => r.signature_crypto = crypto(n),
                "encryptionCrypto" | "encryptionCypto" => r.encryption_crypto = crypto(n),
                // Key stores come from the server's settings ([keystore.primary]), as in MI.
                _ => {}
            }
        }
    }
}

/// The Merlin key store a `signatureCrypto` or `encryptionCypto` names, if it names one.
fn crypto(n: Node<'_, '_>) -> Option<Crypto> {
    let mut file = None;
    let mut c = Crypto {
        file: String::new(),
        password: None,
        kind: None,
    };
    for p in n
        .descendants()
        .filter(|d| d.tag_name().name() == "property")
    {
        let value = p.text().unwrap_or("").trim().to_owned();
        let name = p.attribute("name").unwrap_or("");
        if name.ends_with(".merlin.file") || name.ends_with(".merlin.keystore.file") {
            file = Some(value);
        } else if name.ends_with(".merlin.keystore.password") {
            c.password = Some(value);
        } else if name.ends_with(".merlin.keystore.type") {
            c.kind = Some(value);
        }
    }
    c.file = file?;
    Some(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wso2_policy() -> String {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(
            "../../../shared/reference/wso2-perf/performance-ei/capp/security_policy_1.0.0/security_policy-1.0.0.xml",
        );
        std::fs::read_to_string(path).unwrap()
    }

    #[test]
    fn the_wso2_secure_proxy_policy_reads() {
        let p = parse(&wso2_policy()).unwrap();
        assert!(p.sign_and_encrypt && p.timestamp && p.signature_confirmation);
        assert!(p.signed_body && p.encrypted_body);
        assert_eq!(p.suite.name, "Basic256");
        assert_eq!(p.suite.encryption, AES256_CBC);
        assert_eq!(p.rampart.user.as_deref(), Some("wso2carbon"));
        assert_eq!(p.rampart.encryption_user.as_deref(), Some("useReqSigCert"));
        assert_eq!(
            (p.rampart.timestamp_ttl, p.rampart.timestamp_max_skew),
            (300, 300)
        );
        assert!(!p.rampart.timestamp_strict);
    }

    /// Synapse's sample 200 policy: the key store is the policy's own (Merlin's properties).
    #[test]
    fn synapse_sample_policy_names_its_key_store() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(
            "../../../shared/reference/wso2-perf/apache-synapse/resources/policy/policy_3.xml",
        );
        let p = parse(&std::fs::read_to_string(path).unwrap()).unwrap();
        assert_eq!(p.rampart.user.as_deref(), Some("alice"));
        assert_eq!(p.rampart.encryption_user.as_deref(), Some("bob"));
        let c = p.rampart.signature_crypto.unwrap();
        assert_eq!(
            c.file,
            "repository/conf/sample/resources/security/store.jks"
        );
        assert_eq!(c.password.as_deref(), Some("password"));
        assert_eq!(c.kind.as_deref(), Some("JKS"));
        assert!(p.rampart.encryption_crypto.is_some() && !p.signature_confirmation);
        // WSO2's names MI's own store (not Merlin's): none.
        assert_eq!(
            parse(&wso2_policy()).unwrap().rampart.signature_crypto,
            None
        );
    }

    #[test]
    fn what_is_not_implemented_is_reported_with_its_line() {
        let policy = wso2_policy()
            .replace("<sp:Basic256/>", "<sp:TripleDes/>")
            .replace(
                "<sp:Body/>\n            </sp:SignedParts>",
                "<sp:Body/><sp:Header Name=\"To\"/>\n            </sp:SignedParts>",
            );
        let err = parse(&policy).unwrap_err();
        let whats: Vec<&str> = err.iter().map(|u| u.what.as_str()).collect();
        assert_eq!(
            whats,
            [
                "the algorithm suite TripleDes",
                "sp:SignedParts with sp:Header"
            ],
            "{err:?}"
        );
        assert!(err.iter().all(|u| u.line > 20), "{err:?}");
        let symmetric = r#"<wsp:Policy xmlns:wsp="http://schemas.xmlsoap.org/ws/2004/09/policy"
            xmlns:sp="http://schemas.xmlsoap.org/ws/2005/07/securitypolicy">
            <sp:SymmetricBinding/></wsp:Policy>"#;
        assert_eq!(parse(symmetric).unwrap_err()[0].what, "sp:SymmetricBinding");
    }
}
