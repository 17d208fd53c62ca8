//! Streaming evaluation of the XPath forms content-based routing uses most, straight over the message
//! bytes (quick-xml), without building a libxml2 tree.
//!
//! [`StreamPath::compile`] accepts a small subset and refuses everything else (those expressions keep
//! using libxml2):
//!
//! * location paths `/a/p:b[2]/c` or `//c[1]/d`: child steps (a leading `//` only), name tests `QName` or
//!   `*`, predicates `[n]`, `[child='lit']` and `[@attr='lit']`, and a final `text()` or `@attr` step;
//! * around a path: `path = 'lit'`, `'lit' = path`, `path != 'lit'`, `boolean(path)`, `not(path)`,
//!   `count(path)` (alone or compared with a number), `string(path)`, `normalize-space(path)`.
//!
//! Evaluation gives exactly what [`crate::Expr::eval_string`] / [`crate::Expr::eval_bool`] give through
//! libxml2, or `None` ("use libxml2") whenever that is not certain: a DOCTYPE, a processing instruction, an
//! encoding other than UTF-8, anything malformed or deeper than libxml2's limit before the answer is known,
//! and an element with more attributes, or more namespace declarations in scope, than Sluice's parse
//! accepts (1,000 each: `sluice_xml::Limits`). Reading stays linear in the attributes and declarations
//! up to there: repeats are found by sorting past a few attributes, prefixes through a
//! [`PrefixIndex`] past a few bindings.
//! Reading stops as soon as the answer is decided, so malformed content *after* that point is not seen
//! (the libxml2 path would fault on it). Likewise, under a `//` path, the later siblings named as its
//! first step (every `order` after the first under `//order[1]/symbol`) are found by searching for
//! that name ([`StreamPath::needle_run`], with AVX2 where the CPU has it, through `pulp`): what is
//! inside them cannot change the answer for a well-formed document, and is not checked (nor is its
//! UTF-8, unless it falls in the window checked ahead of the reading). A thread keeps, per compiled
//! path, a [`Memo`] of the fast reader's state just after the first start tag that selects
//! something, with the bytes before that place: a document that begins with those bytes (the next
//! message from the same client, usually) is read from there. One
//! deliberate SOAP assumption: under a SOAP `Envelope` there is one `Header` and one `Body`, the
//! `Header` first, so `/soapenv:Envelope/soapenv:Header/...` is answered
//! when the `Body` starts and `/soapenv:Envelope/soapenv:Body/...` when the `Body` ends (Synapse's SOAP
//! builder does not accept other envelopes either).

use quick_xml::events::{BytesStart, Event};
use quick_xml::name::ResolveResult;
use quick_xml::NsReader;
use sluice_xml::names::{is_ncname, name_classes, PrefixIndex, NAME_START};
use std::borrow::Cow;

/// libxml2's nesting limit as Sluice parses (`sluice_xml::Limits::default().max_depth`).
const MAX_DEPTH: usize = 256;
/// How deep [`StreamPath::inert_span`] follows elements inside an inert child: as deep as a document
/// may go, so that a deep inert subtree is read in one span rather than a level at a time.
const INERT_STACK: usize = MAX_DEPTH;
/// `sluice_xml::Limits::default().max_bytes`.
const MAX_BYTES: usize = 64 * 1024 * 1024;
const MAX_STEPS: usize = 32;
const MAX_PREDS: usize = 8;
/// An element with more attributes (namespace declarations included) is left to libxml2
/// (`Halt::Refuse`), where Sluice's parse refuses it (`sluice_xml::Limits::max_attributes`).
const MAX_ATTRS: usize = sluice_xml::DEFAULT_MAX_ATTRIBUTES;
/// More namespace declarations in scope at once are left to libxml2, as [`MAX_ATTRS`] more
/// attributes (`sluice_xml::Limits::max_namespaces`).
const MAX_BINDINGS: usize = sluice_xml::DEFAULT_MAX_NAMESPACES;
/// Up to this many attributes on an element are checked for repeats pair by pair (the usual none to
/// three, where that is cheapest); more, by sorting.
const FEW_ATTRS: usize = 16;
/// Up to this many namespace bindings in scope are searched from the innermost; more, through a
/// [`PrefixIndex`].
const FEW_BINDINGS: usize = 16;

const SOAP11_ENV: &str = "http://schemas.xmlsoap.org/soap/envelope/";
const SOAP12_ENV: &str = "http://www.w3.org/2003/05/soap-envelope";

/// An element or attribute name test.
#[derive(Clone, Debug, PartialEq, Eq)]
enum NameTest {
    Any,
    Name { ns: Option<String>, local: String },
}

impl NameTest {
    fn matches(&self, ns: Option<&str>, local: &str) -> bool {
        self.local_matches(local.as_bytes()) && self.ns_matches(ns)
    }

    /// The local-name half of [`NameTest::matches`] ([`Path::step_mask`] asks it of every step).
    #[inline]
    fn local_matches(&self, local: &[u8]) -> bool {
        match self {
            NameTest::Any => true,
            NameTest::Name { local: l, .. } => short_eq(l.as_bytes(), local),
        }
    }

    /// The namespace half of [`NameTest::matches`], for a name whose local part is known to pass.
    fn ns_matches(&self, ns: Option<&str>) -> bool {
        match self {
            NameTest::Any => true,
            NameTest::Name { ns: n, .. } => match (n, ns) {
                (Some(a), Some(b)) => short_eq(a.as_bytes(), b.as_bytes()),
                (None, None) => true,
                _ => false,
            },
        }
    }
}

#[derive(Debug)]
enum Pred {
    /// `[n]`: the n-th of the siblings that pass the test and the predicates before it.
    Pos(u32),
    /// `[@name='value']`.
    Attr {
        ns: Option<String>,
        local: String,
        value: String,
    },
    /// `[child='value']`: some child element has that string value. Only known at the child's end.
    Child { test: NameTest, value: String },
}

/// The two SOAP envelope children that occur once each, Header before Body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SoapPart {
    Header,
    Body,
}

#[derive(Debug)]
struct Step {
    test: NameTest,
    preds: Vec<Pred>,
    /// Index of this step's first positional counter in a frame's `counters`.
    slot: usize,
    /// Set on step 1 of `/Envelope/Header|Body` paths: at most one match (see the module doc).
    soap_once: Option<SoapPart>,
}

#[derive(Debug, PartialEq, Eq)]
enum Tail {
    Element,
    Text,
    Attr(NameTest),
}

#[derive(Debug)]
struct Path {
    descendant: bool,
    steps: Vec<Step>,
    tail: Tail,
    slots: usize,
    /// Some step has a `[child='x']` predicate: only then do matches carry conditions
    /// ([`Frame::conds`]).
    conds: bool,
}

