//! Strict scanning of XML bytes: the pieces both readers check bytes with.
//!
//! - Byte classes ([`BYTE_CLASS`]): what text may not hold unchecked, noted in the pass that
//!   finds its end ([`text_end`]). [`NAME_CLASS`] does the same for names.
//! - Words: eight bytes compared or searched at once ([`word_at`], [`byte_in_word`],
//!   [`same_name`]), without a loop whose exit is hard to predict.
//! - Names: ASCII QNames read byte by byte ([`ascii_qname`]); other names checked the general way
//!   ([`is_qname`]).
//! - References: the predefined entities and character references ([`resolve_ref`]).
//! - End of line: CR LF and a lone CR become LF ([`normalize_eol`]); in attribute values, white
//!   space becomes a space ([`attr_value`]).
//! - Attributes: split and classified in one pass ([`read_attributes`], [`value_class`]).
//! - Namespace bindings: the bindings in scope, searched from the innermost ([`bound`]), through an
//!   index once there are many ([`bind`]).
//! - Characters: what XML 1.0 allows ([`valid_chars`]), and the XML declaration
//!   ([`xml_decl_ok`]).
//!
//! Each is as strict as libxml2 on what it accepts: whatever it does not accept, libxml2 decides.

use super::kept::spare;
use super::{attr_run, FEW_BINDINGS, MAX_ATTRS};
use sluice_xml::chars;
use sluice_xml::names::{is_ncname, name_classes, PrefixIndex, NAME_START};
use std::borrow::Cow;

/// `a == b` for the short strings names are, without a call to `memcmp` or a loop over bytes (whose
/// exit, at the first difference, is hard to predict): two words, or two half words, overlapping in
/// the middle.
#[inline]
pub(super) fn short_eq(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    let ends = |k: usize| {
        (
            a.get(..k).zip(b.get(..k)),
            a.get(n - k..).zip(b.get(n - k..)),
        )
    };
    match n {
        8..=16 => {
            let word = |s: &[u8]| s.first_chunk::<8>().map(|w| u64::from_le_bytes(*w));
            let (Some((a0, b0)), Some((a1, b1))) = ends(8) else {
                return false;
            };
            word(a0) == word(b0) && word(a1) == word(b1)
        }
        4..=7 => {
            let half = |s: &[u8]| s.first_chunk::<4>().map(|w| u32::from_le_bytes(*w));
            let (Some((a0, b0)), Some((a1, b1))) = ends(4) else {
                return false;
            };
            half(a0) == half(b0) && half(a1) == half(b1)
        }
        0..=3 => a.iter().zip(b).all(|(x, y)| x == y),
        _ => a == b,
    }
}

/// `s.split_once(':')`, by bytes (names are short: a plain loop beats the char searcher).
pub(super) fn split_colon(s: &str) -> Option<(&str, &str)> {
    let i = s.bytes().position(|c| c == b':')?;
    Some((&s[..i], &s[i + 1..]))
}

pub(super) fn is_qname(s: &str) -> bool {
    match split_colon(s) {
        Some((p, l)) => is_ncname(p) && is_ncname(l),
        None => is_ncname(s),
    }
}

pub(super) fn is_ws(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r')
}

// What the fast reader must notice in character data, byte by byte (0: nothing).
const LT: u8 = 1;

pub(super) const AMP: u8 = 2;

pub(super) const GT: u8 = 4;

pub(super) const CR: u8 = 8;

pub(super) const CTRL: u8 = 16;

pub(super) const HIGH: u8 = 32;

/// What plain text, read over by the fast paths without a frame, may not hold: a reference (to
/// check), `>` (for `]]>`), a control character or a non-ASCII byte (to validate). A carriage return
/// is plain where nothing collects the text.
pub(super) const UNPLAIN: u8 = AMP | GT | CTRL | HIGH;

pub(super) const BYTE_CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut c = 0;
    while c < 256 {
        t[c] = match c as u8 {
            b'<' => LT,
            b'&' => AMP,
            b'>' => GT,
            b'\r' => CR,
            b'\t' | b'\n' => 0,
            0..=0x1f => CTRL,
            0x80..=0xff => HIGH,
            _ => 0,
        };
        c += 1;
    }
    t
};

