//! A long run of attributes (a start tag with many), read 64 bytes at a time from AVX2 bitmasks
//! instead of byte loops.
//!
//! | Step | How |
//! |---|---|
//! | Classify a window | Two 32-byte loads; white space and name bytes from two 16-entry nibble tables (`vpshufb`), `=`, `"`, `:` and the bytes a value's class depends on by comparisons; one 64-bit mask each |
//! | Read an attribute | Bit arithmetic on the masks: the name runs from the first byte after the white space to the `=`, the value from the `"` right after it to the next `"` |
//! | Anything else | Single quotes, white space around `=`, a name that is not an ASCII QName, an attribute that does not end within the window: that one attribute goes to [`next_attribute`](super::scan::next_attribute), the byte loop, and the window moves on |
//!
//! Every attribute read here is one [`next_attribute`](super::scan::next_attribute) would read the same way, to the class bits
//! (a value with a byte its class depends on is classed by [`value_class`]); the tests compare the
//! two on many generated tags. Where the CPU has no AVX2, [`read_attributes`] keeps the byte loop.
//!
//! [`read_attributes`]: super::scan::read_attributes

#[cfg(target_arch = "x86_64")]
use super::scan::{read_bytewise, read_one, value_class, NAME_CLASS, V_QNAME};
#[cfg(target_arch = "x86_64")]
use super::MAX_ATTRS;
#[cfg(target_arch = "x86_64")]
use sluice_xml::names::NAME_START;

/// Attribute text at least this long is read by [`read_long`] (ordinary tags, a few attributes,
/// keep the byte loop, which costs less for them).
pub(super) const LONG_ATTRS: usize = 256;

/// [`read_attributes`](super::scan::read_attributes) for a long attribute text `raw`: `None`
/// where the CPU has no AVX2 (the caller reads it the usual way).
#[cfg(target_arch = "x86_64")]
pub(super) fn read_long<'a>(raw: &'a str, out: &mut Vec<(&'a str, &'a str, u8)>) -> Option<bool> {
    let simd = pulp::x86::V3::try_new()?;
    Some(simd.vectorize(Run { simd, raw, out }))
}

#[cfg(not(target_arch = "x86_64"))]
pub(super) fn read_long<'a>(_: &'a str, _: &mut Vec<(&'a str, &'a str, u8)>) -> Option<bool> {
    None
}

#[cfg(target_arch = "x86_64")]
struct Run<'a, 'o> {
    simd: pulp::x86::V3,
    raw: &'a str,
    out: &'o mut Vec<(&'a str, &'a str, u8)>,
}

#[cfg(target_arch = "x86_64")]
impl pulp::NullaryFnOnce for Run<'_, '_> {
    type Output = bool;

    #[inline(always)]
    fn call(self) -> bool {
        let Run { simd, raw, out } = self;
        read_here(simd, raw, out)
    }
}

/// The masks of one 64-byte window: bit `k` stands for the window's byte `k`.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy, Default)]
pub(super) struct Masks {
    pub(super) ws: u64,
    /// Bytes that are not an ASCII name byte (letters, digits, `-`, `.`, `_`, `:`).
    pub(super) not_name: u64,
    pub(super) eq: u64,
    pub(super) quote: u64,
    pub(super) colon: u64,
    /// Bytes a value's class depends on: below 0x20, non-ASCII, `<`, `&`.
    pub(super) classed: u64,
    /// `>`, where a tag ends ([`super::tag_run`]).
    pub(super) gt: u64,
}

/// Nibble tables: a byte has class bit `k` when its low nibble's entry and its high nibble's
/// entry both have it. Bits 0 to 4 are the name bytes (digits and `:`; `A`-`O` and `a`-`o`; `P`-`Z`
/// and `p`-`z`; `-` and `.`; `_`), bits 5 and 6 white space (tab, line feed, carriage return;
/// space).
#[cfg(target_arch = "x86_64")]
const LOW_NIBBLE: [u8; 16] = {
    let mut t = [0u8; 16];
    let mut lo = 0;
    while lo < 16 {
        let mut bits = 0;
        if lo <= 0xA {
            bits |= 1 | 4; // 0-9 and ':' (0x30-0x3A); P-Z and p-z (0x50-0x5A, 0x70-0x7A)
        }
        if lo >= 1 {
            bits |= 2; // A-O, a-o
        }
        if lo == 0xD || lo == 0xE {
            bits |= 8; // '-', '.'
        }
        if lo == 0xF {
            bits |= 16; // '_'
        }
        if lo == 0x9 || lo == 0xA || lo == 0xD {
            bits |= 32; // tab, line feed, carriage return
        }
        if lo == 0 {
            bits |= 64; // space
        }
        t[lo] = bits;
        lo += 1;
    }
    t
};