impl Path {
    /// The steps (bit i for step i) whose name test an element with local name `local` passes, in
    /// some namespace. Every bit (never inert) when there are more than 63 steps.
    #[inline]
    fn step_mask(&self, local: &[u8]) -> u64 {
        if self.steps.len() > 63 {
            return u64::MAX;
        }
        let mut mask = 0;
        for (i, step) in self.steps.iter().enumerate() {
            if step.test.local_matches(local) {
                mask |= 1 << i;
            }
        }
        mask
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl Cmp {
    fn holds(self, a: f64, b: f64) -> bool {
        match self {
            Cmp::Eq => a == b,
            Cmp::Ne => a != b,
            Cmp::Lt => a < b,
            Cmp::Le => a <= b,
            Cmp::Gt => a > b,
            Cmp::Ge => a >= b,
        }
    }
}

/// What is done with the node-set.
#[derive(Debug)]
enum Form {
    Nodes,
    Boolean { negate: bool },
    Compare { value: String, ne: bool },
    Count(Option<(Cmp, f64)>),
    StringOf,
    NormalizeSpace,
}

/// A compiled expression of the streaming subset.
#[derive(Debug)]
pub struct StreamPath {
    path: Path,
    form: Form,
    /// The first step's local name, for [`StreamPath::needle_run`]: set for `//` paths whose first
    /// step tests a name.
    needle: Option<NameFinder>,
    /// This compilation's own number (never reused in the process): the key of its [`Memo`]s.
    id: u64,
}

/// [`StreamPath::id`]s, one per compilation.
static NEXT_PATH_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The search [`StreamPath::needle_run`] makes for a name. With AVX2 (`pulp`'s safe runtime
/// dispatch), one pass over the bytes finds both the name and the first `<!` or `<?` (which stops
/// the run), 32 bytes a step (64 in the bulk of a run, [`NameScan::block`]), and the whole run is
/// compiled for AVX2; elsewhere `memmem`, up to the [`Bang`] found by a pass of its own.
#[derive(Debug)]
struct NameFinder {
    #[cfg(target_arch = "x86_64")]
    v3: Option<pulp::x86::V3>,
    /// Where the CPU has AVX-512 (BW): the bulk of a run 64 bytes a comparison.
    #[cfg(target_arch = "x86_64")]
    v4: Option<pulp::x86::V4>,
    #[cfg(target_arch = "x86_64")]
    word: Option<(u64, u64)>,
    any: memchr::memmem::Finder<'static>,
}

impl NameFinder {
    fn new(name: &[u8]) -> NameFinder {
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
    first: core::arch::x86_64::__m256i,
    last: core::arch::x86_64::__m256i,
    bang: core::arch::x86_64::__m256i,
    query: core::arch::x86_64::__m256i,
}

#[cfg(target_arch = "x86_64")]
impl Splats {
    /// For a name of at least one byte ([`NameFinder::new`] gives no AVX2 search to others).
    #[inline(always)]
    fn new(simd: pulp::x86::V3, name: &[u8]) -> Splats {
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

// ---------------------------------------------------------------------------------------------------
// Compiling

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Slash,
    DSlash,
    LBrack,
    RBrack,
    LParen,
    RParen,
    At,
    Star,
    Cmp(Cmp),
    Name(String),
    Lit(String),
    Num(f64),
}

/// `a == b` for the short strings names are, without a call to `memcmp` or a loop over bytes (whose
/// exit, at the first difference, is hard to predict): two words, or two half words, overlapping in
/// the middle.
#[inline]
fn short_eq(a: &[u8], b: &[u8]) -> bool {
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
fn split_colon(s: &str) -> Option<(&str, &str)> {
    let i = s.bytes().position(|c| c == b':')?;
    Some((&s[..i], &s[i + 1..]))
}

fn is_qname(s: &str) -> bool {
    match split_colon(s) {
        Some((p, l)) => is_ncname(p) && is_ncname(l),
        None => is_ncname(s),
    }
}

fn tokens(text: &str) -> Option<Vec<Tok>> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let two = |n: u8| b.get(i + 1) == Some(&n);
        let (tok, len) = match c {
            b' ' | b'\t' | b'\n' | b'\r' => {
                i += 1;
                continue;
            }
            b'/' if two(b'/') => (Tok::DSlash, 2),
            b'/' => (Tok::Slash, 1),
            b'[' => (Tok::LBrack, 1),
            b']' => (Tok::RBrack, 1),
            b'(' => (Tok::LParen, 1),
            b')' => (Tok::RParen, 1),
            b'@' => (Tok::At, 1),
            b'*' => (Tok::Star, 1),
            b'=' => (Tok::Cmp(Cmp::Eq), 1),
            b'!' if two(b'=') => (Tok::Cmp(Cmp::Ne), 2),
            b'<' if two(b'=') => (Tok::Cmp(Cmp::Le), 2),
            b'<' => (Tok::Cmp(Cmp::Lt), 1),
            b'>' if two(b'=') => (Tok::Cmp(Cmp::Ge), 2),
            b'>' => (Tok::Cmp(Cmp::Gt), 1),
            b'\'' | b'"' => {
                let end = text[i + 1..].find(c as char)? + i + 1;
                (Tok::Lit(text[i + 1..end].to_owned()), end + 1 - i)
            }
            b'0'..=b'9' | b'.' => {
                let mut j = i;
                while j < b.len() && b[j].is_ascii_digit() {
                    j += 1;
                }
                if j < b.len() && b[j] == b'.' {
                    j += 1;
                    while j < b.len() && b[j].is_ascii_digit() {
                        j += 1;
                    }
                }
                let s = &text[i..j];
                if s == "." {
                    return None;
                }
                (Tok::Num(s.parse().ok()?), j - i)
            }
            c if c.is_ascii_alphabetic() || c == b'_' => {
                let ncname_end = |mut j: usize| {
                    while j < b.len() && (b[j].is_ascii_alphanumeric() || b"_-.".contains(&b[j])) {
                        j += 1;
                    }
                    j
                };
                let mut j = ncname_end(i);
                if j + 1 < b.len()
                    && b[j] == b':'
                    && (b[j + 1].is_ascii_alphabetic() || b[j + 1] == b'_')
                {
                    j = ncname_end(j + 1);
                }
                (Tok::Name(text[i..j].to_owned()), j - i)
            }
            _ => return None,
        };
        out.push(tok);
        i += len;
    }
    Some(out)
}

struct Parser<'a> {
    toks: Vec<Tok>,
    at: usize,
    ns: &'a [(String, String)],
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.at)
    }
    fn peek2(&self) -> Option<&Tok> {
        self.toks.get(self.at + 1)
    }
    fn next(&mut self) -> Option<Tok> {
        let t = self.toks.get(self.at).cloned();
        self.at += 1;
        t
    }
    fn eat(&mut self, t: &Tok) -> Option<()> {
        (self.next()? == *t).then_some(())
    }
    fn done(&self) -> bool {
        self.at >= self.toks.len()
    }

    /// A QName resolved through the expression's prefixes (unprefixed: no namespace, as in XPath 1.0).
    fn qname(&self, name: &str) -> Option<(Option<String>, String)> {
        match name.split_once(':') {
            None => Some((None, name.to_owned())),
            Some((prefix, local)) => {
                let mut uris = self.ns.iter().filter(|(p, _)| p == prefix).map(|(_, u)| u);
                let uri = uris.next()?;
                if uri.is_empty() || uris.any(|u| u != uri) {
                    return None;
                }
                Some((Some(uri.clone()), local.to_owned()))
            }
        }
    }

    fn name_test(&mut self) -> Option<NameTest> {
        match self.next()? {
            Tok::Star => Some(NameTest::Any),
            Tok::Name(n) if self.peek() != Some(&Tok::LParen) => {
                let (ns, local) = self.qname(&n)?;
                Some(NameTest::Name { ns, local })
            }
            _ => None,
        }
    }

    fn literal(&mut self) -> Option<String> {
        match self.next()? {
            Tok::Lit(s) => Some(s),
            _ => None,
        }
    }

    fn pred(&mut self) -> Option<Pred> {
        self.eat(&Tok::LBrack)?;
        let p = match self.peek()? {
            Tok::Num(n) => {
                let n = *n;
                self.next();
                if n < 1.0 || n.fract() != 0.0 || n > f64::from(u32::MAX) {
                    return None;
                }
                Pred::Pos(n as u32)
            }
            Tok::At => {
                self.next();
                let NameTest::Name { ns, local } = self.name_test()? else {
                    return None;
                };
                self.eat(&Tok::Cmp(Cmp::Eq))?;
                let value = self.literal()?;
                Pred::Attr { ns, local, value }
            }
            _ => {
                let test = self.name_test()?;
                self.eat(&Tok::Cmp(Cmp::Eq))?;
                let value = self.literal()?;
                Pred::Child { test, value }
            }
        };
        self.eat(&Tok::RBrack)?;
        Some(p)
    }

    fn path(&mut self) -> Option<Path> {
        let descendant = match self.next()? {
            Tok::Slash => false,
            Tok::DSlash => true,
            _ => return None,
        };
        let mut steps: Vec<Step> = Vec::new();
        let mut slots = 0;
        let tail = loop {
            match (self.peek()?, self.peek2()) {
                (Tok::At, _) => {
                    self.next();
                    break Tail::Attr(self.name_test()?);
                }
                (Tok::Name(n), Some(Tok::LParen)) if n == "text" => {
                    self.next();
                    self.next();
                    self.eat(&Tok::RParen)?;
                    break Tail::Text;
                }
                _ => {}
            }
            let test = self.name_test()?;
            let mut preds = Vec::new();
            while self.peek() == Some(&Tok::LBrack) {
                preds.push(self.pred()?);
            }
            // A position counts siblings that passed the predicates before it: those must be known when
            // the element starts, so no `[n]` after a `[child='x']`.
            let mut seen_child = false;
            for p in &preds {
                match p {
                    Pred::Child { .. } => seen_child = true,
                    Pred::Pos(_) if seen_child => return None,
                    _ => {}
                }
            }
            if preds.len() > MAX_PREDS {
                return None;
            }
            let slot = slots;
            slots += preds.iter().filter(|p| matches!(p, Pred::Pos(_))).count();
            steps.push(Step {
                test,
                preds,
                slot,
                soap_once: None,
            });
            if steps.len() > MAX_STEPS {
                return None;
            }
            if self.peek() == Some(&Tok::Slash) {
                self.next();
            } else {
                break Tail::Element;
            }
        };
        if steps.is_empty() {
            return None;
        }
        if !descendant && steps.len() >= 2 {
            if let (
                NameTest::Name {
                    ns: Some(env),
                    local: e,
                },
                NameTest::Name {
                    ns: Some(ns),
                    local,
                },
            ) = (&steps[0].test, &steps[1].test)
            {
                if (env == SOAP11_ENV || env == SOAP12_ENV) && e == "Envelope" && ns == env {
                    steps[1].soap_once = match local.as_str() {
                        "Header" => Some(SoapPart::Header),
                        "Body" => Some(SoapPart::Body),
                        _ => None,
                    };
                }
            }
        }
        let conds = steps
            .iter()
            .any(|s| s.preds.iter().any(|p| matches!(p, Pred::Child { .. })));
        Some(Path {
            descendant,
            steps,
            tail,
            slots,
            conds,
        })
    }
}

impl StreamPath {
    /// Compiles `text` if it is in the streaming subset; `ns` are the (prefix, uri) declarations in scope
    /// (an unprefixed name means no namespace, as in XPath 1.0). `None`: evaluate with libxml2.
    pub fn compile(text: &str, ns: &[(String, String)]) -> Option<StreamPath> {
        let mut p = Parser {
            toks: tokens(text)?,
            at: 0,
            ns,
        };
        let form;
        let path;
        match (p.peek()?, p.peek2()) {
            (Tok::Name(f), Some(Tok::LParen)) => {
                let f = f.clone();
                p.next();
                p.next();
                path = p.path()?;
                p.eat(&Tok::RParen)?;
                form = match f.as_str() {
                    "boolean" => Form::Boolean { negate: false },
                    "not" => Form::Boolean { negate: true },
                    "string" => Form::StringOf,
                    "normalize-space" => Form::NormalizeSpace,
                    "count" => {
                        if path.tail == Tail::Text {
                            // Counting text nodes depends on how libxml2 splits them; not worth the risk.
                            return None;
                        }
                        if p.done() {
                            Form::Count(None)
                        } else {
                            let Tok::Cmp(op) = p.next()? else {
                                return None;
                            };
                            let Tok::Num(n) = p.next()? else {
                                return None;
                            };
                            Form::Count(Some((op, n)))
                        }
                    }
                    _ => return None,
                };
            }
            (Tok::Lit(_), _) => {
                let value = p.literal()?;
                let ne = match p.next()? {
                    Tok::Cmp(Cmp::Eq) => false,
                    Tok::Cmp(Cmp::Ne) => true,
                    _ => return None,
                };
                path = p.path()?;
                form = Form::Compare { value, ne };
            }
            _ => {
                path = p.path()?;
                form = match p.peek() {
                    None => Form::Nodes,
                    Some(Tok::Cmp(c @ (Cmp::Eq | Cmp::Ne))) => {
                        let ne = *c == Cmp::Ne;
                        p.next();
                        Form::Compare {
                            value: p.literal()?,
                            ne,
                        }
                    }
                    Some(_) => return None,
                };
            }
        }
        if !p.done() {
            return None;
        }
        let needle = match path.steps.first().map(|s| &s.test) {
            Some(NameTest::Name { local, .. }) if path.descendant => {
                Some(NameFinder::new(local.as_bytes()))
            }
            _ => None,
        };
        let id = NEXT_PATH_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Some(StreamPath {
            path,
            form,
            needle,
            id,
        })
    }

    /// The string value as [`crate::Expr::eval_string`] gives it, or `None` when libxml2 must decide.
    pub fn eval_string(&self, xml: &[u8]) -> Option<String> {
        match self.run(xml, Mode::String, false)? {
            Out::Str(s) => Some(s),
            Out::Bool(b) => Some(if b { "true" } else { "false" }.to_owned()),
        }
    }

    /// The boolean value as [`crate::Expr::eval_bool`] gives it, or `None` when libxml2 must decide.
    pub fn eval_bool(&self, xml: &[u8]) -> Option<bool> {
        match self.run(xml, Mode::Bool, false)? {
            Out::Bool(b) => Some(b),
            Out::Str(s) => Some(!s.is_empty()),
        }
    }

    fn need_text(&self, mode: Mode) -> bool {
        match self.form {
            Form::Nodes => mode == Mode::String,
            Form::Compare { .. } | Form::StringOf | Form::NormalizeSpace => true,
            Form::Boolean { .. } | Form::Count(_) => false,
        }
    }

    /// Evaluates; `exhaustive` reads the whole document even when the answer is known (tests use it to
    /// check that stopping early never changes an answer).
    fn run(&self, xml: &[u8], mode: Mode, exhaustive: bool) -> Option<Out> {
        if xml.len() > MAX_BYTES {
            return None;
        }
        match self.run_fast(xml, mode, exhaustive) {
            Ok(out) => Some(out),
            Err(Halt::Refuse) => None,
            Err(Halt::Bail) => self.run_slow(xml, mode, exhaustive),
        }
    }

    /// A run over the vectors `v` (the thread's, see [`Kept`]).
    fn new_run<'a>(&'a self, mode: Mode, v: &'a mut Spare) -> Run<'a> {
        // The frames were sized for another path: none counts as clean.
        if v.frames.is_empty() {
            v.frames.push(Frame::default());
        }
        for f in &mut v.frames {
            f.clean = false;
        }
        v.frames[0].reset(&self.path);
        Run {
            p: self,
            need_text: self.need_text(mode),
            sink: Sink::default(),
            mode,
            v,
            depth: 0,
            next: 0,
            root_seen: false,
        }
    }

    /// The general reader, on quick-xml's `NsReader`.
    fn run_slow(&self, xml: &[u8], mode: Mode, exhaustive: bool) -> Option<Out> {
        let mut reader = NsReader::from_reader(xml);
        {
            let c = reader.config_mut();
            c.expand_empty_elements = true;
            c.check_comments = true;
            c.check_end_names = true;
            c.trim_text(false);
        }
        let mut kept = SpareBox::take();
        let mut run = self.new_run(mode, &mut kept.get().run);
        let mut first = true;
        loop {
            let ev = reader.read_event().ok()?;
            match ev {
                Event::Decl(d) => {
                    if !first || !xml_decl_ok(&d) {
                        return None;
                    }
                }
                Event::Start(e) => {
                    run.start(&reader, &e)?;
                    run.advance();
                }
                Event::End(_) => {
                    run.end()?;
                    run.advance();
                }
                Event::Text(t) => run.text(&t)?,
                Event::GeneralRef(r) => {
                    let c = resolve_ref(&r)?;
                    if run.depth == 0 {
                        return None;
                    }
                    let mut buf = [0u8; 4];
                    run.chars(c.encode_utf8(&mut buf));
                }
                Event::CData(c) => {
                    let s: &str = &c;
                    if run.depth == 0 || !valid_chars(s) {
                        return None;
                    }
                    run.cdata(s);
                }
                Event::Comment(c) => {
                    let s: &str = &c;
                    if !valid_chars(s) || s.ends_with('-') {
                        return None;
                    }
                    run.end_text_run();
                }
                Event::Eof => break,
                // Processing instructions and DTDs are rare in messages: libxml2 judges them.
                Event::PI(_) | Event::DocType(_) | Event::Empty(_) => return None,
            }
            first = false;
            // Once the root element has ended, the rest is read anyway: it is short, and libxml2 refuses
            // anything but comments and white space there.
            // A `//` path is never decided inside the root element: any element may still match.
            if !exhaustive
                && (run.sink.done || (run.depth > 0 && !self.path.descendant && run.decided()))
            {
                return Some(std::mem::take(&mut run.sink).finish(&self.form, mode));
            }
        }
        if run.depth != 0 || !run.root_seen {
            return None;
        }
        run.advance();
        Some(std::mem::take(&mut run.sink).finish(&self.form, mode))
    }
    /// A start tag without attributes at `from` (just after `<`), recognised through the cache of
    /// names seen before (one word comparison) or read and added to it: (index of `>`, empty element,
    /// end of the name, colon offset or 0, [`Path::step_mask`] of the local name).
    #[inline(always)]
    fn known_tag(&self, xml: &[u8], from: usize, known: &mut KnownNames<'_>) -> Option<KnownTag> {
        // Names are kept by their first byte, prefixed ones by the first byte of their local part
        // (names under one prefix would all share a slot): looked up by the first byte, then, on a
        // miss, after the first colon near the start.
        let mut slot = usize::from(*xml.get(from)? & 63);
        if let Some(hit) = cached(xml, from, known.get(slot)) {
            return hit;
        }
        let key = name_key(xml, from);
        if key != from {
            slot = usize::from(*xml.get(key)? & 63);
            if let Some(hit) = cached(xml, from, known.get(slot)) {
                return hit;
            }
        }
        let (gt, empty, name_end, colon) = plain_tag(xml, from)?;
        // Kept where the lookup finds it first: unprefixed (or with a prefix too long for the key)
        // by the first byte.
        if colon == 0 || from + colon + 1 != key {
            slot = usize::from(xml[from] & 63);
        }
        let local = &xml[from + colon + usize::from(colon > 0)..name_end];
        let mask = self.path.step_mask(local);
        // Positions fit in 32 bits (at most MAX_BYTES); a name too long for 16 is not kept.
        if let (Ok(start), Ok(len), Ok(c)) = (
            u32::try_from(from),
            u16::try_from(name_end - from),
            u16::try_from(colon),
        ) {
            known.set(slot, (start, len, c, mask));
        }
        Some((gt, empty, name_end, colon, mask))
    }

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
    fn inert_span(
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
        // Whether a run of siblings may still be read by `needle_run` (not after it gave up on one).
        let mut needle = self.needle.is_some();
        let descendant = self.path.descendant;
        let mut top = 0;
        // Where the current child starts (for `sibling`).
        let mut child = i;
        // The current element's state does not change here: its last answer for a name's steps.
        let mut last: Option<(u64, bool)> = None;
        // Whether `sibling` holds a pattern learned in this call.
        let mut pattern = false;
        loop {
            let lt = if xml.get(i) == Some(&b'<') {
                i
            } else {
                match text_end(xml, i) {
                    (lt, seen) if seen & UNPLAIN == 0 => lt,
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
                    let Some((gt, empty, name_end, colon, mask)) = self.known_tag(xml, from, known)
                    else {
                        return (lt, top);
                    };
                    // A prefix must be bound (the bindings do not change here: no element in the
                    // span has attributes to declare one). `xml` and `xmlns` never are: declaring
                    // them is left to the general reader, and so is `<xml:b>`.
                    let named = colon == 0
                        || std::str::from_utf8(&xml[from..from + colon])
                            .is_ok_and(|p| bound(bindings, index, p).is_some());
                    let inert = named
                        && mask != u64::MAX
                        && top < below
                        && if top == 0 {
                            match last {
                                Some((m, inert)) if m == mask => inert,
                                _ => {
                                    let inert = run.inert_child(mask);
                                    last = Some((mask, inert));
                                    inert
                                }
                            }
                        } else {
                            !(descendant && mask & 1 != 0)
                        };
                    if !inert {
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
                        Some((end, seen)) if seen & UNPLAIN == 0 => i = end + 1,
                        _ => {
                            stack[top] = (from, name_end - from);
                            top += 1;
                        }
                    }
                }
            }
        }
    }