/// ASCII bytes of an XML name, `:` included (`NAME_START` can begin one; `:` is checked by
/// [`is_qname`]).
pub(super) const NAME_CLASS: [u8; 256] = name_classes(true);

/// A start tag without attributes, `<name>` or `<name/>`, the usual kind: from the byte after `<`,
/// returns (index of `>`, empty element, end of the name, offset of the colon in the name or 0).
/// `None` for anything else (attributes, white space, non-ASCII names), which the general tag reading
/// handles.
pub(super) fn plain_tag(xml: &[u8], from: usize) -> Option<(usize, bool, usize, usize)> {
    let (j, colon) = ascii_qname(xml, from)?;
    match xml.get(j)? {
        b'>' => Some((j, false, j, colon)),
        b'/' if xml.get(j + 1) == Some(&b'>') => Some((j + 1, true, j, colon)),
        _ => None,
    }
}

/// An ASCII QName from `from`: (its end, offset of its colon or 0). `None` when the bytes there
/// do not begin one, or it has two colons or a part that does not start as a name does (the caller
/// then checks the name the general way, non-ASCII names included).
#[inline(always)]
pub(super) fn ascii_qname(xml: &[u8], from: usize) -> Option<(usize, usize)> {
    if NAME_CLASS[usize::from(*xml.get(from)?)] & NAME_START == 0 {
        return None;
    }
    let mut j = from + 1;
    let mut colon = None;
    while j < xml.len() && NAME_CLASS[usize::from(xml[j])] != 0 {
        if xml[j] == b':' {
            if colon.is_some() {
                return None;
            }
            colon = Some(j);
        }
        j += 1;
    }
    // A QName: a prefix and a local part that each start as a name does.
    if colon.is_some_and(|c| {
        xml.get(c + 1)
            .is_none_or(|&b| NAME_CLASS[usize::from(b)] & NAME_START == 0)
    }) {
        return None;
    }
    Some((j, colon.map_or(0, |c| c - from)))
}

/// The eight bytes at `p`, little-endian (`None` near the end).
#[inline]
pub(super) fn word_at(xml: &[u8], p: usize) -> Option<u64> {
    let w: [u8; 8] = xml.get(p..p + 8)?.try_into().ok()?;
    Some(u64::from_le_bytes(w))
}

/// One in each byte of a word.
const ONES: u64 = 0x0101_0101_0101_0101;

/// The bytes of `w` below `n` (at most 128), flagged in their top bit: the lowest flag is exact, a
/// flag above a true one can be false (a borrow), so "none" is exact too. `n = 1` flags zero bytes.
#[inline(always)]
fn bytes_below(w: u64, n: u8) -> u64 {
    w.wrapping_sub(ONES * u64::from(n)) & !w & (ONES << 7)
}

/// The index of the first byte `b` in the little-endian word `w`, without a loop.
#[inline(always)]
pub(super) fn byte_in_word(w: u64, b: u8) -> Option<usize> {
    let z = bytes_below(w ^ (ONES * u64::from(b)), 1);
    (z != 0).then(|| (z.trailing_zeros() / 8) as usize)
}

/// The index of the first `b` in `xml` from `from`: a word at a time over the first 32 bytes
/// (where a tag's `>` usually is, too near for `memchr` to pay for its setup), then `memchr`.
#[inline(always)]
pub(super) fn find_near(xml: &[u8], from: usize, b: u8) -> Option<usize> {
    let mut at = from;
    while at < from + 32 {
        let Some(w) = word_at(xml, at) else {
            break;
        };
        if let Some(k) = byte_in_word(w, b) {
            return Some(at + k);
        }
        at += 8;
    }
    memchr::memchr(b, xml.get(at..)?).map(|k| at + k)
}

