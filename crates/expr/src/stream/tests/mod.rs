//! Tests of the streaming reader: each kind of reading against libxml2 (through `Expr`), and the
//! helpers and document generators they share.
//!
//! - `answers`: the subset, answers on envelopes, early stops, fall backs, differential and mutation
//!   tests;
//! - `memo`: readings from a memo of a shared beginning, and when memos are made;
//! - `scan`: the byte, word, text and attribute scanners;
//! - `bulk`: inert spans, sibling patterns and siblings read by name;
//! - `limits`: many attributes and namespace declarations.

use super::bulk::*;
use super::compile::*;
use super::fast::*;
use super::memo::*;
use super::needle::*;
use super::scan::*;
use super::*;
use crate::testing::Rng;
use crate::{Env, Expr};

const M: &str = "http://services.samples/xsd";
const T: &str = "http://someuri";

fn ns() -> Vec<(String, String)> {
    [
        ("soapenv", SOAP11_ENV),
        ("soap12", SOAP12_ENV),
        ("m", M),
        ("t", T),
        // A default namespace in scope at the mediator: XPath 1.0 ignores it for unprefixed names.
        ("", "urn:ignored-default"),
    ]
    .iter()
    .map(|(p, u)| (p.to_string(), u.to_string()))
    .collect()
}

/// The libxml2 answer through `Expr`, as Sluice computes it today.
use crate::WithDoc as Lib;

/// Raw bytes only: `Expr` must answer by streaming (a fall back to libxml2 fails).
struct Raw<'a>(&'a [u8]);
impl Env for Raw<'_> {
    fn raw_xml(&self) -> Option<&[u8]> {
        Some(self.0)
    }
}

fn parse(xml: &[u8]) -> Option<sluice_xml::Document> {
    sluice_xml::parse_untrusted(xml, &sluice_xml::Limits::default()).ok()
}

fn sp(text: &str) -> StreamPath {
    StreamPath::compile(text, &ns()).unwrap_or_else(|| panic!("{text} should stream"))
}

/// [`sp`] reading siblings by name without AVX2 (`memmem` and a [`Bang`] pass), as on CPUs
/// that lack it.
fn portable(text: &str) -> StreamPath {
    without_avx512(text, false)
}

/// [`sp`] reading siblings by name with AVX2 but not AVX-512, as on CPUs that lack the latter
/// (the same as [`sp`] where this one does).
fn avx2_only(text: &str) -> StreamPath {
    without_avx512(text, true)
}

/// [`sp`] reading siblings by name without AVX-512, and without AVX2 either unless `avx2` (the
/// AVX-512 pass is only taken after the AVX2 one).
#[cfg_attr(not(target_arch = "x86_64"), allow(unused_variables))]
fn without_avx512(text: &str, avx2: bool) -> StreamPath {
    #[allow(unused_mut)]
    let mut s = sp(text);
    #[cfg(target_arch = "x86_64")]
    if let Some(n) = s.needle.as_mut() {
        n.v4 = None;
        if !avx2 {
            n.v3 = None;
        }
    }
    s
}

/// [`sp`] without [`StreamPath::needle_run`]: every sibling is read tag by tag, so a malformed
/// document read to its end is always refused.
fn strict(text: &str) -> StreamPath {
    StreamPath {
        needle: None,
        ..sp(text)
    }
}

const ENVELOPE: &str = r#"<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/">
<soapenv:Header>
    <routing xmlns="http://someuri">xadmin;server1;community#1.0##</routing>
</soapenv:Header>
<soapenv:Body>
    <m:buyStocks xmlns:m="http://services.samples/xsd">
        <order><symbol>IBM</symbol><price>140.34</price></order>
        <order><symbol>MSFT</symbol><price>23.56</price></order>
    </m:buyStocks>
</soapenv:Body>
</soapenv:Envelope>"#;

// Generated documents and expressions, for the differential tests.