    /// A run of inert siblings named as the first step of a `//` path (every `order` after the first
    /// under `//order[1]/symbol`, the usual bulk of a document), read by searching for that name
    /// alone instead of tag by tag. From `lt`, the `<` of such a sibling's start tag `<Q>` (no
    /// attributes), whose qualified name is the `len` bytes after `lt`. Inside an inert sibling only
    /// an element the first step tests could match, so every occurrence of its local name is looked
    /// at: a start tag named so ends the run before this sibling (the tag by tag reading takes it);
    /// the sibling's own end tag ends the sibling. The next sibling must follow after text alone, as
    /// `<Q>` again. Nothing else is read: the text and the other tags inside are not checked, as
    /// content after an answer is not (see the module doc). The run stops before a comment, CDATA
    /// section or processing instruction ([`Bang`]), whose text could look like a tag. Returns the
    /// index of the first `<` (or the end) after the last complete sibling, or `None` when not even
    /// the first is complete.
    fn needle_run(&self, xml: &[u8], lt: usize, len: usize, bang: &mut Bang) -> Option<usize> {
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
    name: &'a [u8],
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
    xml: &'a [u8],
    lt: usize,
    len: usize,
    simd: pulp::x86::V3,
    name: &'a [u8],
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
    fn scan(&self) -> V3Scan<'a> {
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
    run: V3Run<'a>,
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
    v3: V3Scan<'a>,
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

impl StreamPath {
    /// The fast reader: a tokenizer written for the documents routing sees (elements, attributes, text
    /// with the predefined and character references, comments, CDATA, an XML declaration), straight
    /// over the bytes with `memchr`. Anything else, or anything it is not sure of, is handed back
    /// (`Halt::Bail`) to [`StreamPath::run_slow`], which starts over; so it only has to be right on what
    /// it accepts, and as strict as libxml2 on what it reads.
    fn run_fast(&self, xml: &[u8], mode: Mode, exhaustive: bool) -> Result<Out, Halt> {
        use Halt::{Bail, Refuse};
        // UTF-8 is checked over a window of the document at a time (cheaper than piece by piece),
        // the window doubling as the reading goes past it: an answer decided early (a SOAP header)
        // pays for a few hundred bytes, not for the whole, and what is read is checked at most twice
        // over. Where the reading skips a stretch (later siblings found by name, see the module
        // doc), the next window starts after it. When the answer is the text of every node a `//`
        // path selects and nothing is skipped, the whole document is read anyway: it is checked at
        // once.
        let reads_all = self.path.descendant
            && matches!(self.form, Form::Nodes)
            && mode == Mode::String
            && self.needle.is_none();
        let checked = std::cell::Cell::new((
            0,
            if reads_all {
                simdutf8::basic::from_utf8(xml).map_err(|_| Bail)?
            } else {
                ""
            },
        ));
        let text = |a: usize, b: usize| -> Result<&str, Halt> {
            let (mut from, mut s) = checked.get();
            if a < from || b > from + s.len() {
                (from, s) = longer_window(xml, &checked, a, b)?;
            }
            s.get(a - from..b - from).ok_or(Bail)
        };
        let mut kept = SpareBox::take();
        let Kept {
            run: vectors,
            buffers:
                Buffers {
                    known,
                    stack,
                    sibling,
                },
            memos,
        } = kept.get();
        let mut run = self.new_run(mode, vectors);
        let mut tags = Tags::take();
        let Tags {
            names,
            bindings,
            raw_attrs,
            attrs,
        } = &mut tags;
        // Where the innermost binding of each prefix is, once there are many (see `bind`).
        let mut index = PrefixIndex::default();
        let mut known = KnownNames {
            slots: known,
            valid: 0,
        };
        let mut scratch = InertScratch {
            stack,
            bang: Bang::default(),
            sibling,
        };
        let mut inert_before = false;
        let mut span_stop = usize::MAX;
        let n = xml.len();
        let mut i = 0;
        if xml.starts_with(b"<?xml") && xml.get(5).is_some_and(|&c| is_ws(c)) {
            let end = memchr::memmem::find(xml, b"?>").ok_or(Bail)?;
            if !xml_decl_ok(text(2, end)?) {
                return Err(Bail);
            }
            i = end + 2;
        }
        // This path's memo (read from when the document begins with its prefix), and whether this
        // reading makes it again (`record`, see `Recording`).
        let key = (self.id, Some(mode), exhaustive);
        if memos.is_empty() {
            memos.resize_with(MEMO_SLOTS, Memo::default);
        }
        let slot = Memo::slot(key);
        let mut record = true;
        let mut recording = Recording::default();
        let m = &mut memos[slot];
        if m.key != key {
            // Another path's (or none yet): this path's from now on, empty until this reading
            // makes it.
            (m.key, m.usable, m.hits, m.misses, m.wait) = (key, false, 0, 0, 1);
        } else {
            let p = m.prefix.len();
            if m.usable && xml.get(..p) == Some(&m.prefix[..]) {
                record = false;
                m.hits = m.hits.saturating_add(1);
                #[cfg(test)]
                MEMO_HITS.set(MEMO_HITS.get() + 1);
                copy_frames(&mut run.v.frames, &m.frames);
                run.depth = m.depth;
                run.root_seen = m.root_seen;
                if !(m.results.is_empty() && m.captures.is_empty() && m.conds.is_empty()) {
                    run.v.results.clone_from(&m.results);
                    run.v.captures.clone_from(&m.captures);
                    run.v.conds.clone_from(&m.conds);
                    run.next = m.next;
                    run.sink.clone_from(&m.sink);
                }
                names.extend_from_slice(&m.names);
                let piece = |start: usize, len: usize| match len {
                    0 => Ok(""),
                    _ => text(start, start + len),
                };
                for &[ps, pl, us, ul, depth] in &m.bindings {
                    bindings.push((piece(ps, pl)?, piece(us, ul)?, depth));
                }
                if bindings.len() > FEW_BINDINGS {
                    index_all(bindings, &mut index);
                }
                for &(k, entry) in &m.known {
                    known.set(k, entry);
                }
                (inert_before, span_stop) = (m.place.inert_before, m.place.span_stop);
                i = p;
            } else {
                m.misses = m.misses.saturating_add(1);
                record = m.misses >= m.wait;
                if record {
                    m.wait = if m.hits >= MEMO_PAYS * m.misses {
                        1
                    } else {
                        (m.wait * 2).min(MEMO_WAIT)
                    };
                    (m.hits, m.misses) = (0, 0);
                }
            }
        }
        #[cfg(test)]
        MEMO_MAKINGS.set(MEMO_MAKINGS.get() + u64::from(record));
        // The reading's state as `Recording` reads it, at `$at`.
        macro_rules! recorded {
            ($at:expr) => {
                (
                    State {
                        xml,
                        run: &run,
                        names,
                        bindings,
                        known: &known,
                    },
                    Place {
                        lt: $at,
                        inert_before,
                        span_stop,
                    },
                )
            };
        }
        loop {
            if record && recording.pending {
                let (st, place) = recorded!(i);
                record = recording.after(&st, place, &mut memos[slot]);
            }
            // The text up to the next `<`, noting in the same pass what the checks need to know.
            // Markup right after markup (no text between) is the usual case: nothing to classify.
            let (lt, seen) = match xml.get(i) {
                Some(b'<') => (i, 0u8),
                _ => text_end(xml, i),
            };
            if lt > i && seen & AMP == 0 {
                let t = text(i, lt)?;
                run.text_seen(t, seen).ok_or(Refuse)?;
            } else if lt > i {
                let mut t = text(i, lt)?;
                // References split the text into pieces, as quick-xml reports them.
                while let Some(a) = memchr::memchr(b'&', t.as_bytes()) {
                    if a > 0 {
                        run.text(&t[..a]).ok_or(Refuse)?;
                    }
                    let after = &t[a + 1..];
                    let semi = memchr::memchr(b';', after.as_bytes()).ok_or(Bail)?;
                    let c = resolve_ref(&after[..semi]).ok_or(Bail)?;
                    if run.depth == 0 {
                        return Err(Bail);
                    }
                    run.chars(c.encode_utf8(&mut [0u8; 4]));
                    t = &after[semi + 1..];
                }
                if !t.is_empty() {
                    run.text(t).ok_or(Refuse)?;
                }
            }
            if lt == n {
                break;
            }
            let rest = &xml[lt + 1..];
            match rest.first() {
                Some(b'/') => {
                    let (start, len) = *names.last().ok_or(Bail)?;
                    let open = &xml[start..start + len];
                    let at = lt + 2 + len;
                    let gt = if xml.get(at) == Some(&b'>') && same_name(xml, lt + 2, start, len) {
                        at // `</name>`, the usual end tag
                    } else {
                        let gt = lt + 2 + memchr::memchr(b'>', &rest[1..]).ok_or(Bail)?;
                        let mut name = &xml[lt + 2..gt];
                        while let [head @ .., last] = name {
                            if !is_ws(*last) {
                                break;
                            }
                            name = head;
                        }
                        if name != open {
                            return Err(Bail);
                        }
                        gt
                    };
                    run.end().ok_or(Refuse)?;
                    names.pop();
                    unbind_deeper(bindings, &mut index, run.depth);
                    run.advance();
                    i = gt + 1;
                }
                Some(b'!') if rest.starts_with(b"!--") => {
                    let from = lt + 4;
                    let len = memchr::memmem::find(&xml[from..], b"-->").ok_or(Bail)?;
                    let c = text(from, from + len)?;
                    if !valid_chars(c) || c.ends_with('-') || c.contains("--") {
                        return Err(Bail);
                    }
                    run.end_text_run();
                    i = from + len + 3;
                }
                Some(b'!') if rest.starts_with(b"![CDATA[") => {
                    let from = lt + 9;
                    let len = memchr::memmem::find(&xml[from..], b"]]>").ok_or(Bail)?;
                    let c = text(from, from + len)?;
                    if run.depth == 0 || !valid_chars(c) {
                        return Err(Bail);
                    }
                    run.cdata(c);
                    i = from + len + 3;
                }
                Some(b'!' | b'?') | None => return Err(Bail),
                Some(_) => {
                    if record {
                        let (st, place) = recorded!(lt);
                        record = recording.at(self, &st, place, &mut memos[slot]);
                    }
                    // After an inert element, the next is likely inert too: read them in bulk.
                    // Not again where it last stopped: a child it gave up on is the general reading's.
                    if inert_before && lt != span_stop && run.quiet() {
                        let (j, open) = self.inert_span(
                            xml,
                            lt,
                            &run,
                            &mut known,
                            &mut scratch,
                            (bindings, &index),
                        );
                        if open > 0 {
                            run.open_handed(names, &scratch.stack[..open]);
                        }
                        if j > lt {
                            i = j;
                            span_stop = j;
                            continue;
                        }
                        inert_before = false;
                    }
                    let from = lt + 1;
                    let plain = self.known_tag(xml, from, &mut known);
                    // An element no step can match, named without attributes: tracked for depth only.
                    if let Some((gt, empty, name_end, colon, mask)) = plain {
                        if run.inert_child(mask) {
                            inert_before = true;
                            if colon > 0 {
                                let prefix = text(from, from + colon)?;
                                if prefix == "xml"
                                    || prefix == "xmlns"
                                    || bound(bindings, &index, prefix).is_none()
                                {
                                    return Err(Bail);
                                }
                            }
                            // `<name>text</name>` with plain ASCII text and nothing collecting it: the
                            // whole element at once, opened and closed without a frame.
                            let leaf = if !empty && run.v.captures.is_empty() {
                                leaf_end(xml, gt + 1, from, name_end - from)
                                    .filter(|&(_, seen)| seen & UNPLAIN == 0)
                            } else {
                                None
                            };
                            if let Some((end, _)) = leaf {
                                run.end_text_run();
                                i = end + 1;
                            } else {
                                run.open_inert();
                                i = gt + 1;
                                if empty {
                                    run.end().ok_or(Refuse)?;
                                } else {
                                    names.push((from, name_end - from));
                                    // Its content: nothing in it can match (its frame is fresh).
                                    if run.quiet() {
                                        let open;
                                        (i, open) = self.inert_span(
                                            xml,
                                            i,
                                            &run,
                                            &mut known,
                                            &mut scratch,
                                            (bindings, &index),
                                        );
                                        if open > 0 {
                                            run.open_handed(names, &scratch.stack[..open]);
                                        }
                                        // Where it stopped is the general reading's.
                                        span_stop = i;
                                    }
                                }
                            }
                            if !exhaustive
                                && (run.sink.done || (!self.path.descendant && run.decided()))
                            {
                                return Ok(std::mem::take(&mut run.sink).finish(&self.form, mode));
                            }
                            continue;
                        }
                    }
                    // `checked`: the name is an ASCII QName (else `is_qname` checks it below).
                    // `exact`: the tag's end was found quote by quote (see below).
                    let mut exact = false;
                    let (gt, empty, name_end, raw) = loop {
                        let (gt, empty, name_end, checked) = match plain {
                            Some((gt, empty, name_end, _, _)) => (gt, empty, name_end, true),
                            None => {
                                // The tag ends at the first `>` outside quotes: first taken to be the
                                // first `>` (no attribute value holds one), which reading the
                                // attributes confirms (a `>` inside a value leaves it unquoted);
                                // else found quote by quote.
                                let gt = if exact {
                                    let mut j = lt + 1;
                                    loop {
                                        let p = j + memchr::memchr3(b'>', b'"', b'\'', &xml[j..])
                                            .ok_or(Bail)?;
                                        let q = xml[p];
                                        if q == b'>' {
                                            break p;
                                        }
                                        j = p + 2 + memchr::memchr(q, &xml[p + 1..]).ok_or(Bail)?;
                                    }
                                } else {
                                    lt + 1 + memchr::memchr(b'>', &xml[lt + 1..]).ok_or(Bail)?
                                };
                                let empty = xml[gt - 1] == b'/';
                                let inner = if empty { gt - 1 } else { gt };
                                match ascii_qname(xml, lt + 1) {
                                    Some((end, _)) if end < inner && is_ws(xml[end]) => {
                                        (gt, empty, end, true)
                                    }
                                    _ => {
                                        let name_end = xml[lt + 1..inner]
                                            .iter()
                                            .position(|&c| is_ws(c))
                                            .map_or(inner, |k| lt + 1 + k);
                                        (gt, empty, name_end, false)
                                    }
                                }
                            }
                        };
                        let inner = if empty { gt - 1 } else { gt };
                        let raw = text(lt + 1, name_end)?;
                        if !(checked || is_qname(raw)) || raw.starts_with("xmlns:") {
                            return Err(Bail);
                        }
                        raw_attrs.clear();
                        if name_end < inner && !read_attributes(text(name_end, inner)?, raw_attrs) {
                            if plain.is_none() && !exact {
                                exact = true;
                                continue;
                            }
                            return Err(Bail);
                        }
                        break (gt, empty, name_end, raw);
                    };
                    if raw_attrs.len() > MAX_ATTRS {
                        return Err(Refuse);
                    }
                    let depth = run.depth + 1;
                    attrs.clear();
                    let few = raw_attrs.len() <= FEW_ATTRS;
                    for (k, &(key, value, class)) in raw_attrs.iter().enumerate() {
                        if (class & V_QNAME == 0 && !is_qname(key))
                            || (few && raw_attrs[..k].iter().any(|(other, _, _)| *other == key))
                        {
                            return Err(Bail);
                        }
                        let prefix = match split_colon(key) {
                            None if key == "xmlns" => Some(""),
                            Some(("xmlns", p)) => Some(p),
                            _ => None,
                        };
                        if let Some(prefix) = prefix {
                            if class & (V_AMP | V_LT | V_WS | V_CTRL) != 0
                                || (class & V_HIGH != 0 && has_nonchar(value))
                                || (!prefix.is_empty() && value.is_empty())
                                || prefix == "xml"
                                || prefix == "xmlns"
                            {
                                return Err(Bail);
                            }
                            bind(bindings, &mut index, (prefix, value, depth));
                            if bindings.len() > MAX_BINDINGS {
                                return Err(Refuse);
                            }
                        }
                    }
                    if !few && repeated(raw_attrs.len(), |k| raw_attrs[k].0) {
                        return Err(Bail);
                    }
                    for &(key, value, class) in raw_attrs.iter() {
                        let (ns, local) = match split_colon(key) {
                            _ if key == "xmlns" => continue,
                            Some(("xmlns", _)) => continue,
                            Some(("xml", local)) => (Some(XML_NS), local),
                            Some((prefix, local)) => {
                                (bound(bindings, &index, prefix).ok_or(Bail)?, local)
                            }
                            None => (None, key),
                        };
                        if few && attrs.iter().any(|(an, al, _)| *an == ns && *al == local) {
                            return Err(Bail);
                        }
                        attrs.push((ns, local, attr_value_classed(value, class).ok_or(Bail)?));
                    }
                    if !few && repeated(attrs.len(), |k| (attrs[k].0, attrs[k].1)) {
                        return Err(Bail);
                    }
                    let (ns, local) = match split_colon(raw) {
                        Some(("xml", _)) => return Err(Bail),
                        Some((prefix, local)) => {
                            (bound(bindings, &index, prefix).ok_or(Bail)?, local)
                        }
                        None => (bound(bindings, &index, "").unwrap_or(None), raw),
                    };
                    run.open(ns, local, attrs).ok_or(Refuse)?;
                    run.advance();
                    names.push((lt + 1, name_end - lt - 1));
                    if empty {
                        if !exhaustive && (run.sink.done || run.decided()) {
                            return Ok(std::mem::take(&mut run.sink).finish(&self.form, mode));
                        }
                        run.end().ok_or(Refuse)?;
                        names.pop();
                        unbind_deeper(bindings, &mut index, run.depth);
                        run.advance();
                    }
                    i = gt + 1;
                }
            }
            // A `//` path is never decided inside the root element: any element may still match.
            if !exhaustive
                && (run.sink.done || (run.depth > 0 && !self.path.descendant && run.decided()))
            {
                return Ok(std::mem::take(&mut run.sink).finish(&self.form, mode));
            }
        }
        if run.depth != 0 || !run.root_seen {
            return Err(Refuse);
        }
        run.advance();
        Ok(std::mem::take(&mut run.sink).finish(&self.form, mode))
    }
}

// ---------------------------------------------------------------------------------------------------
// Evaluating

/// Why the fast reader stopped without an answer.
enum Halt {
    /// The answer is `None`: libxml2 must decide (the general reader would say the same).
    Refuse,
    /// Outside what the fast reader handles: read again with the general reader.
    Bail,
}

const XML_NS: &str = "http://www.w3.org/XML/1998/namespace";

/// The first window of a document whose UTF-8 the fast reader checks (it doubles from there).
const UTF8_PREFIX: usize = 512;

/// The checked window (its start, its text) grown past `b`, for the fast reader's `text(a, b)`:
/// doubled at least, from where it starts when `a` is inside it or just past it, else (the reading
/// skipped a stretch) a new one from `a`.
#[cold]
#[inline(never)]
fn longer_window<'x>(
    xml: &'x [u8],
    checked: &std::cell::Cell<(usize, &'x str)>,
    a: usize,
    b: usize,
) -> Result<(usize, &'x str), Halt> {
    let (from, s) = checked.get();
    let (from, len) = if from <= a && a <= from + s.len() {
        (from, 2 * s.len())
    } else {
        (a, 0)
    };
    let s = utf8_prefix(&xml[from..], (b - from).max(len).max(UTF8_PREFIX)).ok_or(Halt::Bail)?;
    checked.set((from, s));
    Ok((from, s))
}

/// `xml[..len]` (at most the whole) as text, the end moved back to the start of a character when
/// `len` falls inside one; `None` when that prefix is not UTF-8.
fn utf8_prefix(xml: &[u8], len: usize) -> Option<&str> {
    let mut end = len.min(xml.len());
    // A continuation byte at `end` means a character straddles it (at most three bytes back).
    for _ in 0..3 {
        if end > 0 && end < xml.len() && xml[end] & 0xC0 == 0x80 {
            end -= 1;
        }
    }
    simdutf8::basic::from_utf8(&xml[..end]).ok()
}

fn is_ws(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r')
}

// What the fast reader must notice in character data, byte by byte (0: nothing).
const LT: u8 = 1;
const AMP: u8 = 2;
const GT: u8 = 4;
const CR: u8 = 8;
const CTRL: u8 = 16;
const HIGH: u8 = 32;
/// What plain text, read over by the fast paths without a frame, may not hold: a reference (to
/// check), `>` (for `]]>`), a control character or a non-ASCII byte (to validate). A carriage return
/// is plain where nothing collects the text.
const UNPLAIN: u8 = AMP | GT | CTRL | HIGH;

const BYTE_CLASS: [u8; 256] = {
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
const NAME_CLASS: [u8; 256] = name_classes(true);

/// A start tag without attributes, `<name>` or `<name/>`, the usual kind: from the byte after `<`,
/// returns (index of `>`, empty element, end of the name, offset of the colon in the name or 0).
/// `None` for anything else (attributes, white space, non-ASCII names), which the general tag reading
/// handles.
fn plain_tag(xml: &[u8], from: usize) -> Option<(usize, bool, usize, usize)> {
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
fn ascii_qname(xml: &[u8], from: usize) -> Option<(usize, usize)> {
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
fn word_at(xml: &[u8], p: usize) -> Option<u64> {
    let w: [u8; 8] = xml.get(p..p + 8)?.try_into().ok()?;
    Some(u64::from_le_bytes(w))
}

/// A plain start tag as [`StreamPath::known_tag`] reads it: (index of `>`, empty element, end of the
/// name, colon offset or 0, [`Path::step_mask`] of the local name).
type KnownTag = (usize, bool, usize, usize, u64);

/// A [`Known`] entry's answer for the start tag at `from` (just after `<`), if it holds that name:
/// `Some(None)` for a tag [`StreamPath::known_tag`] refuses (`<name/` not followed by `>`).
#[inline(always)]
fn cached(
    xml: &[u8],
    from: usize,
    (ks, kl, kc, km): (u32, u16, u16, u64),
) -> Option<Option<KnownTag>> {
    let (ks, kl, kc) = (ks as usize, usize::from(kl), usize::from(kc));
    if kl == 0 || !matches!(xml.get(from + kl), Some(b'>' | b'/')) || !same_name(xml, from, ks, kl)
    {
        return None;
    }
    Some(match xml[from + kl] {
        b'>' => Some((from + kl, false, from + kl, kc, km)),
        _ if xml.get(from + kl + 1) == Some(&b'>') => {
            Some((from + kl + 1, true, from + kl, kc, km))
        }
        _ => None,
    })
}

/// Where the byte that picks a prefixed name's [`Known`] slot is: just after the first colon in the
/// eight bytes at `from` (`m:order`, `ns1:order`, `soapenv:Body`), or `from` when there is none. Only
/// a hash: a colon in the text after a short name just picks another slot.
#[inline(always)]
fn name_key(xml: &[u8], from: usize) -> usize {
    match word_at(xml, from).and_then(|w| byte_in_word(w, b':')) {
        Some(k) => from + k + 1,
        None => from,
    }
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
fn byte_in_word(w: u64, b: u8) -> Option<usize> {
    let z = bytes_below(w ^ (ONES * u64::from(b)), 1);
    (z != 0).then(|| (z.trailing_zeros() / 8) as usize)
}

/// `xml[a..a + len] == xml[b..b + len]`, for names and runs of tags: one masked word comparison
/// when both fit in one, else a word at a time (the last word overlapping).
#[inline]
fn same_name(xml: &[u8], a: usize, b: usize, len: usize) -> bool {
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
#[inline]
fn short_text(xml: &[u8], i: usize) -> Option<(usize, u8)> {
    let len = byte_in_word(word_at(xml, i)?, b'<')?;
    let mut seen = 0u8;
    for &c in &xml[i..i + len] {
        seen |= BYTE_CLASS[usize::from(c)];
    }
    Some((len, seen))
}

/// Character data from `i`: the index of the next `<` (or the end of the document) and the
/// [`BYTE_CLASS`]es of the bytes before it or'd together.
#[inline]
fn text_end(xml: &[u8], i: usize) -> (usize, u8) {
    if let Some((len, seen)) = short_text(xml, i) {
        return (i + len, seen);
    }
    let mut seen = 0u8;
    let mut p = i;
    // A word at a time: its bytes are classified one by one only when one of them may be other
    // than plain ASCII text (a flag can be false, never missing).
    while let Some(w) = word_at(xml, p) {
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
            for &c in &xml[p..p + n] {
                seen |= BYTE_CLASS[usize::from(c)];
            }
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

/// Character data at `at` followed by the end tag of the element named `xml[name..name + len]`:
/// the index of that end tag's `>` and the [`BYTE_CLASS`]es of the text or'd together. `None` when
/// something else follows the text (a child, a comment, another end tag) or the document ends.
#[inline]
fn leaf_end(xml: &[u8], at: usize, name: usize, len: usize) -> Option<(usize, u8)> {
    let (lt, seen) = text_end(xml, at);
    let gt = lt + 2 + len;
    (xml.get(lt + 1) == Some(&b'/')
        && xml.get(gt) == Some(&b'>')
        && same_name(xml, lt + 2, name, len))
    .then_some((gt, seen))
}

/// What an occurrence of a name at `h` (`f` bytes long) is in markup assumed well-formed, with no
/// comment, CDATA section or processing instruction around: the local name of a start tag, of an end
/// tag (with the index where its qualified name starts), or anything else (text, an attribute value,
/// part of a longer name). Bytes of a prefix are any but delimiters, so that a non-ASCII prefix is not
/// taken for text.
#[derive(Debug, PartialEq, Eq)]
enum NameAt {
    Start,
    End(usize),
    Other,
}

fn name_at(xml: &[u8], h: usize, f: usize) -> NameAt {
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
struct Bang {
    from: usize,
    at: Option<usize>,
}

impl Bang {
    /// The index of the first `<!` or `<?` at or after `from`, or the input's length.
    fn after(&mut self, xml: &[u8], from: usize) -> usize {
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

/// What [`StreamPath::inert_span`] keeps between its calls in one reading.
struct InertScratch<'a> {
    /// The thread's ([`Buffers`]).
    stack: &'a mut InertStack,
    bang: Bang,
    /// The thread's ([`Buffers`]).
    sibling: &'a mut Sibling,
}

/// The namespace bound to `prefix` ("" for the default), innermost first: `Some(None)` for no
/// namespace (`xmlns=""`, or no default declared), `None` for an unbound prefix. `index` covers
/// `bindings` once there are many (see [`bind`]), and is empty before.
fn bound<'a>(
    bindings: &[(&str, &'a str, usize)],
    index: &PrefixIndex<'_>,
    prefix: &str,
) -> Option<Option<&'a str>> {
    let found = if index.is_empty() {
        bindings
            .iter()
            .rev()
            .find(|b| short_eq(b.0.as_bytes(), prefix.as_bytes()))
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

/// `bindings.push(b)`, keeping `index` up to date: it starts covering every binding once there are
/// more than [`FEW_BINDINGS`], and goes on until none is left.
fn bind<'x>(
    bindings: &mut Vec<(&'x str, &'x str, usize)>,
    index: &mut PrefixIndex<'x>,
    b: (&'x str, &'x str, usize),
) {
    bindings.push(b);
    if !index.is_empty() {
        index.push(b.0);
    } else if bindings.len() > FEW_BINDINGS {
        index_all(bindings, index);
    }
}

/// [`bind`]'s index, made for the bindings so far.
#[cold]
fn index_all<'x>(bindings: &[(&'x str, &'x str, usize)], index: &mut PrefixIndex<'x>) {
    for &(prefix, _, _) in &bindings[index.len()..] {
        index.push(prefix);
    }
}

/// The bindings declared deeper than `depth` go out of scope (with [`bind`]'s index).
fn unbind_deeper<'x>(
    bindings: &mut Vec<(&'x str, &'x str, usize)>,
    index: &mut PrefixIndex<'x>,
    depth: usize,
) {
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

/// Whether two of `n` items have the same key, found by sorting their indices (in a buffer the
/// thread keeps for it): for elements with many attributes, where comparing every pair would be
/// quadratic.
#[cold]
fn repeated<K: Ord>(n: usize, key: impl Fn(usize) -> K) -> bool {
    thread_local! {
        static ORDER: std::cell::Cell<Vec<u32>> = const { std::cell::Cell::new(Vec::new()) };
    }
    let mut order = ORDER.take();
    order.clear();
    order.extend((0..n).filter_map(|k| u32::try_from(k).ok()));
    order.sort_unstable_by_key(|&k| key(k as usize));
    let found = order
        .windows(2)
        .any(|w| key(w[0] as usize) == key(w[1] as usize));
    ORDER.set(spare(order));
    found
}

// What an attribute value holds that matters, from [`value_class`].
const V_LT: u8 = 1;
const V_AMP: u8 = 2;
/// Tab, line feed or carriage return: normalised to a space.
const V_WS: u8 = 4;
/// A control character XML does not allow.
const V_CTRL: u8 = 8;
const V_HIGH: u8 = 16;
/// Not a class of the value: set by [`read_attributes`] when the attribute's name is an ASCII
/// QName, already checked.
const V_QNAME: u8 = 32;

/// The `V_` classes of the bytes of `v` or'd together. Eight bytes at a time first (the last few
/// padded): when no word has a control character (tab, line feed and carriage return among them),
/// `<`, `&` or a non-ASCII byte, there is no class (a namespace URI is all such words); otherwise
/// the whole value is classed byte by byte.
fn value_class(v: &[u8]) -> u8 {
    let mut words = v.chunks_exact(8);
    // The last bytes padded with a byte of no class.
    let mut last = [b'a'; 8];
    last[..words.remainder().len()].copy_from_slice(words.remainder());
    for w in (&mut words)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap_or_default()))
        .chain([u64::from_le_bytes(last)])
    {
        let flags = w & (ONES << 7)
            | bytes_below(w, 0x20)
            | bytes_below(w ^ (ONES * u64::from(b'<')), 1)
            | bytes_below(w ^ (ONES * u64::from(b'&')), 1);
        if flags != 0 {
            return bytes_class(v);
        }
    }
    0
}

/// [`value_class`] byte by byte, in one pass without branches.
fn bytes_class(v: &[u8]) -> u8 {
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
fn read_attributes<'a>(raw: &'a str, out: &mut Vec<(&'a str, &'a str, u8)>) -> bool {
    let b = raw.as_bytes();
    let mut i = 0;
    loop {
        let start = i;
        while i < b.len() && is_ws(b[i]) {
            i += 1;
        }
        if i == b.len() {
            return true;
        }
        if i == start {
            return false;
        }
        let name = i;
        let mut checked = 0;
        match ascii_qname(b, i) {
            Some((end, _)) if b.get(end).is_some_and(|&c| c == b'=' || is_ws(c)) => {
                i = end;
                checked = V_QNAME;
            }
            _ => {
                while i < b.len() && !is_ws(b[i]) && b[i] != b'=' {
                    i += 1;
                }
            }
        }
        if i == name {
            return false;
        }
        let key = &raw[name..i];
        while i < b.len() && is_ws(b[i]) {
            i += 1;
        }
        if b.get(i) != Some(&b'=') {
            return false;
        }
        i += 1;
        while i < b.len() && is_ws(b[i]) {
            i += 1;
        }
        let Some(&q) = b.get(i).filter(|q| **q == b'"' || **q == b'\'') else {
            return false;
        };
        let from = i + 1;
        let Some(len) = memchr::memchr(q, &b[from..]) else {
            return false;
        };
        let value = &raw[from..from + len];
        out.push((key, value, value_class(value.as_bytes()) | checked));
        if out.len() > MAX_ATTRS {
            return true;
        }
        i = from + len + 1;
    }
}

/// Whether `s` holds U+FFFE or U+FFFF (not XML characters); only worth asking when `s` is not ASCII.
fn has_nonchar(s: &str) -> bool {
    s.contains(['\u{FFFE}', '\u{FFFF}'])
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    String,
    Bool,
}

enum Out {
    Str(String),
    Bool(bool),
}

/// Receives the selected nodes' string values in document order and decides the answer.
#[derive(Clone, Default)]
struct Sink {
    text: String,
    first: Option<String>,
    count: u64,
    found: bool,
    done: bool,
}

impl Sink {
    /// One selected node's string value, in document order. Taken by value: the first one becomes
    /// the answer's string as it is, without a copy.
    fn feed(&mut self, form: &Form, mode: Mode, value: String) {
        self.count += 1;
        match form {
            Form::Nodes => {
                if mode == Mode::String {
                    if self.text.is_empty() {
                        self.text = value;
                    } else {
                        self.text.push_str(&value);
                    }
                } else {
                    self.found = true;
                    self.done = true;
                }
            }
            Form::Boolean { .. } => {
                self.found = true;
                self.done = true;
            }
            Form::Compare { value: lit, ne } => {
                if (value == *lit) != *ne {
                    self.found = true;
                    self.done = true;
                }
            }
            Form::Count(None) => self.done = mode == Mode::Bool,
            Form::Count(Some((op, n))) => {
                // The count only grows: stop once more nodes cannot change the comparison.
                let c = self.count as f64;
                self.done = match op {
                    Cmp::Gt | Cmp::Le | Cmp::Eq | Cmp::Ne => c > *n,
                    Cmp::Ge | Cmp::Lt => c >= *n,
                };
            }
            Form::StringOf | Form::NormalizeSpace => {
                self.first = Some(value);
                self.done = true;
            }
        }
    }

    fn finish(self, form: &Form, mode: Mode) -> Out {
        match form {
            Form::Nodes if mode == Mode::String => Out::Str(self.text),
            Form::Nodes => Out::Bool(self.found),
            Form::Boolean { negate } => Out::Bool(self.found != *negate),
            Form::Compare { .. } => Out::Bool(self.found),
            Form::Count(Some((op, n))) => Out::Bool(op.holds(self.count as f64, *n)),
            Form::Count(None) if mode == Mode::String => Out::Str(self.count.to_string()),
            Form::Count(None) => Out::Bool(self.count != 0),
            Form::StringOf => Out::Str(self.first.unwrap_or_default()),
            Form::NormalizeSpace => {
                let s = self.first.unwrap_or_default();
                let words: Vec<&str> = s
                    .split([' ', '\t', '\n', '\r'])
                    .filter(|w| !w.is_empty())
                    .collect();
                Out::Str(words.join(" "))
            }
        }
    }
}

/// An attribute other than a namespace declaration: namespace, local name, normalised value.
type Attr<'a> = (Option<&'a str>, &'a str, Cow<'a, str>);

/// One open element (index 0: the document node).
#[derive(Default)]
struct Frame {
    /// The steps this element matches (bit i for step i), each provided that its conditions turn
    /// out true.
    matched: u64,
    /// Per step this element matches, the child-predicate conditions (indexes into `Run::conds`)
    /// that must all turn out true for it to match; kept only for paths with such predicates
    /// ([`Path::conds`]), empty otherwise.
    conds: Vec<Vec<u32>>,
    /// Positional predicate counters for this element's children (`Step::slot`).
    counters: Vec<u32>,
    /// Some counter is not zero (most elements count nothing: no memset to reset them).
    counted: bool,
    /// This element's own `[child='x']` conditions: (condition, step, predicate).
    own: Vec<(u32, usize, usize)>,
    /// The result index of the text node being read directly inside this element (`text()` paths).
    text_run: Option<usize>,
    /// The SOAP namespace, when this is a SOAP Envelope root element.
    soap_env: Option<&'static str>,
    seen_header: bool,
    seen_body: bool,
    /// Nothing written since the last reset (an element no step matched, with no matched child): the
    /// next reset has nothing to do.
    clean: bool,
}

impl Frame {
    #[inline]
    fn reset(&mut self, path: &Path) {
        if self.clean {
            return;
        }
        self.clean = true;
        self.matched = 0;
        // A frame is reused for every element at its depth: clear in place (no reallocation).
        let (steps, slots) = (path.steps.len(), path.slots);
        if path.conds {
            if self.conds.len() == steps {
                for c in &mut self.conds {
                    c.clear();
                }
            } else {
                self.conds.clear();
                self.conds.resize(steps, Vec::new());
            }
        } else if !self.conds.is_empty() {
            // Left by a reading of another path, on this thread.
            self.conds.clear();
        }
        if self.counters.len() == slots {
            if self.counted {
                self.counters.fill(0);
            }
        } else {
            self.counters.clear();
            self.counters.resize(slots, 0);
        }
        self.counted = false;
        self.own.clear();
        self.text_run = None;
        self.soap_env = None;
        self.seen_header = false;
        self.seen_body = false;
    }

    /// `self` becomes `o`, reusing its vectors' allocations.
    fn copy_from(&mut self, o: &Frame) {
        // (Most are empty on both sides: not even a call then.)
        fn copy<T: Clone>(to: &mut Vec<T>, from: &Vec<T>) {
            if !(to.is_empty() && from.is_empty()) {
                to.clone_from(from);
            }
        }
        self.matched = o.matched;
        copy(&mut self.conds, &o.conds);
        copy(&mut self.counters, &o.counters);
        self.counted = o.counted;
        copy(&mut self.own, &o.own);
        self.text_run = o.text_run;
        self.soap_env = o.soap_env;
        self.seen_header = o.seen_header;
        self.seen_body = o.seen_body;
        self.clean = o.clean;
    }

    /// Whether this element matches step `i` (its conditions aside).
    #[inline(always)]
    fn matches(&self, i: usize) -> bool {
        self.matched >> i & 1 != 0
    }

    /// The conditions of this element's match of step `i` (none for paths without child
    /// predicates).
    #[inline(always)]
    fn conds(&self, i: usize) -> &[u32] {
        self.conds.get(i).map_or(&[], |c| c.as_slice())
    }
}

#[derive(Clone)]
enum Target {
    Result(usize),
    /// The string value of a child for condition `.0`, compared with step `.1`'s predicate `.2`.
    Check(u32, usize, usize),
}

/// An element whose string value is being collected.
#[derive(Clone)]
struct Capture {
    depth: usize,
    buf: String,
    target: Target,
}

/// A selected node, in document order.
#[derive(Clone)]
struct Res {
    text: String,
    /// The string value is complete.
    done: bool,
    conds: Vec<u32>,
}

/// The fast reader's vectors over the document: the open elements' names ((start, length) in it),
/// the namespace bindings in scope ((prefix, URI, depth)), and the current start tag's attributes
/// as read and as resolved. Dropped, they go back to the thread (emptied) for its next run.
struct Tags<'x> {
    names: Vec<(usize, usize)>,
    bindings: Vec<(&'x str, &'x str, usize)>,
    raw_attrs: Vec<(&'x str, &'x str, u8)>,
    attrs: Vec<Attr<'x>>,
}

/// The fast reader's arrays, allocated with a thread's [`Kept`] and then kept: none is cleared
/// between readings (zeroing them cost more than the reading's own work, see [`KnownNames`]).
struct Buffers {
    known: Known,
    /// An entry is written before it is read.
    stack: InertStack,
    /// Only what [`Sibling::learn`] wrote in this reading is read.
    sibling: Sibling,
}

/// [`Tags`] between runs: the same allocations, typed without the document's lifetime.
#[derive(Default)]
struct SpareTags {
    names: Vec<(usize, usize)>,
    bindings: Vec<[usize; 5]>,
    raw_attrs: Vec<[usize; 5]>,
    attrs: Vec<[usize; 7]>,
}

/// An emptied `v` as a vector of `U`. The standard library's in-place collection keeps the
/// allocation when the layouts allow (same size and alignment here, asserted below); it is an
/// optimisation it does not promise, so at worst this is a new vector. No element is converted.
fn recycle<T, U>(mut v: Vec<T>) -> Vec<U> {
    if v.capacity() > SPARE_LIMIT {
        return Vec::new();
    }
    v.clear();
    v.into_iter()
        .map(|_| unreachable!("the vector is empty"))
        .collect()
}

// The spare vectors' element types have the layouts of the ones they stand for.
const _: () = {
    use std::mem::{align_of, size_of};
    assert!(size_of::<[usize; 5]>() == size_of::<(&str, &str, usize)>());
    assert!(size_of::<[usize; 5]>() == size_of::<(&str, &str, u8)>());
    assert!(size_of::<[usize; 7]>() == size_of::<Attr<'_>>());
    assert!(align_of::<usize>() == align_of::<Attr<'_>>());
    assert!(align_of::<usize>() == align_of::<(&str, &str, u8)>());
};

thread_local! {
    static SPARE_TAGS: std::cell::Cell<SpareTags> = std::cell::Cell::new(SpareTags::default());
}

impl Tags<'_> {
    fn take() -> Self {
        let t = SPARE_TAGS.take();
        Tags {
            names: t.names,
            bindings: recycle(t.bindings),
            raw_attrs: recycle(t.raw_attrs),
            attrs: recycle(t.attrs),
        }
    }
}

impl Drop for Tags<'_> {
    fn drop(&mut self) {
        SPARE_TAGS.set(SpareTags {
            names: spare(std::mem::take(&mut self.names)),
            bindings: recycle(std::mem::take(&mut self.bindings)),
            raw_attrs: recycle(std::mem::take(&mut self.raw_attrs)),
            attrs: recycle(std::mem::take(&mut self.attrs)),
        });
    }
}

/// A run's vectors: the thread's ([`Kept`]), lent to each run and kept for the next one.
#[derive(Default)]
struct Spare {
    frames: Vec<Frame>,
    captures: Vec<Capture>,
    results: Vec<Res>,
    conds: Vec<Option<bool>>,
    scratch: String,
}

/// The start-tag names seen so far, by their first byte: (start, length, colon offset or 0,
/// [`Path::step_mask`] of the local name). Names repeat, so a start tag is usually recognised by one
/// word comparison instead of a scan.
type Known = [(u32, u16, u16, u64); 64];

/// The [`Known`] slots of one reading. The array is the thread's ([`Buffers`]), left as the last
/// reading wrote it rather than cleared (a 1 KiB memset per reading): `valid` marks the slots this
/// reading has written, and the others read as empty.
struct KnownNames<'a> {
    slots: &'a mut Known,
    valid: u64,
}

impl KnownNames<'_> {
    #[inline(always)]
    fn get(&self, slot: usize) -> (u32, u16, u16, u64) {
        if self.valid >> slot & 1 != 0 {
            self.slots[slot]
        } else {
            (0, 0, 0, 0)
        }
    }

    #[inline(always)]
    fn set(&mut self, slot: usize, entry: (u32, u16, u16, u64)) {
        self.slots[slot] = entry;
        self.valid |= 1 << slot;
    }
}

/// The elements open inside a child [`StreamPath::inert_span`] is reading: (start, length) of their
/// names.
type InertStack = [(usize, usize); INERT_STACK];

/// The markup of a child [`StreamPath::inert_span`] has read tag by tag, for reading its next
/// siblings in a few word comparisons: in a document's bulk (every `order` after the first) the
/// siblings differ in their text only. A sibling whose markup is byte for byte the same, with plain
/// text where this one had text (or none), has the same elements, nested the same way, so it is
/// well-formed and inert just as this one was.
struct Sibling {
    /// Each run of adjacent tags in this child, in order.
    runs: [Markup; SIBLING_RUNS],
    len: usize,
    /// Siblings in a row that did not match (each then becomes the pattern): reading stops trying
    /// when siblings keep differing.
    missed: usize,
}

/// A run of adjacent tags in a [`Sibling`] pattern: where it is, and (when it is at most
/// [`MARKUP_WORDS`] words long) its bytes as words with a mask for each, so that a sibling's run is
/// checked with one bounds check and a few loads, without a loop.
#[derive(Clone, Copy, Default)]
struct Markup {
    start: usize,
    len: usize,
    words: [u64; MARKUP_WORDS],
    masks: [u64; MARKUP_WORDS],
}

/// Runs of tags up to this many words long are held as words (`</volume></order>` is three).
const MARKUP_WORDS: usize = 3;

impl Markup {
    fn new(xml: &[u8], start: usize, len: usize) -> Markup {
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
    fn at(&self, xml: &[u8], p: usize) -> bool {
        if self.len <= 8 * MARKUP_WORDS {
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
const SIBLING_RUNS: usize = 16;
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

    /// The child at `at` (a `<`) if its markup is the pattern's with plain text between: the index
    /// just after it.
    #[inline]
    fn read(&mut self, xml: &[u8], at: usize) -> Option<usize> {
        if self.missed >= SIBLING_MISSES {
            return None;
        }
        let mut p = at;
        for (k, run) in self.runs[..self.len].iter().enumerate() {
            if k > 0 {
                let (lt, seen) = text_end(xml, p);
                if seen & UNPLAIN != 0 {
                    self.missed += 1;
                    return None;
                }
                p = lt;
            }
            if !run.at(xml, p) {
                self.missed += 1;
                return None;
            }
            p += run.len;
        }
        self.missed = 0;
        Some(p)
    }
}

/// Frames beyond this depth are not kept for the next run (a deep document's memory is given back).
const SPARE_FRAMES: usize = 64;
/// Vectors that grew past this many elements (or string bytes) are not kept for the next run.
const SPARE_LIMIT: usize = 4096;

/// `v` emptied, or a new vector when `v` grew past [`SPARE_LIMIT`].
fn spare<T>(mut v: Vec<T>) -> Vec<T> {
    tidy(&mut v);
    v
}

/// [`spare`] in place.
fn tidy<T>(v: &mut Vec<T>) {
    if v.capacity() > SPARE_LIMIT {
        *v = Vec::new();
    }
    v.clear();
}

/// What a thread keeps from one reading to the next (beside [`Tags`], whose vectors are typed with
/// the document's lifetime): the run's vectors, the fast reader's arrays and its [`Memo`]s.
struct Kept {
    run: Spare,
    buffers: Buffers,
    memos: Vec<Memo>,
}

/// The fast reader's state just after the first start tag that selects something, or before any
/// content the answer depends on (inside the `routing` header under
/// `/soapenv:Envelope/soapenv:Header/t:routing`, inside the first order's `symbol` under
/// `//order[1]/symbol`; see [`Recording`]), as a reading of that path on this thread left it, with
/// the bytes before that place. Messages from one client usually begin with the same bytes (the
/// same envelope, namespaces and headers), so the next reading whose document begins with them
/// starts there instead (one comparison instead of reading the envelope tag by tag). The state
/// there depends on those bytes alone (what was learned from bytes further on, names recognised
/// ahead or a comment found ahead, is not kept); the content that follows, which the answer
/// depends on, is read every time.
#[derive(Default)]
struct Memo {
    /// The path ([`StreamPath::id`]), the mode and whether the reading is exhaustive.
    key: (u64, Option<Mode>, bool),
    /// A reading has made it (a memo is first made empty, and stays so while every start tag before
    /// a selection is nearer the start than [`MEMO_MIN`] or further than [`MEMO_MAX`]).
    usable: bool,
    prefix: Vec<u8>,
    /// Where the reading goes on (`lt`: the prefix's length).
    place: Place,
    depth: usize,
    root_seen: bool,
    /// The open elements' frames, the document node's first.
    frames: Vec<Frame>,
    /// What the start tag just before the place selected, when the memo is made just after it
    /// (see [`Recording`]): empty otherwise.
    results: Vec<Res>,
    captures: Vec<Capture>,
    conds: Vec<Option<bool>>,
    next: usize,
    sink: Sink,
    names: Vec<(usize, usize)>,
    /// The namespace bindings in scope: (prefix start, length, URI start, length, depth); a length
    /// of 0 stands for "".
    bindings: Vec<[usize; 5]>,
    /// The [`Known`] names before the tag: (slot, entry).
    known: Vec<(usize, (u32, u16, u16, u64))>,
    /// Readings that started from it, and readings whose document began otherwise, since a reading
    /// last set out to make it.
    hits: u32,
    misses: u32,
    /// How many misses the next making waits for: 1 after a memo that served [`MEMO_PAYS`] times
    /// as many readings as it missed (the messages changed for good), else twice the last wait (at
    /// most [`MEMO_WAIT`]). Messages that never begin alike then cost a making now and then, not
    /// every time, and two clients in turn settle on one of them instead of a making per message.
    wait: u32,
}

/// How many times as many readings as it missed a memo must serve for the next one to be made at
/// the first miss.
const MEMO_PAYS: u32 = 4;
/// The longest a making waits, in misses.
const MEMO_WAIT: u32 = 64;

/// The [`Memo`]s a thread keeps, in a table where each compiled path has its own four (its modes,
/// exhaustive or not) until more than a quarter as many paths are read on the thread: then a newer
/// path takes an older one's slots ([`Memo::slot`]).
const MEMO_SLOTS: usize = 256;

impl Memo {
    /// Where the memo of `key` is kept in the thread's table.
    fn slot((id, mode, exhaustive): (u64, Option<Mode>, bool)) -> usize {
        let k = id << 2 | u64::from(mode == Some(Mode::Bool)) << 1 | u64::from(exhaustive);
        (k % MEMO_SLOTS as u64) as usize
    }
}

/// A memo's prefix is at least this long (shorter ones read faster than they compare) and at most
/// this long.
const MEMO_MIN: usize = 64;
const MEMO_MAX: usize = 4096;

#[cfg(test)]
thread_local! {
    /// Readings that started from a [`Memo`], and readings that set out to make one, for the tests.
    static MEMO_HITS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    static MEMO_MAKINGS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Where a [`Memo`] is made (a start tag, or just after one), and the fast reader's bulk reading state there (whether the
/// element before was inert, where [`StreamPath::inert_span`] last stopped): kept so that a reading
/// from the memo goes on exactly as the reading that made it did.
#[derive(Clone, Copy, Default)]
struct Place {
    lt: usize,
    inert_before: bool,
    span_stop: usize,
}

/// The fast reader's state a [`Recording`] reads.
#[derive(Clone, Copy)]
struct State<'s, 'x> {
    xml: &'x [u8],
    run: &'s Run<'s>,
    names: &'s [(usize, usize)],
    bindings: &'s [(&'x str, &'x str, usize)],
    known: &'s KnownNames<'s>,
}

/// A reading making its path's [`Memo`] again.
///
/// It does so at each start tag and just after it, as long as nothing has been selected, and from
/// the first tag a step tests by name on only down that tag's first children (`Envelope`, `Header`,
/// `routing`; `order`, `symbol`): the memo stays at the last of those places, just after the tag
/// that selected something when one did. Further on, the bytes before the place would take in
/// content that differs from one message to the next (the selected element's text, a sibling's),
/// and the memo would serve none.
#[derive(Default)]
struct Recording {
    /// The length of the prefix this reading has put in the memo so far.
    saved: Option<usize>,
    /// Once a tag a step tests has been passed: the depth the last such tag was opened at.
    chain: Option<usize>,
    /// The last start tag was one of those: the memo is made again just after it, before the
    /// content that follows (the last one it is made at may have selected an element, whose
    /// content is the first thing the answer depends on).
    pending: bool,
}

impl Recording {
    /// The start tag at `place.lt` (the reading's state just before it): makes `m` the memo of the
    /// state there when it may. Returns whether to go on at the next start tag.
    #[cold]
    fn at(&mut self, p: &StreamPath, st: &State<'_, '_>, place: Place, m: &mut Memo) -> bool {
        let (xml, run, lt) = (st.xml, st.run, place.lt);
        if lt > MEMO_MAX
            || !run.nothing_selected()
            || self.chain.is_some_and(|d| run.depth != d + 1)
        {
            return false;
        }
        let tested = match ascii_qname(xml, lt + 1) {
            Some((end, colon)) => {
                let local = &xml[lt + 1 + colon + usize::from(colon > 0)..end];
                p.path.step_mask(local) != 0
            }
            None => true,
        };
        if tested || self.chain.is_some() {
            self.chain = Some(run.depth);
        }
        self.pending = true;
        if lt < MEMO_MIN {
            return true;
        }
        self.save(st, place, m)
    }

    /// Just after a start tag [`Recording::at`] took (`place.lt`: where the reading goes on):
    /// makes `m` the memo of the state there. Returns whether to go on at the next start tag (not
    /// once the tag has selected something).
    #[cold]
    fn after(&mut self, st: &State<'_, '_>, place: Place, m: &mut Memo) -> bool {
        self.pending = false;
        let clean = st.run.nothing_selected();
        if place.lt > MEMO_MAX {
            return false;
        }
        if place.lt >= MEMO_MIN && !self.save(st, place, m) {
            return false;
        }
        clean
    }

    /// Makes `m` the memo of the state at `place`; `false` if it cannot hold it.
    fn save(&mut self, st: &State<'_, '_>, place: Place, m: &mut Memo) -> bool {
        let State {
            xml,
            run,
            names,
            bindings,
            known,
        } = *st;
        let lt = place.lt;
        let mut places = Vec::with_capacity(bindings.len());
        for &(prefix, uri, depth) in bindings {
            match (offset_in(xml, prefix, lt), offset_in(xml, uri, lt)) {
                (Some((ps, pl)), Some((us, ul))) => places.push([ps, pl, us, ul, depth]),
                _ => return false,
            }
        }
        match self.saved {
            Some(from) => m.prefix.extend_from_slice(&xml[from..lt]),
            None => {
                m.prefix.clear();
                m.prefix.extend_from_slice(&xml[..lt]);
            }
        }
        self.saved = Some(lt);
        m.usable = true;
        m.place = place;
        m.depth = run.depth;
        m.root_seen = run.root_seen;
        m.frames.truncate(run.depth + 1);
        copy_frames(&mut m.frames, &run.v.frames[..=run.depth]);
        m.results.clone_from(&run.v.results);
        m.captures.clone_from(&run.v.captures);
        m.conds.clone_from(&run.v.conds);
        m.next = run.next;
        m.sink.clone_from(&run.sink);
        m.names.clear();
        m.names.extend_from_slice(names);
        m.bindings = places;
        m.known.clear();
        let mut valid = known.valid;
        while valid != 0 {
            let slot = valid.trailing_zeros() as usize;
            valid &= valid - 1;
            let entry = known.slots[slot];
            if entry.0 as usize + usize::from(entry.1) <= lt {
                m.known.push((slot, entry));
            }
        }
        true
    }
}

/// The first frames of `to` become `from` (frames pushed as needed; those after are left).
fn copy_frames(to: &mut Vec<Frame>, from: &[Frame]) {
    for (k, f) in from.iter().enumerate() {
        if to.len() <= k {
            to.push(Frame::default());
        }
        to[k].copy_from(f);
    }
}

/// Where `s` lies in `xml`, if within its first `limit` bytes: (start, length), (0, 0) for "".
fn offset_in(xml: &[u8], s: &str, limit: usize) -> Option<(usize, usize)> {
    if s.is_empty() {
        return Some((0, 0));
    }
    let start = (s.as_ptr() as usize).checked_sub(xml.as_ptr() as usize)?;
    (start + s.len() <= limit).then_some((start, s.len()))
}

impl Kept {
    fn new() -> Kept {
        Kept {
            run: Spare::default(),
            buffers: Buffers {
                known: [(0, 0, 0, 0); 64],
                stack: [(0, 0); INERT_STACK],
                sibling: Sibling {
                    runs: [Markup::default(); SIBLING_RUNS],
                    len: 0,
                    missed: 0,
                },
            },
            memos: Vec::new(),
        }
    }
}

thread_local! {
    static KEPT: std::cell::Cell<Option<Box<Kept>>> = const { std::cell::Cell::new(None) };
}

/// The thread's [`Kept`] while a reading has it: taken as one pointer and given back when the
/// reading is over, its vectors tidied (moving the vectors themselves in and out cost more than a
/// small document's reading: their words were copied through the stack and read back across two
/// stores, which stalls).
struct SpareBox(Option<Box<Kept>>);

impl SpareBox {
    fn take() -> SpareBox {
        SpareBox(KEPT.take())
    }

    fn get(&mut self) -> &mut Kept {
        self.0.get_or_insert_with(|| Box::new(Kept::new()))
    }
}

impl Drop for SpareBox {
    fn drop(&mut self) {
        let Some(mut kept) = self.0.take() else {
            return;
        };
        let v = &mut kept.run;
        v.frames.truncate(SPARE_FRAMES);
        v.scratch.clear();
        if v.scratch.capacity() > SPARE_LIMIT {
            v.scratch = String::new();
        }
        tidy(&mut v.captures);
        tidy(&mut v.results);
        tidy(&mut v.conds);
        KEPT.set(Some(kept));
    }
}

struct Run<'p> {
    p: &'p StreamPath,
    need_text: bool,
    sink: Sink,
    mode: Mode,
    /// The open elements' frames, the captures, results and conditions, a scratch string.
    v: &'p mut Spare,
    depth: usize,
    /// The first result not yet handed to the sink.
    next: usize,
    root_seen: bool,
}

impl Run<'_> {
    fn start(&mut self, reader: &NsReader<&[u8]>, e: &BytesStart<'_>) -> Option<()> {
        let raw: &str = e.name().0;
        if !is_qname(raw) || raw.starts_with("xmlns:") {
            return None;
        }
        let (res, local) = reader.resolver().resolve_element(e.name());
        let ns = resolved(res)?;
        let local: &str = local.into_inner();
        let mut attrs: Vec<Attr<'_>> = Vec::new();
        if !attributes_syntax_ok(e.attributes_raw()) {
            return None;
        }
        // quick-xml checks names for repeats itself (by hash past 32 attributes); namespace
        // declarations in scope it holds to 128 (more: an error, and libxml2 decides).
        for (n, a) in e.attributes().enumerate() {
            if n >= MAX_ATTRS {
                return None;
            }
            let a = a.ok()?;
            let qkey = a.key;
            let key: &str = qkey.0;
            if !is_qname(key) {
                return None;
            }
            if key == "xmlns" || key.starts_with("xmlns:") {
                // quick-xml binds the raw value: keep to values that need no unescaping or normalising.
                let v: &str = &a.value;
                if v.contains(['&', '<', '\t', '\n', '\r'])
                    || !valid_chars(v)
                    || (key != "xmlns" && v.is_empty())
                {
                    return None;
                }
                continue;
            }
            let (r, l) = reader.resolver().resolve_attribute(qkey);
            let ans = resolved(r)?;
            let l: &str = l.into_inner();
            let v = match a.value {
                Cow::Borrowed(s) => attr_value(s)?,
                Cow::Owned(s) => Cow::Owned(attr_value(&s)?.into_owned()),
            };
            if attrs.len() < FEW_ATTRS && attrs.iter().any(|(n, al, _)| *n == ans && *al == l) {
                return None;
            }
            attrs.push((ans, l, v));
        }
        if attrs.len() > FEW_ATTRS && repeated(attrs.len(), |k| (attrs[k].0, attrs[k].1)) {
            return None;
        }
        self.open(ns, local, &attrs)
    }

    /// An element starts: `ns` and `local` name it, `attrs` are its attributes other than namespace
    /// declarations (namespace, local name, normalised value).
    fn open(&mut self, ns: Option<&str>, local: &str, attrs: &[Attr<'_>]) -> Option<()> {
        if self.depth == 0 && self.root_seen {
            return None; // a second root element
        }
        let mask = self.p.path.step_mask(local.as_bytes());
        if self.inert_child(mask) {
            self.open_inert();
            return Some(());
        }
        let p: &StreamPath = self.p;
        let path = &p.path;
        self.end_text_run();
        let d = self.depth + 1;
        if d > MAX_DEPTH {
            return None;
        }
        let n = path.steps.len();
        if self.v.frames.len() <= d {
            self.v.frames.push(Frame::default());
        }
        let (lower, upper) = self.v.frames.split_at_mut(d);
        let parent = &mut lower[d - 1];
        let f = &mut upper[0];
        f.reset(path);
        f.clean = false;
        parent.clean = false;
        let mut matched = 0u64;
        // The steps whose test the local name passes (`step_mask`; every bit past 63 steps).
        let mut todo = mask & (u64::MAX >> (64 - n.min(64)));
        while todo != 0 {
            let i = todo.trailing_zeros() as usize;
            todo &= todo - 1;
            let step = &path.steps[i];
            let named = if mask == u64::MAX {
                step.test.matches(ns, local)
            } else {
                step.test.ns_matches(ns)
            };
            let live = if i == 0 {
                path.descendant || d == 1
            } else {
                parent.matches(i - 1)
            };
            if !(named && live) {
                continue;
            }
            if let (Some(part), Some(_)) = (step.soap_once, parent.soap_env) {
                if (part == SoapPart::Header && parent.seen_header)
                    || (part == SoapPart::Body && parent.seen_body)
                {
                    continue;
                }
            }
            let mut ok = true;
            let mut slot = step.slot;
            for pred in &step.preds {
                match pred {
                    Pred::Pos(want) => {
                        parent.counted = true;
                        let c = &mut parent.counters[slot];
                        *c = c.saturating_add(1);
                        slot += 1;
                        if *c != *want {
                            ok = false;
                            break;
                        }
                    }
                    Pred::Attr {
                        ns: pns,
                        local: pl,
                        value,
                    } => {
                        if !attrs
                            .iter()
                            .any(|(an, al, av)| *an == pns.as_deref() && al == pl && av == value)
                        {
                            ok = false;
                            break;
                        }
                    }
                    Pred::Child { .. } => {}
                }
            }
            if !ok {
                continue;
            }
            matched |= 1 << i;
            if path.conds {
                let mut conds = if i == 0 {
                    Vec::new()
                } else {
                    parent.conds(i - 1).to_vec()
                };
                for (k, pred) in step.preds.iter().enumerate() {
                    if let Pred::Child { .. } = pred {
                        let id = u32::try_from(self.v.conds.len()).ok()?;
                        self.v.conds.push(None);
                        f.own.push((id, i, k));
                        conds.push(id);
                    }
                }
                f.conds[i] = conds;
            }
        }
        f.matched = matched;
        if let Some(env) = parent.soap_env {
            if ns == Some(env) {
                match local {
                    "Body" => {
                        parent.seen_body = true;
                        parent.seen_header = true;
                    }
                    "Header" => parent.seen_header = true,
                    _ => {}
                }
            }
        }
        if d == 1 {
            self.root_seen = true;
            if local == "Envelope" {
                f.soap_env = match ns {
                    Some(SOAP11_ENV) => Some(SOAP11_ENV),
                    Some(SOAP12_ENV) => Some(SOAP12_ENV),
                    _ => None,
                };
            }
        }
        // Children compared by the parent's `[child='x']` predicates.
        for &(cond, i, k) in &parent.own {
            if self.v.conds[cond as usize].is_some() {
                continue;
            }
            if let Pred::Child { test, .. } = &path.steps[i].preds[k] {
                if test.matches(ns, local) {
                    self.v.captures.push(Capture {
                        depth: d,
                        buf: String::new(),
                        target: Target::Check(cond, i, k),
                    });
                }
            }
        }
        if f.matches(n - 1) {
            let conds = f.conds(n - 1);
            match &path.tail {
                Tail::Element => {
                    let idx = self.v.results.len();
                    self.v.results.push(Res {
                        text: String::new(),
                        done: !self.need_text,
                        conds: conds.to_vec(),
                    });
                    if self.need_text {
                        self.v.captures.push(Capture {
                            depth: d,
                            buf: String::new(),
                            target: Target::Result(idx),
                        });
                    }
                }
                Tail::Attr(test) => {
                    for (an, al, av) in attrs {
                        if test.matches(*an, al) {
                            self.v.results.push(Res {
                                text: av.to_string(),
                                done: true,
                                conds: conds.to_vec(),
                            });
                        }
                    }
                }
                Tail::Text => {}
            }
        }
        self.depth = d;
        Some(())
    }

    /// Whether a child of the current element named `local` is one no step can match, so that
    /// [`Run::open_inert`] opens it: not the root, not under a SOAP Envelope, not compared by the
    /// current element's `[child='x']` predicates, and for every step that tests its name, a step the
    /// current element cannot lead to (a later step whose previous one the current element did not
    /// match, a first step of a path without `//`, or a step whose position predicate the current
    /// element's children have passed: `//order[1]` after the first order). Attributes do not matter: no step matches the
    /// element to test them. `mask`: the steps whose test the child's local name passes
    /// ([`Path::step_mask`]).
    #[inline(always)]
    fn inert_child(&self, mut mask: u64) -> bool {
        let d = self.depth + 1;
        if d <= 1 || d > MAX_DEPTH || mask == u64::MAX {
            return false;
        }
        let parent = &self.v.frames[self.depth];
        if parent.soap_env.is_some() || !parent.own.is_empty() {
            return false;
        }
        let path = &self.p.path;
        while mask != 0 {
            let i = mask.trailing_zeros() as usize;
            let live = if i == 0 {
                path.descendant
            } else {
                parent.matches(i - 1)
            };
            if live && !exhausted(&path.steps[i], parent) {
                return false;
            }
            mask &= mask - 1;
        }
        true
    }

    /// Nothing collects the text or elements inside the current element: no capture is open, and
    /// its text nodes are not selected (it matches no last step of a `text()` path).
    #[inline]
    fn quiet(&self) -> bool {
        self.v.captures.is_empty()
            && (self.p.path.tail != Tail::Text
                || !self.v.frames[self.depth].matches(self.p.path.steps.len() - 1))
    }

    /// What [`Run::open`] does for an element [`Run::inert_child`] accepts: track its depth.
    #[inline]
    fn open_inert(&mut self) {
        self.end_text_run();
        let d = self.depth + 1;
        if self.v.frames.len() <= d {
            self.v.frames.push(Frame::default());
        }
        self.v.frames[d].reset(&self.p.path);
        self.depth = d;
    }

    /// Opens the elements [`StreamPath::inert_span`] hands over (their names' start and length,
    /// outermost first), as the general reading would have opened them.
    #[cold]
    fn open_handed(&mut self, names: &mut Vec<(usize, usize)>, open: &[(usize, usize)]) {
        for &name in open {
            self.open_inert();
            names.push(name);
        }
    }

    fn end(&mut self) -> Option<()> {
        if self.depth == 0 {
            return None;
        }
        self.end_text_run();
        let d = self.depth;
        while self.v.captures.last().is_some_and(|c| c.depth == d) {
            let Some(c) = self.v.captures.pop() else {
                break;
            };
            match c.target {
                Target::Result(i) => {
                    self.v.results[i].text = c.buf;
                    self.v.results[i].done = true;
                }
                Target::Check(cond, i, k) => {
                    if let Pred::Child { value, .. } = &self.p.path.steps[i].preds[k] {
                        if c.buf == *value {
                            self.v.conds[cond as usize] = Some(true);
                        }
                    }
                }
            }
        }
        for &(cond, _, _) in &self.v.frames[d].own {
            let c = &mut self.v.conds[cond as usize];
            if c.is_none() {
                *c = Some(false);
            }
        }
        self.depth -= 1;
        Some(())
    }

    /// Character data (already unescaped and normalised) directly inside the current element.
    #[inline]
    fn chars(&mut self, s: &str) {
        if s.is_empty() {
            return;
        }
        for c in &mut self.v.captures {
            c.buf.push_str(s);
        }
        if self.p.path.tail != Tail::Text {
            return;
        }
        let n = self.p.path.steps.len();
        let f = &mut self.v.frames[self.depth];
        if !f.matches(n - 1) {
            return;
        }
        let conds = f.conds(n - 1);
        match f.text_run {
            Some(r) => {
                if self.need_text {
                    self.v.results[r].text.push_str(s);
                }
            }
            None => {
                let conds = conds.to_vec();
                f.clean = false;
                f.text_run = Some(self.v.results.len());
                self.v.results.push(Res {
                    text: if self.need_text {
                        s.to_owned()
                    } else {
                        String::new()
                    },
                    done: false,
                    conds,
                });
            }
        }
    }

    fn text(&mut self, t: &str) -> Option<()> {
        let mut seen = 0;
        for &c in t.as_bytes() {
            seen |= BYTE_CLASS[usize::from(c)];
        }
        self.text_seen(t, seen)
    }

    /// Character data `t` (no references in it), where `seen` is every [`BYTE_CLASS`] of its bytes
    /// or'd together.
    fn text_seen(&mut self, t: &str, seen: u8) -> Option<()> {
        if seen & CTRL != 0
            || (seen & HIGH != 0 && t.contains(['\u{FFFE}', '\u{FFFF}']))
            || (seen & GT != 0 && t.contains("]]>"))
        {
            return None;
        }
        if self.depth == 0 {
            return t.bytes().all(is_ws).then_some(());
        }
        if seen & CR == 0 {
            self.chars(t);
            return Some(());
        }
        let mut s = std::mem::take(&mut self.v.scratch);
        s.clear();
        normalize_eol(t, &mut s);
        self.chars(&s);
        self.v.scratch = s;
        Some(())
    }

    /// A CDATA section: its own text node in libxml2 (never merged with the text around it).
    fn cdata(&mut self, s: &str) {
        self.end_text_run();
        let mut norm = String::new();
        let s = if s.contains('\r') {
            normalize_eol(s, &mut norm);
            norm.as_str()
        } else {
            s
        };
        for c in &mut self.v.captures {
            c.buf.push_str(s);
        }
        if self.p.path.tail == Tail::Text {
            let n = self.p.path.steps.len();
            let f = &self.v.frames[self.depth];
            if f.matches(n - 1) {
                let conds = f.conds(n - 1);
                self.v.results.push(Res {
                    text: if self.need_text {
                        s.to_owned()
                    } else {
                        String::new()
                    },
                    done: true,
                    conds: conds.to_vec(),
                });
            }
        }
    }

    #[inline(always)]
    fn end_text_run(&mut self) {
        if let Some(r) = self.v.frames[self.depth].text_run.take() {
            self.v.results[r].done = true;
        }
    }

    /// Hands the results whose membership and string value are known, in document order, to the sink.
    #[inline]
    fn advance(&mut self) {
        if self.next < self.v.results.len() && !self.sink.done {
            self.advance_results();
        }
    }

    fn advance_results(&mut self) {
        while self.next < self.v.results.len() && !self.sink.done {
            let r = &mut self.v.results[self.next];
            let mut state = Some(true);
            for &c in &r.conds {
                match self.v.conds[c as usize] {
                    Some(false) => {
                        state = Some(false);
                        break;
                    }
                    None => state = None,
                    Some(true) => {}
                }
            }
            match state {
                None => break,
                Some(false) => {}
                Some(true) => {
                    if !r.done {
                        break;
                    }
                    let text = std::mem::take(&mut r.text);
                    self.sink.feed(&self.p.form, self.mode, text);
                }
            }
            self.next += 1;
        }
    }

    /// Nothing selected, collected or compared yet (what a [`Recording`] may stop at).
    fn nothing_selected(&self) -> bool {
        self.v.results.is_empty()
            && self.v.captures.is_empty()
            && self.v.conds.is_empty()
            && !self.sink.done
    }

    /// Every result is known and no element still to come can be selected.
    fn decided(&self) -> bool {
        self.next == self.v.results.len() && !self.more_possible()
    }

    fn more_possible(&self) -> bool {
        let path = &self.p.path;
        if !self.root_seen {
            return true;
        }
        if path.descendant {
            return self.depth > 0;
        }
        let n = path.steps.len();
        // Without `//`, an element at depth j can only match step j-1; the document node (j = 0) has had
        // its one root element.
        for j in 1..=self.depth {
            let f = &self.v.frames[j];
            if !f.matches(j - 1) {
                continue;
            }
            if j < n && !exhausted(&path.steps[j], f) {
                return true;
            }
            if j == n && path.tail == Tail::Text {
                return true;
            }
        }
        false
    }
}

/// No further child of `f` can match `step`: a positional predicate has had its n-th sibling, or the
/// SOAP Header / Body has been seen.
fn exhausted(step: &Step, f: &Frame) -> bool {
    if let (Some(part), Some(_)) = (step.soap_once, f.soap_env) {
        if (part == SoapPart::Header && f.seen_header) || (part == SoapPart::Body && f.seen_body) {
            return true;
        }
    }
    let mut slot = step.slot;
    for p in &step.preds {
        if let Pred::Pos(n) = p {
            if f.counters[slot] >= *n {
                return true;
            }
            slot += 1;
        }
    }
    false
}

/// The XML declaration (`xml version="1.0" ...`, between `<?` and `?>`): version 1.0, UTF-8 if an
/// encoding is named, in the order and syntax XML requires.
fn xml_decl_ok(content: &str) -> bool {
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

/// The attribute part of a start tag (after the name): `S name S? = S? quoted` repeated, then `S?`.
/// quick-xml also accepts attributes that are not separated by white space; XML does not.
fn attributes_syntax_ok(raw: &str) -> bool {
    read_attributes(raw, &mut Vec::new())
}

fn resolved(r: ResolveResult<'_>) -> Option<Option<&str>> {
    match r {
        ResolveResult::Bound(n) if !n.0.is_empty() => Some(Some(n.0)),
        ResolveResult::Unbound => Some(None),
        _ => None,
    }
}

/// XML 1.0 `Char` (Rust strings hold no surrogates).
fn valid_chars(s: &str) -> bool {
    let mut high = false;
    // Branch-free within a chunk, so that the scan vectorises.
    for chunk in s.as_bytes().chunks(32) {
        let (mut ctrl, mut h) = (false, false);
        for &b in chunk {
            ctrl |= b < 0x20 && b != b'\t' && b != b'\n' && b != b'\r';
            h |= b >= 0x80;
        }
        if ctrl {
            return false;
        }
        high |= h;
    }
    !high || !s.contains(['\u{FFFE}', '\u{FFFF}'])
}

fn is_xml_char(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r') || (c >= ' ' && c != '\u{FFFE}' && c != '\u{FFFF}')
}

/// CR LF and a lone CR become LF, as every XML parser reports line ends.
fn normalize_eol(s: &str, out: &mut String) {
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

/// A predefined entity or a character reference (the name between `&` and `;`).
fn resolve_ref(name: &str) -> Option<char> {
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

/// An attribute value as libxml2 reports it (no DTD, so every attribute is CDATA): line ends normalised,
/// then tab, LF and CR become spaces; references are replaced afterwards, so `&#10;` stays a line feed.
fn attr_value(raw: &str) -> Option<Cow<'_, str>> {
    attr_value_classed(raw, value_class(raw.as_bytes()))
}

/// [`attr_value`] for a value whose [`value_class`] is known.
fn attr_value_classed(raw: &str, class: u8) -> Option<Cow<'_, str>> {
    if class & (V_LT | V_CTRL) != 0 || (class & V_HIGH != 0 && has_nonchar(raw)) {
        return None;
    }
    if class & (V_AMP | V_WS) == 0 {
        return Some(Cow::Borrowed(raw));
    }
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
    Some(Cow::Owned(out))
}

#[cfg(test)]
mod tests;
