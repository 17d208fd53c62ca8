//! A strict XML tokenizer (its own memchr scanner): it yields only what libxml2 (as Sluice parses, no DTD, no
//! entity substitution) would build the same tree from, and `None` for everything else, so that the
//! caller falls back to libxml2, which gives the real error.
//!
//! Text, references and CDATA sections are merged into one text token with line ends normalised;
//! attribute values are normalised as a parser without a DTD does; namespace prefixes are resolved.

use sluice_xml::chars::{attr_value_replaced, normalize_eol, resolve_ref};
pub(crate) use sluice_xml::names::is_ncname;
use sluice_xml::names::{ncname_end, starts_name, PrefixIndex};
use std::borrow::Cow;
use std::collections::HashSet;

pub(crate) const XML_NS: &str = "http://www.w3.org/XML/1998/namespace";
const XMLNS_NS: &str = "http://www.w3.org/2000/xmlns/";
/// Below libxml2's default nesting limit (256), with room for the caller's wrapping.
pub(crate) const MAX_DEPTH: usize = 250;
/// `sluice_xml::Limits::default().max_bytes`.
pub(crate) const MAX_BYTES: usize = 64 * 1024 * 1024;
/// An element with more attributes (namespace declarations included) is left to libxslt, whose
/// parse refuses it (`sluice_xml::Limits::max_attributes`).
const MAX_ATTRS: usize = sluice_xml::DEFAULT_MAX_ATTRIBUTES;
/// More namespace declarations in scope are left to libxslt likewise
/// (`sluice_xml::Limits::max_namespaces`).
const MAX_BINDINGS: usize = sluice_xml::DEFAULT_MAX_NAMESPACES;
/// Up to this many attributes (or declarations) on an element are checked for repeats pair by
/// pair; more, by sorting.
pub(crate) const FEW: usize = 16;

/// An attribute of a start tag (namespace declarations are not attributes).
#[derive(Debug, Clone)]
pub(crate) struct Attr<'a> {
    pub prefix: &'a str,
    pub local: &'a str,
    /// Namespace URI, "" for none.
    pub uri: &'a str,
    pub value: Cow<'a, str>,
}

/// A start tag.
#[derive(Debug, Default)]
pub(crate) struct Start<'a> {
    pub prefix: &'a str,
    pub local: &'a str,
    /// Namespace URI, "" for none.
    pub uri: &'a str,
    /// Declarations on this element in document order: (prefix, "" for the default; URI, "" to undeclare).
    pub decls: Vec<(&'a str, &'a str)>,
    pub attrs: Vec<Attr<'a>>,
}

#[derive(Debug)]
pub(crate) enum Tok<'a> {
    Start(Start<'a>),
    End,
    /// Character data inside an element; `cdata` tells whether a CDATA section was part of it.
    Text {
        text: Cow<'a, str>,
        cdata: bool,
    },
    Comment(Cow<'a, str>),
    Eof,
}

pub(crate) struct Tokenizer<'a> {
    src: &'a str,
    /// Where `src` starts in the input (after an XML declaration).
    base: usize,
    scan: Scan<'a>,
    /// In-scope declarations (prefix, URI), innermost last.
    ns: Vec<(&'a str, &'a str)>,
    /// Where the innermost declaration of each prefix is in `ns` while it holds more than [`FEW`]
    /// (empty otherwise): a scan per prefixed name would be quadratic.
    index: PrefixIndex<'a>,
    marks: Vec<usize>,
    depth: usize,
    root_seen: bool,
    /// A structural event read while text was being gathered.
    held: Option<Ev<'a>>,
    text: Option<Cow<'a, str>>,
    cdata: bool,
    /// Bindings a fragment inherits from its ancestors, declared on its root element.
    inherited: Vec<(&'a str, &'a str)>,
}

/// Whether `s` holds only XML 1.0 characters and is valid for us (checked once over the whole input).
pub(crate) fn chars_ok(s: &str) -> bool {
    let b = s.as_bytes();
    let (mut bad, mut high) = (false, false);
    for chunk in b.chunks(64) {
        let (mut c, mut h) = (false, false);
        for &x in chunk {
            c |= x < 0x20 && x != b'\t' && x != b'\n' && x != b'\r';
            h |= x >= 0x80;
        }
        bad |= c;
        high |= h;
    }
    // U+FFFE / U+FFFF are EF BF BE / EF BF BF (only looked for when there is non-ASCII at all).
    !bad && (!high || !s.contains(['\u{FFFE}', '\u{FFFF}']))
}

pub(crate) fn is_ws(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r')
}

pub(crate) fn all_ws(s: &str) -> bool {
    s.bytes().all(is_ws)
}

