//! Characters as XML 1.0 reads them, for the readers that scan the bytes themselves (the streaming
//! XPath reader and the streaming XSLT tokenizer): references, line ends and attribute values, the
//! way libxml2 reports them, so a fix lands once for both.

use std::borrow::Cow;

/// XML 1.0 `Char` (Rust strings hold no surrogates).
#[inline]
pub fn is_xml_char(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r') || (c >= ' ' && c != '\u{FFFE}' && c != '\u{FFFF}')
}

/// A predefined entity or a character reference: the name between `&` and `;`. `None` for any
/// other name, a number that is no XML character, or digits that are not the reference's base.
/// Leading zeros are allowed, as libxml2 allows them.
#[inline]
pub fn resolve_ref(name: &str) -> Option<char> {
    let c = match name {
        "lt" => '<',
        "gt" => '>',
        "amp" => '&',
        "apos" => '\'',
        "quot" => '"',
        _ => {
            let n = if let Some(h) = name.strip_prefix("#x") {
                if h.is_empty() || !h.bytes().all(|b| b.is_ascii_hexdigit()) {
                    return None;
                }
                u32::from_str_radix(h, 16).ok()?
            } else {
                let d = name.strip_prefix('#')?;
                if d.is_empty() || !d.bytes().all(|b| b.is_ascii_digit()) {
                    return None;
                }
                d.parse().ok()?
            };
            char::from_u32(n)?
        }
    };
    is_xml_char(c).then_some(c)
}

/// CR LF and a lone CR become LF, as every XML parser reports line ends; appended to `out`.
#[inline]
pub fn normalize_eol_into(s: &str, out: &mut String) {
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\r' {
            if chars.peek() == Some(&'\n') {
                chars.next();
            }
            out.push('\n');
        } else {
            out.push(c);
        }
    }
}

/// [`normalize_eol_into`], borrowing `s` when it has no CR.
pub fn normalize_eol(s: &str) -> Cow<'_, str> {
    if memchr::memchr(b'\r', s.as_bytes()).is_none() {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    normalize_eol_into(s, &mut out);
    Cow::Owned(out)
}

/// An attribute value with references or white space in it, as libxml2 reports it without a DTD
/// (every attribute is CDATA): CR LF is one space, tab, LF and CR each a space, and references are
/// replaced afterwards, so `&#10;` stays a line feed. `None` for a malformed reference. The caller
/// has checked what else the value may not hold (`<`, control characters).
pub fn attr_value_replaced(raw: &str) -> Option<String> {
    let mut out = String::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(i) = rest.find(['&', '\t', '\n', '\r']) {
        out.push_str(&rest[..i]);
        let c = rest.as_bytes()[i];
        rest = &rest[i + 1..];
        if c == b'&' {
            let end = rest.find(';')?;
            out.push(resolve_ref(&rest[..end])?);
            rest = &rest[end + 1..];
        } else {
            if c == b'\r' && rest.starts_with('\n') {
                rest = &rest[1..];
            }
            out.push(' ');
        }
    }
    out.push_str(rest);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_line_ends_and_attribute_values_read_as_libxml2_reads_them() {
        assert_eq!(resolve_ref("amp"), Some('&'));
        assert_eq!(resolve_ref("#x41"), Some('A'));
        assert_eq!(resolve_ref(&format!("#x{}41", "0".repeat(58))), Some('A'));
        assert_eq!(resolve_ref("#65"), Some('A'));
        for bad in [
            "#0",
            "#xD800",
            "#x",
            "#X41",
            "#xFFFE",
            "nbsp",
            "#99999999999",
        ] {
            assert_eq!(resolve_ref(bad), None, "{bad}");
        }
        assert_eq!(normalize_eol("a\r\nb\rc\n"), "a\nb\nc\n");
        assert!(matches!(normalize_eol("a\nb"), Cow::Borrowed(_)));
        assert_eq!(
            attr_value_replaced("a\r\nb\tc&#10;d&amp;").as_deref(),
            Some("a b c\nd&")
        );
        assert_eq!(attr_value_replaced("a&b"), None);
    }
}
