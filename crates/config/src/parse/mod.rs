//! Synapse XML (one file's text) to the model. Problems become diagnostics; parsing goes on after them so one
//! run reports everything.

use crate::diag::{Diagnostics, Location, Severity};
use crate::model::*;
use roxmltree::{Document, Node, ParsingOptions};
use std::sync::Arc;

mod artifacts;
mod endpoints;
mod guard;
pub(crate) mod mediators;
#[cfg(test)]
pub(crate) mod tests;

/// What a file is expected to hold (from a Carbon Application's artifact.xml), or anything.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expect {
    Any,
    Proxy,
    Endpoint,
    Sequence,
    LocalEntry,
    Api,
    Template,
    MessageStore,
    MessageProcessor,
}

pub(crate) struct FileParser<'a, 'input> {
    file: Arc<str>,
    doc: &'a Document<'input>,
    text: &'input str,
    diags: &'a mut Diagnostics,
    artifact: Option<String>,
    /// Set when the current artifact had an error or unsupported feature.
    failed: bool,
    /// For an endpoint template's `<endpoint>` read with values put in: how positions in `text`
    /// map back to the template's file.
    origin: Option<Origin>,
}

/// Where the text of an instantiated endpoint template came from: the template's `<endpoint>`
/// behind a wrapper start tag, with values put in.
struct Origin {
    /// The wrapper start tag's length.
    skip: usize,
    /// Each value put in: its start and length in the template's text, and its length here.
    edits: Vec<(usize, usize, usize)>,
    /// The template's text and where it starts in its file.
    source: Arc<str>,
    loc: Location,
}

impl Origin {
    /// The file position of byte `offset` of the instantiated text (the start of the `$param` for
    /// a place inside a value put in).
    fn at(&self, offset: usize) -> Location {
        let mut o = offset.saturating_sub(self.skip);
        let mut src = None;
        let mut shift = 0isize;
        for &(start, len, put) in &self.edits {
            let here = start.saturating_add_signed(shift);
            if o < here {
                break;
            }
            if o < here + put {
                src = Some(start);
                break;
            }
            shift += put as isize - len as isize;
        }
        o = src.unwrap_or_else(|| o.saturating_add_signed(-shift));
        let before = &self.source[..o.min(self.source.len())];
        let lines = before.matches('\n').count();
        let col = before.rsplit('\n').next().unwrap_or("").chars().count();
        Location {
            file: self.loc.file.clone(),
            line: self.loc.line + u32::try_from(lines).unwrap_or(u32::MAX),
            col: if lines == 0 {
                self.loc.col + u32::try_from(col).unwrap_or(0)
            } else {
                u32::try_from(col + 1).unwrap_or(u32::MAX)
            },
        }
    }
}

/// Parses one file's text into `cfg`, adding diagnostics.
pub fn parse_text(
    file: Arc<str>,
    text: &str,
    expect: Expect,
    cfg: &mut Config,
    diags: &mut Diagnostics,
) {
    let Some(doc) = read_document(&file, text, diags) else {
        return;
    };
    let mut p = FileParser {
        file,
        doc: &doc,
        text,
        diags,
        artifact: None,
        failed: false,
        origin: None,
    };
    let root = doc.root_element();
    p.top_level(root, expect, cfg);
}

/// The local entry `text` makes under `key`, as if written inline: an XML document is its root
/// element (a Synapse `<sequence>` or `<endpoint>` read as one, named by the key), anything else
/// text. Used for registry resources and a local entry's `src` file.
pub fn entry_of_text(file: Arc<str>, key: &str, text: &str, diags: &mut Diagnostics) -> LocalEntry {
    let text_entry = || LocalEntry {
        key: key.to_owned(),
        loc: Location::file_only(&file),
        value: LocalEntryValue::Text(text.trim().to_owned()),
        artifact: None,
    };
    // Not XML (JSON schemas, scripts, text): no diagnostics, it is text.
    if roxmltree::Document::parse(text).is_err() {
        return text_entry();
    }
    let Some(doc) = read_document(&file, text, diags) else {
        return text_entry();
    };
    let mut p = FileParser {
        file: file.clone(),
        doc: &doc,
        text,
        diags,
        artifact: Some(format!("resource {key}")),
        failed: false,
        origin: None,
    };
    let root = doc.root_element();
    let artifact = p.entry_artifact(root, key);
    LocalEntry {
        key: key.to_owned(),
        loc: p.loc(root),
        value: LocalEntryValue::Xml {
            root: root.tag_name().name().to_owned(),
            text: p.serialize_element(root),
        },
        artifact,
    }
}

