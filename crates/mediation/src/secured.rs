//! A proxy's WS-Security (`<enableSec/>` with `<policy key="..."/>`), compiled: the policy read
//! from its local entry or registry resource (`sluice_security::policy`), our keys from the
//! server's key store. What cannot be served is reported on the proxy, which is then left out.
//!
//! | Configuration | Outcome |
//! |---|---|
//! | `enableSec` and one `policy` | secured: requests checked before the in-sequence, responses secured |
//! | a `policy` without `enableSec` | a warning: Synapse engages no security then, nor does Sluice |
//! | `enableSec` without a `policy`, a policy `type`, several policies | unsupported |
//! | a policy assertion Sluice does not implement | unsupported, with the policy's line |
//! | no key store to read | an error: the proxy cannot decrypt or sign |
//! | a transport binding (UsernameToken over HTTPS) | the users of `[[internal_apis.users]]` check the tokens; none configured: an error |
//! | the policy names its own store (`signatureCrypto` with Merlin's properties, Synapse's samples) | that store, relative to SYNAPSE_HOME; `rampart:user`'s key signs, any of the store's keys opens an encrypted key; answers encrypted to `encryptionUser` |
//! | otherwise (MI's way) | `[keystore.primary]`'s key; an `encryptionUser` alias is a certificate of it or of `[truststore]` |
//! | an endpoint's `<enableSec>` | the same keys; the request is encrypted to `encryptionUser` (required: there is no requester), the answer checked with the inbound policy |

use crate::compile::Compiler;
use sluice_config::model as cfg;
use sluice_config::Severity;
use sluice_security::keystore::KeyStore;
use sluice_security::policy::{Crypto, Rampart};
use sluice_security::{Guard, Secured};
use sluice_xml::SecurityKey;
use std::path::Path;
use std::sync::Arc;