/// `xml[a..a + len] == xml[b..b + len]`, for names and runs of tags: one masked word comparison
/// when both fit in one, else a word at a time (the last word overlapping).
#[inline]
pub(super) fn same_name(xml: &[u8], a: usize, b: usize, len: usize) -> bool {
    if len <= 8 {
        if let (Some(x), Some(y)) = (word_at(xml, a), word_at(xml, b)) {
            let mask = if len == 8 {
                u64::MAX
            } else {
                (1u64 << (len * 8)) - 1
            };
            return (x ^ y) & mask == 0;
        }
    }
    let (Some(x), Some(y)) = (xml.get(a..a + len), xml.get(b..b + len)) else {
        return false;
    };
    if len < 8 {
        return short_eq(x, y);
    }
    let mut k = 0;
    while k + 8 < len {
        if word_at(x, k) != word_at(y, k) {
            return false;
        }
        k += 8;
    }
    word_at(x, len - 8) == word_at(y, len - 8)
}

/// Character data at `i` shorter than eight bytes (the usual kind between tags): its length up to the
/// next `<` and the [`BYTE_CLASS`]es of its bytes or'd together, without a loop. `None` when there is
/// no `<` in the eight bytes at `i` (or fewer than eight are left).
#[inline(always)]
pub(super) fn short_text(xml: &[u8], i: usize) -> Option<(usize, u8)> {
    let len = byte_in_word(word_at(xml, i)?, b'<')?;
    let mut seen = 0u8;
    for &c in &xml[i..i + len] {
        seen |= BYTE_CLASS[usize::from(c)];
    }
    Some((len, seen))
}

/// Character data from `i`: the index of the next `<` (or the end of the document) and the
/// [`BYTE_CLASS`]es of the bytes before it or'd together. Text shorter than a word, the usual
/// between tags, is read where it is called; longer text by [`long_text_end`].
#[inline(always)]
pub(super) fn text_end(xml: &[u8], i: usize) -> (usize, u8) {
    match short_text(xml, i) {
        Some((len, seen)) => (i + len, seen),
        None => long_text_end(xml, i),
    }
}

/// [`text_end`] for text of a word or more (or near the end of the document).
#[inline(never)]
fn long_text_end(xml: &[u8], i: usize) -> (usize, u8) {
    let mut seen = 0u8;
    let mut p = i;
    // A word at a time: its bytes are classified only when one of them may be other than plain
    // ASCII text (a flag can be false, never missing). Text longer than a few words is searched
    // for its end first and then classified in one pass the compiler vectorises.
    while let Some(w) = word_at(xml, p) {
        if p - i >= LONG_TEXT {
            let lt = memchr::memchr(b'<', &xml[p..]).map_or(xml.len(), |k| p + k);
            return (lt, seen | text_class(&xml[p..lt]));
        }
        let lt = bytes_below(w ^ (ONES * u64::from(b'<')), 1);
        let odd = w & (ONES << 7)
            | bytes_below(w, 0x20)
            | bytes_below(w ^ (ONES * u64::from(b'&')), 1)
            | bytes_below(w ^ (ONES * u64::from(b'>')), 1);
        // The bytes before the first `<` (the lowest flag is exact), as a count and a mask.
        let (n, before) = match lt.trailing_zeros() {
            64 => (8, u64::MAX),
            k => (k as usize / 8, (1 << (k & !7)) - 1),
        };
        if odd & before != 0 {
            seen |= word_class(w, before);
        }
        p += n;
        if n < 8 {
            return (p, seen);
        }
    }
    while let Some(&c) = xml.get(p) {
        let k = BYTE_CLASS[usize::from(c)];
        if k == LT {
            break;
        }
        seen |= k;
        p += 1;
    }
    (p, seen)
}

/// From this many bytes of text on, [`text_end`] searches for the end and classifies afterwards.
const LONG_TEXT: usize = 32;

/// The [`BYTE_CLASS`]es of `text` (no `<` in it) or'd together, in one pass without branches or
/// table lookups, so that the compiler vectorises it: with AVX2 where the CPU has it (half the
/// instructions of SSE2's 16 bytes a step).
fn text_class(text: &[u8]) -> u8 {
    #[cfg(target_arch = "x86_64")]
    if let Some(simd) = pulp::x86::V3::try_new() {
        return simd.vectorize(TextClass(text));
    }
    text_class_here(text)
}

/// [`text_class`] compiled as AVX2 code by `pulp`.
#[cfg(target_arch = "x86_64")]
struct TextClass<'a>(&'a [u8]);

