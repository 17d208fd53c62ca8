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

use crate::compile::Compiler;
use sluice_config::model as cfg;
use sluice_config::Severity;
use sluice_security::Secured;
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
        let keys = match self.opts.security_keys.as_ref().map(|k| k.get()) {
            Some(Ok(k)) => Some(k),
            Some(Err(e)) => {
                self.report(
                    Severity::Error,
                    enabled,
                    "enableSec",
                    format!(
                        "WS-Security needs our key ([keystore.primary] in the --config file): {e}"
                    ),
                );
                None
            }
            None => {
                self.report(
                    Severity::Error,
                    enabled,
                    "enableSec",
                    "WS-Security needs our key: no key store is configured ([keystore.primary])",
                );
                None
            }
        };
        Some(Arc::new(Secured {
            policy: read?,
            keys: keys?,
        }))
    }
}