const WS: &[&str] = &["", "", "\n", "\n    ", " ", "\r\n  ", "\t"];
/// Element content: escaped text, references, CDATA, comments splitting text nodes.
const VALUES: &[&str] = &[
    "IBM",
    "IBM",
    "MSFT",
    "SUN",
    "A&amp;B",
    "&lt;x&gt;",
    "&#73;BM",
    "<![CDATA[IBM]]>",
    "I<!--c-->BM",
    "  IBM  ",
    "",
    "x\r\ny",
    "<![CDATA[]]>",
    "&#x20;",
    "IB<![CDATA[M]]>",
    "1.5",
    "xadmin;server1",
];
const LITERALS: &[&str] = &[
    "IBM", "MSFT", "SUN", "A&B", "<x>", "  IBM  ", "", "1.5", "x\ny",
];

/// Attributes a generated element has now and then, each with its chance in percent (the last
/// has a `>` and a `/>` inside its value: the tag does not end at the first `>`).
const MORE_ATTRIBUTES: [(u64, &str); 3] = [
    (20, " type='x'"),
    (10, " note=\"a&#10;b\r\nc\td&amp;\""),
    (10, " cmp='a>b/>c'"),
];

fn gen_order(r: &mut Rng, s: &mut String, depth: usize) {
    let prefixed = r.chance(10);
    let name = if prefixed { "m:order" } else { "order" };
    s.push('<');
    s.push_str(name);
    if prefixed {
        s.push_str(&format!(" xmlns:m=\"{M}\""));
    }
    if r.chance(40) {
        s.push_str(&format!(" id=\"{}\"", 1 + r.below(3)));
    }
    for (percent, attr) in MORE_ATTRIBUTES {
        if r.chance(percent) {
            s.push_str(attr);
        }
    }
    if r.chance(10) {
        s.push_str("/>");
        return;
    }
    s.push('>');
    for _ in 0..r.below(5) {
        s.push_str(r.pick(WS));
        match r.below(7) {
            0 | 1 => s.push_str(&format!("<symbol>{}</symbol>", r.pick(VALUES))),
            2 => s.push_str(&format!("<price>{}</price>", r.pick(VALUES))),
            3 => s.push_str("<volume/>"),
            4 if depth < 3 => gen_order(r, s, depth + 1),
            5 => s.push_str("<!-- note -->"),
            _ => s.push_str(r.pick(VALUES)),
        }
    }
    s.push_str(r.pick(WS));
    s.push_str(&format!("</{name}>"));
}

/// The orders of a payload.
fn gen_orders(r: &mut Rng, s: &mut String) {
    for _ in 0..r.below(5) {
        s.push_str(r.pick(WS));
        gen_order(r, s, 0);
    }
}

/// A payload element, `orders` writing its content.
fn gen_payload(r: &mut Rng, s: &mut String, orders: &mut dyn FnMut(&mut Rng, &mut String)) {
    let (open, close) = match r.below(4) {
        0 => (format!("<m:buyStocks xmlns:m=\"{M}\">"), "</m:buyStocks>"),
        1 => (format!("<buyStocks xmlns=\"{M}\">"), "</buyStocks>"),
        2 => ("<buyStocks xmlns=\"\">".to_owned(), "</buyStocks>"),
        _ => ("<buyStocks>".to_owned(), "</buyStocks>"),
    };
    s.push_str(&open);
    orders(r, s);
    s.push_str(r.pick(WS));
    s.push_str(close);
}

fn gen_doc(r: &mut Rng) -> String {
    gen_doc_with(r, &mut gen_orders)
}

