//! UsernameToken over HTTPS: a policy with `sp:TransportBinding` (`sp:HttpsToken`) and a
//! `sp:UsernameToken` among its supporting tokens, MI's "UsernameToken" security scenario. TLS
//! protects the message; WS-Security carries who sends it.
//!
//! | Check | On failure |
//! |---|---|
//! | the request came over HTTPS | `wsse:InvalidSecurity` |
//! | one `wsse:Security` header; a `wsu:Timestamp` where the policy includes one, checked as for any policy | `wsse:InvalidSecurity`, `wsse:MessageExpired` |
//! | a `wsse:UsernameToken` whose user is one of the server's users (`[[internal_apis.users]]`, MI's file-based user store) | `wsse:FailedAuthentication`, the same for an unknown user and a wrong password |
//! | its password: `PasswordText` equal to the user's, or `PasswordDigest` equal to Base64(SHA-1(nonce + created + password)) | as above |
//! | no security header but `Authorization: Basic` (MI's POX security handler): its user and password instead of a token | `wsse:FailedAuthentication`, answered 401 with `WWW-Authenticate` as MI does |
//! | the user holds one of the roles WSO2's `CarbonSecConfig` allows, where the policy names some (`admin` for `is_admin` users; every user `Internal/everyone`) | `wsse:FailedAuthentication` |
//! | a digest's `wsu:Created` not older than Rampart's TTL plus skew, nor in the future | `wsse:MessageExpired` |
//!
//! The answer gets a `wsse:Security` header with a fresh Timestamp where the policy includes
//! one, as Rampart's answer does. Nonces are not remembered (Rampart keeps them for
//! `nonceLifeTime` to refuse a replayed digest; over TLS a replay needs the plain text anyway).

use crate::fault::{Fault, FaultCode};
use crate::inbound::{child, security_header, timestamp, WSSE, WSU};
use crate::policy::Policy;
use base64::Engine;
use chrono::{DateTime, Utc};
use sluice_xml::{Document, Fragment, Placement, XmlError};
use std::collections::HashMap;

const PASSWORD_TEXT: &str =
    "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-username-token-profile-1.0#PasswordText";
const PASSWORD_DIGEST: &str =
    "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-username-token-profile-1.0#PasswordDigest";

/// The users whose UsernameTokens are accepted, by name: (password, roles).
pub struct Users(HashMap<String, (String, Vec<String>)>);

/// The roles every user holds (MI's file-based user store gives admins `admin` too).
const EVERYONE: [&str; 2] = ["Internal/everyone", "everyone"];

impl Users {
    /// (name, password, roles) of each user.
    pub fn new(users: impl IntoIterator<Item = (String, String, Vec<String>)>) -> Users {
        Users(
            users
                .into_iter()
                .map(|(name, password, roles)| (name, (password, roles)))
                .collect(),
        )
    }