#[cfg(target_arch = "x86_64")]
impl pulp::NullaryFnOnce for TextClass<'_> {
    type Output = u8;

    #[inline(always)]
    fn call(self) -> u8 {
        text_class_here(self.0)
    }
}

/// [`text_class`]'s loop, inlined where it is compiled.
#[inline(always)]
fn text_class_here(text: &[u8]) -> u8 {
    let (mut amp, mut gt, mut cr, mut ctrl, mut high) = (0u8, 0u8, 0u8, 0u8, 0u8);
    for &b in text {
        amp |= u8::from(b == b'&');
        gt |= u8::from(b == b'>');
        cr |= u8::from(b == b'\r');
        ctrl |= u8::from(b < 0x20) & u8::from(b != b'\t' && b != b'\n' && b != b'\r');
        high |= b >> 7;
    }
    (amp * AMP) | (gt * GT) | (cr * CR) | (ctrl * CTRL) | (high * HIGH)
}

/// Every byte's top bit clear but for the top bit.
const LOW7: u64 = 0x7F7F_7F7F_7F7F_7F7F;

/// The bytes of `w` equal to `b`, flagged in their top bit, every flag exact (no borrow crosses a
/// byte).
#[inline(always)]
fn bytes_eq(w: u64, b: u8) -> u64 {
    let x = w ^ (ONES * u64::from(b));
    !(((x & LOW7) + LOW7) | x) & (ONES << 7)
}

/// The [`BYTE_CLASS`]es of the bytes of `w` under `mask` (whole bytes) or'd together, computed
/// for the word at once: the same as looking each byte up.
#[inline(always)]
pub(super) fn word_class(w: u64, mask: u64) -> u8 {
    let on = |flags: u64, class: u8| if flags & mask != 0 { class } else { 0 };
    // Bytes below 0x20, exact: the low seven bits plus 0x60 stay below 0x80 only for them.
    let low = !(((w & LOW7) + ONES * 0x60) | w) & (ONES << 7);
    let cr = bytes_eq(w, b'\r');
    let ctrl = low & !(cr | bytes_eq(w, b'\t') | bytes_eq(w, b'\n'));
    on(bytes_eq(w, b'&'), AMP)
        | on(bytes_eq(w, b'>'), GT)
        | on(w & (ONES << 7), HIGH)
        | on(cr, CR)
        | on(ctrl, CTRL)
        | on(bytes_eq(w, b'<'), LT)
}

/// Character data at `at` followed by the end tag of the element named `xml[name..name + len]`:
/// the index of that end tag's `>` and the [`BYTE_CLASS`]es of the text or'd together. `None` when
/// something else follows the text (a child, a comment, another end tag) or the document ends.
#[inline]
pub(super) fn leaf_end(xml: &[u8], at: usize, name: usize, len: usize) -> Option<(usize, u8)> {
    let (lt, seen) = text_end(xml, at);
    let gt = lt + 2 + len;
    (xml.get(lt + 1) == Some(&b'/')
        && xml.get(gt) == Some(&b'>')
        && same_name(xml, lt + 2, name, len))
    .then_some((gt, seen))
}

/// The namespace bound to `prefix` ("" for the default), innermost first: `Some(None)` for no
/// namespace (`xmlns=""`, or no default declared), `None` for an unbound prefix. `index` covers
/// `bindings` once there are many (see [`bind`]), and is empty before.
pub(super) fn bound<'a>(
    bindings: &[(&str, &'a str, usize)],
    index: &PrefixIndex<'_>,
    prefix: &[u8],
) -> Option<Option<&'a str>> {
    let found = if index.is_empty() {
        bindings
            .iter()
            .rev()
            .find(|b| short_eq(b.0.as_bytes(), prefix))
    } else {
        index.get(prefix).and_then(|k| bindings.get(k))
    };
    match found {
        Some((_, "", _)) => Some(None),
        Some((_, uri, _)) => Some(Some(uri)),
        None if prefix.is_empty() => Some(None),
        None => None,
    }
}

