//! Inert elements read in bulk.
//!
//! An element that no step can match from where it stands is inert. Either its name passes no
//! step its parent can lead to, or it passes only steps whose position predicate its earlier
//! siblings used up. Under `//order[1]`, every `order` after the first is inert.
//!
//! - An inert element is only counted for depth.
//! - An inert element that holds only plain text is skipped in one go.
//!
//! # The inert span
//!
//! After one inert element, its inert siblings are read in bulk ([`StreamPath::inert_span`]).
//! Each is read with its whole subtree and no per-element state. Prefixed names are read this way
//! too, when their prefix is bound, and so are a few attributes that need nothing kept
//! ([`StreamPath::attributed_tag`]: no declarations, at most one prefixed, plain ASCII values).
//! Where the CPU has AVX2, those attributes are read from the bitmasks of a 64-byte window kept
//! for the next tags ([`super::tag_run`]); the byte loop reads what they cannot.
//! What the span does not read (other attributes, references, comments, non-ASCII text) it hands
//! back with the elements around it open.
//!
//! # Sibling patterns
//!
//! Once one sibling in a span has been read tag by tag, its markup is kept as a pattern
//! ([`Sibling`]). Each run of adjacent tags is stored as up to three masked words ([`Markup`]).
//! The next sibling is checked against the pattern: one bounds check and three loads per run of
//! tags. A sibling that matches has byte for byte the same tags. So it is well-formed and inert
//! exactly as the first one was. Only its plain text may differ, and that text is still checked
//! for what plain text may not hold.
//!
//! A sibling that differs becomes the next pattern. After three misses in a row the span stops
//! trying.

use super::fast::{KnownNames, KnownTag};
use super::needle::Bang;
use super::run::Run;
use super::scan::{
    bound, find_near, is_bound, is_ws, leaf_end, next_attribute, same_name, text_end, word_at, AMP,
    UNPLAIN, V_AMP, V_CTRL, V_HIGH, V_LT, V_QNAME,
};
use super::tag_run::TagWindow;
use super::{StreamPath, FEW_ATTRS, INERT_STACK, MAX_DEPTH};
use sluice_xml::chars::refs_valid;
use sluice_xml::names::PrefixIndex;