#[cfg(target_arch = "x86_64")]
const HIGH_NIBBLE: [u8; 16] = {
    let mut t = [0u8; 16];
    t[0x0] = 32;
    t[0x2] = 8 | 64;
    t[0x3] = 1;
    t[0x4] = 2;
    t[0x5] = 4 | 16;
    t[0x6] = 2;
    t[0x7] = 4;
    t
};

/// The masks of the 32 bytes `a`, as 32-bit masks in the low half.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn masks32(simd: pulp::x86::V3, a: &[u8; 32]) -> [u32; 7] {
    use core::arch::x86_64::__m256i;
    let (avx, avx2) = (simd.avx, simd.avx2);
    let splat = |b: u8| avx._mm256_set1_epi8(i8::from_ne_bytes([b]));
    let table = |t: &[u8; 16]| -> __m256i {
        let mut both = [0u8; 32];
        both[..16].copy_from_slice(t);
        both[16..].copy_from_slice(t);
        pulp::cast(both)
    };
    let v: __m256i = pulp::cast(*a);
    let low = avx2._mm256_and_si256(v, splat(0x0F));
    let high = avx2._mm256_and_si256(avx2._mm256_srli_epi16::<4>(v), splat(0x0F));
    let class = avx2._mm256_and_si256(
        avx2._mm256_shuffle_epi8(table(&LOW_NIBBLE), low),
        avx2._mm256_shuffle_epi8(table(&HIGH_NIBBLE), high),
    );
    let zero = avx._mm256_setzero_si256();
    let none_of = |bits: u8| {
        let m = avx2._mm256_cmpeq_epi8(avx2._mm256_and_si256(class, splat(bits)), zero);
        avx2._mm256_movemask_epi8(m) as u32
    };
    let eq = |b: u8| avx2._mm256_movemask_epi8(avx2._mm256_cmpeq_epi8(v, splat(b))) as u32;
    // Signed: below 0x20 and from 0x80 on (negative) alike.
    let low_or_high = avx2._mm256_cmpgt_epi8(splat(0x20), v);
    let classed = avx2._mm256_movemask_epi8(avx2._mm256_or_si256(
        low_or_high,
        avx2._mm256_or_si256(
            avx2._mm256_cmpeq_epi8(v, splat(b'<')),
            avx2._mm256_cmpeq_epi8(v, splat(b'&')),
        ),
    )) as u32;
    [
        !none_of(96),
        none_of(31),
        eq(b'='),
        eq(b'"'),
        eq(b':'),
        classed,
        eq(b'>'),
    ]
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(super) fn masks(simd: pulp::x86::V3, w: &[u8; 64]) -> Masks {
    let (lo, hi) = w.split_at(32);
    let (Ok(lo), Ok(hi)) = (<&[u8; 32]>::try_from(lo), <&[u8; 32]>::try_from(hi)) else {
        unreachable!("64 bytes split in two halves of 32")
    };
    let (l, h) = (masks32(simd, lo), masks32(simd, hi));
    let join = |k: usize| u64::from(l[k]) | (u64::from(h[k]) << 32);
    Masks {
        ws: join(0),
        not_name: join(1),
        eq: join(2),
        quote: join(3),
        colon: join(4),
        classed: join(5),
        gt: join(6),
    }
}

/// Bits `from..to` (`from <= to < 64`).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(super) fn span(from: u32, to: u32) -> u64 {
    (!0u64 << from) & !(!0u64 << to)
}

/// The first set bit of `m` at or after `from` (< 64), or 64.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(super) fn first_from(m: u64, from: u32) -> u32 {
    (m & (!0u64 << from)).trailing_zeros()
}

/// An attribute read from a window: (name, value) as offsets in it, the value's class, and the
/// offset after it.
#[cfg(target_arch = "x86_64")]
type Read = ([(u32, u32); 2], u8, u32);

/// One attribute from the window's byte `o`, where it must begin with white space: (name, value,
/// class) as offsets in the window and the offset after it; `None` when it is not the shape read
/// here or does not end within the window.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn attribute(w: &[u8; 64], m: &Masks, o: u32) -> Option<Read> {
    if m.ws & (1u64 << o) == 0 {
        return None;
    }
    let name = first_from(!m.ws, o);
    if name >= 62 {
        return None;
    }
    let eq = first_from(m.eq, name);
    // The quote right after `=`, and the closing one within the window.
    if eq >= 62 || m.quote & (2u64 << eq) == 0 {
        return None;
    }
    let close = first_from(m.quote, eq + 2);
    if close >= 64 {
        return None;
    }
    let name_bits = span(name, eq);
    // An ASCII QName: name bytes only (so no white space before `=`), starting as a name does,
    // at most one colon, followed by a byte that starts a name.
    if name_bits == 0 || m.not_name & name_bits != 0 || !starts_name(w[name as usize]) {
        return None;
    }
    let colons = m.colon & name_bits;
    if colons != 0 {
        let c = colons.trailing_zeros();
        if colons & (colons - 1) != 0 || !starts_name(w[c as usize + 1]) {
            return None;
        }
    }
    let value_bits = span(eq + 2, close);
    let class = if m.classed & value_bits == 0 {
        0
    } else {
        value_class(&w[eq as usize + 2..close as usize])
    };
    Some(([(name, eq), (eq + 2, close)], class | V_QNAME, close + 1))
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(super) fn starts_name(c: u8) -> bool {
    NAME_CLASS[usize::from(c)] & NAME_START != 0
}

