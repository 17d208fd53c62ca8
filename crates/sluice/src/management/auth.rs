//! Who may use the management API: the users of the `--config` file (`[[internal_apis.users]]`, MI's
//! file user store), their passwords kept only as salted PBKDF2 hashes; with none configured, MI's
//! default `admin`/`admin`, on loopback only. `GET /management/login` with Basic credentials gives a
//! token (a JWT, HS256 under a key made at start), which every other resource wants as `Bearer`.
//! A token lasts an hour (MI's default); at most 200 are held, the oldest going first.

use base64::Engine as _;
use ring::{hmac, pbkdf2, rand::SecureRandom};
use std::collections::VecDeque;
use std::num::NonZeroU32;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A user as the file names it.
#[derive(Debug, Clone)]
pub struct UserEntry {
    pub name: String,
    pub password: String,
    pub is_admin: bool,
}

struct User {
    name: String,
    salt: [u8; 16],
    hash: [u8; 32],
    is_admin: bool,
}

/// The users, and the tokens given to them.
pub struct Auth {
    users: Vec<User>,
    /// No user configured: MI's default admin/admin, answered on loopback only.
    pub defaults: bool,
    key: hmac::Key,
    tokens: Mutex<VecDeque<Token>>,
    lifetime: Duration,
}

struct Token {
    text: String,
    user: String,
    is_admin: bool,
    expires: SystemTime,
}

/// What a request's credentials are worth.
#[derive(Debug, PartialEq, Eq)]
pub enum Caller {
    User { name: String, is_admin: bool },
    Nobody,
}

const ITERATIONS: NonZeroU32 = NonZeroU32::new(10_000).expect("non-zero");
const MAX_TOKENS: usize = 200;
const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::URL_SAFE_NO_PAD;

impl Auth {
    /// The users of the file; none: MI's default admin/admin.
    pub fn new(configured: &[UserEntry]) -> Auth {
        let rng = ring::rand::SystemRandom::new();
        let defaults = configured.is_empty();
        let default_admin = [UserEntry {
            name: "admin".into(),
            password: "admin".into(),
            is_admin: true,
        }];
        let entries = if defaults {
            &default_admin[..]
        } else {
            configured
        };
        let users = entries
            .iter()
            .map(|u| {
                let mut salt = [0u8; 16];
                let _ = rng.fill(&mut salt);
                let mut hash = [0u8; 32];
                pbkdf2::derive(
                    pbkdf2::PBKDF2_HMAC_SHA256,
                    ITERATIONS,
                    &salt,
                    u.password.as_bytes(),
                    &mut hash,
                );
                User {
                    name: u.name.clone(),
                    salt,
                    hash,
                    is_admin: u.is_admin,
                }
            })
            .collect();
        let key = hmac::Key::generate(hmac::HMAC_SHA256, &rng).expect("a random key");
        Auth {
            users,
            defaults,
            key,
            tokens: Mutex::new(VecDeque::new()),
            lifetime: Duration::from_secs(3600),
        }
    }

    /// The user whose `Basic` credentials these are.
    fn basic(&self, authorization: &str) -> Option<&User> {
        let b64 = authorization.strip_prefix("Basic ")?.trim();
        let decoded = base64::engine::general_purpose::STANDARD.decode(b64).ok()?;
        let text = String::from_utf8(decoded).ok()?;
        let (name, password) = text.split_once(':')?;
        self.users.iter().find(|u| {
            u.name == name
                && pbkdf2::verify(
                    pbkdf2::PBKDF2_HMAC_SHA256,
                    ITERATIONS,
                    &u.salt,
                    password.as_bytes(),
                    &u.hash,
                )
                .is_ok()
        })
    }