/// Whether `prefix` (not empty) is bound: [`bound`] when only that is asked, without the URI.
#[inline(always)]
pub(super) fn is_bound(
    bindings: &[(&str, &str, usize)],
    index: &PrefixIndex<'_>,
    prefix: &[u8],
) -> bool {
    if index.is_empty() {
        bindings
            .iter()
            .rev()
            .any(|b| short_eq(b.0.as_bytes(), prefix))
    } else {
        index.get(prefix).is_some()
    }
}

/// `bindings.push(b)`, keeping `index` up to date: it starts covering every binding once there are
/// more than [`FEW_BINDINGS`], and goes on until none is left. Returns false when `b` repeats a
/// prefix bound at its depth (one start tag declaring it twice), found by the index as it takes
/// `b`, or among the few bindings at that depth before it has to.
#[inline]
pub(super) fn bind<'x>(
    bindings: &mut Vec<(&'x str, &'x str, usize)>,
    index: &mut PrefixIndex<'x>,
    b: (&'x str, &'x str, usize),
) -> bool {
    if !index.is_empty() {
        bindings.push(b);
        return index
            .push(b.0)
            .is_none_or(|hidden| bindings[hidden].2 != b.2);
    }
    let repeat = bindings
        .iter()
        .rev()
        .take_while(|o| o.2 == b.2)
        .any(|o| o.0 == b.0);
    bindings.push(b);
    if bindings.len() > FEW_BINDINGS {
        index_all(bindings, index);
    }
    !repeat
}

/// [`bind`]'s index, made for the bindings so far.
#[cold]
pub(super) fn index_all<'x>(bindings: &[(&'x str, &'x str, usize)], index: &mut PrefixIndex<'x>) {
    let new = &bindings[index.len()..];
    // Room for many more: a reader that indexes meets many declarations.
    index.reserve(new.len().max(256));
    for &(prefix, _, _) in new {
        index.push(prefix);
    }
}

/// The bindings declared deeper than `depth` go out of scope (with [`bind`]'s index).
#[inline]
pub(super) fn unbind_deeper<'x>(
    bindings: &mut Vec<(&'x str, &'x str, usize)>,
    index: &mut PrefixIndex<'x>,
    depth: usize,
) {
    // When few are left, the index goes (cleared at once rather than popped binding by binding):
    // [`bind`] makes it again once there are many.
    if !index.is_empty() {
        let kept = bindings
            .iter()
            .rposition(|b| b.2 <= depth)
            .map_or(0, |k| k + 1);
        if kept <= FEW_BINDINGS {
            bindings.truncate(kept);
            index.clear();
            return;
        }
    }
    while let Some(&(prefix, _, d)) = bindings.last() {
        if d <= depth {
            break;
        }
        bindings.pop();
        if !index.is_empty() {
            index.pop(prefix);
        }
    }
}

/// Whether two of `n` items have the same key, found through a table of their seeded hashes (open
/// addressing, at most half full, in a buffer the thread keeps for it): for elements with many
/// attributes, where comparing every pair would be quadratic. Names that share a long beginning
/// (`xmlns:p1`, `xmlns:p12`, ...) are not compared byte by byte: keys are compared only where the
/// 64-bit hashes are equal, which a sender cannot aim for.
#[cold]
pub(super) fn repeated<K: Eq + std::hash::Hash>(n: usize, key: impl Fn(usize) -> K) -> bool {
    use std::hash::BuildHasher;
    thread_local! {
        static TABLE: std::cell::Cell<Vec<(u64, u32)>> = const { std::cell::Cell::new(Vec::new()) };
        static SEED: foldhash::fast::RandomState = foldhash::fast::RandomState::default();
    }
    // An empty slot holds index `u32::MAX` (never an item's: `n` is far below it).
    const EMPTY: (u64, u32) = (0, u32::MAX);
    let mut table = TABLE.take();
    let mask = (2 * n).next_power_of_two().max(16) - 1;
    table.clear();
    table.resize(mask + 1, EMPTY);
    let found = SEED.with(|seed| {
        (0..n).any(|k| {
            let h = seed.hash_one(key(k));
            // The high bits pick the slot (the low ones are the hash's weakest).
            let mut slot = (h >> 32) as usize & mask;
            loop {
                let (other, at) = table[slot];
                if at == EMPTY.1 {
                    table[slot] = (h, k as u32);
                    return false;
                }
                if other == h && key(at as usize) == key(k) {
                    return true;
                }
                slot = (slot + 1) & mask;
            }
        })
    });
    TABLE.set(spare(table));
    found
}

