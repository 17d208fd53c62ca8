//! A URI split into the parts `<rewrite>` names and put back together, as Synapse does it with
//! `java.net.URI`: the parts are read decoded, and on the way back each one is quoted where
//! RFC 2396 does not allow a character (a `%` always, so `%2F` in a path comes back as `/`).
//! Characters beyond ASCII are sent percent-encoded in UTF-8, as WSO2 MI writes them.

use sluice_config::UriPart as Part;
use std::fmt::Write;

/// A URI's parts, decoded. `None` is a part the URI does not have (an empty query is
/// `Some("")`, and is written back as a bare `?`); the port is -1 when there is none.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Parts {
    pub protocol: Option<String>,
    pub user: Option<String>,
    pub host: Option<String>,
    pub port: i64,
    pub path: Option<String>,
    pub query: Option<String>,
    pub reference: Option<String>,
}

/// Why a text is not a URI, or parts make none.
#[derive(Debug, PartialEq, Eq)]
pub struct Malformed(pub String);

impl Parts {
    /// No URI at all: what a rewrite starts from without an address.
    pub fn empty() -> Parts {
        Parts {
            port: -1,
            ..Parts::default()
        }
    }

    /// Reads `text` as `java.net.URI` does (RFC 2396). An authority that is not `user@host:port`
    /// (a host with `_`, say) gives no user, host or port; an opaque URI (`urn:a:b`) keeps only
    /// its scheme and reference, so it cannot be written back.
    pub fn parse(text: &str) -> Result<Parts, Malformed> {
        check_characters(text)?;
        let mut parts = Parts::empty();
        let (rest, reference) = match text.split_once('#') {
            Some((r, f)) => (r, Some(decode(f))),
            None => (text, None),
        };
        parts.reference = reference;
        let rest = match scheme_end(rest) {
            Some(k) => {
                parts.protocol = Some(rest[..k].to_owned());
                let ssp = &rest[k + 1..];
                if ssp.is_empty() {
                    return Err(Malformed(format!("'{text}': nothing after the scheme")));
                }
                if !ssp.starts_with('/') {
                    return Ok(parts);
                }
                ssp
            }
            None => rest,
        };
        let (rest, query) = match rest.split_once('?') {
            Some((r, q)) => (r, Some(decode(q))),
            None => (rest, None),
        };
        parts.query = query;
        let path = match rest.strip_prefix("//") {
            Some(after) => {
                let end = after.find('/').unwrap_or(after.len());
                parts.authority(&after[..end]);
                &after[end..]
            }
            None => rest,
        };
        parts.path = (!path.is_empty()).then(|| decode(path));
        Ok(parts)
    }

    /// A server-based authority, `[user@]host[:port]`; anything else leaves the three unset.
    fn authority(&mut self, a: &str) {
        let (user, hostport) = match a.rsplit_once('@') {
            Some((u, h)) => (Some(u), h),
            None => (None, a),
        };
        let (host, port) = match hostport.rsplit_once(':') {
            Some((h, p)) if !h.ends_with(']') || hostport.starts_with('[') => (h, Some(p)),
            _ => (hostport, None),
        };
        let port = match port {
            None | Some("") => -1,
            Some(p) if p.bytes().all(|b| b.is_ascii_digit()) => match p.parse() {
                Ok(n) => n,
                Err(_) => return,
            },
            Some(_) => return,
        };
        if !is_host(host) {
            return;
        }
        self.user = user.map(decode);
        self.host = Some(host.to_owned());
        self.port = port;
    }

