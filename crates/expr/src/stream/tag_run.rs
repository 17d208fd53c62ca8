//! The attributes of a start tag in an inert span, read from the bitmasks of a 64-byte window
//! ([`attr_run`](super::attr_run)'s masks) instead of byte loops.
//!
//! | Step | How |
//! |---|---|
//! | Window | Classified once for the tags it holds: [`TagWindow`] keeps the last one, and a tag that starts in its first 40 bytes and ends within it is read from it |
//! | The tag's end | The first `>` after the name, from its mask |
//! | An attribute | `S name="value"` with an ASCII QName and a value with no byte its class depends on (below 0x20, non-ASCII, `<`, `&`), by bit arithmetic |
//! | Anything else | Not read here (`None`): [`StreamPath::span_tag`](super::StreamPath) reads the tag with the byte loop, which decides |
//!
//! A tag read here is one the byte loop accepts the same way; the tests compare the two on many
//! generated tags.

#[cfg(target_arch = "x86_64")]
use super::attr_run::{first_from, masks, span, starts_name, Masks};
#[cfg(target_arch = "x86_64")]
use super::scan::{is_bound, same_name};
use sluice_xml::names::PrefixIndex;

/// A tag that starts this far into the window or further gets a window of its own.
#[cfg(target_arch = "x86_64")]
const REUSE_BELOW: usize = 40;

/// The most attributes a tag read here has (the byte loop takes up to [`super::FEW_ATTRS`]).
#[cfg(target_arch = "x86_64")]
const MASKED_ATTRS: usize = 8;

/// The last window classified, kept while an inert span reads the tags in it.
pub(super) struct TagWindow {
    #[cfg(target_arch = "x86_64")]
    simd: Option<pulp::x86::V3>,
    #[cfg(target_arch = "x86_64")]
    at: usize,
    #[cfg(target_arch = "x86_64")]
    masks: Masks,
}

impl TagWindow {
    /// No window yet; `None` from [`TagWindow::attributes`] where the CPU has no AVX2.
    pub(super) fn new() -> TagWindow {
        TagWindow {
            #[cfg(target_arch = "x86_64")]
            simd: pulp::x86::V3::try_new(),
            #[cfg(target_arch = "x86_64")]
            at: usize::MAX,
            #[cfg(target_arch = "x86_64")]
            masks: Masks::default(),
        }
    }

    /// The start tag at `from` (just after `<`) whose name `xml[from..name_end]` is read and is
    /// followed by white space, with its prefix (`colon` bytes, or none) bound: (index of `>`,
    /// empty element) when its attributes are what an inert span takes, as
    /// [`super::bulk`]'s byte loop reads them: at most [`MASKED_ATTRS`], ASCII QNames, plain ASCII
    /// values, none a namespace declaration, each prefix bound, at most one prefixed. `None` when
    /// it is anything else or does not end within a window: the byte loop reads it.
    #[cfg(target_arch = "x86_64")]
    #[inline]
    pub(super) fn attributes(
        &mut self,
        xml: &[u8],
        (from, name_end, colon): (usize, usize, usize),
        (bindings, index): (&[(&str, &str, usize)], &PrefixIndex<'_>),
    ) -> Option<(usize, bool)> {
        let simd = self.simd?;
        let mut o = name_end.wrapping_sub(self.at);
        let mut gt = if o < REUSE_BELOW {
            first_from(self.masks.gt, o as u32)
        } else {
            64
        };
        if gt == 64 {
            let w = xml.get(name_end..)?.first_chunk::<64>()?;
            self.masks = simd.vectorize(Classify { simd, w });
            self.at = name_end;
            o = 0;
            gt = self.masks.gt.trailing_zeros();
            if gt == 64 {
                return None;
            }
        }
        let (m, at) = (&self.masks, self.at);
        let empty = xml[at + gt as usize - 1] == b'/';
        let end = gt - u32::from(empty);
        // The names read, for the check that none repeats; a tag with more goes to the byte loop.
        let mut names = [(0u32, 0u32); MASKED_ATTRS];
        let (mut n, mut prefixed, mut o) = (0, false, o as u32);
        loop {
            // White space, then a name or the tag's end.
            let name = first_from(!m.ws, o);
            if name >= end {
                return Some((at + gt as usize, empty));
            }
            let eq = first_from(m.eq, name);
            if name == o || n == MASKED_ATTRS || eq + 1 >= end || m.quote & (1u64 << (eq + 1)) == 0
            {
                return None;
            }
            let close = first_from(m.quote, eq + 2);
            let name_bits = span(name, eq);
            if close >= end
                || m.not_name & name_bits != 0
                || m.classed & span(eq + 2, close) != 0
                || !starts_name(xml[at + name as usize])
            {
                return None;
            }
            let (start, len) = (at + name as usize, (eq - name) as usize);
            let colons = m.colon & name_bits;
            if colons != 0 {
                let c = (colons.trailing_zeros() - name) as usize;
                if colons & (colons - 1) != 0
                    || !starts_name(xml[start + c + 1])
                    || prefixed
                    || !self::prefix_bound(xml, (start, c), (from, colon), (bindings, index))
                {
                    return None;
                }
                prefixed = true;
            } else if len == 5 && &xml[start..start + 5] == b"xmlns" {
                return None;
            }
            if names[..n]
                .iter()
                .any(|&(s, l)| l as usize == len && same_name(xml, s as usize, start, len))
            {
                return None;
            }
            names[n] = (start as u32, len as u32);
            n += 1;
            o = close + 1;
        }
    }

    #[cfg(not(target_arch = "x86_64"))]
    #[inline]
    pub(super) fn attributes(
        &mut self,
        _: &[u8],
        _: (usize, usize, usize),
        _: (&[(&str, &str, usize)], &PrefixIndex<'_>),
    ) -> Option<(usize, bool)> {
        None
    }
}

/// Whether an attribute's prefix `xml[start..start + len]` is one an inert span takes: not
/// `xmlns`; `xml`, the element's own (`xml[from..from + colon]`, checked by the caller), or bound.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn prefix_bound(
    xml: &[u8],
    (start, len): (usize, usize),
    (from, colon): (usize, usize),
    (bindings, index): (&[(&str, &str, usize)], &PrefixIndex<'_>),
) -> bool {
    let prefix = &xml[start..start + len];
    if prefix == b"xmlns" {
        return false;
    }
    prefix == b"xml"
        || (colon == len && same_name(xml, from, start, len))
        || is_bound(bindings, index, prefix)
}

/// [`masks`] run by `pulp` as AVX2 code.
#[cfg(target_arch = "x86_64")]
struct Classify<'a> {
    simd: pulp::x86::V3,
    w: &'a [u8; 64],
}

#[cfg(target_arch = "x86_64")]
impl pulp::NullaryFnOnce for Classify<'_> {
    type Output = Masks;