impl Compiler<'_> {
    /// The proxy's security, or `None` (reported) when it has none to serve or cannot be served.
    pub(crate) fn security(&mut self, s: &cfg::ProxySecurity) -> Option<Arc<Secured>> {
        let Some(enabled) = &s.enabled else {
            if let Some(p) = s.policies.first() {
                self.report(
                    Severity::Warning,
                    &p.loc,
                    "policy",
                    "a policy without <enableSec/> is not enforced (Synapse engages no security then)",
                );
            }
            return None;
        };
        let policy = match s.policies.as_slice() {
            [p] if p.flow.is_none() && !p.key.is_empty() => p,
            [] => {
                self.report(
                    Severity::Unsupported,
                    enabled,
                    "enableSec",
                    "<enableSec/> without a <policy key=\"...\"/> (Rampart's own configuration) is not supported",
                );
                return None;
            }
            [p, ..] => {
                self.report(
                    Severity::Unsupported,
                    &p.loc,
                    "policy",
                    "only one <policy key=\"...\"/> for both flows is supported",
                );
                return None;
            }
        };
        let text = match self.keyed(&policy.key) {
            Ok((text, _)) => text.to_owned(),
            Err((sev, msg)) => {
                self.report(sev, &policy.loc, "policy", msg);
                return None;
            }
        };
        let read = match sluice_security::policy::parse(&text) {
            Ok(p) => Some(p),
            Err(unsupported) => {
                for u in unsupported {
                    self.report(
                        Severity::Unsupported,
                        &policy.loc,
                        "policy",
                        format!("policy '{}' line {}: {}", policy.key, u.line, u.what),
                    );
                }
                None
            }
        };
        // A policy that names its own key store (Synapse's samples) is served with it.
        if let Some(c) = read
            .as_ref()
            .and_then(|p| p.rampart.signature_crypto.clone())
        {
            let policy = read?;
            return match policy_keys(self.home, &c, &policy.rampart) {
                Ok((keys, encrypt_to)) => Some(Arc::new(Secured {
                    policy,
                    guard: Guard::X509 {
                        keys: Arc::new(keys),
                        encrypt_to,
                    },
                })),
                Err(e) => {
                    self.report(Severity::Error, enabled, "enableSec", e);
                    None
                }
            };
        }
        if read.as_ref().is_some_and(|p| p.transport) {
            return self.users_guard(read?, enabled);
        }
        let keys = self.primary_keys(enabled);
        let (policy, keys) = (read?, keys?);
        let encrypt_to = self.encryption_user(&policy, &keys, enabled)?;
        Some(Arc::new(Secured {
            policy,
            guard: Guard::X509 { keys, encrypt_to },
        }))
    }

    /// The certificate a policy's `encryptionUser` alias names in `[keystore.primary]` or
    /// `[truststore]`: `Some(None)` for none or `useReqSigCert`, `None` (reported) for an alias
    /// the stores do not hold.
    fn encryption_user(
        &mut self,
        policy: &sluice_security::policy::Policy,
        keys: &sluice_security::inbound::Keys,
        loc: &sluice_config::Location,
    ) -> Option<Option<Vec<u8>>> {
        match policy.rampart.encryption_user.as_deref() {
            None | Some("useReqSigCert") => Some(None),
            Some(alias) => match keys.named(alias) {
                Some(c) => Some(Some(c.to_vec())),
                None => {
                    self.report(
                        Severity::Error,
                        loc,
                        "enableSec",
                        format!("encryptionUser {alias} is no certificate of [keystore.primary] or [truststore]"),
                    );
                    None
                }
            },
        }
    }

    /// Our keys from `[keystore.primary]` (and `[truststore]`), or `None` (reported).
    fn primary_keys(
        &mut self,
        loc: &sluice_config::Location,
    ) -> Option<Arc<sluice_security::inbound::Keys>> {
        let why = match self.opts.security_keys.as_ref().map(|k| k.get()) {
            Some(Ok(k)) => return Some(k),
            Some(Err(e)) => {
                format!("WS-Security needs our key ([keystore.primary] in the --config file): {e}")
            }
            None => {
                "WS-Security needs our key: no key store is configured ([keystore.primary])".into()
            }
        };
        self.report(Severity::Error, loc, "enableSec", why);
        None
    }

    /// A transport-binding policy (UsernameToken over HTTPS): the server's users check the
    /// tokens; with none configured the proxy cannot be served (MI would take admin/admin).
    fn users_guard(
        &mut self,
        policy: sluice_security::policy::Policy,
        enabled: &sluice_config::Location,
    ) -> Option<Arc<Secured>> {
        let users = self.opts.security_keys.as_ref().map(|k| k.users());
        match users {
            Some(u) if !policy.username_token || !u.is_empty() => Some(Arc::new(Secured {
                policy,
                guard: Guard::Users(u),
            })),
            _ => {
                self.report(
                    Severity::Error,
                    enabled,
                    "enableSec",
                    "a UsernameToken policy needs users to check the tokens against ([[internal_apis.users]] in the --config file)",
                );
                None
            }
        }
    }
}

