//! Compiling a stylesheet into the streamable subset, or refusing it.

use crate::input::{all_ws, split_qname, Tok, Tokenizer};

pub(crate) const XSLT_NS: &str = "http://www.w3.org/1999/XSL/Transform";

/// A parsed stylesheet element.
struct El {
    uri: String,
    prefix: String,
    local: String,
    decls: Vec<(String, String)>,
    attrs: Vec<(String, String, String)>, // (prefix, local, value)
    kids: Vec<Node>,
}

enum Node {
    El(El),
    Text(String),
}

/// A name: namespace URI ("" for none) and local name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Name {
    pub uri: String,
    pub local: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Path {
    /// `.`
    Dot,
    /// `a/p:b/c`: child steps.
    Steps(Vec<Name>),
}

#[derive(Debug)]
pub(crate) enum Instr {
    Lre(Lre),
    Text(String),
    ValueOf(Path),
    ForEach(Path, Vec<Instr>),
}

#[derive(Debug)]
pub(crate) struct Lre {
    /// Prefix ("" for none) and namespace URI ("" for none) of the element name.
    pub prefix: String,
    pub local: String,
    pub uri: String,
    /// Namespace declarations on the element in the stylesheet, minus the XSLT namespace.
    pub decls: Vec<(String, String)>,
    /// Unprefixed literal attributes.
    pub attrs: Vec<(String, String)>,
    /// Directly in the template body (libxslt adds the template's in-scope namespaces only there).
    pub top: bool,
    pub body: Vec<Instr>,
    /// Not `top`, no prefix, namespace, declarations or attributes, and a body of at most one
    /// `xsl:value-of` or text: inside a result element in no namespace, libxslt's namespace fix-up has
    /// nothing to do for it (see `Run::plain_leaf`).
    pub plain: bool,
}

#[derive(Debug)]
pub(crate) struct Template {
    pub name: Name,
    pub body: Vec<Instr>,
    /// The namespaces in scope on `xsl:template`, minus the XSLT namespace, innermost first.
    pub inherited: Vec<(String, String)>,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct Output {
    /// `indent`: None when not given (libxslt then still ends the output with a newline).
    pub indent: Option<bool>,
    pub omit_decl: bool,
    /// `encoding` as written (only UTF-8 accepted).
    pub encoding: Option<String>,
    /// Whether `method="xml"` was given (otherwise an `html` root element switches libxslt to HTML).
    pub method_xml: bool,
}

#[derive(Debug)]
pub(crate) struct Compiled {
    pub identity: bool,
    pub templates: Vec<Template>,
    pub output: Output,
}

fn parse_tree(bytes: &[u8]) -> Option<El> {
    let mut t = Tokenizer::new(bytes, &[])?;
    let mut stack: Vec<El> = Vec::new();
    loop {
        match t.next_tok()? {
            Tok::Start(s) => {
                let attrs = s
                    .attrs
                    .iter()
                    .map(|a| (a.prefix.to_owned(), a.local.to_owned(), a.value.to_string()))
                    .collect();
                // Resolve attribute prefixes later through decls; keep their URIs implicit.
                stack.push(El {
                    uri: s.uri.to_owned(),
                    prefix: s.prefix.to_owned(),
                    local: s.local.to_owned(),
                    decls: s
                        .decls
                        .iter()
                        .map(|(p, u)| ((*p).to_owned(), (*u).to_owned()))
                        .collect(),
                    attrs,
                    kids: Vec::new(),
                });
            }
            Tok::End => {
                let el = stack.pop()?;
                match stack.last_mut() {
                    Some(p) => p.kids.push(Node::El(el)),
                    None => return Some(el),
                }
            }
            Tok::Text { text, cdata } => {
                if cdata {
                    return None;
                }
                stack.last_mut()?.kids.push(Node::Text(text.into_owned()));
            }
            Tok::Comment(_) => {}
            Tok::Eof => return None,
        }
    }
}

/// In-scope namespaces (prefix, uri) of an element given its ancestors, innermost binding wins.
struct Scope<'s> {
    frames: Vec<&'s [(String, String)]>,
}

