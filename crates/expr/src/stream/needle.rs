//! Siblings read by name.
//!
//! Under a `//` path, siblings named as the path's first step are not read tag by tag. Under
//! `//order[1]/symbol` these are the later `order`s ([`StreamPath::needle_run`]).
//!
//! - A search for the name finds each sibling's end tag.
//! - The text and start tag between two siblings, once seen, are recognised by three word
//!   comparisons.
//! - A start tag of that name inside a sibling hands the reading back to the tokenizer. So does a
//!   comment, CDATA section or processing instruction anywhere after ([`Bang`]).
//!
//! The search has three forms:
//!
//! | Where | How |
//! |---|---|
//! | CPU with AVX2 | One pass looks for the name and for `<!` or `<?` together ([`scan_v3`]). The whole run is compiled for AVX2 through `pulp`'s safe run-time dispatch; there is no `unsafe` of ours. |
//! | A run of siblings whose end tag and next start tag repeat | Block by block, 64 bytes at a time ([`NameScan::bulk`]): two AVX2 comparisons, or one where the CPU has AVX-512 (`pulp`'s x86-v4 level). Each candidate is compared with the repeating markup, 32 bytes at once. The next block's address does not wait on where the last sibling ended. |
//! | Elsewhere | `memmem`, after one `memchr2` pass for `<!` and `<?`. |
//!
//! The price: the inside of these siblings is not checked, UTF-8 included. Malformed content there
//! cannot change the answer for a well-formed document. Such a message is relayed as pass-through
//! would relay it, and the back-end judges it.

use super::bulk::{Markup, MARKUP_WORDS};
use super::scan::{is_ws, same_name, word_at, NAME_CLASS};
use super::StreamPath;

/// The search [`StreamPath::needle_run`] makes for a name. With AVX2 (`pulp`'s safe runtime
/// dispatch), one pass over the bytes finds both the name and the first `<!` or `<?` (which stops
/// the run), 32 bytes a step (64 in the bulk of a run, [`NameScan::bulk`]), and the whole run is
/// compiled for AVX2; elsewhere `memmem`, up to the [`Bang`] found by a pass of its own.
#[derive(Debug)]
pub(super) struct NameFinder {
    #[cfg(target_arch = "x86_64")]
    pub(super) v3: Option<pulp::x86::V3>,
    /// Where the CPU has AVX-512 (BW): the bulk of a run 64 bytes a comparison.
    #[cfg(target_arch = "x86_64")]
    pub(super) v4: Option<pulp::x86::V4>,
    #[cfg(target_arch = "x86_64")]
    word: Option<(u64, u64)>,
    pub(super) any: memchr::memmem::Finder<'static>,
}

impl NameFinder {
    pub(super) fn new(name: &[u8]) -> NameFinder {
        NameFinder {
            #[cfg(target_arch = "x86_64")]
            v3: pulp::x86::V3::try_new().filter(|_| !name.is_empty()),
            #[cfg(target_arch = "x86_64")]
            v4: pulp::x86::V4::try_new().filter(|_| !name.is_empty()),
            #[cfg(target_arch = "x86_64")]
            word: name_word(name),
            any: memchr::memmem::Finder::new(name).into_owned(),
        }
    }
}

/// What one byte position is to [`scan_v3`]: the start of `name`, of a comment, CDATA section or
/// processing instruction (`p` at its `!` or `?`), or neither.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn scan_at(xml: &[u8], p: usize, name: &[u8], word: Option<(u64, u64)>) -> Option<Option<usize>> {
    match xml[p] {
        b'!' | b'?' if p > 0 && xml[p - 1] == b'<' => Some(None),
        _ if starts_with_name(xml, p, name, word) => Some(Some(p)),
        _ => None,
    }
}

/// `xml[p..].starts_with(name)`, with `word` the name as a masked word when it has at most 8 bytes
/// (one comparison; `memcmp` is a call).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn starts_with_name(xml: &[u8], p: usize, name: &[u8], word: Option<(u64, u64)>) -> bool {
    match (word, word_at(xml, p)) {
        (Some((n, mask)), Some(w)) => (w ^ n) & mask == 0,
        _ => xml[p..].starts_with(name),
    }
}

