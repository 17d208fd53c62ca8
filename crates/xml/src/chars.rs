//! Characters as XML 1.0 reads them, for the readers that scan the bytes themselves (the streaming
//! XPath reader and the streaming XSLT tokenizer): references, line ends and attribute values, the
//! way libxml2 reports them, so a fix lands once for both.

use std::borrow::Cow;

/// XML 1.0 `Char` (Rust strings hold no surrogates).
#[inline]
pub fn is_xml_char(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r') || (c >= ' ' && c != '\u{FFFE}' && c != '\u{FFFF}')
}

/// One pass over `b` for the characters XML 1.0 does not allow: `None` at a control character
/// (below 0x20, but tab, LF and CR); else whether `b` has bytes of non-ASCII characters, among
/// which U+FFFE and U+FFFF would be. Branch-free within a chunk, so that it vectorises (a CDATA
/// section may be megabytes).
#[inline]
pub fn control_scan(b: &[u8]) -> Option<bool> {
    let mut high = false;
    for chunk in b.chunks(64) {
        let (mut ctrl, mut h) = (false, false);
        for &c in chunk {
            ctrl |= c < 0x20 && c != b'\t' && c != b'\n' && c != b'\r';
            h |= c >= 0x80;
        }
        if ctrl {
            return None;
        }
        high |= h;
    }
    Some(high)
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

/// Whether every `&` in `text` begins a reference [`resolve_ref`] takes (the name up to the next
/// `;`), checked without building the name or the character: for text that is validated but not
/// kept. Linear in `text`, each byte looked at once.
pub fn refs_valid(text: &[u8]) -> bool {
    let mut i = 0;
    while let Some(a) = next_amp(text, i) {
        match short_char_ref(text, a).or_else(|| ref_end(text, a + 1)) {
            Some(semi) => i = semi + 1,
            None => return false,
        }
    }
    true
}

/// The next `&` at or after `i`.
#[inline]
fn next_amp(text: &[u8], i: usize) -> Option<usize> {
    // References in a row are the case worth a fast answer.
    match text.get(i) {
        Some(b'&') => Some(i),
        Some(_) => memchr::memchr(b'&', &text[i..]).map(|k| i + k),
        None => None,
    }
}

/// The index of the `;` ending a valid character reference at `a` (its `&`) when 16 bytes are left
/// from it and it has at most six digits: `None` for anything else, valid or not, which
/// [`ref_end`] then reads. Bounded, so that neither the bounds nor an overflow is checked a digit
/// at a time.
#[inline(always)]
fn short_char_ref(text: &[u8], a: usize) -> Option<usize> {
    let s = text.get(a..)?.first_chunk::<16>()?;
    if s[1] != b'#' {
        return None;
    }
    // The base known where the digits are read: a shift, or a multiply by a constant.
    let (n, start, j) = if s[2] == b'x' {
        digits::<16>(s, 3)
    } else {
        digits::<10>(s, 2)
    };
    let ok = j > start
        && s[j & 15] == b';'
        && (matches!(n, 0x9 | 0xA | 0xD)
            || (0x20..=0x10_FFFF).contains(&n)
                && !(0xD800..=0xDFFF).contains(&n)
                && n != 0xFFFE
                && n != 0xFFFF);
    ok.then_some(a + j)
}

/// The value of up to six digits of base `RADIX` in `s` from `start`, and the index after them.
#[inline(always)]
fn digits<const RADIX: u32>(s: &[u8; 16], start: usize) -> (u32, usize, usize) {
    let mut j = start;
    let mut n: u32 = 0;
    while j < start + 6 {
        let d = u32::from(DIGIT[usize::from(s[j & 15])]);
        if d >= RADIX {
            break;
        }
        n = n * RADIX + d;
        j += 1;
    }
    (n, start, j)
}

/// Each byte's value as a digit of base 16 (`0xFF`: none); a decimal digit is below 10.
const DIGIT: [u8; 256] = {
    let mut t = [0xFF; 256];
    let mut c = 0;
    while c < 256 {
        t[c] = match c as u8 {
            b @ b'0'..=b'9' => b - b'0',
            b @ b'a'..=b'f' => b - b'a' + 10,
            b @ b'A'..=b'F' => b - b'A' + 10,
            _ => 0xFF,
        };
        c += 1;
    }
    t
};

/// The index of the `;` ending the valid reference whose name starts at `i`, as [`resolve_ref`]
/// would take it.
#[inline]
fn ref_end(text: &[u8], mut i: usize) -> Option<usize> {
    if text.get(i) != Some(&b'#') {
        let semi = i + text.get(i..)?.iter().take(5).position(|&b| b == b';')?;
        return matches!(&text[i..semi], b"lt" | b"gt" | b"amp" | b"apos" | b"quot")
            .then_some(semi);
    }
    i += 1;
    let radix = if text.get(i) == Some(&b'x') {
        i += 1;
        16
    } else {
        10
    };
    let start = i;
    // Leading zeros add nothing: eight at a time.
    while text
        .get(i..)
        .and_then(<[u8]>::first_chunk::<8>)
        .is_some_and(|w| u64::from_ne_bytes(*w) == u64::from_ne_bytes(*b"00000000"))
    {
        i += 8;
    }
    let mut n: u32 = 0;
    loop {
        let d = u32::from(DIGIT[usize::from(*text.get(i)?)]);
        if d >= radix {
            break;
        }
        // Past the last character: no longer a character whatever follows.
        n = n * radix + d;
        if n > 0x10_FFFF {
            return None;
        }
        i += 1;
    }
    let ok = i > start
        && text[i] == b';'
        && (matches!(n, 0x9 | 0xA | 0xD)
            || (0x20..=0x10_FFFF).contains(&n)
                && !(0xD800..=0xDFFF).contains(&n)
                && n != 0xFFFE
                && n != 0xFFFF);
    ok.then_some(i)
}

/// CR LF and a lone CR become LF, as every XML parser reports line ends; appended to `out`.
#[inline]
pub fn normalize_eol_into(s: &str, out: &mut String) {
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\r' {
            chars.next_if_eq(&'\n');
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

    /// What [`refs_valid`] answers, the slow way: each name up to `;` through [`resolve_ref`].
    fn refs_valid_by_resolving(text: &str) -> bool {
        let mut rest = text;
        while let Some(a) = rest.find('&') {
            let after = &rest[a + 1..];
            let Some(semi) = after.find(';') else {
                return false;
            };
            if resolve_ref(&after[..semi]).is_none() {
                return false;
            }
            rest = &after[semi + 1..];
        }
        true
    }

    /// References good and bad, and text around them.
    const PIECES: [&str; 78] = [
        "",
        "a",
        "&",
        ";",
        "&amp;",
        "&lt;",
        "&gt;",
        "&apos;",
        "&quot;",
        "&quo;",
        "&ampx;",
        "&#x41;",
        "&#65;",
        "&#x;",
        "&#;",
        "&#X41;",
        "&#x0;",
        "&#xD800;",
        "&#xFFFE;",
        "&#x10FFFF;",
        "&#x110000;",
        "&#1114111;",
        "&#1114112;",
        "&#99999999999;",
        "&#x00000000000000000000000000000000000000041;",
        "&#x00000000;",
        "&#0000000000000000;",
        "&#00000000000000065;",
        "&#x0000000000110000;",
        "&#x000000000000000g;",
        "&#9;",
        "&#10;",
        "&#13;",
        "&#31;",
        "&#x4g;",
        "&#6a;",
        "&nbsp;",
        "&a",
        "x&#x41",
        "&;",
        "&#xfffd;",
        // Around what one word holds, and the edges of the characters XML allows.
        "&#xD7FF;",
        "&#xE000;",
        "&#xFFFF;",
        "&#x1F;",
        "&#x20;",
        "&#x0041;",
        "&#x00041;",
        "&#55295;",
        "&#55296;",
        "&#57344;",
        "&#65535;",
        "&#65536;",
        "&#99999;",
        "&#123456;",
        "&#0;",
        "&#x9;",
        "&#xa;",
        // Bytes beside the digits' ranges, and non-ASCII, where a word is read at once.
        "&#x/1;",
        "&#x:;",
        "&#x@1;",
        "&#xG;",
        "&#x`;",
        "&#xg1;",
        "&#x1é;",
        "&#é;",
        "&#/;",
        "&#1:;",
        "&#1a;",
        "&#x\u{1};",
        "&#x\u{41};",
        "&#xFFFD;",
        "&#65533;",
        "&#65534;",
        "&#0065;",
        "&#x#41;",
        "&##65;",
        "&#x;41;",
    ];

    #[test]
    fn refs_valid_answers_as_resolve_ref() {
        let pieces = PIECES;
        // Long texts of random pieces: references at every place, a bad one late.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = |n: usize| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % n as u64) as usize
        };
        let good: Vec<&str> = pieces
            .iter()
            .copied()
            .filter(|p| refs_valid_by_resolving(p))
            .collect();
        for _ in 0..20_000 {
            let mut t = String::new();
            while t.len() < 40 + next(300) {
                // Mostly good pieces, so that a bad one comes late in the text.
                let piece = if next(40) == 0 {
                    pieces[next(pieces.len())]
                } else {
                    good[next(good.len())]
                };
                t.push_str(piece);
            }
            assert_eq!(
                refs_valid(t.as_bytes()),
                refs_valid_by_resolving(&t),
                "{t:?}"
            );
        }
        for a in pieces {
            for b in pieces {
                let t = format!("{a}t{b}");
                assert_eq!(
                    refs_valid(t.as_bytes()),
                    refs_valid_by_resolving(&t),
                    "{t:?}"
                );
                // With text after, and without.
                for t in [format!("{a}{b}"), format!("{a}{b}........")] {
                    assert_eq!(
                        refs_valid(t.as_bytes()),
                        refs_valid_by_resolving(&t),
                        "{t:?}"
                    );
                }
            }
        }
    }
}