    /// A new token for the user of these Basic credentials (`GET /login`).
    pub fn login(&self, authorization: &str, issuer: &str) -> Option<String> {
        let user = self.basic(authorization)?;
        let expires = SystemTime::now() + self.lifetime;
        let exp = expires
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs();
        let header = B64.encode(br#"{"alg":"HS256","typ":"JWT"}"#);
        let claims = serde_json::json!({
            "sub": user.name,
            "iss": issuer,
            "exp": exp,
            "scope": if user.is_admin { "admin" } else { "default" },
            "jti": B64.encode(nonce()),
        });
        let body = format!("{header}.{}", B64.encode(claims.to_string()));
        let sig = hmac::sign(&self.key, body.as_bytes());
        let text = format!("{body}.{}", B64.encode(sig.as_ref()));
        if let Ok(mut tokens) = self.tokens.lock() {
            let now = SystemTime::now();
            tokens.retain(|t| t.expires > now);
            if tokens.len() >= MAX_TOKENS {
                tokens.pop_front();
            }
            tokens.push_back(Token {
                text: text.clone(),
                user: user.name.clone(),
                is_admin: user.is_admin,
                expires,
            });
        }
        Some(text)
    }

    /// Who sent a request with this `Authorization` header: a live token's user.
    pub fn caller(&self, authorization: Option<&str>) -> Caller {
        let Some(token) = authorization.and_then(|a| a.strip_prefix("Bearer ")) else {
            return Caller::Nobody;
        };
        let token = token.trim();
        let now = SystemTime::now();
        let Ok(tokens) = self.tokens.lock() else {
            return Caller::Nobody;
        };
        match tokens.iter().find(|t| t.text == token && t.expires > now) {
            Some(t) => Caller::User {
                name: t.user.clone(),
                is_admin: t.is_admin,
            },
            None => Caller::Nobody,
        }
    }

    /// Ends a token (`GET /logout`); whether it was live.
    pub fn logout(&self, authorization: Option<&str>) -> bool {
        let Some(token) = authorization.and_then(|a| a.strip_prefix("Bearer ")) else {
            return false;
        };
        let Ok(mut tokens) = self.tokens.lock() else {
            return false;
        };
        let before = tokens.len();
        tokens.retain(|t| t.text != token.trim());
        tokens.len() < before
    }
}

fn nonce() -> [u8; 12] {
    let mut n = [0u8; 12];
    let _ = ring::rand::SystemRandom::new().fill(&mut n);
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    fn basic(user: &str, password: &str) -> String {
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
        )
    }

    #[test]
    fn defaults_admin_and_tokens_live_until_logout() {
        let a = Auth::new(&[]);
        assert!(a.defaults);
        assert!(a.login(&basic("admin", "wrong"), "x").is_none());
        let t = a.login(&basic("admin", "admin"), "x").unwrap();
        assert_eq!(t.split('.').count(), 3, "{t}");
        let bearer = format!("Bearer {t}");
        assert_eq!(
            a.caller(Some(&bearer)),
            Caller::User {
                name: "admin".into(),
                is_admin: true
            }
        );
        assert_eq!(a.caller(Some(&basic("admin", "admin"))), Caller::Nobody);
        assert_eq!(a.caller(None), Caller::Nobody);
        assert!(a.logout(Some(&bearer)));
        assert_eq!(a.caller(Some(&bearer)), Caller::Nobody);
    }

    #[test]
    fn configured_users_replace_the_default() {
        let a = Auth::new(&[UserEntry {
            name: "ops".into(),
            password: "s3cret".into(),
            is_admin: false,
        }]);
        assert!(!a.defaults);
        assert!(a.login(&basic("admin", "admin"), "x").is_none());
        let t = a.login(&basic("ops", "s3cret"), "x").unwrap();
        assert_eq!(
            a.caller(Some(&format!("Bearer {t}"))),
            Caller::User {
                name: "ops".into(),
                is_admin: false
            }
        );
        // At most 200 tokens: the oldest goes.
        let first = a.login(&basic("ops", "s3cret"), "x").unwrap();
        for _ in 0..MAX_TOKENS {
            a.login(&basic("ops", "s3cret"), "x").unwrap();
        }
        assert_eq!(a.caller(Some(&format!("Bearer {first}"))), Caller::Nobody);
    }
}