/// A registry resource that holds a Synapse `<sequence>` or `<endpoint>` is one, named by its key
/// (as a local entry holding one is): `<sequence key="conf:/sequences/s.xml"/>` runs it. Other
/// resources (stylesheets, schemas, text) stay resources only.
pub fn registry_artifact(
    file: Arc<str>,
    key: &str,
    text: &str,
    cfg: &mut Config,
    diags: &mut Diagnostics,
) {
    let holds_one = roxmltree::Document::parse(text).is_ok_and(|d| {
        let r = d.root_element();
        r.tag_name().namespace() == Some(SYNAPSE_NS)
            && matches!(r.tag_name().name(), "sequence" | "endpoint")
    });
    if holds_one {
        cfg.local_entries
            .push(entry_of_text(file, key, text, diags));
    }
}

/// The endpoint an `<endpoint template="..">` stands for: `t`'s `<endpoint>` with each declared
/// parameter that `args` gives a value put in where it stands as a whole value, then read as any
/// endpoint is. Mistakes are reported at their place in the template's file. `None` when the result
/// is not a valid endpoint (reported).
pub fn instantiate_endpoint(
    t: &EndpointTemplate,
    args: &[(String, String)],
    user: &str,
    diags: &mut Diagnostics,
) -> Option<Endpoint> {
    let mut wrapper = String::from("<sluice-endpoint-template");
    for (prefix, uri) in &t.namespaces {
        if prefix == "xml" {
            continue;
        }
        wrapper.push_str(&xmlns_attr(
            Some(prefix.as_str()).filter(|p| !p.is_empty()),
            uri,
        ));
    }
    wrapper.push('>');
    let mut text = wrapper.clone();
    let mut at = 0;
    let mut edits = Vec::new();
    for (range, param, in_attr) in &t.slots {
        // The last value given wins (a `<parameter name="uri">` over the `uri` attribute).
        let Some((_, value)) = args.iter().rev().find(|(n, _)| n == param) else {
            continue;
        };
        text.push_str(&t.source[at..range.start]);
        let put = escape_xml(value, *in_attr);
        edits.push((range.start, range.len(), put.len()));
        text.push_str(&put);
        at = range.end;
    }
    text.push_str(&t.source[at..]);
    text.push_str("</sluice-endpoint-template>");
    let file = t.source_loc.file.clone();
    let doc = match read_xml(&text) {
        Ok(d) => d,
        Err(e) => {
            diags.push(
                Severity::Error,
                t.loc.clone(),
                "template",
                format!(
                    "endpoint template '{}' with these parameters cannot be read: {e}",
                    t.name
                ),
                None,
            );
            return None;
        }
    };
    let mut p = FileParser {
        file,
        doc: &doc,
        text: &text,
        diags,
        artifact: Some(format!("endpoint template {} for {user}", t.name)),
        failed: false,
        origin: Some(Origin {
            skip: wrapper.len(),
            edits,
            source: t.source.clone(),
            loc: t.source_loc.clone(),
        }),
    };
    let n = elements(doc.root_element()).next()?;
    let e = p.endpoint(n)?;
    (!p.failed).then_some(e)
}

/// Why a text is not read as a document: roxmltree's error, or the guard's refusal.
pub(crate) struct ReadError {
    pub row: u32,
    pub col: u32,
    message: String,
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// `text` as an XML document, DTDs refused, after [`guard::check`].
fn read_xml(text: &str) -> Result<Document<'_>, ReadError> {
    if let Err(r) = guard::check(text) {
        let before = &text[..r.at];
        let row = before.bytes().filter(|&c| c == b'\n').count() + 1;
        let col = before.len() - before.rfind('\n').map_or(0, |n| n + 1) + 1;
        return Err(ReadError {
            row: u32::try_from(row).unwrap_or(u32::MAX),
            col: u32::try_from(col).unwrap_or(u32::MAX),
            message: format!("XML refused before reading: {}", r.message),
        });
    }
    let opts = ParsingOptions {
        allow_dtd: false,
        ..ParsingOptions::default()
    };
    Document::parse_with_options(text, opts).map_err(|e| ReadError {
        row: e.pos().row,
        col: e.pos().col,
        message: format!("malformed XML: {e}"),
    })
}