    /// Whether `user` holds one of `roles` (compared without case).
    fn holds_one(&self, user: &str, roles: &[String]) -> bool {
        let held = self
            .0
            .get(user)
            .map(|(_, r)| r.as_slice())
            .unwrap_or_default();
        roles.iter().any(|want| {
            EVERYONE.iter().any(|e| e.eq_ignore_ascii_case(want))
                || held.iter().any(|h| h.eq_ignore_ascii_case(want))
        })
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// The user name and password of an `Authorization: Basic` header value, `None` for another
/// scheme (an empty user or password is `Some` with it empty: refused when checked).
pub fn basic_credentials(value: &str) -> Option<(String, String)> {
    let encoded = value.trim().strip_prefix("Basic ")?;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .unwrap_or_default();
    let (user, password) = decoded.split_once(':').unwrap_or((&decoded, ""));
    Some((user.to_owned(), password.to_owned()))
}

/// Checks `doc` against a transport-binding `policy` at `now`: `https` says whether the request
/// came over TLS, `basic` holds the credentials of its `Authorization: Basic` header. Returns the
/// user the token names (none where the policy asks for no token).
///
/// As MI's POX security handler: a request without a security header that sends Basic
/// credentials is checked with them instead of a UsernameToken (MI makes one, and a Timestamp,
/// from them).
pub fn check(
    doc: &Document,
    policy: &Policy,
    users: &Users,
    (https, basic): (bool, Option<&(String, String)>),
    now: DateTime<Utc>,
) -> Result<Option<String>, Fault> {
    if !https {
        return Err(Fault::new(
            FaultCode::InvalidSecurity,
            "the policy requires HTTPS (sp:TransportBinding) and the request came over http",
        ));
    }
    let security = match (security_header(doc), basic) {
        (Ok(s), _) => s,
        (Err(_), Some((user, password))) if policy.username_token => {
            return basic_user(user, password, policy, users).map(Some);
        }
        (Err(e), _) => return Err(e),
    };
    let header = doc
        .node(security)
        .ok_or_else(|| Fault::new(FaultCode::InvalidSecurity, "the security header is gone"))?;
    let (mut seen_timestamp, mut user) = (false, None);
    for c in header.child_elements() {
        match (c.namespace_uri().unwrap_or(""), c.name()) {
            (WSU, "Timestamp") if seen_timestamp => {
                return Err(Fault::new(
                    FaultCode::InvalidSecurity,
                    "the header has two Timestamps",
                ))
            }
            (WSU, "Timestamp") => {
                timestamp(doc, c.id(), policy, now)?;
                seen_timestamp = true;
            }
            (WSSE, "UsernameToken") if user.is_some() => {
                return Err(Fault::new(
                    FaultCode::InvalidSecurity,
                    "the header has two UsernameTokens",
                ))
            }
            (WSSE, "UsernameToken") => user = Some(token(c, policy, users, now)?),
            _ => {}
        }
    }
    if policy.timestamp && !seen_timestamp {
        return Err(Fault::new(
            FaultCode::InvalidSecurity,
            "the policy requires a Timestamp and the request has none",
        ));
    }
    if policy.username_token && user.is_none() {
        return Err(Fault::new(
            FaultCode::InvalidSecurity,
            "the policy requires a UsernameToken and the request has none",
        ));
    }
    Ok(user)
}

/// The user of Basic credentials whose password is right (and who holds an allowed role).
fn basic_user(user: &str, password: &str, policy: &Policy, users: &Users) -> Result<String, Fault> {
    let right = |stored: &str| !password.is_empty() && same(password.as_bytes(), stored.as_bytes());
    authenticate(user, right, policy, users)
}

/// `name` when `right` holds for its password (an unknown user's is compared as "" and refused
/// alike, at the same cost) and the policy's roles admit it.
fn authenticate(
    name: &str,
    right: impl FnOnce(&str) -> bool,
    policy: &Policy,
    users: &Users,
) -> Result<String, Fault> {
    let known = users.0.get(name);
    let right = right(known.map_or("", |(p, _)| p.as_str()));
    if known.is_none() || name.is_empty() || !right {
        return Err(Fault::new(
            FaultCode::FailedAuthentication,
            "the user name or password is wrong",
        ));
    }
    allowed(name.to_owned(), policy, users)
}

/// `name` when the policy's roles (if any) admit it.
fn allowed(name: String, policy: &Policy, users: &Users) -> Result<String, Fault> {
    match &policy.allowed_roles {
        Some(roles) if !users.holds_one(&name, roles) => Err(Fault::new(
            FaultCode::FailedAuthentication,
            format!("user {name} holds none of the policy's allowed roles"),
        )),
        _ => Ok(name),
    }
}

/// The user of a `wsse:UsernameToken` whose password is right.
fn token(
    t: sluice_xml::Node<'_>,
    policy: &Policy,
    users: &Users,
    now: DateTime<Utc>,
) -> Result<String, Fault> {
    let name = child(t, WSSE, "Username")
        .map(|n| n.text_content().trim().to_owned())
        .ok_or_else(|| {
            Fault::new(
                FaultCode::InvalidSecurityToken,
                "a UsernameToken without Username",
            )
        })?;
    let password = child(t, WSSE, "Password").ok_or_else(|| {
        Fault::new(
            FaultCode::InvalidSecurityToken,
            "a UsernameToken without Password",
        )
    })?;
    let given = password.text_content();
    let kind = password
        .attribute("Type")
        .unwrap_or_else(|| PASSWORD_TEXT.to_owned());
    match kind.trim() {
        PASSWORD_TEXT => {
            let right = |stored: &str| same(given.as_bytes(), stored.as_bytes());
            authenticate(&name, right, policy, users)
        }
        PASSWORD_DIGEST => {
            let nonce = child(t, WSSE, "Nonce").map(|n| n.text_content().trim().to_owned());
            let created = child(t, WSU, "Created").map(|n| n.text_content().trim().to_owned());
            let (Some(nonce), Some(created)) = (nonce, created) else {
                return Err(Fault::new(
                    FaultCode::InvalidSecurityToken,
                    "a password digest without Nonce and Created",
                ));
            };
            fresh(&created, policy, now)?;
            let nonce = base64::engine::general_purpose::STANDARD
                .decode(&nonce)
                .map_err(|_| {
                    Fault::new(FaultCode::InvalidSecurityToken, "a Nonce not in Base64")
                })?;
            let right = |stored: &str| {
                let mut d = ring::digest::Context::new(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY);
                d.update(&nonce);
                d.update(created.as_bytes());
                d.update(stored.as_bytes());
                let want = base64::engine::general_purpose::STANDARD.encode(d.finish());
                same(given.trim().as_bytes(), want.as_bytes())
            };
            authenticate(&name, right, policy, users)
        }
        _ => Err(Fault::new(
            FaultCode::UnsupportedSecurityToken,
            format!("a password of type {kind}"),
        )),
    }
}

/// Whether `a` and `b` are equal, in time that does not depend on where they differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    #[allow(deprecated)]
    ring::constant_time::verify_slices_are_equal(a, b).is_ok()
}

/// A digest's `wsu:Created`: not in the future, not older than Rampart's TTL (with its skew).
fn fresh(created: &str, policy: &Policy, now: DateTime<Utc>) -> Result<(), Fault> {
    let at = DateTime::parse_from_rfc3339(created)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|_| {
            Fault::new(
                FaultCode::InvalidSecurityToken,
                "Created is not a date and time",
            )
        })?;
    let r = &policy.rampart;
    let skew = chrono::Duration::seconds(i64::from(r.timestamp_max_skew));
    let ttl = chrono::Duration::seconds(i64::from(r.timestamp_ttl));
    if at > now + skew || at + ttl + skew < now {
        return Err(Fault::new(
            FaultCode::MessageExpired,
            "the UsernameToken's Created is out of date",
        ));
    }
    Ok(())
}