// What an attribute value holds that matters, from [`value_class`].
pub(super) const V_LT: u8 = 1;

pub(super) const V_AMP: u8 = 2;

/// Tab, line feed or carriage return: normalised to a space.
pub(super) const V_WS: u8 = 4;

/// A control character XML does not allow.
pub(super) const V_CTRL: u8 = 8;

pub(super) const V_HIGH: u8 = 16;

/// Not a class of the value: set by [`read_attributes`] when the attribute's name is an ASCII
/// QName, already checked.
pub(super) const V_QNAME: u8 = 32;

/// The `V_` classes of the bytes of `v` or'd together. Eight bytes at a time first (the last few
/// padded): when no word has a control character (tab, line feed and carriage return among them),
/// `<`, `&` or a non-ASCII byte, there is no class (a namespace URI is all such words); otherwise
/// the whole value is classed byte by byte.
pub(super) fn value_class(v: &[u8]) -> u8 {
    let mut words = v.chunks_exact(8);
    // The last bytes padded with a byte of no class.
    let mut last = [b'a'; 8];
    last[..words.remainder().len()].copy_from_slice(words.remainder());
    for w in (&mut words)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap_or_default()))
        .chain([u64::from_le_bytes(last)])
    {
        if classed(w) {
            return bytes_class(v);
        }
    }
    0
}

/// Whether a byte of `w` may have a [`value_class`] (none: exact).
#[inline(always)]
fn classed(w: u64) -> bool {
    w & (ONES << 7)
        | bytes_below(w, 0x20)
        | bytes_below(w ^ (ONES * u64::from(b'<')), 1)
        | bytes_below(w ^ (ONES * u64::from(b'&')), 1)
        != 0
}

/// A value shorter than [`SHORT_VALUE_WORDS`] words, quoted by `q`, from `from`: its length and
/// [`value_class`], found a word at a time in one pass (`None` when the closing quote is not within
/// those words, or there is none).
#[inline(always)]
fn short_value(b: &[u8], from: usize, q: u8) -> Option<(usize, u8)> {
    let mut class = 0;
    for k in 0..SHORT_VALUE_WORDS {
        let at = from + 8 * k;
        let (w, whole) = match word_at(b, at) {
            Some(w) => (w, true),
            // Near the end (the last value of a tag's attributes): the last word of `b`, the
            // bytes before `at` shifted out (zeros come in: never a quote).
            None => {
                let rest = b.len().checked_sub(at).filter(|&r| r > 0)?;
                let last = b.last_chunk::<8>()?;
                (u64::from_le_bytes(*last) >> (8 * (8 - rest)), false)
            }
        };
        let Some(len) = byte_in_word(w, q) else {
            if !whole {
                return None;
            }
            if classed(w) {
                class |= bytes_class(&b[at..at + 8]);
            }
            continue;
        };
        // The value's bytes, the rest padded with a byte of no class.
        let keep = (1u64 << (8 * len)) - 1;
        let v = w & keep | (ONES * u64::from(b'a')) & !keep;
        if classed(v) {
            class |= bytes_class(&b[at..at + len]);
        }
        return Some((8 * k + len, class));
    }
    None
}

/// The words [`short_value`] reads before leaving a value to `memchr`: numbers, ids and short
/// URNs fit; longer values, most namespace URIs among them, are found faster by `memchr` (six
/// words cost CBRProxy 0.2 % more instructions per request than two).
pub(super) const SHORT_VALUE_WORDS: usize = 2;

/// [`value_class`] byte by byte, in one pass without branches.
pub(super) fn bytes_class(v: &[u8]) -> u8 {
    let (mut lt, mut amp, mut ws, mut ctrl, mut high) = (false, false, false, false, false);
    for &b in v {
        let w = b == b'\t' || b == b'\n' || b == b'\r';
        lt |= b == b'<';
        amp |= b == b'&';
        ws |= w;
        ctrl |= b < 0x20 && !w;
        high |= b >= 0x80;
    }
    let bit = |on: bool, class: u8| if on { class } else { 0 };
    bit(lt, V_LT) | bit(amp, V_AMP) | bit(ws, V_WS) | bit(ctrl, V_CTRL) | bit(high, V_HIGH)
}