/// A name of up to 8 bytes as a little-endian word and the mask of its bytes.
#[cfg(target_arch = "x86_64")]
fn name_word(name: &[u8]) -> Option<(u64, u64)> {
    let mut w = [0u8; 8];
    w.get_mut(..name.len())?.copy_from_slice(name);
    Some((u64::from_le_bytes(w), u64::MAX >> (8 * (8 - name.len()))))
}

/// The `N` bytes at `at` and the `N` bytes `len - 1` further on (the name's first and last bytes
/// compared at once), while both fit (as slices from `at`, so that no index can overflow).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn block_at<const N: usize>(xml: &[u8], at: usize, len: usize) -> Option<(&[u8; N], &[u8; N])> {
    let s = xml.get(at..)?;
    Some((
        s.first_chunk()?,
        s.get(len.checked_sub(1)?..)?.first_chunk()?,
    ))
}

/// The bytes [`mask_v3`] compares with, each in every lane: made once a search (the broadcasts
/// are not left to the optimiser to hoist out of the loops).
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
struct Splats {
    pub(super) first: core::arch::x86_64::__m256i,
    pub(super) last: core::arch::x86_64::__m256i,
    pub(super) bang: core::arch::x86_64::__m256i,
    query: core::arch::x86_64::__m256i,
}

#[cfg(target_arch = "x86_64")]
impl Splats {
    /// For a name of at least one byte ([`NameFinder::new`] gives no AVX2 search to others).
    #[inline(always)]
    pub(super) fn new(simd: pulp::x86::V3, name: &[u8]) -> Splats {
        let splat = |b: u8| simd.avx._mm256_set1_epi8(i8::from_ne_bytes([b]));
        Splats {
            first: splat(name.first().copied().unwrap_or(0)),
            last: splat(name.last().copied().unwrap_or(0)),
            bang: splat(b'!'),
            query: splat(b'?'),
        }
    }
}

/// The positions in `a` (32 bytes) where the name may start (its first byte there, its last byte
/// at the same position in `b`, the bytes `name.len() - 1` further on) or that hold `!` or `?`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn mask_v3(simd: pulp::x86::V3, a: &[u8; 32], b: &[u8; 32], s: &Splats) -> u32 {
    use core::arch::x86_64::__m256i;
    let avx2 = simd.avx2;
    let (a, b): (__m256i, __m256i) = (pulp::cast(*a), pulp::cast(*b));
    let named = avx2._mm256_and_si256(
        avx2._mm256_cmpeq_epi8(a, s.first),
        avx2._mm256_cmpeq_epi8(b, s.last),
    );
    let marked = avx2._mm256_or_si256(
        avx2._mm256_cmpeq_epi8(a, s.bang),
        avx2._mm256_cmpeq_epi8(a, s.query),
    );
    avx2._mm256_movemask_epi8(avx2._mm256_or_si256(named, marked)) as u32
}

/// The first occurrence of `name` in `xml` at or after `at`, `None` when a `<!` or `<?` comes first
/// or there is none. A step compares 32 bytes with the name's first and last bytes and with `!` and
/// `?` at once; candidates are then checked one by one ([`scan_at`]), the last bytes one by one.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn scan_v3(
    simd: pulp::x86::V3,
    xml: &[u8],
    mut at: usize,
    name: &[u8],
    word: Option<(u64, u64)>,
    splats: &Splats,
) -> Option<usize> {
    while let Some((a, b)) = block_at::<32>(xml, at, name.len()) {
        let mut m = mask_v3(simd, a, b, splats);
        while m != 0 {
            if let Some(found) = scan_at(xml, at + m.trailing_zeros() as usize, name, word) {
                return found;
            }
            m &= m - 1;
        }
        at += 32;
    }
    while at < xml.len() {
        if let Some(found) = scan_at(xml, at, name, word) {
            return found;
        }
        at += 1;
    }
    None
}

