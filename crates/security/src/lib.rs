//! WS-Security for Sluice: MI's key stores, and the checks a secured SOAP request passes before
//! any mediator runs (decryption, signature, timestamp, trust), with the secured response. XML
//! Signature and XML Encryption themselves are xmlsec1's, through `sluice-xml`.

pub mod fault;
pub mod inbound;
pub mod keystore;
pub mod outbound;
pub mod policy;
pub mod testing;
pub mod username;

use std::sync::{Arc, OnceLock};

/// What a secured proxy runs with: its policy, and our keys or the users it accepts.
pub struct Secured {
    pub policy: policy::Policy,
    pub guard: Guard,
}

/// How a secured proxy's requests are checked and its answers secured.
pub enum Guard {
    /// The asymmetric binding: requests signed and encrypted with X.509 keys ([`inbound`]).
    X509 {
        keys: Arc<inbound::Keys>,
        /// The certificate (DER) answers are encrypted to when the policy names one
        /// (`encryptionUser`); `None`: the request's signer (`useReqSigCert`).
        encrypt_to: Option<Vec<u8>>,
    },
    /// The transport binding: HTTPS, and a UsernameToken of one of these users
    /// ([`username`]).
    Users(Arc<username::Users>),
}

/// WS-Security towards a back-end (an endpoint's `<enableSec>`), as Rampart's initiator: the
/// request secured with one policy, the response checked with another (either may be absent:
/// that flow is left as it is, as Rampart leaves a flow it has no policy for).
pub struct Initiator {
    pub outbound: Option<Outbound>,
    pub inbound: Option<Inbound>,
}

/// How a request to a back-end is secured.
pub struct Outbound {
    pub policy: policy::Policy,
    pub keys: Arc<inbound::Keys>,
    /// The back-end's certificate (DER): the policy's `encryptionUser`.
    pub to: Vec<u8>,
}

/// How a back-end's response is checked.
pub struct Inbound {
    pub policy: policy::Policy,
    pub keys: Arc<inbound::Keys>,
}

impl std::fmt::Debug for Initiator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Initiator")
            .field("outbound", &self.outbound.is_some())
            .field("inbound", &self.inbound.is_some())
            .finish()
    }
}

impl std::fmt::Debug for Secured {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Secured")
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

/// Our keys, read from the server's key stores when a secured proxy first needs them (a
/// deployment without one never reads them), then kept; or why they cannot be read. With them,
/// the server's users, whose UsernameTokens are accepted.
#[derive(Clone)]
pub struct KeySource {
    read: Arc<dyn Fn() -> Result<inbound::Keys, String> + Send + Sync>,
    keys: Arc<OnceLock<Result<Arc<inbound::Keys>, String>>>,
    users: Arc<username::Users>,
}

impl KeySource {
    pub fn new(read: impl Fn() -> Result<inbound::Keys, String> + Send + Sync + 'static) -> Self {
        KeySource {
            read: Arc::new(read),
            keys: Arc::new(OnceLock::new()),
            users: Arc::new(username::Users::new([])),
        }
    }

    /// The same, with the users whose UsernameTokens are accepted.
    pub fn with_users(mut self, users: username::Users) -> Self {
        self.users = Arc::new(users);
        self
    }

    /// The users whose UsernameTokens are accepted (none unless configured).
    pub fn users(&self) -> Arc<username::Users> {
        self.users.clone()
    }

    /// The keys, read on the first call.
    pub fn get(&self) -> Result<Arc<inbound::Keys>, String> {
        self.keys
            .get_or_init(|| (self.read)().map(Arc::new))
            .clone()
    }
}

impl std::fmt::Debug for KeySource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("KeySource")
    }
}

#[cfg(test)]
mod tests;