/// The attributes of a start tag (what follows the name, up to `>` or `/>`): checks their syntax and
/// splits them into (name, raw value, [`value_class`] of the value, with [`V_QNAME`]) in one pass.
/// False for anything outside `(S name S? = S? quoted-value)* S?`. Stops, true, once `out` holds
/// more than [`MAX_ATTRS`]: the caller leaves such an element to libxml2.
pub(super) fn read_attributes<'a>(raw: &'a str, out: &mut Vec<(&'a str, &'a str, u8)>) -> bool {
    if raw.len() >= attr_run::LONG_ATTRS {
        if let Some(done) = attr_run::read_long(raw, out) {
            return done;
        }
    }
    read_bytewise(raw, out, 0)
}

/// [`read_attributes`] from `raw`'s byte `i` (where an attribute's white space begins), the byte
/// loop: [`next_attribute`] after [`next_attribute`].
pub(super) fn read_bytewise<'a>(
    raw: &'a str,
    out: &mut Vec<(&'a str, &'a str, u8)>,
    mut i: usize,
) -> bool {
    loop {
        match read_one(raw, out, i) {
            Ok(next) => i = next,
            Err(done) => return done,
        }
    }
}

/// One attribute of `raw` from byte `i` into `out`: `Ok` with where the next begins, or `Err`
/// with [`read_attributes`]' answer when the reading is over (no more, more than [`MAX_ATTRS`],
/// or bad syntax).
#[inline(always)]
pub(super) fn read_one<'a>(
    raw: &'a str,
    out: &mut Vec<(&'a str, &'a str, u8)>,
    i: usize,
) -> Result<usize, bool> {
    let b = raw.as_bytes();
    let a = match next_attribute(b, i, b.len()) {
        Ok(Some(a)) => a,
        Ok(None) => return Err(true),
        Err(()) => return Err(false),
    };
    // Every index `next_attribute` gives is next to an ASCII byte (white space, `=`, a quote): a
    // character boundary.
    out.push((&raw[a.name.clone()], &raw[a.value.clone()], a.class));
    if out.len() > MAX_ATTRS {
        return Err(true);
    }
    Ok(a.next)
}

/// One attribute as [`next_attribute`] reads it.
pub(super) struct Attr {
    pub(super) name: std::ops::Range<usize>,
    /// The raw value, between the quotes.
    pub(super) value: std::ops::Range<usize>,
    /// The value's [`value_class`], with [`V_QNAME`] when the name is an ASCII QName.
    pub(super) class: u8,
    /// The offset of the name's colon, or 0 (when the name is an ASCII QName).
    pub(super) colon: usize,
    /// Just after the closing quote.
    pub(super) next: usize,
}

/// The attribute in a start tag's attribute text `b[..end]` from `i`, which must begin with white
/// space: `Ok(None)` when only white space is left, `Err` for anything outside `S name S? = S?
/// quoted-value`. Bytes of `b` past `end` are only loaded with a value's first word, never taken.
#[inline(always)]
pub(super) fn next_attribute(b: &[u8], mut i: usize, end: usize) -> Result<Option<Attr>, ()> {
    let start = i;
    while i < end && is_ws(b[i]) {
        i += 1;
    }
    if i == end {
        return Ok(None);
    }
    if i == start {
        return Err(());
    }
    let name = i;
    let (mut checked, mut colon) = (0, 0);
    // A name ends before `end`: the tag's `/` or `>` is there, which no name holds.
    match ascii_qname(b, i) {
        Some((e, c)) if e < end && (b[e] == b'=' || is_ws(b[e])) => {
            i = e;
            (checked, colon) = (V_QNAME, c);
        }
        _ => {
            while i < end && !is_ws(b[i]) && b[i] != b'=' {
                i += 1;
            }
        }
    }
    if i == name {
        return Err(());
    }
    let name_end = i;
    while i < end && is_ws(b[i]) {
        i += 1;
    }
    if i == end || b[i] != b'=' {
        return Err(());
    }
    i += 1;
    while i < end && is_ws(b[i]) {
        i += 1;
    }
    let Some(&q) = b[..end].get(i).filter(|q| **q == b'"' || **q == b'\'') else {
        return Err(());
    };
    let from = i + 1;
    let (len, class) = match short_value(b, from, q).filter(|&(len, _)| from + len < end) {
        Some(short) => short,
        None => match memchr::memchr(q, &b[from..end]) {
            Some(len) => (len, value_class(&b[from..from + len])),
            None => return Err(()),
        },
    };
    Ok(Some(Attr {
        name: name..name_end,
        value: from..from + len,
        class: class | checked,
        colon,
        next: from + len + 1,
    }))
}

