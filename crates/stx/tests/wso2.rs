//! The WSO2 performance stylesheets (XSLTProxy, XSLTEnhancedProxy) and payloads, against libxslt.

mod common;

use common::{c14n, read, reference, show};
use sluice_stx::StreamSheet;
use sluice_xml::{canonicalize, Document, Stylesheet};

const SYNAPSE: &str = "http://ws.apache.org/ns/synapse";
const SOAPENV: &str = "http://schemas.xmlsoap.org/soap/envelope/";

const FORWARD: &str = "capp/xslt_transform_1.0.0/xslt_transform-1.0.0.xml";
const REVERSE: &str = "capp/xslt_transform_reverse_1.0.0/xslt_transform_reverse-1.0.0.xml";
const FAST_FORWARD: &str = "capp/fastxslt_transform_1.0.0/fastxslt_transform-1.0.0.xml";
const FAST_REVERSE: &str =
    "capp/fastxslt_transform_reverse_1.0.0/fastxslt_transform_reverse-1.0.0.xml";
const SHEETS: [&str; 4] = [FORWARD, REVERSE, FAST_FORWARD, FAST_REVERSE];

const PAYLOADS: [&str; 9] = [
    "500B_buyStocks.xml",
    "1000B_buyStocks.xml",
    "10000B_buyStocks.xml",
    "100000B_buyStocks.xml",
    "5Elements_buyStocks.xml",
    "10Elements_buyStocks.xml",
    "20Elements_buyStocks.xml",
    "50Elements_buyStocks.xml",
    "100Elements_buyStocks.xml",
];

/// The `xsl:stylesheet` element's source text from a local entry file. With `synapse_default`, the
/// Synapse namespace (the local entry's default) is declared on it, as a loader copying every
/// in-scope namespace does; without, as Sluice's loader does (it keeps only namespaces in use).
fn sheet_text(rel: &str, synapse_default: bool) -> Vec<u8> {
    let s = String::from_utf8(read(rel)).unwrap();
    let start = s.find("<xsl:stylesheet").unwrap();
    let close = "</xsl:stylesheet>";
    let end = s.rfind(close).unwrap() + close.len();
    let mut t = s[start..end].to_owned();
    if synapse_default {
        t.insert_str("<xsl:stylesheet".len(), &format!(" xmlns=\"{SYNAPSE}\""));
    }
    t.into_bytes()
}

fn payload(name: &str) -> Vec<u8> {
    read(&format!("requests/current/{name}"))
}

/// `payload` with every `m:buyStocks` turned into the reversed shape the forward sheet expects.
fn reversed(sheet: &StreamSheet, p: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    sheet.transform(p, &mut out).expect("fast path");
    out
}

#[test]
fn wso2_sheets_compile_to_the_fast_path() {
    for rel in SHEETS {
        for def in [true, false] {
            assert!(
                StreamSheet::compile(&sheet_text(rel, def)).is_some(),
                "{rel} (synapse default {def})"
            );
        }
    }
    assert!(StreamSheet::compile(&sheet_text(FAST_FORWARD, true))
        .unwrap()
        .indent());
    assert!(!StreamSheet::compile(&sheet_text(FORWARD, true))
        .unwrap()
        .indent());
}

/// One comparison with libxslt: a sheet (`rel`, with the Synapse default namespace declared on it
/// or not), compiled both ways, and an input.
#[derive(Clone, Copy)]
struct Case<'a> {
    rel: &'a str,
    def: bool,
    name: &'a str,
    fast: &'a StreamSheet,
    slow: &'a Stylesheet,
    input: &'a [u8],
}