/// A document around a payload (when it has one) whose content `orders` writes.
fn gen_doc_with(r: &mut Rng, orders: &mut dyn FnMut(&mut Rng, &mut String)) -> String {
    let mut s = String::new();
    if r.chance(20) {
        s.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    }
    if r.chance(10) {
        s.push_str("<!-- before -->\n");
    }
    let soap = r.below(3);
    if soap == 0 {
        gen_payload(r, &mut s, orders);
    } else {
        let uri = if soap == 1 { SOAP11_ENV } else { SOAP12_ENV };
        let (p, decl) = match r.below(3) {
            0 => ("soapenv:", format!(" xmlns:soapenv=\"{uri}\"")),
            1 => ("s:", format!(" xmlns:s='{uri}'")),
            _ => ("", format!(" xmlns=\"{uri}\"")),
        };
        s.push_str(&format!("<{p}Envelope{decl}>"));
        s.push_str(r.pick(WS));
        if r.chance(70) {
            s.push_str(&format!("<{p}Header>"));
            for _ in 0..r.below(3) {
                s.push_str(r.pick(WS));
                match r.below(4) {
                    0 => s.push_str(&format!(
                        "<routing xmlns=\"{T}\">{}</routing>",
                        r.pick(VALUES)
                    )),
                    1 => s.push_str(&format!(
                        "<t:routing xmlns:t=\"{T}\">{}</t:routing>",
                        r.pick(VALUES)
                    )),
                    2 => s.push_str("<h:id xmlns:h='urn:h'>7</h:id>"),
                    _ => s.push_str("<routing>plain</routing>"),
                }
            }
            s.push_str(r.pick(WS));
            s.push_str(&format!("</{p}Header>"));
            s.push_str(r.pick(WS));
        }
        s.push_str(&format!("<{p}Body>"));
        s.push_str(r.pick(WS));
        if r.chance(90) {
            gen_payload(r, &mut s, orders);
        }
        s.push_str(r.pick(WS));
        s.push_str(&format!("</{p}Body>"));
        s.push_str(r.pick(WS));
        s.push_str(&format!("</{p}Envelope>"));
    }
    if r.chance(10) {
        s.push_str("\n<!-- after -->\n");
    }
    s
}

const LEVELS: &[&[&str]] = &[
    &[
        "soapenv:Envelope",
        "soapenv:Envelope",
        "soap12:Envelope",
        "*",
        "Envelope",
    ],
    &[
        "soapenv:Body",
        "soapenv:Header",
        "soap12:Body",
        "soap12:Header",
        "*",
    ],
    &["m:buyStocks", "buyStocks", "t:routing", "routing", "*"],
    &["order", "order", "m:order", "*"],
    &["symbol", "price", "order", "*"],
    &["symbol", "price", "*"],
    &["symbol", "*"],
];
const PREDS: &[&str] = &[
    "[1]",
    "[2]",
    "[3]",
    "[symbol='IBM']",
    "[symbol='NOPE']",
    "[@id='1']",
    "[@id='2']",
    "[@type='x']",
    "[1][@id='1']",
    "[@id='1'][1]",
    "[price='1.5']",
    "[symbol='IBM'][@id='1']",
    "[*='IBM']",
];

fn gen_path(r: &mut Rng) -> String {
    let mut s = String::new();
    let (start, len) = match r.below(4) {
        0 => (0, 1 + r.below(6)),
        1 => (2, 1 + r.below(4)),
        _ => {
            s.push('/');
            (1 + r.below(5), 1 + r.below(3))
        }
    };
    for level in LEVELS.iter().skip(start).take(len) {
        s.push('/');
        if r.chance(5) {
            s.push_str(r.pick(&["symbol", "order", "*", "routing"]));
        } else {
            s.push_str(r.pick(level));
        }
        if r.chance(30) {
            s.push_str(r.pick(PREDS));
        }
    }
    match r.below(20) {
        0..=2 => s.push_str("/text()"),
        3 => s.push_str("/@id"),
        4 => s.push_str("/@*"),
        _ => {}
    }
    s
}

fn gen_expr(r: &mut Rng) -> String {
    let p = gen_path(r);
    let lit = r.pick(LITERALS);
    match r.below(14) {
        0..=3 => p,
        4 => format!("{p} = '{lit}'"),
        5 => format!("{p} != \"{lit}\""),
        6 => format!("'{lit}' = {p}"),
        7 => format!("boolean({p})"),
        8 => format!("not({p})"),
        9 => format!("count({p})"),
        10 => format!(
            "count({p}) {} {}",
            r.pick(&["=", "!=", "<", "<=", ">", ">="]),
            r.below(4)
        ),
        11 => format!("string({p})"),
        12 => format!("normalize-space({p})"),
        _ => format!("{p}[last()]"),
    }
}