impl<'s> Scope<'s> {
    fn lookup(&self, prefix: &str) -> Option<&'s str> {
        if prefix == "xml" {
            return Some(crate::input::XML_NS);
        }
        for f in self.frames.iter().rev() {
            let f: &'s [(String, String)] = f;
            for (p, u) in f {
                if p == prefix {
                    return Some(u.as_str());
                }
            }
        }
        prefix.is_empty().then_some("")
    }

    /// A QName in an XPath expression or pattern: unprefixed names are in no namespace.
    fn xpath_name(&self, q: &str) -> Option<Name> {
        let (p, l) = split_qname(q)?;
        let uri = if p.is_empty() { "" } else { self.lookup(p)? };
        if !p.is_empty() && uri.is_empty() {
            return None;
        }
        Some(Name {
            uri: uri.to_owned(),
            local: l.to_owned(),
        })
    }

    /// libxslt's inherited namespace list for a template: from the innermost element outwards, every
    /// declaration but the XSLT namespace's, skipping prefixes already taken.
    fn inherited(&self) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = Vec::new();
        for f in self.frames.iter().rev() {
            for (p, u) in f.iter() {
                if u == XSLT_NS {
                    continue;
                }
                if !out.iter().any(|(q, _)| q == p) {
                    out.push((p.clone(), u.clone()));
                }
            }
        }
        out
    }
}

fn is_xsl(e: &El, local: &str) -> bool {
    e.uri == XSLT_NS && e.local == local
}

/// The element children, `None` if there is non-white-space text.
fn elements(e: &El) -> Option<Vec<&El>> {
    let mut v = Vec::new();
    for k in &e.kids {
        match k {
            Node::El(c) => v.push(c),
            Node::Text(t) if all_ws(t) => {}
            Node::Text(_) => return None,
        }
    }
    Some(v)
}

fn attr<'e>(e: &'e El, name: &str) -> Option<&'e str> {
    e.attrs
        .iter()
        .find(|(p, l, _)| p.is_empty() && l == name)
        .map(|(_, _, v)| v.as_str())
}

/// Every attribute of `e` is unprefixed and among `allowed`.
fn only_attrs(e: &El, allowed: &[&str]) -> bool {
    e.attrs
        .iter()
        .all(|(p, l, _)| p.is_empty() && allowed.contains(&l.as_str()))
}

fn tokens(s: &str) -> Vec<&str> {
    let mut v = Vec::new();
    for part in s.split('|') {
        v.push(part.trim_matches([' ', '\t', '\n', '\r']));
    }
    v
}

fn is_identity_union(s: &str) -> bool {
    let t = tokens(s);
    t.len() == 2 && ((t[0] == "@*" && t[1] == "node()") || (t[0] == "node()" && t[1] == "@*"))
}

fn is_identity_body(t: &El) -> bool {
    let Some(kids) = elements(t) else {
        return false;
    };
    let [copy] = kids.as_slice() else {
        return false;
    };
    if !is_xsl(copy, "copy") || !copy.attrs.is_empty() {
        return false;
    }
    let Some(kids) = elements(copy) else {
        return false;
    };
    let [apply] = kids.as_slice() else {
        return false;
    };
    is_xsl(apply, "apply-templates")
        && only_attrs(apply, &["select"])
        && attr(apply, "select").is_some_and(is_identity_union)
        && elements(apply).is_some_and(|k| k.is_empty())
}

fn path(scope: &Scope, s: &str) -> Option<Path> {
    let s = s.trim_matches([' ', '\t', '\n', '\r']);
    if s == "." {
        return Some(Path::Dot);
    }
    let mut steps = Vec::new();
    for step in s.split('/') {
        steps.push(scope.xpath_name(step)?);
    }
    Some(Path::Steps(steps))
}

fn body<'s>(e: &'s El, scope: &mut Scope<'s>, top: bool) -> Option<Vec<Instr>> {
    let mut out = Vec::new();
    for k in &e.kids {
        match k {
            Node::Text(t) => {
                if !all_ws(t) {
                    out.push(Instr::Text(t.clone()));
                }
            }
            Node::El(c) => {
                scope.frames.push(&c.decls);
                let r = instr(c, scope, top);
                scope.frames.pop();
                out.push(r?);
            }
        }
    }
    Some(out)
}

