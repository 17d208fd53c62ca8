//! Byte classes of ASCII XML names, for the readers that scan names straight from the bytes (the
//! streaming XPath reader and the streaming XSLT tokenizer). Non-ASCII names are left to libxml2.

/// The bit of a byte that can start a name: an ASCII letter or `_`.
pub const NAME_START: u8 = 1;
/// The bit of a byte that can continue a name: a start byte, a digit, `-` or `.`, and `:` in a
/// table made for QNames.
pub const NAME_REST: u8 = 2;

/// The [`NAME_START`] and [`NAME_REST`] bits of every byte; with `colon`, `:` continues a name (a
/// QName's prefix and local part are then told apart by the caller).
pub const fn name_classes(colon: bool) -> [u8; 256] {
    let mut t = [0u8; 256];
    let mut c = 0;
    while c < 256 {
        t[c] = match c as u8 {
            b'a'..=b'z' | b'A'..=b'Z' | b'_' => NAME_START | NAME_REST,
            b'0'..=b'9' | b'-' | b'.' => NAME_REST,
            b':' if colon => NAME_REST,
            _ => 0,
        };
        c += 1;
    }
    t
}

const NC_CLASS: [u8; 256] = name_classes(false);

/// The end of the run of NCName bytes in `b` from `from` (`from` itself when there is none).
#[inline]
pub fn ncname_end(b: &[u8], from: usize) -> usize {
    let mut j = from;
    while j < b.len() && NC_CLASS[usize::from(b[j])] & NAME_REST != 0 {
        j += 1;
    }
    j
}

/// Whether `c` can start a name.
#[inline]
pub fn starts_name(c: u8) -> bool {
    NC_CLASS[usize::from(c)] & NAME_START != 0
}

/// An ASCII NCName: a name without a colon.
#[inline]
pub fn is_ncname(s: &str) -> bool {
    let b = s.as_bytes();
    b.first().is_some_and(|&c| starts_name(c)) && ncname_end(b, 1) == b.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_follow_the_ascii_name_rules() {
        let (nc, q) = (name_classes(false), name_classes(true));
        for c in 0..=255u8 {
            let start = c.is_ascii_alphabetic() || c == b'_';
            let rest = start || c.is_ascii_digit() || c == b'-' || c == b'.';
            assert_eq!(nc[usize::from(c)] & NAME_START != 0, start, "{c}");
            assert_eq!(nc[usize::from(c)] & NAME_REST != 0, rest, "{c}");
            assert_eq!(q[usize::from(c)] & NAME_REST != 0, rest || c == b':', "{c}");
            assert_eq!(q[usize::from(c)] & NAME_START != 0, start, "{c}");
        }
        for (name, ok) in [
            ("a", true),
            ("_a.b-1", true),
            ("1a", false),
            ("-a", false),
            (".a", false),
            ("a:b", false),
            ("", false),
            ("é", false),
        ] {
            assert_eq!(is_ncname(name), ok, "{name}");
        }
        assert_eq!(ncname_end(b"<ab-1>", 1), 5);
        assert_eq!(ncname_end(b"<>", 1), 1);
    }
}