/// Compares the streaming answer with libxml2's through `Expr` (when streaming decides), and the
/// early-stopping answer with the read-everything one. Returns whether streaming decided.
fn check(doc: &[u8], lib: &Lib, text: &str, s: &StreamPath) -> bool {
    let e = Expr::compile(text, &ns()).unwrap_or_else(|err| panic!("{text}: {err}"));
    let mut decided = true;
    // The fast reader and the general one agree whenever both answer.
    for mode in [Mode::String, Mode::Bool] {
        for exhaustive in [false, true] {
            if let (Ok(fast), Some(slow)) = (
                s.run_fast(doc, mode, exhaustive),
                s.run_slow(doc, mode, exhaustive),
            ) {
                assert_eq!(
                    shown(fast),
                    shown(slow),
                    "fast reader: {text}\n{}",
                    show(doc)
                );
            }
        }
    }
    let want = e.eval_string(lib).unwrap();
    match s.eval_string(doc) {
        Some(got) => assert_eq!(got, want, "eval_string {text}\n{}", show(doc)),
        None => decided = false,
    }
    let want = e.eval_bool(lib).unwrap();
    match s.eval_bool(doc) {
        Some(got) => assert_eq!(got, want, "eval_bool {text}\n{}", show(doc)),
        None => decided = false,
    }
    for mode in [Mode::String, Mode::Bool] {
        let full = s.run(doc, mode, true).map(shown);
        let early = s.run(doc, mode, false).map(shown);
        assert_eq!(early, full, "early stop changed {text}\n{}", show(doc));
    }
    decided
}

/// [`check`] of each of `texts` over `doc`, where streaming must decide, and the fast reader must
/// read the whole of `doc`.
fn decide_and_read_through(doc: &[u8], texts: &[&str]) {
    let lib = Lib(parse(doc).unwrap());
    for &text in texts {
        let s = sp(text);
        assert!(check(doc, &lib, text, &s), "{text}");
        assert!(
            s.run_fast(doc, Mode::String, true).is_ok(),
            "the fast reader reads {text} over\n{}",
            show(doc)
        );
    }
}

fn shown(o: Out) -> String {
    match o {
        Out::Str(s) => s,
        Out::Bool(b) => b.to_string(),
    }
}

fn show(doc: &[u8]) -> String {
    String::from_utf8_lossy(doc).into_owned()
}

/// What follows a memo's place in the memo tests (the content of the element whose start tag
/// ends the memo's prefix): short, so that the bytes after stay within [`MEMO_MAX`].
const AFTER_MEMO: &[&str] = &[
    "IBM",
    "MSFT",
    "SUN",
    "",
    " ",
    "\n    ",
    "<![CDATA[ORCL]]>",
    "<![CDATA[<IBM> &amp; ]]>",
    "<![CDATA[]]>",
    "A&amp;B",
    "&#73;&#x42;M",
    "&lt;x&gt;",
    "&quot;&apos;",
    "I<!-- c -->BM",
    "<!-- only a comment -->",
    "IB<![CDATA[M]]>&#33;",
    "x\r\ny",
    "\u{e9}\u{20ac}",
    "1.5",
];

/// What follows a memo's place: one of [`AFTER_MEMO`], or a long text (plain, with
/// references, or multibyte), each time another. A memo of the reader's state reads it every
/// time; a memo of the answer would answer what the reading that made it read.
fn after_memo(r: &mut Rng) -> String {
    let n = 500 + r.below(9000);
    match r.below(AFTER_MEMO.len() + 3) {
        k if k < AFTER_MEMO.len() => AFTER_MEMO[k].to_owned(),
        k if k == AFTER_MEMO.len() => format!("{}{n}", "L".repeat(n)),
        k if k == AFTER_MEMO.len() + 1 => format!("{}{n}", "L&amp;&#76;".repeat(n / 8)),
        _ => format!("{}{n}", "\u{e9}L\u{20ac}".repeat(n / 6)),
    }
}

mod answers;
mod bulk;
mod limits;
mod memo;
mod scan;