/// Every WSO2 sheet, with and without the Synapse default, on every payload in both shapes: the
/// original (the reverse sheet's input) and the reversed one (the forward sheet's input). Answers
/// how many cases `check` was given.
fn for_each_case(mut check: impl FnMut(Case<'_>)) -> usize {
    let reverse = StreamSheet::compile(&sheet_text(REVERSE, true)).unwrap();
    let mut cases = 0;
    for rel in SHEETS {
        for def in [true, false] {
            let text = sheet_text(rel, def);
            let fast = StreamSheet::compile(&text).unwrap();
            let slow = Stylesheet::compile(&text, None).unwrap();
            for name in PAYLOADS {
                let original = payload(name);
                for input in [original.clone(), reversed(&reverse, &original)] {
                    let (fast, slow, input) = (&fast, &slow, &input[..]);
                    check(Case {
                        rel,
                        def,
                        name,
                        fast,
                        slow,
                        input,
                    });
                    cases += 1;
                }
            }
        }
    }
    cases
}

#[test]
fn wso2_payloads_give_libxslts_bytes() {
    let checked = for_each_case(|c| {
        let want = reference(c.slow, c.input).expect("libxslt");
        let mut got = Vec::new();
        c.fast.transform(c.input, &mut got).expect("fast path");
        assert_eq!(
            show(&got),
            show(&want),
            "{} (synapse default {}) on {}",
            c.rel,
            c.def,
            c.name
        );
    });
    assert_eq!(checked, 4 * 2 * PAYLOADS.len() * 2);
}

#[test]
fn reverse_then_forward_gives_the_original_back() {
    for def in [true, false] {
        for (rev, fwd) in [(REVERSE, FORWARD), (FAST_REVERSE, FAST_FORWARD)] {
            let reverse = StreamSheet::compile(&sheet_text(rev, def)).unwrap();
            let forward = StreamSheet::compile(&sheet_text(fwd, def)).unwrap();
            for name in PAYLOADS {
                let original = payload(name);
                let there = reversed(&reverse, &original);
                assert!(show(&there).contains("skcotSyub"), "{name}");
                let mut back = Vec::new();
                forward.transform(&there, &mut back).unwrap();
                if def {
                    // The Synapse default namespace leaks into the result (libxslt does the same):
                    // compare after removing it.
                    let s = show(&back).replace(&format!(" xmlns=\"{SYNAPSE}\""), "");
                    let s = s.replace("<order xmlns=\"\">", "<order>");
                    back = s.into_bytes();
                } else {
                    let s = show(&back).replace("<order xmlns=\"\">", "<order>");
                    back = s.into_bytes();
                }
                // The for-each drops the white space between orders: compare without it.
                assert_eq!(
                    strip_ws(&c14n(&back).unwrap()),
                    strip_ws(&c14n(&original).unwrap()),
                    "{rev} then {fwd} on {name}:\n{}",
                    show(&back)
                );
            }
        }
    }
}

/// Without white space between tags.
fn strip_ws(b: &[u8]) -> String {
    sluice_xml::testing::without_space_between_tags(&show(b))
}

/// The source text of the first element whose start tag begins with `open`.
fn element_text<'x>(doc: &'x str, open: &str, close: &str) -> &'x str {
    let start = doc.find(open).unwrap();
    let end = doc[start..].find(close).unwrap() + start + close.len();
    &doc[start..end]
}

#[test]
fn the_body_element_alone_matches_libxslt() {
    for_each_case(|c| {
        let (rel, def, name) = (c.rel, c.def, c.name);
        let (fast, slow, input) = (c.fast, c.slow, c.input);
        let s = show(input);
        let (open, close) = if s.contains("<m:buyStocks") {
            ("<m:buyStocks", "</m:buyStocks>")
        } else {
            ("<m0:skcotSyub", "</m0:skcotSyub>")
        };
        let el = element_text(&s, open, close);

        // The xslt mediator's way: the Body's first child copied out as a document.
        let doc = Document::parse(input).unwrap();
        // (The Elements payloads are plain XML: the mediator takes the root element.)
        let soap = doc.soap_body_first_child().is_some();
        let node = doc
            .soap_body_first_child()
            .or_else(|| doc.root_element())
            .unwrap();
        let alone = node.to_document().unwrap();
        let result = slow.transform(&alone, &[]).unwrap();
        let want = canonicalize(&result).unwrap();

        let mut got = Vec::new();
        let scope: &[(&str, &str)] = if soap { &[("soapenv", SOAPENV)] } else { &[] };
        fast.transform_fragment(el.as_bytes(), scope, &mut got)
            .expect("fast path");
        assert!(!got.starts_with(b"<?xml"));
        assert_eq!(
            show(&c14n(&got).unwrap()),
            show(&want),
            "{rel} (synapse default {def}) fragment of {name}"
        );

        // The whole message with the result spliced in, against the mediator's tree
        // replacement (canonical forms compared).
        let mut spliced = Vec::new();
        let r = fast.transform_soap_body_child(input, &mut spliced);
        if soap {
            r.expect("fast path over the envelope");
            let mut d = Document::parse(input).unwrap();
            let target = d.soap_body_first_child().unwrap().id();
            d.replace_node(target, &result).unwrap();
            assert_eq!(
                show(&c14n(&spliced).unwrap()),
                show(&c14n(&d.to_bytes().unwrap()).unwrap()),
                "{rel} (synapse default {def}) spliced into {name}"
            );
        } else {
            assert!(r.is_err() && spliced.is_empty(), "not SOAP: {name}");
        }

        // And the element as a document of its own, byte for byte.
        let own = alone.to_bytes().unwrap();
        let want = reference(slow, &own).unwrap();
        let mut got = Vec::new();
        fast.transform(&own, &mut got).unwrap();
        assert_eq!(show(&got), show(&want), "{rel} element of {name}");
    });
}