/// `text` (of `file`) as an XML document; `None` when it is not well-formed, reported at the place.
pub(crate) fn read_document<'t>(
    file: &Arc<str>,
    text: &'t str,
    diags: &mut Diagnostics,
) -> Option<Document<'t>> {
    match read_xml(text) {
        Ok(d) => Some(d),
        Err(e) => {
            diags.push(
                Severity::Error,
                Location {
                    file: file.clone(),
                    line: e.row,
                    col: e.col,
                },
                "",
                e.to_string(),
                None,
            );
            None
        }
    }
}

/// The prefixes the start tag at the beginning of `src` (well-formed XML) declares, "" for the
/// default namespace: its `xmlns` and `xmlns:p` attributes, read outside quoted values.
fn declared_in_start_tag(src: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut quote = None;
    let mut name_start = None;
    for (i, c) in src.char_indices().skip(1) {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None => match c {
                '"' | '\'' => quote = Some(c),
                '>' => break,
                c if c.is_whitespace() || c == '=' => {
                    if let Some(st) = name_start.take() {
                        let name = &src[st..i];
                        if name == "xmlns" {
                            out.push("");
                        } else if let Some(p) = name.strip_prefix("xmlns:") {
                            out.push(p);
                        }
                    }
                }
                '/' => {}
                _ if name_start.is_none() && src[..i].ends_with(|p: char| p.is_whitespace()) => {
                    name_start = Some(i);
                }
                _ => {}
            },
        }
    }
    out
}

/// A namespace declaration as written in a start tag, with its leading space: ` xmlns:p="uri"`, or
/// ` xmlns="uri"` for the default namespace.
fn xmlns_attr(prefix: Option<&str>, uri: &str) -> String {
    let uri = escape_xml(uri, true);
    match prefix {
        Some(p) => format!(" xmlns:{p}=\"{uri}\""),
        None => format!(" xmlns=\"{uri}\""),
    }
}

