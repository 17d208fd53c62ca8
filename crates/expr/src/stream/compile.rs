//! The streaming subset and its compilation ([`StreamPath::compile`]).
//!
//! An expression is split into tokens, then parsed into a [`Path`] and a [`Form`]. The path is
//! child steps, with an optional leading `//`. A step is a name test (`QName` or `*`) with up to
//! eight predicates: `[n]`, `[child='x']` and `[@a='x']`. A position must come before any
//! `[child='x']`: the siblings it counts must be known when an element starts. The last step may be
//! `text()` or `@a`. The form says what is done with the node-set: the nodes themselves, a
//! comparison with a literal, `boolean`, `not`, `count` (alone or compared with a number), `string`
//! or `normalize-space`.
//!
//! A prefix resolves through the namespaces in scope at the mediator. An unprefixed name means no
//! namespace, as in XPath 1.0. Anything else is refused, and libxml2 evaluates it.
//!
//! `/soapenv:Envelope/soapenv:Header|Body` paths are marked ([`Step::soap_once`]): each of the two
//! occurs once, the `Header` first.

use super::needle::NameFinder;
use super::scan::short_eq;
use super::StreamPath;

const MAX_STEPS: usize = 32;

const MAX_PREDS: usize = 8;

pub(super) const SOAP11_ENV: &str = "http://schemas.xmlsoap.org/soap/envelope/";

pub(super) const SOAP12_ENV: &str = "http://www.w3.org/2003/05/soap-envelope";

/// An element or attribute name test.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum NameTest {
    Any,
    Name { ns: Option<String>, local: String },
}

impl NameTest {
    pub(super) fn matches(&self, ns: Option<&str>, local: &str) -> bool {
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
    pub(super) fn ns_matches(&self, ns: Option<&str>) -> bool {
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
pub(super) enum Pred {
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
pub(super) enum SoapPart {
    Header,
    Body,
}

#[derive(Debug)]
pub(super) struct Step {
    pub(super) test: NameTest,
    pub(super) preds: Vec<Pred>,
    /// Index of this step's first positional counter in a frame's `counters`.
    pub(super) slot: usize,
    /// Set on step 1 of `/Envelope/Header|Body` paths: at most one match (see the `stream` module
    /// doc).
    pub(super) soap_once: Option<SoapPart>,
}

#[derive(Debug, PartialEq, Eq)]
pub(super) enum Tail {
    Element,
    Text,
    Attr(NameTest),
}

#[derive(Debug)]
pub(super) struct Path {
    pub(super) descendant: bool,
    pub(super) steps: Vec<Step>,
    pub(super) tail: Tail,
    pub(super) slots: usize,
    /// Some step has a `[child='x']` predicate: only then do matches carry conditions
    /// ([`Frame::conds`](super::run::Frame::conds)).
    pub(super) conds: bool,
}

impl Path {
    /// Adds to `out` the local names at whose start or end tags a reading of this path on a
    /// message's start may be decided (see [`crate::HeadNames`]): each step's and child
    /// predicate's, and a SOAP envelope's `Header` and `Body` (which decide `/Envelope/Header|Body`
    /// paths when they start). False when a step or child predicate tests any name.
    pub(super) fn decisive_names(&self, out: &mut Vec<String>) -> bool {
        out.extend(["Header".to_owned(), "Body".to_owned()]);
        for step in &self.steps {
            let tests =
                std::iter::once(&step.test).chain(step.preds.iter().filter_map(|p| match p {
                    Pred::Child { test, .. } => Some(test),
                    _ => None,
                }));
            for test in tests {
                match test {
                    NameTest::Any => return false,
                    NameTest::Name { local, .. } => out.push(local.clone()),
                }
            }
        }
        true
    }

    /// The steps (bit i for step i) whose name test an element with local name `local` passes, in
    /// some namespace. Every bit (never inert) when there are more than 63 steps.
    #[inline]
    pub(super) fn step_mask(&self, local: &[u8]) -> u64 {
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

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl Cmp {
    /// Whether `a` and `b`, in the order `ord` says, satisfy the comparison.
    pub(crate) fn of(self, ord: std::cmp::Ordering) -> bool {
        match self {
            Cmp::Eq => ord.is_eq(),
            Cmp::Ne => ord.is_ne(),
            Cmp::Lt => ord.is_lt(),
            Cmp::Le => ord.is_le(),
            Cmp::Gt => ord.is_gt(),
            Cmp::Ge => ord.is_ge(),
        }
    }

    pub(super) fn holds(self, a: f64, b: f64) -> bool {
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
pub(super) enum Form {
    Nodes,
    Boolean { negate: bool },
    Compare { value: String, ne: bool },
    Count(Option<(Cmp, f64)>),
    StringOf,
    NormalizeSpace,
}

/// [`StreamPath::id`]s, one per compilation.
static NEXT_PATH_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

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
    pub(super) at: usize,
    pub(super) ns: &'a [(String, String)],
}

impl Parser<'_> {
    pub(super) fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.at)
    }
    fn peek2(&self) -> Option<&Tok> {
        self.toks.get(self.at + 1)
    }
    pub(super) fn next(&mut self) -> Option<Tok> {
        let t = self.toks.get(self.at).cloned();
        self.at += 1;
        t
    }
    fn eat(&mut self, t: &Tok) -> Option<()> {
        (self.next()? == *t).then_some(())
    }
    pub(super) fn done(&self) -> bool {
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

    pub(super) fn path(&mut self) -> Option<Path> {
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
}