    #[inline(always)]
    fn call(self) -> Masks {
        masks(self.simd, self.w)
    }
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::super::bulk::attributes;
    use super::super::scan::ascii_qname;
    use super::*;
    use crate::testing::Rng;

    /// A generated start tag from its name on (`<` left out), with every way out of the shape
    /// read from masks, then padding so that a window fits.
    fn tag(rng: &mut Rng) -> String {
        const ELEMENTS: [&str; 5] = ["e", "p:e", "q:item", "z:e", "a.b-c_d"];
        const WS: [&str; 5] = [" ", " ", "  ", "\n\t", " \r\n"];
        const NAMES: [&str; 14] = [
            "a", "b", "p:a", "q:b", "z:a", "xml:lang", "xmlns", "xmlns:p", "p:", ":a", "1a",
            "p:a:b", "_x.y-z", "\u{e9}",
        ];
        const VALUES: [&str; 9] = [
            "1",
            "",
            "urn:p:1",
            "a&amp;b",
            "a>b",
            "tab\there",
            "caf\u{e9}",
            "it's",
            "x/y=z",
        ];
        let pick = |rng: &mut Rng, n: usize| (rng.next() % n as u64) as usize;
        let mut s = String::from(ELEMENTS[pick(rng, ELEMENTS.len())]);
        for _ in 0..pick(rng, 6) {
            s.push_str(WS[pick(rng, WS.len())]);
            // Mostly the shape read here, now and then a way out of it.
            let odd = pick(rng, 6) == 0;
            s.push_str(NAMES[pick(rng, if odd { NAMES.len() } else { 5 })]);
            s.push_str(["=", "=", "=", " ="][pick(rng, if odd { 4 } else { 3 })]);
            let q = if odd && pick(rng, 3) == 0 { '\'' } else { '"' };
            s.push(q);
            s.push_str(&VALUES[pick(rng, if odd { VALUES.len() } else { 3 })].replace(q, ""));
            if !odd || pick(rng, 5) > 0 {
                s.push(q);
            }
        }
        if pick(rng, 4) == 0 {
            s.push(' ');
        }
        s.push_str(["/>", ">", "/ >", ">"][pick(rng, 4)]);
        s.push_str(&"<x/>".repeat(pick(rng, 20)));
        s
    }

    #[test]
    fn the_masks_accept_what_the_byte_loop_accepts() {
        if pulp::x86::V3::try_new().is_none() {
            return;
        }
        let bindings = [("p", "urn:p", 1), ("q", "urn:q", 1)];
        let index = PrefixIndex::default();
        let mut rng = Rng(0x7a6_5eed);
        let (mut read, mut tags) = (0, 0);
        for _ in 0..400 {
            // Tags one after another in one buffer, read in order with one window, as a span
            // meets them.
            let mut xml = Vec::new();
            let mut starts = Vec::new();
            for _ in 0..50 {
                xml.push(b'<');
                starts.push(xml.len());
                xml.extend_from_slice(tag(&mut rng).as_bytes());
            }
            let mut window = TagWindow::new();
            for from in starts {
                let Some((name_end, colon)) = ascii_qname(&xml, from) else {
                    continue;
                };
                if !xml.get(name_end).is_some_and(|&c| c == b' ' || c == b'\n') {
                    continue;
                }
                tags += 1;
                let bytes = attributes(&xml, from, (name_end, colon, 1), (&bindings, &index))
                    .map(|(gt, empty, ..)| (gt, empty));
                if let Some(masked) =
                    window.attributes(&xml, (from, name_end, colon), (&bindings, &index))
                {
                    let text = String::from_utf8_lossy(&xml[from..(from + 80).min(xml.len())]);
                    assert_eq!(Some(masked), bytes, "{text:?}");
                    read += 1;
                }
            }
        }
        assert!(
            read > tags / 8,
            "too few tags read from masks: {read} of {tags}"
        );
    }
}