/// Character data from `i`: where it ends (the next `<` or `&`, or the end of the input), and
/// whether it may hold a `>` or a carriage return (certainly, up to [`SHORT_TEXT`] bytes, scanned
/// byte by byte; maybe, past that, where memchr found the end and did not look).
fn text_run(b: &[u8], i: usize) -> (usize, bool) {
    let limit = b.len().min(i + SHORT_TEXT);
    let (mut end, mut marks) = (i, false);
    while end < limit && b[end] != b'<' && b[end] != b'&' {
        marks |= b[end] == b'>' || b[end] == b'\r';
        end += 1;
    }
    if end == limit && end < b.len() {
        end = memchr::memchr2(b'<', b'&', &b[end..]).map_or(b.len(), |k| end + k);
        marks = true;
    }
    (end, marks)
}

/// Splits a QName into (prefix or "", local).
pub(crate) fn split_qname(s: &str) -> Option<(&str, &str)> {
    // By bytes: names are short, and the char searcher costs more than the loop.
    match s
        .bytes()
        .position(|c| c == b':')
        .map(|i| (&s[..i], &s[i + 1..]))
    {
        Some((p, l)) => (is_ncname(p) && is_ncname(l)).then_some((p, l)),
        None => is_ncname(s).then_some(("", s)),
    }
}

/// Text up to this long is scanned byte by byte (cheaper than memchr calls for a short value).
const SHORT_TEXT: usize = 32;

/// A markup event, as a slice of the input.
#[derive(Debug, Clone, Copy)]
enum Ev<'a> {
    /// Character data up to the next markup or reference, and whether it may hold `>` or a carriage
    /// return (false: it holds neither).
    Text(&'a str, bool),
    /// `&name;`: the name.
    Ref(&'a str),
    CData(&'a str),
    Comment(&'a str),
    /// A start tag's content between `<` and `>` (or `/>`), and the length of its name.
    Start(&'a str, usize),
    End,
    Eof,
}

/// The markup scanner under [`Tokenizer`]: memchr over the input, end tags checked against their start
/// tags, an empty-element tag reported as a start and an end. `None` for anything it does not read (a
/// DOCTYPE, a processing instruction, `--` in a comment, a tag or reference left open).
struct Scan<'a> {
    src: &'a str,
    /// Just after the last event read.
    pos: usize,
    /// The names of the open elements.
    open: Vec<&'a str>,
    /// The end of the empty-element tag just reported as a start.
    pending_end: bool,
}

impl<'a> Scan<'a> {
    fn next(&mut self) -> Option<Ev<'a>> {
        if std::mem::take(&mut self.pending_end) {
            return Some(Ev::End);
        }
        let (src, b, i) = (self.src, self.src.as_bytes(), self.pos);
        let Some(&first) = b.get(i) else {
            return Some(Ev::Eof);
        };
        if first != b'<' {
            let (end, marks) = text_run(b, i);
            if end > i {
                self.pos = end;
                return src.get(i..end).map(|t| Ev::Text(t, marks));
            }
            let semi = i + 1 + memchr::memchr(b';', &b[i + 1..])?;
            self.pos = semi + 1;
            return src.get(i + 1..semi).map(Ev::Ref);
        }
        let rest = &b[i + 1..];
        match *rest.first()? {
            b'/' => {
                let gt = i + 2 + memchr::memchr(b'>', &rest[1..])?;
                let name = src
                    .get(i + 2..gt)?
                    .trim_end_matches([' ', '\t', '\n', '\r']);
                if self.open.pop()? != name {
                    return None;
                }
                self.pos = gt + 1;
                Some(Ev::End)
            }
            b'!' if rest.starts_with(b"!--") => {
                let from = i + 4;
                let len = memchr::memmem::find(&b[from..], b"-->")?;
                let c = src.get(from..from + len)?;
                if c.contains("--") {
                    return None;
                }
                self.pos = from + len + 3;
                Some(Ev::Comment(c))
            }
            b'!' if rest.starts_with(b"![CDATA[") => {
                let from = i + 9;
                let len = memchr::memmem::find(&b[from..], b"]]>")?;
                self.pos = from + len + 3;
                src.get(from..from + len).map(Ev::CData)
            }
            b'!' | b'?' => None,
            _ => {
                // The tag ends at the first `>` outside quotes.
                let mut j = i + 1;
                let gt = loop {
                    let p = j + memchr::memchr3(b'>', b'"', b'\'', &b[j..])?;
                    if b[p] == b'>' {
                        break p;
                    }
                    j = p + 2 + memchr::memchr(b[p], &b[p + 1..])?;
                };
                let empty = b[gt - 1] == b'/' && gt - 1 > i + 1;
                let content = src.get(i + 1..if empty { gt - 1 } else { gt })?;
                let name_len = content.bytes().position(is_ws).unwrap_or(content.len());
                self.pos = gt + 1;
                if empty {
                    self.pending_end = true;
                } else {
                    self.open.push(content.get(..name_len)?);
                }
                Some(Ev::Start(content, name_len))
            }
        }
    }
}

/// `s` as a slice of `src`, when it points into it.
fn rebase<'a>(src: &'a str, s: &str) -> Option<&'a str> {
    let base = src.as_ptr() as usize;
    let p = s.as_ptr() as usize;
    if p < base || p + s.len() > base + src.len() {
        return None;
    }
    src.get(p - base..p - base + s.len())
}