impl StreamPath {
    /// Complete inert children of the current element (each with everything inside it) and the plain
    /// text between them, from `i` (a `<`), read without frames: the usual bulk of a document under a
    /// `//` path once its position predicates are used up (every `order` after the first). A child is
    /// inert when [`Run::inert_child`] says so; below it, every element whose name the first step of
    /// a `//` path does not test is (its parent matched no step). The caller has checked that nothing
    /// collects text here ([`Run::quiet`]). Returns where the general reading goes on and how many
    /// elements it must open first (the first that many of `scratch.stack`, outermost first): the
    /// first `<` (or the end of the input) after the last complete child read and the plain text
    /// after it, with none open; or, inside a child, the tag or text this does not read (an unbound
    /// prefix, attributes, references, comments or non-ASCII text, deeper than [`INERT_STACK`] or
    /// [`MAX_DEPTH`]), with the elements around it open. Handing those over instead of starting the
    /// child again keeps the reading linear in the depth: else every level of a deep child would be
    /// read again from each of its ancestors.
    pub(super) fn inert_span(
        &self,
        xml: &[u8],
        mut i: usize,
        run: &Run<'_>,
        known: &mut KnownNames<'_>,
        scratch: &mut InertScratch<'_>,
        (bindings, index): (&[(&str, &str, usize)], &PrefixIndex<'_>),
    ) -> (usize, usize) {
        let InertScratch {
            stack,
            bang,
            sibling,
        } = scratch;
        let below = INERT_STACK.min(MAX_DEPTH.saturating_sub(run.depth));
        let mut window = TagWindow::new();
        // Whether a run of siblings may still be read by `needle_run` (not after it gave up on one).
        let mut needle = self.needle.is_some();
        let mut inert = Inert {
            descendant: self.path.descendant,
            last: None,
        };
        let mut top = 0;
        // Where the current child starts (for `sibling`).
        let mut child = i;
        // Whether `sibling` holds a pattern learned in this call.
        let mut pattern = false;
        // The name of the last leaf child read (start, length): a leaf named as the one before it
        // becomes the pattern.
        let mut last_leaf = (0, 0);
        loop {
            let lt = if xml.get(i) == Some(&b'<') {
                i
            } else {
                match text_end(xml, i) {
                    (lt, seen) if inert_text(&xml[i..lt], seen) => lt,
                    _ => return (i, top),
                }
            };
            if top == 0 {
                child = lt;
                // A child with the same markup as the last one read tag by tag is read as that.
                if let Some(end) = pattern.then(|| sibling.read(xml, lt)).flatten() {
                    i = end;
                    continue;
                }
            }
            match xml.get(lt + 1) {
                Some(b'/') if top > 0 => {
                    let (start, len) = stack[top - 1];
                    let gt = lt + 2 + len;
                    if xml.get(gt) != Some(&b'>') || !same_name(xml, lt + 2, start, len) {
                        return (lt, top);
                    }
                    top -= 1;
                    i = gt + 1;
                    if top == 0 {
                        if !pattern {
                            pattern = true;
                            sibling.missed = 0;
                        }
                        sibling.learn(xml, child, i);
                    }
                }
                None | Some(b'/' | b'!' | b'?') => return (lt, top),
                Some(_) => {
                    let from = lt + 1;
                    let Some((gt, empty, name_end, colon, mask)) =
                        self.span_tag((xml, from), known, &mut window, (bindings, index))
                    else {
                        return (lt, top);
                    };
                    // A prefix must be bound (the bindings do not change here: no element in the
                    // span declares one). `xml` and `xmlns` never are: declaring
                    // them is left to the general reader, and so is `<xml:b>`.
                    let named = colon == 0 || is_bound(bindings, index, &xml[from..from + colon]);
                    if !(named && mask != u64::MAX && top < below && inert.at(run, top, mask)) {
                        return (lt, top);
                    }
                    // A sibling named as the first step: it and its like next siblings by name search.
                    if top == 0 && needle && !empty && mask & 1 != 0 {
                        match self.needle_run(xml, lt, name_end - from, bang) {
                            Some(end) => {
                                i = end;
                                continue;
                            }
                            None => needle = false,
                        }
                    }
                    i = gt + 1;
                    if empty {
                        continue;
                    }
                    // A child element right after the start tag: not a leaf.
                    let leaf = if xml.get(i) == Some(&b'<') && xml.get(i + 1) != Some(&b'/') {
                        None
                    } else {
                        leaf_end(xml, i, from, name_end - from)
                    };
                    match leaf {
                        // The end tag `</name>` ends at `end`.
                        Some((end, seen))
                            if seen & UNPLAIN == 0
                                || inert_text(&xml[i..end - 2 - (name_end - from)], seen) =>
                        {
                            i = end + 1;
                            // Leaf children with plain text of one name in a row are a pattern
                            // too (`<s>1</s><s>2</s>`...); a record's fields (`<symbol>`,
                            // `<price>`...) are not worth learning.
                            let len = name_end - from;
                            if top == 0 && seen & UNPLAIN == 0 {
                                if last_leaf.1 == len && same_name(xml, last_leaf.0, from, len) {
                                    if !pattern {
                                        pattern = true;
                                        sibling.missed = 0;
                                    }
                                    sibling.learn(xml, child, i);
                                }
                                last_leaf = (from, len);
                            }
                        }
                        _ => {
                            stack[top] = (from, name_end - from);
                            top += 1;
                        }
                    }
                }
            }
        }
    }

    /// A start tag with attributes at `from` (just after `<`) that an inert element may have, read
    /// as [`StreamPath::known_tag`] reads a plain one: (index of `>`, empty element, end of the
    /// name, colon offset or 0, [`Path::step_mask`] of the local name). Only what is checked here
    /// and needs nothing kept: an ASCII name; at most [`FEW_ATTRS`] attributes with ASCII QNames
    /// and ASCII values, no `<` or `>` in them, every reference valid; none a namespace
    /// declaration (the bindings stay as they are); each prefix bound; at most one prefixed, so
    /// that two attributes are the same exactly when their names are. `None` for anything else:
    /// the general reading's.
    ///
    /// [`Path::step_mask`]: super::compile::Path::step_mask
    #[inline]
    pub(super) fn attributed_tag(
        &self,
        xml: &[u8],
        from: usize,
        known: &mut KnownNames<'_>,
        scope: (&[(&str, &str, usize)], &PrefixIndex<'_>),
    ) -> Option<KnownTag> {
        let name = self.known_name(xml, from, known)?;
        if !is_ws(*xml.get(name.0)?) {
            return None;
        }
        attributes(xml, from, name, scope)
    }

    /// A start tag in an inert span, plain as [`StreamPath::known_tag`] reads it or with a few
    /// attributes as [`StreamPath::attributed_tag`] does, its name read once.
    #[inline(always)]
    fn span_tag(
        &self,
        (xml, from): (&[u8], usize),
        known: &mut KnownNames<'_>,
        window: &mut TagWindow,
        scope: (&[(&str, &str, usize)], &PrefixIndex<'_>),
    ) -> Option<KnownTag> {
        let name @ (name_end, colon, mask) = self.known_name(xml, from, known)?;
        match *xml.get(name_end)? {
            b'>' => Some((name_end, false, name_end, colon, mask)),
            b'/' if xml.get(name_end + 1) == Some(&b'>') => {
                Some((name_end + 1, true, name_end, colon, mask))
            }
            c if is_ws(c) => match window.attributes(xml, (from, name_end, colon), scope) {
                Some((gt, empty)) => Some((gt, empty, name_end, colon, mask)),
                None => attributes(xml, from, name, scope),
            },
            _ => None,
        }
    }
}

/// The attributes of a start tag at `from` whose name `xml[from..name_end]` (then white space)
/// is read, for [`StreamPath::attributed_tag`].
#[inline(always)]
pub(super) fn attributes(
    xml: &[u8],
    from: usize,
    (name_end, colon, mask): (usize, usize, u64),
    (bindings, index): (&[(&str, &str, usize)], &PrefixIndex<'_>),
) -> Option<KnownTag> {
    // No `>` in a value: the first `>` ends the tag (else the value's quote is left open).
    let gt = find_near(xml, name_end, b'>')?;
    let empty = xml[gt - 1] == b'/';
    let end = if empty { gt - 1 } else { gt };
    let mut names: [std::ops::Range<usize>; FEW_ATTRS] = Default::default();
    let (mut n, mut prefixed, mut i) = (0, false, name_end);
    while let Some(a) = next_attribute(xml, i, end).ok()? {
        if n == FEW_ATTRS || a.class & V_QNAME == 0 || a.class & (V_LT | V_CTRL | V_HIGH) != 0 {
            return None;
        }
        let name = &xml[a.name.clone()];
        if a.colon > 0 {
            let prefix = &name[..a.colon];
            // The element's own prefix is checked by the caller: looked up once.
            if prefixed
                || prefix == b"xmlns"
                || (prefix != b"xml"
                    && (colon == 0 || *prefix != xml[from..from + colon])
                    && bound(bindings, index, prefix).is_none())
            {
                return None;
            }
            prefixed = true;
        } else if name == b"xmlns" {
            return None;
        }
        if names[..n].iter().any(|k| xml[k.clone()] == *name)
            || (a.class & V_AMP != 0 && !refs_valid(&xml[a.value.clone()]))
        {
            return None;
        }
        names[n] = a.name;
        n += 1;
        i = a.next;
    }
    Some((gt, empty, name_end, colon, mask))
}

/// Whether text that nothing collects, whose bytes have the classes `seen`, is read over: plain
/// text, or text whose only other bytes are `&` beginning valid references (checked here, never
/// resolved). Anything else goes to the general reader.
#[inline(always)]
fn inert_text(text: &[u8], seen: u8) -> bool {
    seen & UNPLAIN == 0 || (seen & UNPLAIN == AMP && refs_valid(text))
}

/// Which elements [`StreamPath::inert_span`] reads are inert.
struct Inert {
    descendant: bool,
    /// The span's element's state does not change in the span: its last answer for a name's
    /// steps.
    last: Option<(u64, bool)>,
}

impl Inert {
    /// Whether an element `top` levels below a child of the span's element (0: such a child),
    /// whose local name passes the steps in `mask`, is inert: a child as [`Run::inert_child`] says;
    /// below one, an element the first step of a `//` path does not test.
    #[inline(always)]
    fn at(&mut self, run: &Run<'_>, top: usize, mask: u64) -> bool {
        if top > 0 {
            return !(self.descendant && mask & 1 != 0);
        }
        match self.last {
            Some((m, inert)) if m == mask => inert,
            _ => {
                let inert = run.inert_child(mask);
                self.last = Some((mask, inert));
                inert
            }
        }
    }
}

/// What [`StreamPath::inert_span`] keeps between its calls in one reading.
pub(super) struct InertScratch<'a> {
    /// The thread's ([`Buffers`](super::kept::Buffers)).
    pub(super) stack: &'a mut InertStack,
    pub(super) bang: Bang,
    /// The thread's ([`Buffers`](super::kept::Buffers)).
    pub(super) sibling: &'a mut Sibling,
}

/// The elements open inside a child [`StreamPath::inert_span`] is reading: (start, length) of their
/// names.
pub(super) type InertStack = [(usize, usize); INERT_STACK];

/// The markup of a child [`StreamPath::inert_span`] has read tag by tag, for reading its next
/// siblings in a few word comparisons: in a document's bulk (every `order` after the first) the
/// siblings differ in their text only. A sibling whose markup is byte for byte the same, with plain
/// text where this one had text (or none), has the same elements, nested the same way, so it is
/// well-formed and inert just as this one was.
pub(super) struct Sibling {
    /// Each run of adjacent tags in this child, in order.
    pub(super) runs: [Markup; SIBLING_RUNS],
    pub(super) len: usize,
    /// Siblings in a row that did not match (each then becomes the pattern): reading stops trying
    /// when siblings keep differing.
    pub(super) missed: usize,
}

/// A run of adjacent tags in a [`Sibling`] pattern: where it is, and (when it is at most
/// [`MARKUP_WORDS`] words long) its bytes as words with a mask for each, so that a sibling's run is
/// checked with one bounds check and a few loads, without a loop.
#[derive(Clone, Copy, Default)]
pub(super) struct Markup {
    pub(super) start: usize,
    pub(super) len: usize,
    pub(super) words: [u64; MARKUP_WORDS],
    pub(super) masks: [u64; MARKUP_WORDS],
}

/// Runs of tags up to this many words long are held as words (`</volume></order>` is three).
pub(super) const MARKUP_WORDS: usize = 3;

impl Markup {
    pub(super) fn new(xml: &[u8], start: usize, len: usize) -> Markup {
        let mut m = Markup {
            start,
            len,
            ..Markup::default()
        };
        if len <= 8 * MARKUP_WORDS {
            for (k, c) in xml[start..start + len].chunks(8).enumerate() {
                let mut w = [0; 8];
                w[..c.len()].copy_from_slice(c);
                m.words[k] = u64::from_le_bytes(w);
                m.masks[k] = u64::MAX >> (8 * (8 - c.len()));
            }
        }
        m
    }

    /// Whether `xml` holds this run at `p`.
    #[inline(always)]
    pub(super) fn at(&self, xml: &[u8], p: usize) -> bool {
        // A tag of a word or less (`<s>`, `</s>`): one load.
        if self.len <= 8 {
            if let Some(w) = word_at(xml, p) {
                return (w ^ self.words[0]) & self.masks[0] == 0;
            }
        } else if self.len <= 8 * MARKUP_WORDS {
            if let Some(s) = xml
                .get(p..)
                .and_then(|s| s.first_chunk::<{ 8 * MARKUP_WORDS }>())
            {
                let word = |a: usize| u64::from_le_bytes(s[a..a + 8].try_into().unwrap_or([0; 8]));
                let [w0, w1, w2] = self.words;
                let [m0, m1, m2] = self.masks;
                return (word(0) ^ w0) & m0 | (word(8) ^ w1) & m1 | (word(16) ^ w2) & m2 == 0;
            }
        }
        same_name(xml, p, self.start, self.len)
    }
}

/// The most runs of tags (places where text may be) a [`Sibling`] pattern holds.
pub(super) const SIBLING_RUNS: usize = 16;

/// Siblings in a row that do not match their pattern before the span stops trying patterns.
const SIBLING_MISSES: usize = 3;

impl Sibling {
    /// `xml[from..to]`, a complete child read tag by tag, becomes the pattern (text in it is plain:
    /// every `<` and `>` in it belongs to a tag). A child with too many runs turns patterns off for
    /// the rest of the span (its siblings are likely as large: not scanned again to find out).
    fn learn(&mut self, xml: &[u8], from: usize, to: usize) {
        // Rebuilt in place (it is 1 KiB, the thread's): only `runs[..len]` is ever read; `missed`
        // carries over.
        if self.missed >= SIBLING_MISSES {
            return;
        }
        self.len = 0;
        let mut start = from;
        for gt in memchr::memchr_iter(b'>', &xml[from..to]).map(|k| from + k) {
            if gt + 1 == to || xml[gt + 1] != b'<' {
                if self.len == SIBLING_RUNS {
                    self.missed = SIBLING_MISSES;
                    break;
                }
                self.runs[self.len] = Markup::new(xml, start, gt + 1 - start);
                self.len += 1;
                start = memchr::memchr(b'<', &xml[gt + 1..to]).map_or(to, |k| gt + 1 + k);
            }
        }
    }

    /// The child at `at` (a `<`) if its markup is the pattern's with plain text between, and the
    /// like siblings after it with plain text between them: the index just after the last.
    #[inline]
    fn read(&mut self, xml: &[u8], at: usize) -> Option<usize> {
        if self.missed >= SIBLING_MISSES {
            return None;
        }
        let Some(mut end) = self.one(xml, at) else {
            self.missed += 1;
            return None;
        };
        self.missed = 0;
        // The rest of the run here, not a sibling a call: what stops it is read by the caller.
        loop {
            let lt = match xml.get(end) {
                Some(b'<') => end,
                _ => match text_end(xml, end) {
                    (lt, seen) if seen & UNPLAIN == 0 => lt,
                    _ => return Some(end),
                },
            };
            match self.one(xml, lt) {
                Some(e) => end = e,
                None => return Some(end),
            }
        }
    }

    /// The child at `at` if its markup is the pattern's with plain text between: the index just
    /// after it.
    #[inline(always)]
    fn one(&self, xml: &[u8], at: usize) -> Option<usize> {
        let mut p = at;
        for (k, run) in self.runs[..self.len].iter().enumerate() {
            if k > 0 {
                let (lt, seen) = text_end(xml, p);
                if seen & UNPLAIN != 0 {
                    return None;
                }
                p = lt;
            }
            if !run.at(xml, p) {
                return None;
            }
            p += run.len;
        }
        Some(p)
    }
}
