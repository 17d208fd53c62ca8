//! Running a compiled sheet over input events, building the result as libxslt would (its namespace
//! fix-up rules included) and serialising it as libxml2 does.

use crate::input::{Start, Tok, Tokenizer, XML_NS};
use crate::sheet::{Compiled, Instr, Lre, Path, Template};
use std::borrow::Cow;

/// A result element whose start tag may not be written yet (attributes and declarations can still be
/// added until its first child).
#[derive(Debug, Default)]
pub(crate) struct Frame<'a> {
    /// (prefix, "" for none; URI) of the element name, `None` for no namespace.
    ns: Option<(&'a str, &'a str)>,
    local: &'a str,
    /// Declarations on the result element, in order (prefix "" for the default, URI "" to undeclare).
    nsdefs: Vec<(&'a str, &'a str)>,
    /// (prefix or "", local, value).
    attrs: Vec<(&'a str, &'a str, Cow<'a, str>)>,
    written: bool,
}

impl Frame<'_> {
    fn qname(&self, out: &mut Vec<u8>) {
        if let Some((p, _)) = self.ns {
            if !p.is_empty() {
                out.extend_from_slice(p.as_bytes());
                out.push(b':');
            }
        }
        out.extend_from_slice(self.local.as_bytes());
    }
}

// ---------------------------------------------------------------------------------------------------
// Serialising (libxml2's xmlsave rules as xsltSaveResultTo drives them)

#[derive(Debug, Clone, Copy)]
enum Op {
    Start {
        from: usize,
        to: usize,
        has_text: bool,
    },
    End {
        from: usize,
        to: usize,
    },
    Text {
        from: usize,
        to: usize,
    },
    Comment {
        from: usize,
        to: usize,
    },
}

pub(crate) struct Ser<'o> {
    out: &'o mut Vec<u8>,
    /// Where our output starts in `out` (an empty result tree serialises to nothing at all).
    base: usize,
    /// `indent="yes"`: record, then format once the whole result is known.
    fmt: bool,
    /// `indent` not "no": newline after a top-level comment that is followed by more, and at the end.
    nl: bool,
    fragment: bool,
    /// No `encoding` in `xsl:output`: libxml2 writes non-ASCII in attribute values as references.
    attr_refs: bool,
    buf: Vec<u8>,
    ops: Vec<Op>,
    open: Vec<usize>,
    depth: usize,
    tops: usize,
    last_top_comment: bool,
}

fn esc_text(s: &str, out: &mut Vec<u8>) {
    let b = s.as_bytes();
    // The usual text has nothing to escape: one check without branches (it vectorises), one copy.
    let plain = b.iter().fold(true, |ok, &c| {
        ok & (c != b'<') & (c != b'>') & (c != b'&') & (c != b'\r')
    });
    if plain {
        out.extend_from_slice(b);
        return;
    }
    escape(b, out, |c| match c {
        b'<' => Some(b"&lt;"),
        b'>' => Some(b"&gt;"),
        b'&' => Some(b"&amp;"),
        b'\r' => Some(b"&#13;"),
        _ => None,
    });
}

fn esc_attr(s: &str, out: &mut Vec<u8>, refs: bool) {
    if refs && !s.is_ascii() {
        for ch in s.chars() {
            if ch.is_ascii() {
                let mut tmp = [0u8; 4];
                esc_attr(ch.encode_utf8(&mut tmp), out, false);
            } else {
                out.extend_from_slice(format!("&#x{:X};", ch as u32).as_bytes());
            }
        }
        return;
    }
    escape(s.as_bytes(), out, |c| match c {
        b'<' => Some(b"&lt;"),
        b'>' => Some(b"&gt;"),
        b'&' => Some(b"&amp;"),
        b'"' => Some(b"&quot;"),
        b'\r' => Some(b"&#13;"),
        b'\n' => Some(b"&#10;"),
        b'\t' => Some(b"&#9;"),
        _ => None,
    });
}