/// Whether `s` holds U+FFFE or U+FFFF (not XML characters); only worth asking when `s` is not ASCII.
#[inline]
pub(super) fn has_nonchar(s: &str) -> bool {
    s.contains(['\u{FFFE}', '\u{FFFF}'])
}

/// The XML declaration (`xml version="1.0" ...`, between `<?` and `?>`): version 1.0, UTF-8 if an
/// encoding is named, in the order and syntax XML requires.
pub(super) fn xml_decl_ok(content: &str) -> bool {
    let ws = |c: char| matches!(c, ' ' | '\t' | '\n' | '\r');
    let Some(mut rest) = content.strip_prefix("xml") else {
        return false;
    };
    let mut seen = 0;
    loop {
        let trimmed = rest.trim_start_matches(ws);
        if trimmed.is_empty() {
            return seen > 0;
        }
        if trimmed.len() == rest.len() {
            return false; // no white space before a pseudo-attribute
        }
        let Some((name, after)) = trimmed.split_once('=') else {
            return false;
        };
        let after = after.trim_start_matches(ws);
        let Some(q) = after.chars().next().filter(|c| *c == '"' || *c == '\'') else {
            return false;
        };
        let Some(end) = after[1..].find(q) else {
            return false;
        };
        let value = &after[1..1 + end];
        rest = &after[2 + end..];
        let (order, ok) = match name.trim_end_matches(ws) {
            "version" => (1, value == "1.0"),
            "encoding" => (2, value.eq_ignore_ascii_case("utf-8")),
            "standalone" => (3, value == "yes" || value == "no"),
            _ => return false,
        };
        if !ok || order <= seen || (seen == 0 && order != 1) {
            return false;
        }
        seen = order;
    }
}

/// XML 1.0 `Char` (Rust strings hold no surrogates).
#[inline]
pub(super) fn valid_chars(s: &str) -> bool {
    match chars::control_scan(s.as_bytes()) {
        Some(high) => !high || !s.contains(['\u{FFFE}', '\u{FFFF}']),
        None => false,
    }
}

/// CR LF and a lone CR become LF ([`sluice_xml::chars`], shared with the streaming XSLT reader).
#[inline]
pub(super) fn normalize_eol(s: &str, out: &mut String) {
    chars::normalize_eol_into(s, out);
}

pub(super) use sluice_xml::chars::resolve_ref;

/// An attribute value as libxml2 reports it (no DTD, so every attribute is CDATA): line ends normalised,
/// then tab, LF and CR become spaces; references are replaced afterwards, so `&#10;` stays a line feed.
pub(super) fn attr_value(raw: &str) -> Option<Cow<'_, str>> {
    attr_value_classed(raw, value_class(raw.as_bytes()))
}

/// [`attr_value`] for a value whose [`value_class`] is known.
pub(super) fn attr_value_classed(raw: &str, class: u8) -> Option<Cow<'_, str>> {
    if class & (V_LT | V_CTRL) != 0 || (class & V_HIGH != 0 && has_nonchar(raw)) {
        return None;
    }
    if class & (V_AMP | V_WS) == 0 {
        return Some(Cow::Borrowed(raw));
    }
    chars::attr_value_replaced(raw).map(Cow::Owned)
}

pub(super) const XML_NS: &str = "http://www.w3.org/XML/1998/namespace";