/// An attribute value as parsed without a DTD: white space characters become spaces (CR LF as one),
/// references are replaced afterwards.
fn attr_value(raw: &str) -> Option<Cow<'_, str>> {
    let (mut lt, mut special) = (false, false);
    for &c in raw.as_bytes() {
        lt |= c == b'<';
        special |= matches!(c, b'&' | b'\t' | b'\n' | b'\r');
    }
    if lt {
        return None;
    }
    if !special {
        return Some(Cow::Borrowed(raw));
    }
    attr_value_replaced(raw).map(Cow::Owned)
}

/// Scans `name="value"` pairs, each preceded by white space; `None` on anything else.
pub(crate) fn scan_attrs(s: &str, mut f: impl FnMut(&str, &str) -> Option<()>) -> Option<()> {
    let b = s.as_bytes();
    let skip_ws = |mut i: usize| {
        while i < b.len() && is_ws(b[i]) {
            i += 1;
        }
        i
    };
    let mut i = 0;
    loop {
        let start = skip_ws(i);
        if start == b.len() {
            return Some(());
        }
        if start == i {
            return None; // no white space before the attribute
        }
        let mut j = start;
        while j < b.len() && b[j] != b'=' && !is_ws(b[j]) {
            j += 1;
        }
        if j == b.len() {
            return None;
        }
        let name = &s[start..j];
        let eq = skip_ws(j);
        if b.get(eq) != Some(&b'=') {
            return None;
        }
        let open = skip_ws(eq + 1);
        let q = *b.get(open).filter(|q| **q == b'"' || **q == b'\'')?;
        let len = memchr::memchr(q, &b[open + 1..])?;
        f(name, &s[open + 1..open + 1 + len])?;
        i = open + 1 + len + 1;
    }
}

fn decl_ok(inner: &str) -> bool {
    // `<?xml` VersionInfo EncodingDecl? SDDecl? S? `?>`, in that order.
    let mut seen = 0;
    scan_attrs(inner, |n, v| {
        let rank = match n {
            "version" if v == "1.0" => 1,
            "encoding" if v.eq_ignore_ascii_case("UTF-8") => 2,
            "standalone" if v == "yes" || v == "no" => 3,
            _ => return None,
        };
        (rank > seen && (seen > 0 || rank == 1)).then(|| seen = rank)
    })
    .is_some()
        && seen >= 1
}

impl<'a> Tokenizer<'a> {
    /// `None` when the input is outside what we tokenize (size, encoding, characters, declaration).
    pub(crate) fn new(input: &'a [u8], inherited: &[(&'a str, &'a str)]) -> Option<Tokenizer<'a>> {
        if input.len() > MAX_BYTES {
            return None;
        }
        let src = simdutf8::basic::from_utf8(input).ok()?;
        if src.starts_with('\u{FEFF}') || !chars_ok(src) {
            return None;
        }
        let mut start = 0;
        if let Some(rest) = src.strip_prefix("<?xml") {
            if !rest.starts_with([' ', '\t', '\n', '\r']) {
                return None; // a PI whose target starts with "xml"
            }
            let end = rest.find("?>")?;
            if !decl_ok(&rest[..end]) {
                return None;
            }
            start = 5 + end + 2;
        }
        let body = &src[start..];
        let scan = Scan {
            src: body,
            pos: 0,
            open: Vec::new(),
            pending_end: false,
        };
        for (p, u) in inherited {
            if !ns_decl_ok(p, u) {
                return None;
            }
        }
        Some(Tokenizer {
            src: body,
            base: start,
            scan,
            ns: Vec::new(),
            index: PrefixIndex::default(),
            marks: Vec::new(),
            depth: 0,
            root_seen: false,
            held: None,
            text: None,
            cdata: false,
            inherited: inherited.to_vec(),
        })
    }

    /// The input offset of `s`, a slice of the input (a name in a token).
    pub(crate) fn offset(&self, s: &str) -> Option<usize> {
        let from = (s.as_ptr() as usize).checked_sub(self.src.as_ptr() as usize)?;
        (from + s.len() <= self.src.len()).then_some(self.base + from)
    }

    /// The input offset just after the last event read: right after a `Start` or `End` token, the end
    /// of its tag.
    pub(crate) fn position(&self) -> Option<usize> {
        Some(self.base + self.scan.pos)
    }

    /// The namespace bindings (prefix, URI) in scope on the current element's parent, innermost last.
    pub(crate) fn outer_scope(&self) -> &[(&'a str, &'a str)] {
        &self.ns[..self.marks.last().copied().unwrap_or(0)]
    }

    pub(crate) fn depth(&self) -> usize {
        self.depth
    }

    fn push_text(&mut self, s: Cow<'a, str>) {
        match &mut self.text {
            None => self.text = Some(s),
            Some(t) => t.to_mut().push_str(&s),
        }
    }

    #[inline(always)]
    fn lookup(&self, prefix: &str) -> Option<&'a str> {
        if prefix == "xml" {
            return Some(XML_NS);
        }
        if self.ns.len() <= FEW {
            for &(p, u) in self.ns.iter().rev() {
                if p == prefix {
                    return Some(u);
                }
            }
        } else if let Some(u) = self.indexed(prefix) {
            return Some(u);
        }
        if prefix.is_empty() {
            Some("")
        } else {
            None
        }
    }