/// `b` into `out`, each byte `rep` names replaced by its reference.
#[inline]
fn escape(b: &[u8], out: &mut Vec<u8>, rep: impl Fn(u8) -> Option<&'static [u8]>) {
    let mut last = 0;
    for (i, &c) in b.iter().enumerate() {
        if let Some(r) = rep(c) {
            out.extend_from_slice(&b[last..i]);
            out.extend_from_slice(r);
            last = i + 1;
        }
    }
    out.extend_from_slice(&b[last..]);
}

const INDENT: &[u8] = b"                                                            ";

fn indent(out: &mut Vec<u8>, level: usize) {
    out.extend_from_slice(&INDENT[..2 * level.min(30)]);
}

impl<'o> Ser<'o> {
    fn new(out: &'o mut Vec<u8>, c: &Compiled, fragment: bool) -> Ser<'o> {
        let base = out.len();
        let o = &c.output;
        if !fragment && !o.omit_decl {
            out.extend_from_slice(b"<?xml version=\"1.0\"");
            if let Some(e) = &o.encoding {
                out.extend_from_slice(b" encoding=\"");
                out.extend_from_slice(e.as_bytes());
                out.push(b'"');
            }
            out.extend_from_slice(b"?>\n");
        }
        Ser {
            out,
            base,
            fmt: !fragment && o.indent == Some(true),
            nl: !fragment && o.indent != Some(false),
            fragment,
            attr_refs: o.encoding.is_none(),
            buf: Vec::new(),
            ops: Vec::new(),
            open: Vec::new(),
            depth: 0,
            tops: 0,
            last_top_comment: false,
        }
    }

    fn w(&mut self) -> &mut Vec<u8> {
        if self.fmt {
            &mut self.buf
        } else {
            &mut *self.out
        }
    }

    fn top(&mut self, comment: bool) {
        if self.depth == 0 {
            if !self.fmt && self.nl && self.last_top_comment {
                self.out.push(b'\n');
            }
            self.tops += 1;
            self.last_top_comment = comment;
        }
    }

    fn start(&mut self, f: &Frame<'_>, empty: bool) {
        self.top(false);
        let refs = self.attr_refs;
        let w = self.w();
        let from = w.len();
        w.push(b'<');
        f.qname(w);
        for (p, u) in &f.nsdefs {
            if p.is_empty() {
                w.extend_from_slice(b" xmlns=\"");
            } else {
                w.extend_from_slice(b" xmlns:");
                w.extend_from_slice(p.as_bytes());
                w.extend_from_slice(b"=\"");
            }
            w.extend_from_slice(u.as_bytes());
            w.push(b'"');
        }
        for (p, l, v) in &f.attrs {
            w.push(b' ');
            if !p.is_empty() {
                w.extend_from_slice(p.as_bytes());
                w.push(b':');
            }
            w.extend_from_slice(l.as_bytes());
            w.extend_from_slice(b"=\"");
            esc_attr(v, w, refs);
            w.push(b'"');
        }
        if self.fmt {
            let to = self.buf.len();
            self.ops.push(Op::Start {
                from,
                to,
                has_text: false,
            });
            if empty {
                self.ops.push(Op::End { from: to, to });
            } else {
                self.open.push(self.ops.len() - 1);
                self.depth += 1;
            }
        } else if empty {
            self.out.extend_from_slice(b"/>");
        } else {
            self.out.push(b'>');
            self.depth += 1;
        }
    }

    fn end(&mut self, f: &Frame<'_>) {
        self.depth -= 1;
        if self.fmt {
            let from = self.buf.len();
            f.qname(&mut self.buf);
            let to = self.buf.len();
            self.ops.push(Op::End { from, to });
            self.open.pop();
        } else {
            self.out.extend_from_slice(b"</");
            f.qname(self.out);
            self.out.push(b'>');
        }
    }

    fn text(&mut self, s: &str) {
        self.top(false);
        if self.fmt {
            if let Some(&i) = self.open.last() {
                if let Op::Start { has_text, .. } = &mut self.ops[i] {
                    *has_text = true;
                }
            }
            let from = self.buf.len();
            esc_text(s, &mut self.buf);
            let to = self.buf.len();
            self.ops.push(Op::Text { from, to });
        } else {
            esc_text(s, self.out);
        }
    }

    /// An element in no namespace, without declarations or attributes, holding `text` (or empty),
    /// below the top level and not indenting: what [`Ser::start`], [`Ser::text`] and [`Ser::end`]
    /// would write for it.
    fn leaf(&mut self, local: &str, text: &str) {
        let out = &mut *self.out;
        out.push(b'<');
        out.extend_from_slice(local.as_bytes());
        if text.is_empty() {
            out.extend_from_slice(b"/>");
            return;
        }
        out.push(b'>');
        esc_text(text, out);
        out.extend_from_slice(b"</");
        out.extend_from_slice(local.as_bytes());
        out.push(b'>');
    }

    fn comment(&mut self, s: &str) {
        self.top(true);
        let w = self.w();
        let from = w.len();
        w.extend_from_slice(b"<!--");
        w.extend_from_slice(s.as_bytes());
        w.extend_from_slice(b"-->");
        if self.fmt {
            let to = self.buf.len();
            self.ops.push(Op::Comment { from, to });
        }
    }

    fn finish(self) {
        if self.tops == 0 {
            self.out.truncate(self.base);
            return;
        }
        if self.fmt {
            format(&self.ops, &self.buf, self.out);
        }
        if self.nl && !self.fragment {
            self.out.push(b'\n');
        }
    }
}

/// libxml2's indenting serialiser (format = 1): an element whose children include text is written
/// as is, with everything below it.
fn format(ops: &[Op], buf: &[u8], out: &mut Vec<u8>) {
    let mut level = 0usize;
    let mut on = true;
    let mut stack: Vec<bool> = Vec::new();
    let mut depth = 0usize;
    let mut prev_comment = false;
    let mut i = 0;
    while i < ops.len() {
        let d;
        match ops[i] {
            Op::Start { from, to, has_text } => {
                begin(out, depth, on.then_some(level), &mut prev_comment, false);
                out.extend_from_slice(&buf[from..to]);
                if matches!(ops.get(i + 1), Some(Op::End { .. })) {
                    out.extend_from_slice(b"/>");
                    i += 1;
                    d = depth;
                } else {
                    let off = on && has_text;
                    if off {
                        on = false;
                    }
                    out.push(b'>');
                    if on {
                        out.push(b'\n');
                    }
                    level += 1;
                    depth += 1;
                    stack.push(off);
                    i += 1;
                    continue;
                }
            }
            Op::Text { from, to } => {
                begin(out, depth, None, &mut prev_comment, false);
                out.extend_from_slice(&buf[from..to]);
                d = depth;
            }
            Op::Comment { from, to } => {
                begin(out, depth, on.then_some(level), &mut prev_comment, true);
                out.extend_from_slice(&buf[from..to]);
                d = depth;
            }
            Op::End { from, to } => {
                level -= 1;
                depth -= 1;
                if on {
                    indent(out, level);
                }
                out.extend_from_slice(b"</");
                out.extend_from_slice(&buf[from..to]);
                out.push(b'>');
                if stack.pop() == Some(true) {
                    on = true;
                }
                d = depth;
            }
        }
        if d > 0 && on {
            out.push(b'\n');
        }
        i += 1;
    }
}

/// Where [`format`] starts a node (a `comment` or not): at the top level, a line break after a
/// comment before it; below, the indentation of `indent_to` (`None` where it writes the node as is).
fn begin(
    out: &mut Vec<u8>,
    depth: usize,
    indent_to: Option<usize>,
    prev_comment: &mut bool,
    comment: bool,
) {
    if depth == 0 {
        if std::mem::replace(prev_comment, comment) {
            out.push(b'\n');
        }
    } else if let Some(level) = indent_to {
        indent(out, level);
    }
}

// ---------------------------------------------------------------------------------------------------
// The result tree's namespace bookkeeping (libxslt's xsltGetSpecialNamespace and friends)

struct Run<'a, 'o> {
    c: &'a Compiled,
    ser: Ser<'o>,
    frames: Vec<Frame<'a>>,
    first_top_element: bool,
}

/// Something we do not reproduce exactly: the caller falls back to libxslt.
pub(crate) struct Unsure;

type R = Result<(), Unsure>;

impl<'a> Run<'a, '_> {
    /// libxml2's xmlSearchNs from result element `orig` upwards.
    fn search(&self, orig: usize, prefix: &str) -> Option<&'a str> {
        if prefix == "xml" {
            return Some(XML_NS);
        }
        for i in (0..=orig).rev() {
            let f = &self.frames[i];
            for &(p, u) in &f.nsdefs {
                if p == prefix {
                    return Some(u);
                }
            }
            if i != orig {
                if let Some((p, u)) = f.ns {
                    if p == prefix {
                        return Some(u);
                    }
                }
            }
        }
        None
    }

    /// xmlNewNs: nothing when the prefix is already declared on the element.
    fn new_ns(&mut self, idx: usize, prefix: &'a str, uri: &'a str) {
        if prefix == "xml" {
            return;
        }
        let f = &mut self.frames[idx];
        if !f.nsdefs.iter().any(|(p, _)| *p == prefix) {
            f.nsdefs.push((prefix, uri));
        }
    }

    /// xsltGetSpecialNamespace for a namespace URI (not empty): the prefix to use on element `idx`.
    fn special_ns(&mut self, idx: usize, uri: &'a str, prefix: &'a str) -> Result<&'a str, Unsure> {
        if prefix == "xml" {
            return Ok("xml");
        }
        for (p, u) in &self.frames[idx].nsdefs {
            if *p == prefix {
                return if *u == uri { Ok(prefix) } else { Err(Unsure) };
            }
        }
        if idx > 0 {
            if let Some((pp, pu)) = self.frames[idx - 1].ns {
                if pp == prefix && pu == uri {
                    return Ok(prefix);
                }
            }
            if let Some(u) = self.search(idx - 1, prefix) {
                if u == uri {
                    return Ok(prefix);
                }
                if self.frames[idx].attrs.iter().any(|(p, _, _)| *p == prefix) {
                    return Err(Unsure);
                }
            }
        }
        self.new_ns(idx, prefix, uri);
        Ok(prefix)
    }

    /// xsltGetSpecialNamespace with no namespace: undeclare the default namespace when needed.
    fn undeclare_default(&mut self, idx: usize) -> R {
        for (p, u) in &self.frames[idx].nsdefs {
            if p.is_empty() {
                return if u.is_empty() { Ok(()) } else { Err(Unsure) };
            }
        }
        if idx > 0 {
            if self.frames[idx - 1].ns.is_none() {
                return Ok(());
            }
            match self.search(idx - 1, "") {
                None | Some("") => {}
                Some(_) => self.new_ns(idx, "", ""),
            }
        }
        Ok(())
    }

    /// Writes the start tag of the innermost open element before it gets a child.
    fn open_child(&mut self) {
        if let Some(f) = self.frames.last_mut() {
            if !f.written {
                f.written = true;
                let f = self.frames.last().expect("just seen");
                self.ser.start(f, false);
            }
        }
    }

    fn push(&mut self, local: &'a str) -> usize {
        self.open_child();
        self.frames.push(Frame {
            local,
            ..Frame::default()
        });
        self.frames.len() - 1
    }

    /// Sets the element's namespace (or undeclares the default one) as libxslt does after copying
    /// the element's own declarations.
    fn set_name_ns(&mut self, idx: usize, prefix: &'a str, uri: &'a str) -> R {
        if !uri.is_empty() {
            let p = self.special_ns(idx, uri, prefix)?;
            self.frames[idx].ns = Some((p, uri));
        } else if idx > 0 && self.frames[idx - 1].ns.is_some() {
            self.undeclare_default(idx)?;
        }
        if idx == 0 && std::mem::replace(&mut self.first_top_element, false) {
            let f = &self.frames[idx];
            if !self.c.output.method_xml && f.ns.is_none() && f.local.eq_ignore_ascii_case("html") {
                return Err(Unsure); // libxslt switches to the HTML output method
            }
        }
        Ok(())
    }

    /// `xsl:copy` of an input element, then `xsl:copy` of each of its attributes.
    fn copy_start(&mut self, s: &Start<'a>) -> R {
        let idx = self.push(s.local);
        for &(p, u) in &s.decls {
            if self.search(idx, p) == Some(u) {
                continue;
            }
            self.new_ns(idx, p, u);
        }
        self.set_name_ns(idx, s.prefix, s.uri)?;
        for a in &s.attrs {
            let p = if a.uri.is_empty() {
                ""
            } else {
                self.special_ns(idx, a.uri, a.prefix)?
            };
            self.frames[idx].attrs.push((p, a.local, a.value.clone()));
        }
        Ok(())
    }

    fn lre_start(&mut self, l: &'a Lre, t: &'a Template) -> R {
        let idx = self.push(&l.local);
        for (p, u) in &l.decls {
            if self.search(idx, p) == Some(u.as_str()) {
                continue;
            }
            self.new_ns(idx, p, u);
        }
        self.set_name_ns(idx, &l.prefix, &l.uri)?;
        if l.top {
            for (p, u) in &t.inherited {
                if self.search(idx, p) != Some(u.as_str()) {
                    self.new_ns(idx, p, u);
                }
            }
            if let Some((p, u)) = self.frames[idx].ns {
                let p = self.special_ns(idx, u, p)?;
                self.frames[idx].ns = Some((p, u));
            }
        }
        for (n, v) in &l.attrs {
            self.frames[idx]
                .attrs
                .push(("", n.as_str(), Cow::Borrowed(v.as_str())));
        }
        Ok(())
    }

    /// A literal result element libxslt would build with no namespace work and nothing but text in
    /// it ([`Lre::plain`]), inside a result element in no namespace (so no default to undo), and not
    /// indenting (the serialiser records then).
    #[inline]
    fn plain_leaf(&self, l: &Lre) -> bool {
        l.plain && !self.ser.fmt && self.frames.last().is_some_and(|f| f.ns.is_none())
    }

    /// A [`Run::plain_leaf`] element, written straight out: nothing for the namespace fix-up to do.
    #[inline(never)]
    fn write_leaf(&mut self, l: &Lre, a: &[ANode<'_>], ctx: usize) {
        let value = match l.body.as_slice() {
            [Instr::ValueOf(p)] => first_value(a, ctx, p).unwrap_or(Cow::Borrowed("")),
            [Instr::Text(s)] => Cow::Borrowed(s.as_str()),
            _ => Cow::Borrowed(""),
        };
        self.open_child();
        self.ser.leaf(&l.local, &value);
    }

    fn end_elem(&mut self) -> R {
        let f = self.frames.pop().ok_or(Unsure)?;
        if f.written {
            self.ser.end(&f);
        } else {
            self.ser.start(&f, true);
        }
        Ok(())
    }

    fn text(&mut self, s: &str) {
        if s.is_empty() {
            return;
        }
        self.open_child();
        self.ser.text(s);
    }

    fn comment(&mut self, s: &str) {
        self.open_child();
        self.ser.comment(s);
    }

    fn exec(&mut self, body: &'a [Instr], t: &'a Template, a: &[ANode<'_>], ctx: usize) -> R {
        for i in body {
            match i {
                Instr::Text(s) => self.text(s),
                Instr::ValueOf(p) => {
                    if let Some(s) = first_value(a, ctx, p) {
                        self.text(&s);
                    }
                }
                Instr::ForEach(p, b) => {
                    let mut nodes = Vec::new();
                    select(a, ctx, p, &mut |n| {
                        nodes.push(n);
                        true
                    });
                    for n in nodes {
                        self.exec(b, t, a, n)?;
                    }
                }
                Instr::Lre(l) if self.plain_leaf(l) => self.write_leaf(l, a, ctx),
                Instr::Lre(l) => {
                    self.lre_start(l, t)?;
                    self.exec(&l.body, t, a, ctx)?;
                    self.end_elem()?;
                }
            }
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------------
// A matched element's subtree, for the template body to read

#[derive(Debug)]
pub(crate) enum AKind<'a> {
    El { uri: &'a str, local: &'a str },
    Text(Cow<'a, str>),
}

/// A node in document order; `end` is one past its last descendant.
#[derive(Debug)]
pub(crate) struct ANode<'a> {
    kind: AKind<'a>,
    end: usize,
}

fn collect<'a>(tok: &mut Tokenizer<'a>, s: &Start<'a>) -> Option<Vec<ANode<'a>>> {
    let mut nodes = vec![ANode {
        kind: AKind::El {
            uri: s.uri,
            local: s.local,
        },
        end: 0,
    }];
    let mut stack = vec![0usize];
    while let Some(&top) = stack.last() {
        // The usual child, `<name>text</name>`, read whole.
        if let Some((uri, local, text)) = tok.leaf() {
            let at = nodes.len();
            nodes.push(ANode {
                kind: AKind::El { uri, local },
                end: at + 1 + usize::from(!text.is_empty()),
            });
            if !text.is_empty() {
                nodes.push(ANode {
                    kind: AKind::Text(Cow::Borrowed(text)),
                    end: at + 2,
                });
            }
            continue;
        }
        match tok.next_tok()? {
            Tok::Start(c) => {
                stack.push(nodes.len());
                nodes.push(ANode {
                    kind: AKind::El {
                        uri: c.uri,
                        local: c.local,
                    },
                    end: 0,
                });
            }
            Tok::End => {
                nodes[top].end = nodes.len();
                stack.pop();
            }
            Tok::Text { text, .. } => {
                let end = nodes.len() + 1;
                nodes.push(ANode {
                    kind: AKind::Text(text),
                    end,
                });
            }
            Tok::Comment(_) => {}
            Tok::Eof => return None,
        }
    }
    Some(nodes)
}

/// Calls `f` with each selected node in document order until it returns false.
fn select(a: &[ANode<'_>], ctx: usize, p: &Path, f: &mut dyn FnMut(usize) -> bool) {
    match p {
        Path::Dot => {
            f(ctx);
        }
        Path::Steps(steps) => {
            select_steps(a, ctx, steps, f);
        }
    }
}

fn select_steps(
    a: &[ANode<'_>],
    ctx: usize,
    steps: &[crate::sheet::Name],
    f: &mut dyn FnMut(usize) -> bool,
) -> bool {
    let Some((step, rest)) = steps.split_first() else {
        return f(ctx);
    };
    if !matches!(a[ctx].kind, AKind::El { .. }) {
        return true;
    }
    let mut j = ctx + 1;
    while j < a[ctx].end {
        if let AKind::El { uri, local } = a[j].kind {
            if same(local, &step.local) && same(uri, &step.uri) && !select_steps(a, j, rest, f) {
                return false;
            }
        }
        j = a[j].end;
    }
    true
}

/// `a == b` for names and namespace URIs, compared in line (they are short, or differ in length).
#[inline]
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).all(|(x, y)| x == y)
}

/// What `xsl:value-of` gives: the string value of the first node `p` selects from `ctx`, if any.
fn first_value<'x>(a: &'x [ANode<'_>], ctx: usize, p: &Path) -> Option<Cow<'x, str>> {
    let mut first = None;
    select(a, ctx, p, &mut |n| {
        first = Some(n);
        false
    });
    first.map(|n| string_value(a, n))
}

fn string_value<'x>(a: &'x [ANode<'_>], n: usize) -> Cow<'x, str> {
    match &a[n].kind {
        AKind::Text(t) => Cow::Borrowed(t),
        AKind::El { .. } => {
            let inner = &a[n + 1..a[n].end];
            // The usual element holds one text node (or none): its value is borrowed.
            match inner {
                [] => return Cow::Borrowed(""),
                [ANode {
                    kind: AKind::Text(t),
                    ..
                }] => return Cow::Borrowed(t),
                _ => {}
            }
            let mut s = String::new();
            for node in inner {
                if let AKind::Text(t) = &node.kind {
                    s.push_str(t);
                }
            }
            Cow::Owned(s)
        }
    }
}

// ---------------------------------------------------------------------------------------------------

/// Transforms `input`; `None` when anything is outside what we reproduce exactly.
pub(crate) fn run<'a>(
    c: &'a Compiled,
    input: &'a [u8],
    inherited: &[(&'a str, &'a str)],
    fragment: bool,
    out: &mut Vec<u8>,
) -> Option<()> {
    all_or_nothing(out, |out| {
        let mut tok = Tokenizer::new(input, inherited)?;
        transform(c, &mut tok, None, fragment, out)
    })
}

/// The xslt mediator's default source in one pass: the message is copied as it is up to the SOAP
/// Body's first element child, that element is transformed (as [`run`] does with `fragment` and the
/// bindings in scope there), and the rest is copied after it.
pub(crate) fn run_body_child<'a>(
    c: &'a Compiled,
    input: &'a [u8],
    out: &mut Vec<u8>,
) -> Option<()> {
    all_or_nothing(out, |out| {
        let mut tok = Tokenizer::new(input, &[])?;
        let (start, first, _) = crate::soap::seek_body_child(&mut tok)?;
        out.extend_from_slice(input.get(..start)?);
        transform(c, &mut tok, Some(first), true, out)?;
        let end = tok.position()?;
        crate::soap::finish(&mut tok)?;
        out.extend_from_slice(input.get(end..)?);
        Some(())
    })
}

/// What `write` answers; when that is `None`, what it wrote to `out` is taken back.
fn all_or_nothing(out: &mut Vec<u8>, write: impl FnOnce(&mut Vec<u8>) -> Option<()>) -> Option<()> {
    let base = out.len();
    let r = write(out);
    if r.is_none() {
        out.truncate(base);
    }
    r
}

/// The result of the templates applied from `first` on (as [`walk`] reads), written to `out`:
/// `None` when it ends with elements left open.
fn transform<'a>(
    c: &'a Compiled,
    tok: &mut Tokenizer<'a>,
    first: Option<Start<'a>>,
    fragment: bool,
    out: &mut Vec<u8>,
) -> Option<()> {
    let mut r = Run {
        c,
        ser: Ser::new(out, c, fragment),
        frames: Vec::new(),
        first_top_element: true,
    };
    walk(&mut r, tok, first)?;
    if !r.frames.is_empty() {
        return None;
    }
    r.ser.finish();
    Some(())
}

/// Applies the templates to the input's tokens: the whole input (`first` = `None`), or the element
/// whose start `first` is, up to its end.
fn walk<'a>(r: &mut Run<'a, '_>, tok: &mut Tokenizer<'a>, first: Option<Start<'a>>) -> Option<()> {
    let c = r.c;
    let whole = first.is_none();
    let mut next = first.map(Tok::Start);
    // For each open input element: whether it made a result element (identity) or not (built-in).
    let mut copied: Vec<bool> = Vec::new();
    loop {
        let t = match next.take() {
            Some(t) => t,
            None => tok.next_tok()?,
        };
        match t {
            Tok::Start(s) => {
                if let Some(t) = c
                    .templates
                    .iter()
                    .find(|t| t.name.local == s.local && t.name.uri == s.uri)
                {
                    let a = collect(tok, &s)?;
                    r.exec(&t.body, t, &a, 0).ok()?;
                } else if c.identity {
                    r.copy_start(&s).ok()?;
                    copied.push(true);
                } else {
                    copied.push(false);
                }
            }
            Tok::End => {
                if copied.pop()? {
                    r.end_elem().ok()?;
                }
            }
            Tok::Text { text, .. } => r.text(&text),
            Tok::Comment(s) => {
                if c.identity {
                    r.comment(&s);
                }
            }
            Tok::Eof if whole => return Some(()),
            Tok::Eof => return None,
        }
        if !whole && copied.is_empty() {
            return Some(());
        }
    }
}