    /// The URI again, each part quoted as `java.net.URI`'s seven-argument constructor quotes it.
    pub fn to_uri(&self) -> Result<String, Malformed> {
        let mut out = String::new();
        let has_authority = self.user.is_some() || self.host.is_some() || self.port != -1;
        if let Some(p) = &self.protocol {
            if p.is_empty() || !p.starts_with(|c: char| c.is_ascii_alphabetic()) {
                return Err(Malformed(format!("'{p}' is not a scheme")));
            }
            if !has_authority && self.path.is_none() && self.query.is_none() {
                return Err(Malformed(format!(
                    "'{p}:' has nothing after its scheme (an opaque URI cannot be rewritten)"
                )));
            }
            if self.path.as_ref().is_some_and(|p| !p.starts_with('/')) {
                return Err(Malformed("a relative path in an absolute URI".into()));
            }
            out.push_str(p);
            out.push(':');
        }
        if has_authority {
            out.push_str("//");
            if let Some(u) = &self.user {
                quote(u, USER, &mut out);
                out.push('@');
            }
            if let Some(h) = &self.host {
                out.push_str(h);
            }
            if self.port < -1 {
                return Err(Malformed(format!("port {}", self.port)));
            }
            if self.port != -1 {
                let _ = write!(out, ":{}", self.port);
            }
        }
        if let Some(p) = &self.path {
            quote(p, PATH, &mut out);
        }
        if let Some(q) = &self.query {
            out.push('?');
            quote(q, URIC, &mut out);
        }
        if let Some(r) = &self.reference {
            out.push('#');
            quote(r, URIC, &mut out);
        }
        Ok(out)
    }

    /// A part's text, as a `url` condition reads it: the port as a number (-1 without one), the
    /// path empty without one; `None` for a missing user, query or reference.
    pub fn text_of(&self, part: Part) -> Option<String> {
        match part {
            Part::Protocol => self.protocol.clone(),
            Part::User => self.user.clone(),
            Part::Host => self.host.clone(),
            Part::Port => Some(self.port.to_string()),
            Part::Path => Some(self.path.clone().unwrap_or_default()),
            Part::Query => self.query.clone(),
            Part::Ref => self.reference.clone(),
            Part::Full => self.to_uri().ok(),
        }
    }

    /// The text part `part` holds (all but port and full).
    pub fn text_mut(&mut self, part: Part) -> Option<&mut Option<String>> {
        Some(match part {
            Part::Protocol => &mut self.protocol,
            Part::User => &mut self.user,
            Part::Host => &mut self.host,
            Part::Path => &mut self.path,
            Part::Query => &mut self.query,
            Part::Ref => &mut self.reference,
            Part::Port | Part::Full => return None,
        })
    }
}