/// `s` with the characters XML markup gives meaning to escaped, for an attribute value (quoted with
/// `"`) or for text.
fn escape_xml(s: &str, attr: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' if !attr => out.push_str("&gt;"),
            '"' if attr => out.push_str("&quot;"),
            '\'' if attr => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

fn is_synapse(n: Node) -> bool {
    n.tag_name().namespace() == Some(SYNAPSE_NS)
}

fn elements<'a, 'i>(n: Node<'a, 'i>) -> impl Iterator<Item = Node<'a, 'i>> {
    n.children().filter(|c| c.is_element())
}

fn child<'a, 'i>(n: Node<'a, 'i>, name: &str) -> Option<Node<'a, 'i>> {
    elements(n).find(|c| c.tag_name().name() == name)
}

fn text_of(n: Node) -> String {
    n.text().map(|t| t.trim().to_owned()).unwrap_or_default()
}

/// The namespaces in scope at `n`, as (prefix, URI) with "" for the default namespace.
fn in_scope_namespaces(n: Node) -> Vec<(String, String)> {
    n.namespaces()
        .map(|ns| (ns.name().unwrap_or("").to_owned(), ns.uri().to_owned()))
        .collect()
}

/// A boolean attribute read as Synapse reads it (Java's `Boolean.parseBoolean`, or its mirror when
/// `default` is true): only the other word, in any case, turns the default over.
fn loose_bool(n: Node, attr: &str, default: bool) -> bool {
    let other = if default { "false" } else { "true" };
    match n.attribute(attr) {
        Some(v) if v.eq_ignore_ascii_case(other) => !default,
        _ => default,
    }
}

impl<'a, 'input> FileParser<'a, 'input> {
    /// The file position of byte `offset` of the text.
    fn at(&self, offset: usize) -> Location {
        if let Some(o) = &self.origin {
            return o.at(offset);
        }
        let pos = self.doc.text_pos_at(offset);
        Location {
            file: self.file.clone(),
            line: pos.row,
            col: pos.col,
        }
    }

    fn loc(&self, n: Node) -> Location {
        self.at(n.range().start)
    }

    fn attr_loc(&self, n: Node, name: &str) -> Location {
        match n.attribute_node(name) {
            Some(a) => self.at(a.range().start),
            None => self.loc(n),
        }
    }

    fn report(&mut self, sev: Severity, n: Node, msg: impl Into<String>) {
        if sev >= Severity::Unsupported {
            self.failed = true;
        }
        let loc = self.loc(n);
        let artifact = self.artifact.clone();
        self.diags
            .push(sev, loc, n.tag_name().name(), msg, artifact.as_deref());
    }

    /// `v`; when there is none, the error `missing` is reported at `n`.
    fn needed<T>(&mut self, v: Option<T>, n: Node, missing: &str) -> Option<T> {
        if v.is_none() {
            self.report(Severity::Error, n, missing);
        }
        v
    }

    fn required_attr(&mut self, n: Node, name: &str) -> Option<String> {
        match n.attribute(name) {
            Some(v) if !v.trim().is_empty() => Some(v.to_owned()),
            _ => {
                self.report(
                    Severity::Error,
                    n,
                    format!("missing required attribute '{name}'"),
                );
                None
            }
        }
    }

    fn namespaces(&self, n: Node) -> Namespaces {
        Arc::new(in_scope_namespaces(n))
    }

    /// An expression written in attribute `attr` of `n`, with the namespaces in scope there.
    fn expr(&self, n: Node, attr: &str, text: &str) -> ExprSrc {
        ExprSrc {
            text: text.to_owned(),
            ns: self.namespaces(n),
            loc: self.attr_loc(n, attr),
        }
    }

    /// The expression in attribute `attr`, if there is one.
    fn expr_attr(&self, n: Node, attr: &str) -> Option<ExprSrc> {
        n.attribute(attr).map(|text| self.expr(n, attr, text))
    }

    /// The expression in attribute `attr`, which must be there (reported when it is not).
    fn required_expr(&mut self, n: Node, attr: &str) -> Option<ExprSrc> {
        let text = self.required_attr(n, attr)?;
        Some(self.expr(n, attr, &text))
    }

    /// A reference to a named sequence in attribute `attr`, if there is one.
    fn sequence_key(&self, n: Node, attr: &str) -> Option<SequenceRef> {
        n.attribute(attr).map(|key| SequenceRef::Key {
            key: key.to_owned(),
            loc: self.attr_loc(n, attr),
        })
    }

    /// `value="..."` or `expression="..."` (exactly one of them).
    fn value_or_expr(&mut self, n: Node) -> Option<ValueSrc> {
        match (n.attribute("value"), n.attribute("expression")) {
            (Some(v), None) => Some(ValueSrc::Literal(v.to_owned())),
            (None, Some(e)) => Some(ValueSrc::Expr(self.expr(n, "expression", e))),
            (Some(_), Some(_)) => {
                self.report(
                    Severity::Error,
                    n,
                    "give either 'value' or 'expression', not both",
                );
                None
            }
            (None, None) => None,
        }
    }

    /// A `<property name="..." value|expression="..."/>` child (log properties, stylesheet parameters).
    fn named_value(&mut self, c: Node, what: &str) -> Option<(String, ValueSrc)> {
        let name = self.required_attr(c, "name")?;
        match self.value_or_expr(c) {
            Some(v) => Some((name, v)),
            None => {
                self.report(
                    Severity::Error,
                    c,
                    format!("{what} needs 'value' or 'expression'"),
                );
                None
            }
        }
    }

    fn check_synapse_ns(&mut self, n: Node) -> bool {
        if is_synapse(n) {
            return true;
        }
        let ns = n.tag_name().namespace().unwrap_or("no namespace");
        self.report(
            Severity::Error,
            n,
            format!("element is in namespace '{ns}'; Synapse configuration elements must be in '{SYNAPSE_NS}'"),
        );
        false
    }

    /// An element its parent, a `<parent>`, does not hold. Synapse's factories read the children
    /// they know by name and pass over the rest, so it is ignored, with a warning; a
    /// `<description>` silently (Synapse keeps it as the description). A child Synapse or MI acts
    /// on but Sluice does not is reported where it is read, as unsupported.
    fn unknown_child(&mut self, c: Node, parent: &str) {
        let name = c.tag_name().name();
        if name == "description" {
            return;
        }
        let msg = format!("unknown element <{name}> in <{parent}>: ignored, as Synapse ignores it");
        self.report(Severity::Warning, c, msg);
    }

    /// `value` as one of `options` (word, meaning). Anything else is reported as an error, "`what` must
    /// be a, b or c, not 'value'", and gives `None`.
    fn one_of<T: Copy>(
        &mut self,
        n: Node,
        what: &str,
        value: &str,
        options: &[(&str, T)],
    ) -> Option<T> {
        if let Some(&(_, meaning)) = options.iter().find(|(word, _)| *word == value) {
            return Some(meaning);
        }
        let words: Vec<&str> = options.iter().map(|(word, _)| *word).collect();
        let list = match words.split_last() {
            Some((last, [])) => (*last).to_owned(),
            Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
            None => String::new(),
        };
        self.report(
            Severity::Error,
            n,
            format!("{what} must be {list}, not '{value}'"),
        );
        None
    }

    /// Attribute `attr` (`default` when it is absent) as one of `options`, as [`Self::one_of`].
    fn attr_one_of<T: Copy>(
        &mut self,
        n: Node,
        attr: &str,
        default: &str,
        what: &str,
        options: &[(&str, T)],
    ) -> Option<T> {
        let value = n.attribute(attr).unwrap_or(default);
        self.one_of(n, what, value, options)
    }

    /// Attribute `attr` as exactly "true" or "false" (`default` when it is absent); anything else is
    /// reported and gives `None`.
    fn true_or_false(&mut self, n: Node, attr: &str, default: bool) -> Option<bool> {
        let default = if default { "true" } else { "false" };
        self.attr_one_of(n, attr, default, attr, &[("true", true), ("false", false)])
    }

    /// The source text of an element, with every namespace it inherits declared on its start tag, so the
    /// text stands alone as a document.
    fn serialize_element(&self, n: Node) -> String {
        let range = n.range();
        let src = &self.text[range.clone()];
        // Like Synapse (Axiom), carry over only the inherited namespaces the subtree uses: by an element
        // or attribute name, or by a prefix inside an attribute value (XPath in XSLT, expressions).
        // Declaring the others would leak them into XSLT output (literal result elements copy them).
        let mut used_uris: Vec<&str> = Vec::new();
        let mut attr_text = String::new();
        for d in n.descendants().filter(|d| d.is_element()) {
            if let Some(u) = d.tag_name().namespace() {
                used_uris.push(u);
            }
            for a in d.attributes() {
                if let Some(u) = a.namespace() {
                    used_uris.push(u);
                }
                attr_text.push_str(a.value());
                attr_text.push(' ');
            }
        }
        let used = |prefix: Option<&str>, uri: &str| {
            used_uris.contains(&uri) || prefix.is_some_and(|p| attr_text.contains(&format!("{p}:")))
        };
        let parent_ns: Vec<(Option<&str>, &str)> = n
            .parent_element()
            .map(|p| p.namespaces().map(|ns| (ns.name(), ns.uri())).collect())
            .unwrap_or_default();
        let own = declared_in_start_tag(src);
        let mut decls = String::new();
        for ns in n.namespaces() {
            let inherited = parent_ns
                .iter()
                .any(|(p, u)| *p == ns.name() && *u == ns.uri());
            // An element may declare again what its parent declares: it is in its text already.
            if !inherited
                || ns.name() == Some("xml")
                || !used(ns.name(), ns.uri())
                || own.contains(&ns.name().unwrap_or(""))
            {
                continue;
            }
            decls.push_str(&xmlns_attr(ns.name(), ns.uri()));
        }
        if decls.is_empty() {
            return src.to_owned();
        }
        // Insert after `<qname`.
        let name_end = src[1..]
            .find(|c: char| c.is_whitespace() || c == '>' || c == '/')
            .map(|i| i + 1)
            .unwrap_or(src.len());
        format!("{}{}{}", &src[..name_end], decls, &src[name_end..])
    }
}