/// One instruction; `scope` already includes `c`'s own declarations.
fn instr<'s>(c: &'s El, scope: &mut Scope<'s>, top: bool) -> Option<Instr> {
    if c.uri == XSLT_NS {
        return match c.local.as_str() {
            "value-of" => {
                if !only_attrs(c, &["select", "disable-output-escaping"])
                    || attr(c, "disable-output-escaping").is_some_and(|v| v != "no")
                    || !elements(c)?.is_empty()
                {
                    return None;
                }
                Some(Instr::ValueOf(path(scope, attr(c, "select")?)?))
            }
            "for-each" => {
                if !only_attrs(c, &["select"]) {
                    return None;
                }
                let p = path(scope, attr(c, "select")?)?;
                Some(Instr::ForEach(p, body(c, scope, false)?))
            }
            "text" => {
                if !only_attrs(c, &["disable-output-escaping"])
                    || attr(c, "disable-output-escaping").is_some_and(|v| v != "no")
                {
                    return None;
                }
                let mut s = String::new();
                for k in &c.kids {
                    match k {
                        Node::Text(t) => s.push_str(t),
                        Node::El(_) => return None,
                    }
                }
                Some(Instr::Text(s))
            }
            _ => None,
        };
    }
    // A literal result element.
    if c.prefix == "xml" {
        return None;
    }
    let mut attrs = Vec::new();
    for (p, l, v) in &c.attrs {
        if !p.is_empty() || v.contains(['{', '}']) {
            return None;
        }
        attrs.push((l.clone(), v.clone()));
    }
    let decls: Vec<(String, String)> = c
        .decls
        .iter()
        .filter(|(_, u)| u != XSLT_NS)
        .cloned()
        .collect();
    let body = body(c, scope, false)?;
    let plain = !top
        && c.prefix.is_empty()
        && c.uri.is_empty()
        && decls.is_empty()
        && attrs.is_empty()
        && matches!(body.as_slice(), [] | [Instr::ValueOf(_)] | [Instr::Text(_)]);
    Some(Instr::Lre(Lre {
        prefix: c.prefix.clone(),
        local: c.local.clone(),
        uri: c.uri.clone(),
        decls,
        attrs,
        top,
        body,
        plain,
    }))
}

/// `None` when the stylesheet is outside the subset.
pub(crate) fn compile(bytes: &[u8]) -> Option<Compiled> {
    let root = parse_tree(bytes)?;
    if !(is_xsl(&root, "stylesheet") || is_xsl(&root, "transform")) {
        return None;
    }
    if !only_attrs(&root, &["version"]) || attr(&root, "version").is_none() {
        return None;
    }
    let mut scope = Scope {
        frames: vec![root.decls.as_slice()],
    };
    let mut out = Compiled {
        identity: false,
        templates: Vec::new(),
        output: Output::default(),
    };
    let mut seen_output = false;
    for c in elements(&root)? {
        if c.uri != XSLT_NS {
            return None;
        }
        scope.frames.push(&c.decls);
        match c.local.as_str() {
            "output" => {
                if seen_output || !elements(c)?.is_empty() {
                    return None;
                }
                seen_output = true;
                if !only_attrs(c, &["method", "indent", "omit-xml-declaration", "encoding"]) {
                    return None;
                }
                let o = &mut out.output;
                match attr(c, "method") {
                    None => {}
                    Some("xml") => o.method_xml = true,
                    Some(_) => return None,
                }
                o.indent = match attr(c, "indent") {
                    None => None,
                    Some("yes") => Some(true),
                    Some("no") => Some(false),
                    Some(_) => return None,
                };
                o.omit_decl = match attr(c, "omit-xml-declaration") {
                    None | Some("no") => false,
                    Some("yes") => true,
                    Some(_) => return None,
                };
                match attr(c, "encoding") {
                    None => {}
                    Some(e) if e.eq_ignore_ascii_case("UTF-8") => o.encoding = Some(e.to_owned()),
                    Some(_) => return None,
                }
            }
            "template" => {
                if !only_attrs(c, &["match"]) {
                    return None;
                }
                let m = attr(c, "match")?;
                if is_identity_union(m) {
                    if out.identity || !is_identity_body(c) {
                        return None;
                    }
                    out.identity = true;
                } else {
                    let m = m.trim_matches([' ', '\t', '\n', '\r']);
                    split_qname(m)?;
                    let name = scope.xpath_name(m)?;
                    if out.templates.iter().any(|t| t.name == name) {
                        return None;
                    }
                    let inherited = scope.inherited();
                    let b = body(c, &mut scope, true)?;
                    out.templates.push(Template {
                        name,
                        body: b,
                        inherited,
                    });
                }
            }
            _ => return None,
        }
        scope.frames.pop();
    }
    Some(out)
}
