//! Synapse's XPath extension functions over strings: `base64Encode`, `base64Decode` and `url-encode`,
//! each with an optional charset argument, as Synapse defines them (its `Base64EncodeFunction`,
//! `Base64DecodeFunction` and `URLEncodeFunction`).

use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig, STANDARD};
use base64::engine::DecodePaddingMode;
use base64::Engine;
use std::ffi::CStr;

use crate::synapse::is_name_char;

/// The functions' names, as an XPath calls them (C strings, as libxml2 asks for them).
pub(crate) const NAMES: &[&CStr] = &[c"base64Encode", c"base64Decode", c"url-encode"];

/// Whether `name` is one of [`NAMES`].
pub(crate) fn is_function(name: &str) -> bool {
    NAMES.iter().any(|n| n.to_bytes() == name.as_bytes())
}

/// Whether `xpath` calls one of [`NAMES`] (a name followed by `(`; a literal that looks like a call
/// only costs registering the functions for nothing).
pub(crate) fn called_in(xpath: &str) -> bool {
    NAMES
        .iter()
        .filter_map(|n| n.to_str().ok())
        .any(|n| calls(xpath, n))
}

/// Whether `xpath` calls the function `name` (the name, not inside another name, followed by `(`).
pub(crate) fn calls(xpath: &str, name: &str) -> bool {
    xpath.match_indices(name).any(|(at, _)| {
        let before = xpath[..at].chars().next_back();
        let after = xpath[at + name.len()..].trim_start();
        after.starts_with('(') && before.is_none_or(|c| !is_name_char(c) && c != ':')
    })
}

/// The charsets Sluice converts with: their bytes for a string, and the string for bytes.
#[derive(Clone, Copy)]
enum Charset {
    Utf8,
    Latin1,
    Ascii,
}

impl Charset {
    fn named(name: &str) -> Result<Charset, String> {
        match name.trim().to_ascii_uppercase().as_str() {
            "UTF-8" | "UTF8" => Ok(Charset::Utf8),
            "ISO-8859-1" | "ISO8859_1" | "LATIN1" => Ok(Charset::Latin1),
            "US-ASCII" | "ASCII" => Ok(Charset::Ascii),
            _ => Err(format!("unsupported charset '{name}'")),
        }
    }

    /// Java's `String.getBytes(charset)`: characters the charset lacks become `?`.
    fn bytes(self, s: &str) -> Vec<u8> {
        match self {
            Charset::Utf8 => s.as_bytes().to_vec(),
            Charset::Latin1 => s.chars().map(|c| u8::try_from(c).unwrap_or(b'?')).collect(),
            Charset::Ascii => s
                .chars()
                .map(|c| if c.is_ascii() { c as u8 } else { b'?' })
                .collect(),
        }
    }

    /// Java's `new String(bytes, charset)`: bytes that do not decode become U+FFFD.
    fn string(self, b: &[u8]) -> String {
        match self {
            Charset::Utf8 => String::from_utf8_lossy(b).into_owned(),
            Charset::Latin1 => b.iter().map(|&c| char::from(c)).collect(),
            Charset::Ascii => b
                .iter()
                .map(|&c| {
                    if c.is_ascii() {
                        char::from(c)
                    } else {
                        '\u{FFFD}'
                    }
                })
                .collect(),
        }
    }
}

/// Calls function `name` on its arguments' string values.
pub(crate) fn call(name: &str, args: &[String]) -> Result<String, String> {
    let (value, charset) = match args {
        // Synapse answers the empty string to a call with no or too many arguments, and to an empty
        // value (whatever the charset).
        [] | [_, _, _, ..] => return Ok(String::new()),
        [v, ..] if v.is_empty() => return Ok(String::new()),
        [v] => (v, Charset::Utf8),
        [v, c] => (v, Charset::named(c).map_err(|e| format!("{name}(): {e}"))?),
    };
    Ok(match name {
        "base64Encode" => STANDARD.encode(charset.bytes(value)),
        "base64Decode" => base64_decode(value, charset),
        "url-encode" => url_encode(value, charset),
        other => return Err(format!("unknown function {other}()")),
    })
}

/// Lenient, as commons-codec's decoder is: characters outside the alphabet are skipped, the URL-safe
/// alphabet is read too, padding is optional and the first `=` ends the input; the text is trimmed
/// as Java's `trim()` does.
fn base64_decode(value: &str, charset: Charset) -> String {
    const LENIENT: GeneralPurpose = GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        GeneralPurposeConfig::new()
            .with_decode_allow_trailing_bits(true)
            .with_decode_padding_mode(DecodePaddingMode::Indifferent),
    );
    let mut bytes = charset.bytes(value);
    if let Some(end) = bytes.iter().position(|&c| c == b'=') {
        bytes.truncate(end);
    }
    let mut clean: Vec<u8> = bytes
        .into_iter()
        .filter_map(|c| match c {
            b'-' => Some(b'+'),
            b'_' => Some(b'/'),
            c if c.is_ascii_alphanumeric() || c == b'+' || c == b'/' => Some(c),
            _ => None,
        })
        .collect();
    // A single character left over is no byte: commons-codec drops it.
    if clean.len() % 4 == 1 {
        clean.pop();
    }
    let bytes = LENIENT.decode(&clean).unwrap_or_default();
    charset
        .string(&bytes)
        .trim_matches(|c: char| c <= ' ')
        .to_owned()
}