impl StreamPath {
    /// A run of inert siblings named as the first step of a `//` path (every `order` after the
    /// first under `//order[1]/symbol`, the usual bulk of a document), read by searching for that
    /// name alone instead of tag by tag. From `lt`, the `<` of such a sibling's start tag `<Q>` (no
    /// attributes), whose qualified name is the `len` bytes after `lt`. Inside an inert sibling
    /// only an element the first step tests could match, so every occurrence of its local name is
    /// looked at: a start tag named so ends the run before this sibling (the tag by tag reading
    /// takes it); the sibling's own end tag ends the sibling. The next sibling must follow after
    /// text alone, as `<Q>` again. Nothing else is read: the text and the other tags inside are not
    /// checked, as content after an answer is not (see the `stream` module doc). The run stops
    /// before a comment, CDATA section or processing instruction ([`Bang`]), whose text could look
    /// like a tag. Returns the index of the first `<` (or the end) after the last complete sibling,
    /// or `None` when not even the first is complete.
    pub(super) fn needle_run(
        &self,
        xml: &[u8],
        lt: usize,
        len: usize,
        bang: &mut Bang,
    ) -> Option<usize> {
        let finder = self.needle.as_ref()?;
        #[cfg(target_arch = "x86_64")]
        if let Some(simd) = finder.v3 {
            let run = V3Run {
                xml,
                lt,
                len,
                simd,
                name: finder.any.needle(),
                word: finder.word,
            };
            return match finder.v4 {
                Some(v4) => v4.vectorize(V4Run { run, simd: v4 }),
                None => simd.vectorize(run),
            };
        }
        let hay = &xml[..bang.after(xml, lt)];
        siblings_by_name(
            xml,
            lt,
            len,
            MemmemScan {
                hay,
                finder: &finder.any,
            },
        )
    }
}

/// How [`siblings_by_name`] finds the next occurrence of the name at or after a position, before any
/// comment, CDATA section or processing instruction: a trait (not a closure) so that everything is
/// inlined into AVX2 code where the CPU has it.
trait NameScan {
    fn len(&self) -> usize;
    fn find(&mut self, xml: &[u8], at: usize) -> Option<usize>;
    /// The bulk of a run, where the search can read it block by block: from the sibling whose start
    /// tag `<Q>` (`len` bytes of name) is at `start`, the siblings that follow it as `both` (its
    /// end tag, the text between, the next start tag, at most [`MARKUP_WORDS`] words) says, each
    /// one's end tag being the first occurrence of the name after its start tag. Returns the start
    /// of the last such sibling (`start` itself when there is none, or no block step).
    #[inline(always)]
    fn bulk(&self, _: &[u8], _: &Markup, start: usize, _: usize) -> usize {
        start
    }
}

/// The search without AVX2: `memmem` over the input up to its first [`Bang`].
struct MemmemScan<'a> {
    hay: &'a [u8],
    finder: &'a memchr::memmem::Finder<'static>,
}

impl NameScan for MemmemScan<'_> {
    fn len(&self) -> usize {
        self.finder.needle().len()
    }

    #[inline(always)]
    fn find(&mut self, _: &[u8], at: usize) -> Option<usize> {
        let k = self.finder.find(self.hay.get(at..)?)?;
        Some(at + k)
    }
}

/// The search with AVX2 ([`scan_v3`]).
#[cfg(target_arch = "x86_64")]
struct V3Scan<'a> {
    simd: pulp::x86::V3,
    pub(super) name: &'a [u8],
    word: Option<(u64, u64)>,
    splats: Splats,
}

#[cfg(target_arch = "x86_64")]
impl NameScan for V3Scan<'_> {
    #[inline(always)]
    fn len(&self) -> usize {
        self.name.len()
    }

    #[inline(always)]
    fn find(&mut self, xml: &[u8], at: usize) -> Option<usize> {
        scan_v3(self.simd, xml, at, self.name, self.word, &self.splats)
    }

    #[inline(always)]
    fn bulk(&self, xml: &[u8], both: &Markup, start: usize, len: usize) -> usize {
        let (simd, s) = (self.simd, &self.splats);
        bulk_blocks(self, xml, both, start, len, |a, b| {
            let (a0, a1) = a.split_at(32);
            let (b0, b1) = b.split_at(32);
            match (
                a0.first_chunk(),
                a1.first_chunk(),
                b0.first_chunk(),
                b1.first_chunk(),
            ) {
                (Some(a0), Some(a1), Some(b0), Some(b1)) => {
                    u64::from(mask_v3(simd, a0, b0, s)) | u64::from(mask_v3(simd, a1, b1, s)) << 32
                }
                _ => 0,
            }
        })
    }
}