    /// [`Tokenizer::lookup`] through the index (many declarations in scope).
    #[cold]
    fn indexed(&self, prefix: &str) -> Option<&'a str> {
        let k = self.index.get(prefix.as_bytes())?;
        self.ns.get(k).map(|&(_, u)| u)
    }

    /// A child element that holds only plain text, `<name>text</name>` (an ASCII name without a
    /// prefix, no attributes; text without references, `>` or carriage returns), read whole as the
    /// start, text and end tokens would give it: (namespace URI, local name, text). `None`, with
    /// nothing read, for anything else (the tokens then say what it is).
    pub(crate) fn leaf(&mut self) -> Option<(&'a str, &'a str, &'a str)> {
        if self.text.is_some()
            || self.scan.pending_end
            || self.depth == 0
            || self.depth >= MAX_DEPTH
        {
            return None;
        }
        let b = self.src.as_bytes();
        // The start tag: still to read, or read by the scanner and held while the text before it
        // was handed out (white space between elements).
        let (from, j) = match self.held {
            None => {
                let from = self.scan.pos + 1;
                if b.get(from - 1) != Some(&b'<') {
                    return None;
                }
                // Every byte up to `j` continues a name: only the first is left to check.
                if !b.get(from).is_some_and(|&c| starts_name(c)) {
                    return None;
                }
                (from, ncname_end(b, from))
            }
            Some(Ev::Start(content, name_len)) if name_len == content.len() => {
                let from = self.offset(content)? - self.base;
                let j = from + content.len();
                if j + 1 != self.scan.pos || !is_ncname(content) {
                    return None;
                }
                (from, j)
            }
            Some(_) => return None,
        };
        if b.get(j) != Some(&b'>') {
            return None;
        }
        let name = &b[from..j];
        let t = j + 1;
        let (lt, marks) = text_run(b, t);
        if b.get(lt) != Some(&b'<')
            || b.get(lt + 1) != Some(&b'/')
            || (marks && memchr::memchr2(b'>', b'\r', &b[t..lt]).is_some())
        {
            return None;
        }
        let gt = lt + 2 + name.len();
        if b.get(lt + 2..gt) != Some(name) || b.get(gt) != Some(&b'>') {
            return None;
        }
        let uri = self.lookup("")?;
        let (local, text) = (self.src.get(from..j)?, self.src.get(t..lt)?);
        if self.held.take().is_some() {
            self.scan.open.pop(); // the scanner's record of the held start
        }
        self.scan.pos = gt + 1;
        Some((uri, local, text))
    }

    /// The next token; `None` when the input is not something we can handle exactly.
    pub(crate) fn next_tok(&mut self) -> Option<Tok<'a>> {
        loop {
            let ev = match self.held.take() {
                Some(e) => e,
                None => self.scan.next()?,
            };
            let texty = matches!(ev, Ev::Text(..) | Ev::Ref(_) | Ev::CData(_));
            if !texty {
                if let Some(t) = self.text.take() {
                    self.held = Some(ev);
                    let cdata = std::mem::replace(&mut self.cdata, false);
                    return Some(Tok::Text { text: t, cdata });
                }
            }
            match ev {
                Ev::Text(s, marks) => {
                    if marks && memchr::memchr(b'>', s.as_bytes()).is_some() && s.contains("]]>") {
                        return None;
                    }
                    if self.depth == 0 {
                        if !all_ws(s) {
                            return None;
                        }
                        continue;
                    }
                    self.push_text(if marks {
                        normalize_eol(s)
                    } else {
                        Cow::Borrowed(s)
                    });
                }
                Ev::Ref(r) => {
                    if self.depth == 0 {
                        return None;
                    }
                    let c = resolve_ref(r)?;
                    self.push_text(Cow::Owned(c.to_string()));
                }
                Ev::CData(s) => {
                    if self.depth == 0 {
                        return None;
                    }
                    if s.is_empty() {
                        // libxslt keeps an empty CDATA node (it stops indentation): not reproduced.
                        return None;
                    }
                    self.cdata = true;
                    self.push_text(normalize_eol(s));
                }
                Ev::Comment(s) => {
                    if s.ends_with('-') {
                        return None;
                    }
                    return Some(Tok::Comment(normalize_eol(s)));
                }
                Ev::Start(content, name_len) => {
                    return self.start(content, name_len).map(Tok::Start);
                }
                Ev::End => {
                    if self.depth == 0 {
                        return None;
                    }
                    self.depth -= 1;
                    let m = self.marks.pop()?;
                    if self.ns.len() <= FEW {
                        self.ns.truncate(m);
                    } else {
                        self.unindex(m);
                    }
                    return Some(Tok::End);
                }
                Ev::Eof => {
                    if self.depth != 0 || !self.root_seen {
                        return None;
                    }
                    return Some(Tok::Eof);
                }
            }
        }
    }

    /// With more than [`FEW`] declarations in scope: refuses more than [`MAX_BINDINGS`], and the
    /// index takes in those it does not cover yet.
    #[cold]
    fn index_new(&mut self) -> Option<()> {
        if self.ns.len() > MAX_BINDINGS {
            return None;
        }
        for &(p, _) in &self.ns[self.index.len()..] {
            self.index.push(p);
        }
        Some(())
    }

    /// The declarations past the first `m` go out of scope, and out of the index (all of it once
    /// no more than [`FEW`] are left).
    #[cold]
    fn unindex(&mut self, m: usize) {
        while self.ns.len() > m {
            if let Some((p, _)) = self.ns.pop() {
                self.index.pop(p);
            }
        }
        if self.ns.len() <= FEW {
            self.index.clear();
        }
    }

    fn start(&mut self, content: &'a str, name_len: usize) -> Option<Start<'a>> {
        if self.depth == 0 {
            if self.root_seen {
                return None;
            }
            self.root_seen = true;
        }
        if self.depth >= MAX_DEPTH {
            return None;
        }
        let qname = content.get(..name_len)?;
        let (prefix, local) = split_qname(qname)?;
        if prefix == "xmlns" || prefix == "xml" {
            return None;
        }
        let mut st = Start {
            prefix,
            local,
            ..Start::default()
        };
        let mut raw_attrs: Vec<(&'a str, &'a str)> = Vec::new();
        let mut count = 0;
        scan_attrs(&content[name_len..], |n, v| {
            count += 1;
            if count > MAX_ATTRS {
                return None;
            }
            // Both borrow from `content`: rebase them to the input's lifetime.
            let n = rebase(content, n)?;
            let v = rebase(content, v)?;
            if n == "xmlns" || n.starts_with("xmlns:") {
                let p = n.strip_prefix("xmlns").unwrap_or("");
                let p = p.strip_prefix(':').unwrap_or(p);
                if (n != "xmlns" && !is_ncname(p)) || !ns_decl_ok(p, v) {
                    return None;
                }
                if st.decls.len() < FEW {
                    for &(q, _) in &st.decls {
                        if q == p {
                            return None;
                        }
                    }
                }
                st.decls.push((p, v));
            } else {
                raw_attrs.push((n, v));
            }
            Some(())
        })?;
        if st.decls.len() > FEW && repeated(st.decls.len(), |k| st.decls[k].0) {
            return None;
        }
        if self.depth == 0 && !self.inherited.is_empty() {
            let inherited = std::mem::take(&mut self.inherited);
            if st.decls.len() <= FEW {
                for (p, u) in inherited {
                    if !st.decls.iter().any(|(q, _)| *q == p) {
                        st.decls.push((p, u));
                    }
                }
            } else {
                let own: HashSet<&str> = st.decls.iter().map(|&(q, _)| q).collect();
                st.decls
                    .extend(inherited.into_iter().filter(|(p, _)| !own.contains(p)));
            }
        }
        self.marks.push(self.ns.len());
        self.ns.extend(st.decls.iter().copied());
        if self.ns.len() > FEW {
            self.index_new()?;
        }
        self.depth += 1;
        st.uri = self.lookup(prefix)?;
        let few = raw_attrs.len() <= FEW;
        for (n, v) in raw_attrs {
            let (p, l) = split_qname(n)?;
            let uri = if p.is_empty() { "" } else { self.lookup(p)? };
            if p == "xmlns" {
                return None;
            }
            let value = attr_value(v)?;
            if few {
                for a in &st.attrs {
                    if a.local == l && (a.uri == uri && (!uri.is_empty() || a.prefix == p)) {
                        return None;
                    }
                }
            }
            st.attrs.push(Attr {
                prefix: p,
                local: l,
                uri,
                value,
            });
        }
        // The key the pairwise check compares: the prefix only matters without a namespace.
        let key = |a: &Attr<'a>| (a.local, a.uri, if a.uri.is_empty() { a.prefix } else { "" });
        if !few && repeated(st.attrs.len(), |k| key(&st.attrs[k])) {
            return None;
        }
        Some(st)
    }
}

