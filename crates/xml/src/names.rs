//! Byte classes of ASCII XML names, for the readers that scan names straight from the bytes (the
//! streaming XPath reader and the streaming XSLT tokenizer). Non-ASCII names are left to libxml2.
//! And [`PrefixIndex`], their namespace lookup once many bindings are in scope.

use std::collections::HashMap;

/// Prefixes are the sender's, so the maps are seeded per process (foldhash's `RandomState`); a set
/// of colliding prefixes would still cost no more than the bindings in scope, which Sluice caps.
/// A prefix of at most [`SHORT_PREFIX`] bytes (nearly all) is keyed by one word: hashed and
/// compared as an integer, with no byte-slice hashing or `memcmp`.
#[derive(Debug, Default)]
struct Latest<'a> {
    short: HashMap<u64, usize, foldhash::fast::RandomState>,
    long: HashMap<&'a [u8], usize, foldhash::fast::RandomState>,
}

/// The longest prefix [`Latest`] keys by a word: its bytes, then its length in the top byte.
const SHORT_PREFIX: usize = 7;

/// `prefix` as one word when it is short: its bytes (little-endian) and its length in the top byte,
/// so two words are equal exactly when the prefixes are.
#[inline(always)]
fn short_key(prefix: &[u8]) -> Option<u64> {
    if prefix.len() > SHORT_PREFIX {
        return None;
    }
    let mut word = (prefix.len() as u64) << 56;
    for (i, &b) in prefix.iter().enumerate() {
        word |= u64::from(b) << (8 * i);
    }
    Some(word)
}

impl<'a> Latest<'a> {
    #[inline]
    fn insert(&mut self, prefix: &'a [u8], at: usize) -> Option<usize> {
        match short_key(prefix) {
            Some(k) => self.short.insert(k, at),
            None => self.long.insert(prefix, at),
        }
    }

    #[inline]
    fn remove(&mut self, prefix: &[u8]) {
        match short_key(prefix) {
            Some(k) => self.short.remove(&k),
            None => self.long.remove(prefix),
        };
    }

    #[inline]
    fn get_mut(&mut self, prefix: &[u8]) -> Option<&mut usize> {
        match short_key(prefix) {
            Some(k) => self.short.get_mut(&k),
            None => self.long.get_mut(prefix),
        }
    }

    #[inline]
    fn get(&self, prefix: &[u8]) -> Option<&usize> {
        match short_key(prefix) {
            Some(k) => self.short.get(&k),
            None => self.long.get(prefix),
        }
    }

    fn reserve(&mut self, n: usize) {
        self.short.reserve(n);
    }

    fn clear(&mut self) {
        self.short.clear();
        self.long.clear();
    }
}

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

/// Where the innermost binding of each prefix is in a reader's list of the namespace bindings in
/// scope (outermost first), for when there are many: a reverse scan of the list per prefixed name
/// would make a document with many declarations and many prefixed names quadratic. The list stays
/// the reader's; the index covers its first [`PrefixIndex::len`] bindings, pushed and popped with
/// them.
#[derive(Debug, Default)]
pub struct PrefixIndex<'a> {
    /// Prefix ("" for the default namespace) to the index of its innermost binding; made at the
    /// first push (an index that stays empty, the usual case, costs nothing to make).
    latest: Option<Latest<'a>>,
    /// Per binding, the index of the binding of the same prefix it hides, or [`HIDES_NONE`].
    hides: Vec<usize>,
}

const HIDES_NONE: usize = usize::MAX;

impl<'a> PrefixIndex<'a> {
    /// How many bindings (the first ones of the list) it covers.
    pub fn len(&self) -> usize {
        self.hides.len()
    }

    pub fn is_empty(&self) -> bool {
        self.hides.is_empty()
    }

    /// The next binding of the list (index [`PrefixIndex::len`]) binds `prefix`. Returns the
    /// index of the binding of `prefix` it hides, if any.
    pub fn push(&mut self, prefix: &'a str) -> Option<usize> {
        let at = self.hides.len();
        let latest = self.latest.get_or_insert_with(Latest::default);
        let hidden = latest.insert(prefix.as_bytes(), at);
        self.hides.push(hidden.unwrap_or(HIDES_NONE));
        hidden
    }

    /// Room for `n` more bindings without growing.
    pub fn reserve(&mut self, n: usize) {
        self.hides.reserve(n);
        self.latest.get_or_insert_with(Latest::default).reserve(n);
    }

    /// The last binding, which binds `prefix`, goes out of scope.
    pub fn pop(&mut self, prefix: &str) {
        let (Some(hidden), Some(latest)) = (self.hides.pop(), self.latest.as_mut()) else {
            return;
        };
        if hidden == HIDES_NONE {
            latest.remove(prefix.as_bytes());
        } else if let Some(at) = latest.get_mut(prefix.as_bytes()) {
            *at = hidden;
        }
    }

    /// Covers no binding any more.
    pub fn clear(&mut self) {
        self.hides.clear();
        if let Some(latest) = self.latest.as_mut() {
            latest.clear();
        }
    }

    /// The index of the innermost binding of `prefix` (its bytes: a reader need not make it a
    /// `str` first).
    pub fn get(&self, prefix: &[u8]) -> Option<usize> {
        self.latest.as_ref()?.get(prefix).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_index_follows_a_list_of_bindings() {
        let mut list: Vec<&str> = Vec::new();
        let mut index = PrefixIndex::default();
        let innermost = |list: &[&str], p: &str| list.iter().rposition(|q| *q == p);
        // Pushes and pops in a fixed pattern, with prefixes that repeat, and many that do not.
        let prefixes = ["a", "", "b", "a", "c", "", "a", "b", "abcdefgh", "abcdefg"];
        let many: Vec<String> = (0..300).map(|i| format!("p{i}")).collect();
        let mut seed = 7u32;
        for step in 0..6000 {
            seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            if list.is_empty() || !(seed >> 16).is_multiple_of(3) {
                let p = match (seed >> 8) as usize % (prefixes.len() + 2) {
                    k if k < prefixes.len() => prefixes[k],
                    _ => many[(seed >> 4) as usize % many.len()].as_str(),
                };
                list.push(p);
                index.push(p);
            } else if let Some(p) = list.pop() {
                index.pop(p);
            }
            if step % 2100 == 2099 {
                list.clear();
                index.clear();
            }
            assert_eq!(index.len(), list.len(), "step {step}");
            for p in [
                "a",
                "",
                "b",
                "c",
                "d",
                "abcdefgh",
                "abcdefg",
                "abcdefghi",
                "p7",
                "p299",
            ] {
                assert_eq!(
                    index.get(p.as_bytes()),
                    innermost(&list, p),
                    "step {step}: {p:?}"
                );
            }
        }
    }

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