/// [`NameScan::bulk`] 64 bytes a step, `mask` giving a step's candidates (bit k for the k-th
/// byte: where the name may start, its first byte there and its last byte at the same place in
/// the second block, `f - 1` bytes further on; or `!` or `?`), looked at in order: the next
/// sibling's end tag is where the run `both` is (32 bytes compared at once), the next start tag's
/// name (in that run) is passed over, a false candidate (not the name, nor `!` or `?` after `<`:
/// [`scan_at`]) too; anything else ends the bulk. The next step's place does not wait on where
/// the last sibling ended, so the reading of one sibling overlaps the search over the next.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn bulk_blocks(
    scan: &V3Scan,
    xml: &[u8],
    both: &Markup,
    mut start: usize,
    len: usize,
    mask: impl Fn(&[u8], &[u8]) -> u64,
) -> usize {
    use core::arch::x86_64::__m256i;
    let (simd, f) = (scan.simd, scan.name.len());
    // (`siblings_by_name` makes `both` only of runs that fit in its words.)
    debug_assert!(both.len <= 8 * MARKUP_WORDS);
    let [w0, w1, w2] = both.words;
    let [m0, m1, m2] = both.masks;
    let (words, masks): (__m256i, __m256i) =
        (pulp::cast([w0, w1, w2, 0]), pulp::cast([m0, m1, m2, 0]));
    // From the end tag's name back to the run's start.
    let back = 2 + len - f;
    let mut next = start + len + 2;
    // Steps of 64 bytes from `next`, with the 64 bytes `f - 1` further on, while both fit.
    let (Some(firsts), Some(lasts)) = (xml.get(next..), xml.get(next + f - 1..)) else {
        return start;
    };
    let steps = firsts.chunks_exact(64).zip(lasts.chunks_exact(64));
    for (at, (a, b)) in (next..).step_by(64).zip(steps) {
        let mut mask = mask(a, b);
        while mask != 0 {
            let p = at + mask.trailing_zeros() as usize;
            mask &= mask - 1;
            // (Inside the run just matched: the next start tag's name.)
            if p < next {
                continue;
            }
            let run = p - back;
            // (Near the end, fewer than 32 bytes are left: the words one by one.)
            let matched = match xml[run..].first_chunk::<32>() {
                Some(s) => {
                    let v: __m256i = pulp::cast(*s);
                    let differ = simd.avx2._mm256_xor_si256(v, words);
                    simd.avx._mm256_testz_si256(differ, masks) == 1
                }
                _ => both.at(xml, run),
            };
            if matched {
                start = run + both.len - len - 2;
                next = start + len + 2;
                continue;
            }
            // Not the name after all: passed over. Anything else is for the reading after the
            // bulk.
            if scan_at(xml, p, scan.name, scan.word).is_some() {
                return start;
            }
        }
    }
    start
}

/// [`siblings_by_name`] with [`V3Scan`], run by `pulp` as AVX2 code.
#[cfg(target_arch = "x86_64")]
struct V3Run<'a> {
    pub(super) xml: &'a [u8],
    pub(super) lt: usize,
    pub(super) len: usize,
    simd: pulp::x86::V3,
    pub(super) name: &'a [u8],
    word: Option<(u64, u64)>,
}

#[cfg(target_arch = "x86_64")]
impl pulp::NullaryFnOnce for V3Run<'_> {
    type Output = Option<usize>;

    #[inline(always)]
    fn call(self) -> Option<usize> {
        siblings_by_name(self.xml, self.lt, self.len, self.scan())
    }
}

#[cfg(target_arch = "x86_64")]
impl<'a> V3Run<'a> {
    /// The AVX2 search for this run's name (called where AVX2 code is compiled: the broadcasts).
    #[inline(always)]
    pub(super) fn scan(&self) -> V3Scan<'a> {
        V3Scan {
            simd: self.simd,
            name: self.name,
            word: self.word,
            splats: Splats::new(self.simd, self.name),
        }
    }
}