/// [`read_attributes`](super::scan::read_attributes)' loop: windows of 64 bytes while they last,
/// the byte loop for what they cannot read and for the end.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn read_here<'a>(simd: pulp::x86::V3, raw: &'a str, out: &mut Vec<(&'a str, &'a str, u8)>) -> bool {
    let b = raw.as_bytes();
    let mut i = 0;
    'windows: while let Some(w) = b.get(i..).and_then(|s| s.first_chunk::<64>()) {
        let m = masks(simd, w);
        let mut o = 0;
        loop {
            let Some(([(n0, n1), (v0, v1)], class, next)) = attribute(w, &m, o) else {
                if o > 0 {
                    // Perhaps it runs past this window: the next starts with it.
                    i += o as usize;
                    continue 'windows;
                }
                break;
            };
            // Offsets next to ASCII bytes (white space, `=`, quotes): character boundaries.
            let at = |from: u32, to: u32| &raw[i + from as usize..i + to as usize];
            out.push((at(n0, n1), at(v0, v1), class));
            if out.len() > MAX_ATTRS {
                return true;
            }
            o = next;
            if o >= 64 {
                i += 64;
                continue 'windows;
            }
        }
        // One attribute the byte loop reads; the window starts again after it.
        match read_one(raw, out, i + o as usize) {
            Ok(next) => i = next,
            Err(done) => return done,
        }
    }
    read_bytewise(raw, out, i)
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::super::scan::read_bytewise;
    use super::*;
    use crate::testing::Rng;

    /// A generated attribute text: mostly the shape read from masks, with every way out of it.
    fn tag(rng: &mut Rng, len: usize) -> String {
        const WS: [&str; 5] = [" ", " ", "  ", "\n\t", "\r\n "];
        const NAMES: [&str; 12] = [
            "a", "id", "p:a", "xmlns", "xmlns:p", "_x.y-z", "a1", "1a", "p::a", "p:", ":a", "é",
        ];
        const EQ: [&str; 4] = ["=", "=", " =", "= "];
        const VALUES: [&str; 12] = [
            "1",
            "",
            "urn:p:1",
            "a&amp;b",
            "a<b",
            "tab\there",
            "caf\u{e9}",
            "it's",
            "x&",
            "\u{1}",
            "long value with some words in it",
            "&#x41;",
        ];
        let mut s = String::new();
        let mut k = 0;
        while s.len() < len {
            let pick = |rng: &mut Rng, n: usize| (rng.next() % n as u64) as usize;
            s.push_str(WS[pick(rng, WS.len())]);
            s.push_str(NAMES[pick(rng, NAMES.len())]);
            s.push_str(&k.to_string());
            k += 1;
            s.push_str(EQ[pick(rng, EQ.len())]);
            let q = if pick(rng, 8) == 0 { '\'' } else { '"' };
            let v = VALUES[pick(rng, VALUES.len())];
            match pick(rng, 40) {
                // A value left open, or a stray byte between attributes.
                0 => s.push(q),
                1 => s.push_str(" \"x\""),
                _ => {
                    s.push(q);
                    s.push_str(&v.replace(q, ""));
                    s.push(q);
                }
            }
        }
        if rng.next().is_multiple_of(4) {
            s.push_str("  \n");
        }
        s
    }

    #[test]
    fn the_masks_read_what_the_byte_loop_reads() {
        let Some(_) = pulp::x86::V3::try_new() else {
            return;
        };
        let mut rng = Rng(0x5eed_a77e);
        let mut fast = 0;
        for round in 0..4000 {
            let raw = tag(&mut rng, 40 + round % 700);
            let (mut a, mut b) = (Vec::new(), Vec::new());
            let got = read_long(&raw, &mut a).expect("AVX2");
            let want = read_bytewise(&raw, &mut b, 0);
            assert_eq!((got, &a), (want, &b), "{raw:?}");
            fast += usize::from(got && a.len() > 20);
        }
        assert!(fast > 100, "too few long tags read whole: {fast}");
    }

    #[test]
    fn a_thousand_and_one_attributes_stop_the_reading() {
        let raw: String = (0..1500).map(|i| format!(" a{i}=\"1\"")).collect();
        let mut out = Vec::new();
        if read_long(&raw, &mut out) == Some(true) {
            assert_eq!(out.len(), MAX_ATTRS + 1);
            assert_eq!(out[1000], ("a1000", "1", V_QNAME));
        }
    }
}
