//! The byte, word, text and attribute scanners against byte-by-byte readings.

use super::*;

/// Values up to and past [`SHORT_VALUE_WORDS`] words long, with each byte that has a class at each place, read from
/// one load (short) or by a search: the class of each is its bytes' class, whatever follows it.
#[test]
fn short_and_long_values_are_classed_as_their_bytes() {
    for len in 0..8 * SHORT_VALUE_WORDS + 10 {
        for at in 0..len.max(1) {
            for b in ["<", "&", "\t", "\u{1}", "é", "a", "'"] {
                let mut v = "x".repeat(len);
                if len > 0 {
                    v.replace_range(at..at + 1, b);
                }
                for q in ['"', '\''] {
                    if v.contains(q) {
                        continue;
                    }
                    for after in ["", " b='<&é'", " c='1'"] {
                        let tag = format!(" a={q}{v}{q}{after}");
                        let mut out = Vec::new();
                        assert!(read_attributes(&tag, &mut out), "{tag:?}");
                        assert_eq!(out[0].1, v, "{tag:?}");
                        assert_eq!(out[0].2 & !V_QNAME, bytes_class(v.as_bytes()), "{tag:?}");
                    }
                }
            }
        }
    }
}

#[test]
fn attributes_are_read_and_classified_in_one_pass() {
    let mut out = Vec::new();
    assert!(read_attributes(" a='1' b = \"x&amp;\ty\" ", &mut out));
    assert_eq!(
        out,
        vec![
            ("a", "1", V_QNAME),
            ("b", "x&amp;\ty", V_AMP | V_WS | V_QNAME)
        ]
    );
    // A name that is not an ASCII QName is left for `is_qname`, unmarked.
    out.clear();
    assert!(read_attributes(" é='1' a:b:c='2' x:1='3'", &mut out));
    assert_eq!(out, vec![("é", "1", 0), ("a:b:c", "2", 0), ("x:1", "3", 0)]);
    for bad in ["a='1'", " a", " a=1", " a='1", " ='1'", " a='1'b='2'"] {
        assert!(!read_attributes(bad, &mut Vec::new()), "{bad}");
    }
    assert_eq!(value_class("a<b\u{1}é".as_bytes()), V_LT | V_CTRL | V_HIGH);
    // Word at a time as byte by byte: each interesting byte at each place, in values of each
    // length up to three words.
    for len in 0..=24 {
        for at in 0..len {
            for b in [
                0u8, 9, 10, 13, 0x1f, 0x20, b'&', b'<', b'>', 0x7f, 0x80, 0xff,
            ] {
                let mut v = vec![b'a'; len];
                v[at] = b;
                assert_eq!(value_class(&v), bytes_class(&v), "{v:?}");
                assert_eq!(value_class(&v) == 0, bytes_class(&[b]) == 0, "{v:?}");
            }
        }
    }
    assert_eq!(attr_value("x&lt;\r\ny").as_deref(), Some("x< y"));
    assert_eq!(attr_value("a<b"), None);
    assert_eq!(attr_value("a\u{FFFE}"), None);
}

/// The word-at-a-time search for the `<` ending short text (and the classes of the bytes before
/// it) agrees with a byte-by-byte reading on words of every interesting byte in every position.
#[test]
fn text_ends_agree_with_the_byte_table() {
    let bytes = [
        0u8, 1, 8, 9, 10, 11, 12, 13, 14, 0x1f, 0x20, 0x21, b'&', b'<', b'=', b'>', b']', b'a',
        0x7f, 0x80, 0xc3, 0xff,
    ];
    let mut r = Rng(0x2545_f491_4f6c_dd1d);
    for _ in 0..200_000 {
        let w: Vec<u8> = (0..8).map(|_| bytes[r.below(bytes.len())]).collect();
        let want = w.iter().position(|&c| c == b'<').map(|len| {
            let seen = w[..len]
                .iter()
                .fold(0, |acc, &c| acc | BYTE_CLASS[usize::from(c)]);
            (len, seen)
        });
        assert_eq!(short_text(&w, 0), want, "{w:?}");
    }
    // Longer texts, read a word at a time and, past `LONG_TEXT`, searched then classified: mostly
    // plain bytes, so that words without a flag occur.
    for _ in 0..100_000 {
        let len = r.below(200);
        let w: Vec<u8> = (0..len)
            .map(|_| {
                if r.chance(15) {
                    bytes[r.below(bytes.len())]
                } else {
                    b'a'
                }
            })
            .collect();
        let end = w.iter().position(|&c| c == b'<').unwrap_or(w.len());
        let seen = w[..end]
            .iter()
            .fold(0, |acc, &c| acc | BYTE_CLASS[usize::from(c)]);
        assert_eq!(text_end(&w, 0), (end, seen), "{w:?}");
    }
}

#[test]
fn word_helpers() {
    let doc = b"ab<cdef>ghijklmn&<op";
    assert_eq!(short_text(doc, 0), Some((2, 0)));
    assert_eq!(short_text(doc, 2), Some((0, 0)));
    assert_eq!(short_text(doc, 8), None); // no `<` in `ghijklmn`
    assert_eq!(short_text(doc, 10), Some((7, AMP)));
    assert_eq!(short_text(doc, 14), None); // fewer than eight bytes left
    assert_eq!(
        short_text(b"\r\x01\xc3\xa9>]<.", 0),
        Some((6, CR | CTRL | HIGH | GT))
    );
    let names = b"<order><orders><order><symbol>aaaaaaaaab aaaaaaaaab aaaaaaaaac";
    assert!(same_name(names, 1, 16, 5));
    assert!(!same_name(names, 1, 8, 6));
    assert!(same_name(names, 1, 8, 5));
    assert!(!same_name(names, 1, 23, 5));
    assert!(same_name(names, 31, 42, 10));
    assert!(!same_name(names, 31, 53, 10));
    assert!(!same_name(names, 60, 1, 5)); // out of range
}

/// A word's classes computed at once are those of its bytes looked up one by one, for every prefix
/// of the word, on bytes drawn mostly from the classes' edges.
#[test]
fn word_classes_are_the_bytes_classes() {
    let edges = [
        0u8, 1, 8, 9, 10, 11, 12, 13, 14, 0x1f, 0x20, 0x21, b'&', b'<', b'>', b'=', b'?', 0x7e,
        0x7f, 0x80, 0x81, 0xa0, 0xdf, 0xe0, 0xfe, 0xff, b'a', b';',
    ];
    let mut r = crate::testing::Rng(0x9e37_79b9_7f4a_7c15);
    for _ in 0..200_000 {
        let bytes: [u8; 8] = std::array::from_fn(|_| {
            if r.below(4) == 0 {
                r.next() as u8
            } else {
                edges[r.below(edges.len())]
            }
        });
        let w = u64::from_le_bytes(bytes);
        for n in 0..=8 {
            let mask = if n == 8 {
                u64::MAX
            } else {
                (1u64 << (8 * n)) - 1
            };
            let want = bytes[..n]
                .iter()
                .fold(0, |s, &c| s | BYTE_CLASS[usize::from(c)]);
            assert_eq!(word_class(w, mask), want, "{bytes:?} first {n}");
        }
    }
}