/// commons-httpclient's `URIUtil.encodePathQuery`: the text up to the first `?` is escaped as a URI
/// path, the rest as a query (which keeps the reserved characters); other bytes of the charset's
/// encoding become `%XX`.
fn url_encode(value: &str, charset: Charset) -> String {
    fn unreserved(c: u8) -> bool {
        c.is_ascii_alphanumeric() || b"-_.!~*'()".contains(&c)
    }
    // commons-httpclient's path escaping takes `+` out of the path characters (not the query's).
    fn keep_in_path(c: u8) -> bool {
        unreserved(c) || b";:@&=$,/".contains(&c)
    }
    fn keep_in_query(c: u8) -> bool {
        unreserved(c) || b";/?:@&=+$,".contains(&c)
    }
    let (path, query) = match value.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (value, None),
    };
    let mut out = String::with_capacity(value.len() + 8);
    let mut escape = |text: &str, keep: fn(u8) -> bool| {
        for b in charset.bytes(text) {
            if keep(b) {
                out.push(char::from(b));
            } else {
                out.push_str(&format!("%{b:02X}"));
            }
        }
    };
    escape(path, keep_in_path);
    if let Some(q) = query {
        escape("?", |_| true);
        escape(q, keep_in_query);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(name: &str, args: &[&str]) -> Result<String, String> {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        call(name, &args)
    }

    #[test]
    fn base64_both_ways() {
        assert_eq!(
            c("base64Encode", &["admin:secret"]).unwrap(),
            "YWRtaW46c2VjcmV0"
        );
        assert_eq!(c("base64Encode", &["é"]).unwrap(), "w6k=");
        assert_eq!(c("base64Encode", &["é", "ISO-8859-1"]).unwrap(), "6Q==");
        assert_eq!(
            c("base64Decode", &["YWRtaW46c2VjcmV0"]).unwrap(),
            "admin:secret"
        );
        // Lenient: white space and line breaks skipped, padding optional, URL-safe alphabet, trimmed.
        assert_eq!(
            c("base64Decode", &[" YWRt\naW46 c2VjcmV0 "]).unwrap(),
            "admin:secret"
        );
        assert_eq!(c("base64Decode", &["w6k"]).unwrap(), "é");
        assert_eq!(c("base64Decode", &["6Q", "iso-8859-1"]).unwrap(), "é");
        assert_eq!(c("base64Decode", &["IGEg"]).unwrap(), "a");
        assert_eq!(
            c("base64Decode", &["-_8"]).unwrap(),
            c("base64Decode", &["+/8"]).unwrap()
        );
        assert_eq!(c("base64Decode", &["%%%"]).unwrap(), "");
        // The first `=` ends the input.
        assert_eq!(c("base64Decode", &["YQ==YQ=="]).unwrap(), "a");
    }

    #[test]
    fn url_encode_escapes_a_path_then_a_query() {
        assert_eq!(c("url-encode", &["a b/c"]).unwrap(), "a%20b/c");
        assert_eq!(
            c("url-encode", &["x y?q=a b&r=é#"]).unwrap(),
            "x%20y?q=a%20b&r=%C3%A9%23"
        );
        assert_eq!(c("url-encode", &["100%"]).unwrap(), "100%25");
        assert_eq!(c("url-encode", &["a+b?c=d+e"]).unwrap(), "a%2Bb?c=d+e");
        assert_eq!(c("url-encode", &["é", "ISO-8859-1"]).unwrap(), "%E9");
    }

    #[test]
    fn empty_and_odd_calls() {
        assert_eq!(c("base64Encode", &[]).unwrap(), "");
        assert_eq!(c("base64Encode", &[""]).unwrap(), "");
        assert_eq!(c("base64Encode", &["", "bogus"]).unwrap(), "");
        assert_eq!(c("url-encode", &["a", "UTF-8", "x"]).unwrap(), "");
        assert!(c("base64Encode", &["a", "EBCDIC"])
            .unwrap_err()
            .contains("EBCDIC"));
        assert!(c("nope", &["a"]).is_err());
    }

    #[test]
    fn calls_are_found_in_xpath() {
        assert!(called_in("concat(base64Encode(//a), 'x')"));
        assert!(called_in("url-encode ($sluice.p0)"));
        assert!(!called_in("//base64Encode"));
        assert!(!called_in("my-url-encode(1)"));
        // A prefixed call is found after the rewrite took the prefix away.
        assert!(!called_in("s:url-encode(1)"));
    }
}