/// [`siblings_by_name`] with [`V4Scan`], run by `pulp` as AVX-512 code.
#[cfg(target_arch = "x86_64")]
struct V4Run<'a> {
    pub(super) run: V3Run<'a>,
    simd: pulp::x86::V4,
}

#[cfg(target_arch = "x86_64")]
impl pulp::NullaryFnOnce for V4Run<'_> {
    type Output = Option<usize>;

    #[inline(always)]
    fn call(self) -> Option<usize> {
        let r = self.run;
        let splat = |b: u8| self.simd.avx512f._mm512_set1_epi8(i8::from_ne_bytes([b]));
        let scan = V4Scan {
            v3: r.scan(),
            simd: self.simd,
            splats: [
                splat(r.name.first().copied().unwrap_or(0)),
                splat(r.name.last().copied().unwrap_or(0)),
                splat(b'!'),
                splat(b'?'),
            ],
        };
        siblings_by_name(r.xml, r.lt, r.len, scan)
    }
}

/// The search with AVX-512: [`V3Scan`]'s, but for the bulk's steps, 64 bytes compared at once.
#[cfg(target_arch = "x86_64")]
struct V4Scan<'a> {
    pub(super) v3: V3Scan<'a>,
    simd: pulp::x86::V4,
    /// As [`Splats`]: the name's first and last bytes, `!` and `?`.
    splats: [core::arch::x86_64::__m512i; 4],
}

#[cfg(target_arch = "x86_64")]
impl NameScan for V4Scan<'_> {
    #[inline(always)]
    fn len(&self) -> usize {
        self.v3.len()
    }

    #[inline(always)]
    fn find(&mut self, xml: &[u8], at: usize) -> Option<usize> {
        self.v3.find(xml, at)
    }

    #[inline(always)]
    fn bulk(&self, xml: &[u8], both: &Markup, start: usize, len: usize) -> usize {
        use core::arch::x86_64::__m512i;
        let bw = self.simd.avx512bw;
        let [first, last, bang, query] = self.splats;
        bulk_blocks(&self.v3, xml, both, start, len, |a, b| {
            match (a.first_chunk::<64>(), b.first_chunk::<64>()) {
                (Some(a), Some(b)) => {
                    let (a, b): (__m512i, __m512i) = (pulp::cast(*a), pulp::cast(*b));
                    bw._mm512_cmpeq_epi8_mask(a, first) & bw._mm512_cmpeq_epi8_mask(b, last)
                        | bw._mm512_cmpeq_epi8_mask(a, bang)
                        | bw._mm512_cmpeq_epi8_mask(a, query)
                }
                _ => 0,
            }
        })
    }
}