/// `scheme ":"` at the start: the index of the colon.
fn scheme_end(s: &str) -> Option<usize> {
    let k = s.find(':')?;
    let scheme = &s[..k];
    let mut chars = scheme.chars();
    (chars.next()?.is_ascii_alphabetic()
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
    .then_some(k)
}

/// A host name (labels of letters, digits and `-`), an IPv4 address or a bracketed IPv6 one.
fn is_host(h: &str) -> bool {
    if let Some(inner) = h.strip_prefix('[') {
        return inner
            .strip_suffix(']')
            .is_some_and(|a| a.parse::<std::net::Ipv6Addr>().is_ok());
    }
    let h = h.strip_suffix('.').unwrap_or(h);
    !h.is_empty()
        && h.split('.').all(|label| {
            !label.is_empty()
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
}

/// Refuses what `java.net.URI` refuses in a URI's text: ASCII characters RFC 2396 does not allow
/// (space, `"`, `<`, `>`, `\`, `^`, `` ` ``, `{`, `|`, `}` and controls), a second `#`, and `%` not
/// followed by two hex digits.
fn check_characters(text: &str) -> Result<(), Malformed> {
    let b = text.as_bytes();
    let mut hashes = 0;
    for (i, &c) in b.iter().enumerate() {
        let ok = match c {
            b'%' => {
                b.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
                    && b.get(i + 2).is_some_and(u8::is_ascii_hexdigit)
            }
            b'#' => {
                hashes += 1;
                hashes == 1
            }
            0x80.. => true,
            c => allowed(c, URIC),
        };
        if !ok {
            return Err(Malformed(format!(
                "'{text}': character {} at {i} is not allowed in a URI",
                char::from(c).escape_default()
            )));
        }
    }
    Ok(())
}

/// Marks and punctuation allowed as they are, beyond letters and digits.
const UNRESERVED_MARKS: &str = "-_.!~*'()";
/// User information: unreserved and `;:&=+$,`.
const USER: &str = ";:&=+$,";
/// A path: unreserved, `;:@&=+$,` and `/`.
const PATH: &str = ";:@&=+$,/";
/// A query or reference: every URI character (reserved and unreserved).
const URIC: &str = ";/?:@&=+$,[]";

fn allowed(c: u8, extra: &str) -> bool {
    c.is_ascii_alphanumeric()
        || UNRESERVED_MARKS.as_bytes().contains(&c)
        || extra.as_bytes().contains(&c)
}

/// Appends `s`, every byte not allowed (a `%` among them, and each byte beyond ASCII) as `%XX`.
fn quote(s: &str, extra: &str, out: &mut String) {
    for &c in s.as_bytes() {
        if c < 0x80 && allowed(c, extra) {
            out.push(char::from(c));
        } else {
            let _ = write!(out, "%{c:02X}");
        }
    }
}

/// `%XX` sequences decoded as UTF-8 (what is not UTF-8 becomes U+FFFD).
pub fn decode(s: &str) -> String {
    crate::message::percent_decoded(s).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn again(s: &str) -> String {
        Parts::parse(s).unwrap().to_uri().unwrap()
    }

    #[test]
    fn parts_are_read_decoded_and_written_back_quoted() {
        let p = Parts::parse("http://u@h:8080/a%20b/c?x=1&y=%26#top").unwrap();
        assert_eq!(p.protocol.as_deref(), Some("http"));
        assert_eq!(p.user.as_deref(), Some("u"));
        assert_eq!(p.host.as_deref(), Some("h"));
        assert_eq!(p.port, 8080);
        assert_eq!(p.path.as_deref(), Some("/a b/c"));
        assert_eq!(p.query.as_deref(), Some("x=1&y=&"));
        assert_eq!(p.reference.as_deref(), Some("top"));
        assert_eq!(p.to_uri().unwrap(), "http://u@h:8080/a%20b/c?x=1&y=&#top");
        // As java.net.URI: an escaped slash is a slash once decoded; an empty port goes; an empty
        // query stays; a relative reference has no scheme or authority.
        for (uri, want) in [
            ("http://h/a%2Fb", "http://h/a/b"),
            ("http://h:/x", "http://h/x"),
            ("http://h/p?", "http://h/p?"),
            ("/services/X?wsdl", "/services/X?wsdl"),
            ("jms:/Q?k=v", "jms:/Q?k=v"),
            ("http://h/caf%C3%A9", "http://h/caf%C3%A9"),
            ("http://[::1]:9000/x", "http://[::1]:9000/x"),
        ] {
            assert_eq!(again(uri), want);
        }
    }

    #[test]
    fn what_java_net_uri_refuses_is_malformed() {
        for bad in [
            "http://h/a b",
            "http://h/%zz",
            "a#b#c",
            "http:",
            "http://h/{x}",
        ] {
            assert!(Parts::parse(bad).is_err(), "{bad}");
        }
        // Opaque: read, but not written back.
        let p = Parts::parse("urn:a:b").unwrap();
        assert_eq!(p.protocol.as_deref(), Some("urn"));
        assert!(p.to_uri().is_err());
        // A registry-based authority keeps no host or port.
        assert_eq!(again("http://my_host:1/x"), "http:/x");
        let mut p = Parts::parse("http://h/x").unwrap();
        p.path = Some("x".into());
        assert!(p.to_uri().is_err(), "relative path with a scheme");
    }
}