/// The answer's security header: a Timestamp (now, now plus Rampart's TTL) where the policy
/// includes one; a security header the back-end sent is not passed on.
pub fn answer(doc: &mut Document, policy: &Policy, now: DateTime<Utc>) -> Result<(), XmlError> {
    crate::inbound::remove_headers(doc)?;
    if !policy.timestamp {
        return Ok(());
    }
    let Some(header) = doc.ensure_soap_header()? else {
        return Ok(());
    };
    let (created, expires) = crate::outbound::timestamp_times(policy, now);
    let xml = format!(
        "<wsse:Security xmlns:wsse=\"{WSSE}\" xmlns:wsu=\"{WSU}\"><wsu:Timestamp>\
         <wsu:Created>{created}</wsu:Created><wsu:Expires>{expires}</wsu:Expires></wsu:Timestamp>\
         </wsse:Security>"
    );
    doc.insert(header, &Fragment::parse(&xml)?, Placement::LastChild)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::SecondsFormat;

    /// MI's "UsernameToken" scenario policy (wso2/micro-integrator's integration tests,
    /// `scenario1-policy.xml`, Apache-2.0), its comment left out.
    const MI_SCENARIO_1: &str = r#"<wsp:Policy wsu:Id="UTOverTransport" xmlns:wsp="http://schemas.xmlsoap.org/ws/2004/09/policy" xmlns:wsu="http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-utility-1.0.xsd">
    <wsp:ExactlyOne><wsp:All>
        <sp:TransportBinding xmlns:sp="http://schemas.xmlsoap.org/ws/2005/07/securitypolicy"><wsp:Policy>
            <sp:TransportToken><wsp:Policy><sp:HttpsToken RequireClientCertificate="false" /></wsp:Policy></sp:TransportToken>
            <sp:AlgorithmSuite xmlns:sp="http://schemas.xmlsoap.org/ws/2005/07/securitypolicy"><wsp:Policy><sp:Basic256 /></wsp:Policy></sp:AlgorithmSuite>
            <sp:Layout><wsp:Policy><sp:Lax /></wsp:Policy></sp:Layout>
            <sp:IncludeTimestamp />
        </wsp:Policy></sp:TransportBinding>
        <sp:SignedSupportingTokens xmlns:sp="http://schemas.xmlsoap.org/ws/2005/07/securitypolicy"><wsp:Policy>
            <sp:UsernameToken xmlns:sp="http://schemas.xmlsoap.org/ws/2005/07/securitypolicy" sp:IncludeToken="http://schemas.xmlsoap.org/ws/2005/07/securitypolicy/IncludeToken/AlwaysToRecipient" />
        </wsp:Policy></sp:SignedSupportingTokens>
    </wsp:All></wsp:ExactlyOne>
    <rampart:RampartConfig xmlns:rampart="http://ws.apache.org/rampart/policy">
        <rampart:encryptionUser>useReqSigCert</rampart:encryptionUser>
        <rampart:timestampPrecisionInMilliseconds>true</rampart:timestampPrecisionInMilliseconds>
        <rampart:timestampTTL>300</rampart:timestampTTL>
        <rampart:timestampMaxSkew>300</rampart:timestampMaxSkew>
        <rampart:timestampStrict>false</rampart:timestampStrict>
        <rampart:tokenStoreClass>org.wso2.carbon.security.util.SecurityTokenStore</rampart:tokenStoreClass>
        <rampart:nonceLifeTime>300</rampart:nonceLifeTime>
    </rampart:RampartConfig>
</wsp:Policy>"#;

    fn envelope(security: &str) -> Document {
        let xml = format!(
            "<e:Envelope xmlns:e=\"http://schemas.xmlsoap.org/soap/envelope/\"><e:Header>\
             <wsse:Security xmlns:wsse=\"{WSSE}\" xmlns:wsu=\"{WSU}\">{security}</wsse:Security>\
             </e:Header><e:Body><a/></e:Body></e:Envelope>"
        );
        Document::parse(xml.as_bytes()).unwrap()
    }

    fn stamp(now: DateTime<Utc>) -> String {
        format!(
            "<wsu:Timestamp><wsu:Created>{}</wsu:Created><wsu:Expires>{}</wsu:Expires></wsu:Timestamp>",
            now.to_rfc3339_opts(SecondsFormat::Secs, true),
            (now + chrono::Duration::minutes(5)).to_rfc3339_opts(SecondsFormat::Secs, true)
        )
    }

    fn token(user: &str, password: &str) -> String {
        format!(
            "<wsse:UsernameToken><wsse:Username>{user}</wsse:Username>\
             <wsse:Password Type=\"{PASSWORD_TEXT}\">{password}</wsse:Password></wsse:UsernameToken>"
        )
    }

    fn digest(user: &str, password: &str, created: &str) -> String {
        let nonce = b"0123456789abcdef";
        let mut d = ring::digest::Context::new(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY);
        d.update(nonce);
        d.update(created.as_bytes());
        d.update(password.as_bytes());
        let b64 = base64::engine::general_purpose::STANDARD;
        format!(
            "<wsse:UsernameToken><wsse:Username>{user}</wsse:Username>\
             <wsse:Password Type=\"{PASSWORD_DIGEST}\">{}</wsse:Password>\
             <wsse:Nonce>{}</wsse:Nonce><wsu:Created>{created}</wsu:Created></wsse:UsernameToken>",
            b64.encode(d.finish()),
            b64.encode(nonce)
        )
    }

    fn code(r: Result<Option<String>, Fault>) -> String {
        match r {
            Ok(u) => format!("ok {u:?}"),
            Err(f) => f.code.local_name().to_owned(),
        }
    }

    #[test]
    fn mi_usernametoken_scenario_checks_https_timestamp_and_password() {
        let policy = crate::policy::parse(MI_SCENARIO_1).unwrap();
        assert!(policy.transport && policy.username_token && policy.timestamp);
        assert!(!policy.sign_and_encrypt);
        let users = Users::new([("alice".to_owned(), "s3cret".to_owned(), Vec::new())]);
        let now = Utc::now();
        let check = |security: &str, https: bool| {
            code(super::check(
                &envelope(security),
                &policy,
                &users,
                (https, None),
                now,
            ))
        };
        let good = format!("{}{}", stamp(now), token("alice", "s3cret"));
        assert_eq!(check(&good, true), "ok Some(\"alice\")");
        assert_eq!(check(&good, false), "InvalidSecurity");
        let wrong = format!("{}{}", stamp(now), token("alice", "guess"));
        assert_eq!(check(&wrong, true), "FailedAuthentication");
        let unknown = format!("{}{}", stamp(now), token("bob", "s3cret"));
        assert_eq!(check(&unknown, true), "FailedAuthentication");
        assert_eq!(check(&token("alice", "s3cret"), true), "InvalidSecurity");
        assert_eq!(check(&stamp(now), true), "InvalidSecurity");
        let old = stamp(now - chrono::Duration::hours(1));
        assert_eq!(
            check(&format!("{old}{}", token("alice", "s3cret")), true),
            "MessageExpired"
        );
        let created = now.to_rfc3339_opts(SecondsFormat::Millis, true);
        let hashed = format!("{}{}", stamp(now), digest("alice", "s3cret", &created));
        assert_eq!(check(&hashed, true), "ok Some(\"alice\")");
        let bad = format!("{}{}", stamp(now), digest("alice", "guess", &created));
        assert_eq!(check(&bad, true), "FailedAuthentication");
        let stale = (now - chrono::Duration::hours(1)).to_rfc3339_opts(SecondsFormat::Millis, true);
        let replayed = format!("{}{}", stamp(now), digest("alice", "s3cret", &stale));
        assert_eq!(check(&replayed, true), "MessageExpired");
    }

    /// WSO2's `CarbonSecConfig` roles (as in MI's UTpolicy.xml): an admin passes, another user
    /// is refused.
    #[test]
    fn allowed_roles_admit_only_users_who_hold_one() {
        let roles = r#"<sec:CarbonSecConfig xmlns:sec="http://www.wso2.org/products/carbon/security"><sec:Authorization><sec:property name="org.wso2.carbon.security.allowedroles">admin,sys-admin
            </sec:property></sec:Authorization></sec:CarbonSecConfig>"#;
        let at = MI_SCENARIO_1.rfind("</wsp:Policy>").unwrap();
        let text = format!("{}{roles}{}", &MI_SCENARIO_1[..at], &MI_SCENARIO_1[at..]);
        let policy = crate::policy::parse(&text).unwrap();
        assert_eq!(
            policy.allowed_roles.as_deref(),
            Some(&["admin".to_owned(), "sys-admin".to_owned()][..])
        );
        let users = Users::new([
            ("root".to_owned(), "pw".to_owned(), vec!["admin".to_owned()]),
            ("ann".to_owned(), "pw".to_owned(), Vec::new()),
        ]);
        let now = Utc::now();
        let check = |user: &str| {
            let security = format!("{}{}", stamp(now), token(user, "pw"));
            code(super::check(
                &envelope(&security),
                &policy,
                &users,
                (true, None),
                now,
            ))
        };
        assert_eq!(check("root"), "ok Some(\"root\")");
        assert_eq!(check("ann"), "FailedAuthentication");
    }

    /// MI's POX security: no security header, Basic credentials instead.
    #[test]
    fn basic_credentials_stand_for_a_token_when_there_is_no_security_header() {
        let policy = crate::policy::parse(MI_SCENARIO_1).unwrap();
        let users = Users::new([("alice".to_owned(), "s3cret".to_owned(), Vec::new())]);
        let plain = Document::parse(
            b"<e:Envelope xmlns:e=\"http://schemas.xmlsoap.org/soap/envelope/\"><e:Body><a/></e:Body></e:Envelope>",
        )
        .unwrap();
        let now = Utc::now();
        let basic = |header: &str| basic_credentials(header).unwrap();
        let check = |creds: Option<(String, String)>| {
            code(super::check(
                &plain,
                &policy,
                &users,
                (true, creds.as_ref()),
                now,
            ))
        };
        assert_eq!(
            check(Some(basic("Basic YWxpY2U6czNjcmV0"))),
            "ok Some(\"alice\")"
        );
        assert_eq!(
            check(Some(basic("Basic YWxpY2U6d3Jvbmc="))),
            "FailedAuthentication"
        );
        assert_eq!(check(Some(basic("Basic YWxpY2U="))), "FailedAuthentication");
        assert_eq!(check(None), "InvalidSecurity");
        assert_eq!(basic_credentials("Bearer x"), None);
    }

    #[test]
    fn the_answer_gets_a_fresh_timestamp_only() {
        let policy = crate::policy::parse(MI_SCENARIO_1).unwrap();
        let mut doc = envelope(&token("alice", "s3cret"));
        answer(&mut doc, &policy, Utc::now()).unwrap();
        let text = String::from_utf8(doc.to_bytes().unwrap()).unwrap();
        assert!(
            text.contains("wsu:Timestamp") && !text.contains("UsernameToken"),
            "{text}"
        );
    }
}