impl Compiler<'_> {
    /// An endpoint's `<enableSec>`: each flow's policy read and its keys from the store the
    /// policy names (`signatureCrypto`, as Synapse's samples do); `None` (reported) when it
    /// cannot be served, and the endpoint is then left out.
    pub(crate) fn endpoint_security(
        &mut self,
        s: &cfg::EndpointSecurity,
    ) -> Option<Arc<sluice_security::Initiator>> {
        let outbound = match &s.outbound {
            Some(key) => {
                let (policy, keys, to) = self.initiator_policy(key, &s.loc)?;
                let Some(to) = to else {
                    self.report(
                        Severity::Error,
                        &s.loc,
                        "enableSec",
                        format!("policy '{key}': a request to a back-end is encrypted to the policy's encryptionUser, which must name a certificate of its store (useReqSigCert is for answers)"),
                    );
                    return None;
                };
                Some(sluice_security::Outbound { policy, keys, to })
            }
            None => None,
        };
        let inbound = match &s.inbound {
            Some(key) => {
                let (policy, keys, _) = self.initiator_policy(key, &s.loc)?;
                Some(sluice_security::Inbound { policy, keys })
            }
            None => None,
        };
        Some(Arc::new(sluice_security::Initiator { outbound, inbound }))
    }

    /// A policy an endpoint secures a flow with, its keys and the certificate of its
    /// `encryptionUser`.
    fn initiator_policy(
        &mut self,
        key: &str,
        loc: &sluice_config::Location,
    ) -> Option<(
        sluice_security::policy::Policy,
        Arc<sluice_security::inbound::Keys>,
        Option<Vec<u8>>,
    )> {
        let text = match self.keyed(key) {
            Ok((text, _)) => text.to_owned(),
            Err((sev, msg)) => {
                self.report(sev, loc, "enableSec", msg);
                return None;
            }
        };
        let policy = match sluice_security::policy::parse(&text) {
            Ok(p) => p,
            Err(unsupported) => {
                for u in unsupported {
                    self.report(
                        Severity::Unsupported,
                        loc,
                        "enableSec",
                        format!("policy '{key}' line {}: {}", u.line, u.what),
                    );
                }
                return None;
            }
        };
        if policy.transport {
            self.report(
                Severity::Unsupported,
                loc,
                "enableSec",
                format!("policy '{key}': a UsernameToken towards a back-end is not supported yet"),
            );
            return None;
        }
        let Some(crypto) = policy.rampart.signature_crypto.clone() else {
            // MI's way: our key from [keystore.primary], encryptionUser a certificate of it or of
            // [truststore].
            let keys = self.primary_keys(loc)?;
            let to = self.encryption_user(&policy, &keys, loc)?;
            return Some((policy, keys, to));
        };
        match policy_keys(self.home, &crypto, &policy.rampart) {
            Ok((keys, to)) => Some((policy, Arc::new(keys), to)),
            Err(e) => {
                self.report(Severity::Error, loc, "enableSec", e);
                None
            }
        }
    }
}

/// Our keys from the key store a policy names (`signatureCrypto`, Merlin's properties: a JKS file
/// relative to SYNAPSE_HOME), with `rampart:user`'s key opened with the store's password (Rampart
/// asks a password callback class for it, which cannot run here), and the certificate of
/// `encryptionUser` when it is an alias.
fn policy_keys(
    home: &Path,
    c: &Crypto,
    r: &Rampart,
) -> Result<(sluice_security::inbound::Keys, Option<Vec<u8>>), String> {
    if !KeyStore::reads_type(c.kind.as_deref()) {
        return Err(format!(
            "the policy's key store {}: only JKS and PKCS12 are read",
            c.file
        ));
    }
    let path = home.join(&c.file);
    let at = |e: &dyn std::fmt::Display| format!("the policy's key store {}: {e}", path.display());
    let bytes = std::fs::read(&path).map_err(|e| at(&e))?;
    let password = c.password.as_deref().unwrap_or("");
    let store = KeyStore::read(&bytes, password).map_err(|e| at(&e))?;
    let user = r.user.as_deref().unwrap_or("");
    let entry = store
        .key(user)
        .ok_or_else(|| at(&format!("no key named {user} (rampart:user)")))?;
    let pkcs8 = entry.key(password).map_err(|e| at(&e))?;
    let private = SecurityKey::private_pkcs8(&pkcs8).map_err(|e| at(&e))?;
    let certificate = entry.chain.first().cloned().unwrap_or_default();
    let encrypt_to = match r.encryption_user.as_deref() {
        None | Some("useReqSigCert") => None,
        Some(alias) => Some(
            store
                .certificate(alias)
                .ok_or_else(|| at(&format!("no certificate named {alias} (encryptionUser)")))?,
        ),
    };
    // The store's other keys open encrypted keys too (Rampart decrypts with any of them).
    let others = (store.keys.iter())
        .filter(|k| !k.alias.eq_ignore_ascii_case(user))
        .filter_map(|k| k.key(password).ok())
        .filter_map(|pkcs8| SecurityKey::private_pkcs8(&pkcs8).ok())
        .collect();
    let keys = sluice_security::inbound::Keys::new(private, certificate, store.certificates())
        .map_err(|e| at(&e))?
        .with_other_keys(others);
    Ok((keys, encrypt_to))
}