/// Whether two of `n` items have the same key, found by sorting their indices: for elements with
/// many attributes or declarations, where comparing every pair would be quadratic.
#[cold]
pub(crate) fn repeated<K: Ord>(n: usize, key: impl Fn(usize) -> K) -> bool {
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_unstable_by_key(|&k| key(k));
    order.windows(2).any(|w| key(w[0]) == key(w[1]))
}

/// A namespace declaration we reproduce exactly: libxml2 writes URIs unescaped, so keep to plain ones.
fn ns_decl_ok(prefix: &str, uri: &str) -> bool {
    if prefix == "xml" || prefix == "xmlns" || uri == XML_NS || uri == XMLNS_NS {
        return false;
    }
    if !prefix.is_empty() && uri.is_empty() {
        return false;
    }
    // By bytes (all ASCII): the char-set searcher costs several times more per character.
    !uri.bytes()
        .any(|c| matches!(c, b'&' | b'<' | b'"' | b'\'' | b'\t' | b'\n' | b'\r'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Option<Vec<String>> {
        let mut t = Tokenizer::new(s.as_bytes(), &[])?;
        let mut v = Vec::new();
        loop {
            match t.next_tok()? {
                Tok::Eof => return Some(v),
                Tok::Start(s) => v.push(format!(
                    "<{}|{}|{:?}|{:?}",
                    s.uri,
                    s.local,
                    s.decls,
                    s.attrs
                        .iter()
                        .map(|a| (a.uri, a.local, a.value.to_string()))
                        .collect::<Vec<_>>()
                )),
                Tok::End => v.push("/".into()),
                Tok::Text { text, .. } => v.push(format!("t:{text}")),
                Tok::Comment(c) => v.push(format!("c:{c}")),
            }
        }
    }

    #[test]
    fn tokenizes_and_refuses() {
        let v = toks("<?xml version='1.0' encoding='utf-8'?>\n<a xmlns='u' xmlns:p='v' p:x='1&#10;\r\n2&amp;'>a&lt;<![CDATA[<&]]>\r\nb<!--c--></a>").unwrap();
        assert_eq!(
            v[0],
            "<u|a|[(\"\", \"u\"), (\"p\", \"v\")]|[(\"v\", \"x\", \"1\\n 2&\")]"
        );
        assert_eq!(v[1], "t:a<<&\nb");
        assert_eq!(v[2], "c:c");
        for bad in [
            "<a>",
            "<a></b>",
            "<a/><b/>",
            "x<a/>",
            "<a>&foo;</a>",
            "<a>]]></a>",
            "<a b='1'b='2'/>",
            "<a b='1' b='2'/>",
            "<p:a/>",
            "<a xmlns:p='u' xmlns:q='u' p:x='1' q:x='2'/>",
            "<!DOCTYPE a><a/>",
            "<?pi?><a/>",
            "<a><!-- a - -></a>",
            "<a>\u{1}</a>",
            " <?xml version='1.0'?><a/>",
            "<?xml version='1.1'?><a/>",
            "<a x='<'/>",
            "<a xmlns:p=''/>",
            "<a>&#0;</a>",
        ] {
            assert!(toks(bad).is_none(), "{bad}");
        }
    }

    /// [`Tokenizer::leaf`] reads a plain child whole exactly as its start, text and end tokens say
    /// (namespace, name, text, where reading goes on), and refuses, reading nothing, whatever those
    /// tokens would change (line ends, references, `]]>`) or it does not read.
    #[test]
    fn a_leaf_is_read_as_its_tokens_would_be() {
        fn root(doc: &str) -> Tokenizer<'_> {
            let mut t = Tokenizer::new(doc.as_bytes(), &[]).unwrap();
            assert!(matches!(t.next_tok(), Some(Tok::Start(_))), "{doc}");
            t
        }
        for (doc, want) in [
            ("<r><a>x</a></r>", Some(("", "a", "x"))),
            (
                "<r xmlns='urn:d'><a.b-c_1>x y</a.b-c_1></r>",
                Some(("urn:d", "a.b-c_1", "x y")),
            ),
            ("<r xmlns='urn:d'><s xmlns=''><a>é</a></s></r>", None),
            ("<r><a></a></r>", Some(("", "a", ""))),
            ("<r><a>x\r\ny</a></r>", None),
            ("<r><a>x]]>y</a></r>", None),
            ("<r><a>x&amp;y</a></r>", None),
            ("<r><a>x<b/></a></r>", None),
            ("<r><a/></r>", None),
            ("<r><a >x</a></r>", None),
            ("<r><a b='1'>x</a></r>", None),
            ("<r xmlns:p='urn:p'><p:a>x</p:a></r>", None),
            ("<r><a>x</b></r>", None),
            ("<r><a>x</ab></r>", None),
            ("<r><é>x</é></r>", None),
            ("<r><a>x", None),
        ] {
            let mut quick = root(doc);
            let got = quick.leaf();
            assert_eq!(got, want, "{doc}");
            if got.is_none() {
                assert_eq!(
                    quick.position(),
                    root(doc).position(),
                    "read nothing: {doc}"
                );
                continue;
            }
            let (uri, local, text) = got.unwrap();
            let mut slow = root(doc);
            match slow.next_tok() {
                Some(Tok::Start(s)) => assert_eq!((s.uri, s.local), (uri, local), "{doc}"),
                t => panic!("{doc}: {t:?}"),
            }
            if !text.is_empty() {
                match slow.next_tok() {
                    Some(Tok::Text { text: t, .. }) => assert_eq!(t, text, "{doc}"),
                    t => panic!("{doc}: {t:?}"),
                }
            }
            assert!(matches!(slow.next_tok(), Some(Tok::End)), "{doc}");
            assert_eq!(quick.position(), slow.position(), "{doc}");
            assert_eq!(quick.depth(), slow.depth(), "{doc}");
        }
        // After white space: the start tag the scanner read and held while the text was handed out.
        for (doc, want) in [
            ("<r>\n <a>x</a></r>", Some(("", "a", "x"))),
            ("<r xmlns='urn:d'> <a></a></r>", Some(("urn:d", "a", ""))),
            ("<r> <a b='1'>x</a></r>", None),
            ("<r> <a/></r>", None),
            ("<r> <p:a xmlns:p='urn:p'>x</p:a></r>", None),
            ("<r xmlns:p='urn:p'> <p:a>x</p:a></r>", None),
            ("<r> <a>x\ry</a></r>", None),
            ("<r> <a>x</b></r>", None),
            ("<r> <a><b/></a></r>", None),
        ] {
            let [mut quick, mut slow] = [root(doc), root(doc)];
            for t in [&mut quick, &mut slow] {
                assert!(matches!(t.next_tok(), Some(Tok::Text { .. })), "{doc}");
            }
            let got = quick.leaf();
            assert_eq!(got, want, "{doc}");
            // What follows reads the same either way.
            let rest = |t: &mut Tokenizer<'_>| {
                let mut v = Vec::new();
                while let Some(tok) = t.next_tok() {
                    let eof = matches!(tok, Tok::Eof);
                    v.push(format!("{tok:?}"));
                    if eof {
                        break;
                    }
                }
                v
            };
            let mut tail = rest(&mut slow);
            if got.is_some() {
                // The leaf's start, text and end tokens.
                tail.drain(
                    ..if want.is_some_and(|w| w.2.is_empty()) {
                        2
                    } else {
                        3
                    },
                );
            }
            assert_eq!(rest(&mut quick), tail, "{doc}");
        }
        // Inside a nested element, the default namespace in scope there.
        let mut t =
            Tokenizer::new(b"<r xmlns='urn:d'><s xmlns='urn:e'><a>x</a></s></r>", &[]).unwrap();
        assert!(matches!(t.next_tok(), Some(Tok::Start(_))));
        assert!(matches!(t.next_tok(), Some(Tok::Start(_))));
        assert_eq!(t.leaf(), Some(("urn:e", "a", "x")));
    }

    /// A name may not start with a digit, `-` or `.`, whether the tokens or `leaf()` read it.
    #[test]
    fn names_start_as_ncnames_do() {
        for bad in ["1b", "-b", ".b", "b:1c"] {
            for doc in [
                format!("<a><{bad}>x</{bad}></a>"),
                format!("<a>\n<{bad}>x</{bad}></a>"),
                format!("<a><{bad}/></a>"),
            ] {
                assert!(toks(&doc).is_none(), "{doc}");
                let mut t = Tokenizer::new(doc.as_bytes(), &[]).unwrap();
                let mut refused = false;
                for _ in 0..8 {
                    if t.depth() > 0 && t.leaf().is_some() {
                        continue;
                    }
                    match t.next_tok() {
                        None => {
                            refused = true;
                            break;
                        }
                        Some(Tok::Eof) => break,
                        Some(_) => {}
                    }
                }
                assert!(refused, "{doc}");
            }
        }
        assert!(toks("<a><_b>x</_b><b.1-c/></a>").is_some());
    }

    /// Elements with many attributes and namespace declarations (issue 30): tokenized in time
    /// linear in them as libxml2 reads them, and refused past Sluice's limits (where libxml2
    /// refuses the document) or on a repeat, wherever it is.
    #[test]
    fn many_attributes_and_declarations() {
        let attrs = |n: usize| -> String { (0..n).map(|k| format!(" a{k}='{k}'")).collect() };
        let libxml2 = |doc: &str| sluice_xml::Document::parse(doc.as_bytes()).ok();
        for n in [3, 17, 200, 999, 1000, 1001, 5000, 1_000_000] {
            for doc in [
                format!("<r{}><x/></r>", attrs(n)),
                format!("<r><x{}/></r>", attrs(n)),
            ] {
                let lib = libxml2(&doc);
                assert_eq!(lib.is_some(), n <= 1000, "libxml2, {n}");
                let got = toks(&doc);
                assert_eq!(got.is_some(), n <= 1000, "{n}");
                if let (Some(lib), Some(got)) = (lib, got) {
                    let with = |e: sluice_xml::Node<'_>| e.attributes().count();
                    let root = lib.root_element().unwrap();
                    let most = with(root).max(root.child_elements().map(with).max().unwrap_or(0));
                    assert_eq!(most, n);
                    let last = format!("(\"\", \"a{}\", \"{}\")", n - 1, n - 1);
                    assert!(got.iter().any(|t| t.contains(&last)), "{n}");
                }
            }
            if n <= 5000 {
                // A repeat, last.
                assert!(toks(&format!("<r{} a0='x'/>", attrs(n))).is_none(), "{n}");
                let decls: String = (0..n).map(|k| format!(" xmlns:p{k}='u{k}'")).collect();
                assert!(toks(&format!("<r{decls} xmlns:p0='v'/>")).is_none(), "{n}");
                // The same expanded name through two prefixes, last.
                let doc = format!("<r xmlns:p='u' xmlns:q='u'{} p:z='1' q:z='2'/>", attrs(n));
                assert!(toks(&doc).is_none(), "{n}");
            }
        }
        // Many declarations in scope, the outermost used by every element and attribute; an
        // inner one hiding it for a while.
        let decls = |tag: &str, n: usize| -> String {
            (0..n)
                .map(|k| format!(" xmlns:{tag}{k}='urn:{tag}{k}'"))
                .collect()
        };
        let kids: String = (0..200).map(|k| format!("<p0:e p0:k='{k}'/>")).collect();
        for (doc, within) in [
            (
                format!(
                    "<r xmlns:p0='urn:m'{}>{kids}<s xmlns:p0='urn:n'><p0:e/></s>{kids}</r>",
                    decls("q", 990)
                ),
                true,
            ),
            (
                format!(
                    "<r xmlns:p0='urn:m'{}><s{}>{kids}</s></r>",
                    decls("q", 500),
                    decls("t", 490)
                ),
                true,
            ),
            (
                format!(
                    "<r xmlns:p0='urn:m'{}><s{}>{kids}</s></r>",
                    decls("q", 600),
                    decls("t", 600)
                ),
                false,
            ),
        ] {
            assert_eq!(libxml2(&doc).is_some(), within);
            let Some(got) = toks(&doc) else {
                assert!(!within, "refused");
                continue;
            };
            assert!(within);
            let elements: Vec<&String> = got.iter().filter(|t| t.starts_with("<urn:")).collect();
            assert!(elements.len() >= 200);
            for t in &elements {
                let inner = t.contains("<urn:n|");
                let uri = if inner { "urn:n" } else { "urn:m" };
                assert!(t.starts_with(&format!("<{uri}|e|")), "{t}");
                if !inner {
                    assert!(t.contains("(\"urn:m\", \"k\""), "{t}");
                }
            }
        }
    }

    /// Text is scanned byte by byte up to [`SHORT_TEXT`] bytes and by memchr after: carriage returns
    /// and `]]>` are found on either side of that boundary and across it.
    #[test]
    fn line_ends_and_cdata_ends_around_the_short_text_boundary() {
        for at in [
            0,
            1,
            SHORT_TEXT - 2,
            SHORT_TEXT - 1,
            SHORT_TEXT,
            SHORT_TEXT + 5,
        ] {
            let pad = "x".repeat(at);
            let v = toks(&format!("<a>{pad}\r\ny\rz</a>")).unwrap();
            assert_eq!(v[1], format!("t:{pad}\ny\nz"), "CR at {at}");
            assert!(toks(&format!("<a>{pad}]]>y</a>")).is_none(), "]]> at {at}");
            let v = toks(&format!("<a>{pad}]]y&gt;</a>")).unwrap();
            assert_eq!(v[1], format!("t:{pad}]]y>"), "no ]]> at {at}");
        }
    }
}