/// [`StreamPath::needle_run`]'s reading, with `scan` finding the name.
#[inline(always)]
fn siblings_by_name(xml: &[u8], lt: usize, len: usize, mut scan: impl NameScan) -> Option<usize> {
    let f = scan.len();
    let name = lt + 1;
    let mut start = lt;
    let mut read = None;
    // Once seen, the sibling's end tag, and what went from one sibling's end to the next one's
    // start (text, then `<Q>`): in a document's bulk both repeat byte for byte, and are then
    // recognised by a few word comparisons.
    let mut end_tag: Option<Markup> = None;
    let mut between: Option<Markup> = None;
    'siblings: loop {
        // The bulk, once both are known: a search, then one or two comparisons, a sibling.
        if let (Some(e), Some(b)) = (&end_tag, &between) {
            let skip = b.len - len - 2;
            // Both as one run when they were learned side by side and fit in its words: one
            // comparison a sibling.
            let both = (e.start + e.len == b.start && e.len + b.len <= 8 * MARKUP_WORDS)
                .then(|| Markup::new(xml, e.start, e.len + b.len));
            // Block by block first, where the search can.
            if let Some(m) = &both {
                let s = scan.bulk(xml, m, start, len);
                if s != start {
                    start = s;
                    read = Some(s);
                }
            }
            while let Some(h) = scan.find(xml, start + len + 2) {
                let end = h + f + 1;
                // (`end` is past the sibling's start tag, so at least `len + 3` in.)
                let follows = match &both {
                    Some(m) => m.at(xml, end - len - 3),
                    None => e.at(xml, end - len - 3) && b.at(xml, end),
                };
                if !follows {
                    break;
                }
                start = end + skip;
                read = Some(start);
            }
        }
        // The sibling's end: the first end tag of its name after its start, if no start tag named
        // as the first step comes before it.
        let mut at = start + len + 2;
        let end = loop {
            let Some(h) = scan.find(xml, at) else {
                break 'siblings;
            };
            let gt = h + f;
            // (`gt` is past the sibling's start tag, so at least `len + 2` in.)
            if end_tag
                .as_ref()
                .is_some_and(|m| m.at(xml, (gt + 1).saturating_sub(len + 3)))
            {
                break gt + 1;
            }
            match name_at(xml, h, f) {
                NameAt::Other => at = gt,
                NameAt::End(s)
                    if gt - s == len
                        && xml.get(gt) == Some(&b'>')
                        && same_name(xml, s, name, len) =>
                {
                    end_tag = Some(Markup::new(xml, s - 2, len + 3));
                    break gt + 1;
                }
                NameAt::Start | NameAt::End(_) => break 'siblings,
            }
        };
        if let Some(m) = &between {
            if m.at(xml, end) {
                start = end + m.len - len - 2;
                read = Some(start);
                continue;
            }
        }
        let next = memchr::memchr(b'<', &xml[end..]).map_or(xml.len(), |k| end + k);
        read = Some(next);
        if !(xml.get(next + len + 1) == Some(&b'>') && same_name(xml, next + 1, name, len)) {
            break;
        }
        between = Some(Markup::new(xml, end, next + len + 2 - end));
        start = next;
    }
    read
}

/// What an occurrence of a name at `h` (`f` bytes long) is in markup assumed well-formed, with no
/// comment, CDATA section or processing instruction around: the local name of a start tag, of an end
/// tag (with the index where its qualified name starts), or anything else (text, an attribute value,
/// part of a longer name). Bytes of a prefix are any but delimiters, so that a non-ASCII prefix is not
/// taken for text.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum NameAt {
    Start,
    End(usize),
    Other,
}

pub(super) fn name_at(xml: &[u8], h: usize, f: usize) -> NameAt {
    let name_byte = |c: u8| NAME_CLASS[usize::from(c)] != 0 || c >= 0x80;
    if !matches!(xml.get(h + f), Some(&c) if c == b'>' || c == b'/' || is_ws(c)) {
        return NameAt::Other;
    }
    let mut s = h;
    if h > 0 && xml[h - 1] == b':' {
        s = h - 1;
        while s > 0 && name_byte(xml[s - 1]) {
            s -= 1;
        }
    }
    match (
        s.checked_sub(1).map(|k| xml[k]),
        s.checked_sub(2).map(|k| xml[k]),
    ) {
        (Some(b'<'), _) => NameAt::Start,
        (Some(b'/'), Some(b'<')) => NameAt::End(s),
        _ => NameAt::Other,
    }
}

/// Where the first comment, CDATA section or processing instruction (`<!` or `<?`) at or after a
/// position is, found once for the rest of the document and kept while the reading is before it.
#[derive(Default)]
pub(super) struct Bang {
    pub(super) from: usize,
    pub(super) at: Option<usize>,
}

impl Bang {
    /// The index of the first `<!` or `<?` at or after `from`, or the input's length.
    pub(super) fn after(&mut self, xml: &[u8], from: usize) -> usize {
        match self.at {
            Some(at) if self.from <= from && from <= at => at,
            _ => {
                let mut p = from;
                let at = loop {
                    match memchr::memchr2(b'!', b'?', xml.get(p..).unwrap_or_default()) {
                        Some(k) if p + k > 0 && xml[p + k - 1] == b'<' => break p + k - 1,
                        Some(k) => p += k + 1,
                        None => break xml.len(),
                    }
                };
                self.from = from;
                self.at = Some(at);
                at
            }
        }
    }
}
