//! Elements with many attributes and many namespace declarations in scope.

use super::*;

/// Elements with many attributes and many namespace declarations in scope (issue 30): read in
/// time linear in them, with libxml2's answer while libxml2 accepts the document, and no answer
/// (never another one) past Sluice's limits, where libxml2 refuses it.
#[test]
fn many_attributes_and_declarations_answer_as_libxml2_or_not_at_all() {
    many_attributes();
    one_name_through_two_prefixes();
    many_declarations();
    repeated_declarations();
    many_bindings_from_a_memo();
    bindings_go_out_of_scope();
}

/// `n` attributes `a0="0"`, `a1="1"`, ...
fn attrs(n: usize) -> String {
    (0..n).map(|k| format!(" a{k}=\"{k}\"")).collect()
}

/// `n` namespace declarations of the prefixes `{tag}0`, `{tag}1`, ...
fn decls(tag: &str, n: usize) -> String {
    (0..n)
        .map(|k| format!(" xmlns:{tag}{k}='urn:{tag}{k}'"))
        .collect()
}

const EXPRS: [&str; 6] = [
    "/r/x",
    "boolean(/r/@a7)",
    "/r/@a150",
    "//x/text()",
    "count(//*)",
    "//x[@id='2']",
];

/// Answers only where the document keeps within the limits (libxml2 refuses it past them).
/// Reading to the end never answers a document libxml2 refuses; stopping at the answer does not
/// see what follows (the `stream` module doc), so only `early` elements must refuse it.
fn agree(doc: &str, within: bool, early: bool) {
    let doc = doc.as_bytes();
    let lib = parse(doc).map(Lib);
    assert_eq!(lib.is_some(), within, "libxml2 on {}", show(doc));
    for text in EXPRS {
        let s = sp(text);
        // A refusal is the parse's own error, and only ever where the parse refuses.
        for exhaustive in [true, false] {
            if let Err(e) = s.run_checked(doc, Mode::String, exhaustive) {
                assert_eq!(Some(e), parse_error(doc), "{text}");
            }
        }
        match &lib {
            Some(lib) => assert!(check(doc, lib, text, &s), "{text} undecided"),
            None => {
                for mode in [Mode::String, Mode::Bool] {
                    assert!(s.run(doc, mode, true).is_none(), "{text}");
                    // The general reader too (quick-xml's), where the fast one bails.
                    assert!(s.run_slow(doc, mode, true).is_none(), "{text}");
                    if early {
                        assert!(s.run(doc, mode, false).is_none(), "{text}");
                    }
                }
            }
        }
    }
}

/// The error Sluice's parse gives `doc`, if any.
fn parse_error(doc: &[u8]) -> Option<sluice_xml::XmlError> {
    sluice_xml::parse_untrusted(doc, &sluice_xml::Limits::default()).err()
}

/// A document the parse refuses for its depth or an element's attributes is refused by the
/// streaming reader with the parse's own error, line included, without the parse (issue 30: the
/// parse cost up to 10x the reading on 10 KiB).
#[test]
fn certain_refusals_are_the_parse_s_own_errors() {
    let deep = |sep: &str, n: usize| {
        format!(
            "<r>{sep}{}x{}<order><symbol>S</symbol></order></r>",
            format!("<d>{sep}").repeat(n),
            "</d>".repeat(n)
        )
    };
    let wide = |sep: &str, n: usize| {
        let attrs: String = (0..n).map(|k| format!("{sep}a{k}='{k}'")).collect();
        format!("<r>\n<order{attrs}><symbol>S</symbol></order></r>")
    };
    for (doc, refused) in [
        (deep("", 300), true),
        (deep("\n", 300), true),
        (deep("\n", 255), false),
        (wide(" ", 1001), true),
        (wide("\n ", 1001), true),
        (wide(" ", 1000), false),
    ] {
        let bytes = doc.as_bytes();
        let expected = parse_error(bytes);
        assert_eq!(expected.is_some(), refused);
        for text in ["//order[1]/symbol", "/r/order/symbol", "count(//d)"] {
            let s = sp(text);
            match s.run_checked(bytes, Mode::String, false) {
                Err(e) => assert_eq!(Some(e), expected, "{text} on {}", show(bytes)),
                Ok(out) => assert!(!refused && out.is_some(), "{text} on {}", show(bytes)),
            }
        }
    }
}

fn many_attributes() {
    for n in [3, 17, 200, 999, 1000, 1001, 5000, 1_000_000] {
        let within = n <= 1000;
        agree(&format!("<r{}><x id='2'>t</x></r>", attrs(n)), within, true);
        // On an inner element, after the answer to some paths could be known.
        agree(
            &format!("<r a7='7' a150='1'><x id='2'>t</x><y{}/></r>", attrs(n)),
            within,
            false,
        );
        if n <= 5000 {
            // A repeat, last: libxml2 refuses the document.
            agree(
                &format!("<r{} a0='again'><x>t</x></r>", attrs(n)),
                false,
                true,
            );
        }
    }
}

/// The same expanded name through two prefixes, last: libxml2 reports a namespace error and
/// still builds the tree; streaming leaves it to libxml2, or answers the same.
fn one_name_through_two_prefixes() {
    for n in [5, 300] {
        let doc = format!(
            "<r xmlns:p='urn:u' xmlns:q='urn:u'{} p:z='1' q:z='2'><x>t</x></r>",
            attrs(n)
        );
        let lib = parse(doc.as_bytes()).map(Lib).unwrap();
        for text in EXPRS {
            let s = sp(text);
            check(doc.as_bytes(), &lib, text, &s);
            assert!(s.run_fast(doc.as_bytes(), Mode::String, true).is_err());
        }
    }
}

/// Many declarations, the outermost used by every element and attribute.
fn many_declarations() {
    let orders: String = (0..300)
        .map(|k| format!("<p0:order p0:id='{k}'><p0:symbol>S{k}</p0:symbol></p0:order>"))
        .collect();
    let body = |outer: &str, inner: &str| {
        format!(
            "<r xmlns:p0='{M}'{outer}><m:buyStocks xmlns:m='{M}'{inner}>{orders}</m:buyStocks></r>"
        )
    };
    let paths = [
        "count(//m:order)",
        "//m:order[3]/m:symbol",
        "//m:order[@m:id='250']/m:symbol",
        "/r/m:buyStocks/m:order[300]/m:symbol",
    ];
    for (doc, within) in [
        (body(&decls("q", 990), ""), true),
        (body(&decls("q", 500), &decls("s", 490)), true),
        // 1,001 and more in scope.
        (body(&decls("q", 600), &decls("s", 600)), false),
    ] {
        let bytes = doc.as_bytes();
        let lib = parse(bytes).map(Lib);
        assert_eq!(lib.is_some(), within);
        for text in paths {
            let s = sp(text);
            match &lib {
                Some(lib) => assert!(check(bytes, lib, text, &s), "{text} undecided"),
                None => assert!(s.run(bytes, Mode::String, true).is_none(), "{text}"),
            }
        }
    }
}

/// A prefix (or the default namespace) declared twice on one start tag, among few or many
/// declarations and attributes, which the index finds as it binds them: libxml2 refuses the
/// document. Declared again on a child, it is no repeat.
fn repeated_declarations() {
    for n in [2, 15, 16, 17, 40, 300] {
        for again in [0, n / 2, n - 1] {
            let twice = format!(" xmlns:q{again}='urn:again'");
            let others = attrs(n % 5);
            agree(
                &format!("<r{}{twice}{others}><x id='2'>t</x></r>", decls("q", n)),
                false,
                true,
            );
            // On a child, after the answer to some paths could be known.
            agree(
                &format!("<r{}{others}><x{twice}{twice}>t</x></r>", decls("q", n)),
                false,
                false,
            );
            agree(
                &format!("<r{}{others}><x{twice} id='2'>t</x></r>", decls("q", n)),
                true,
                true,
            );
        }
        agree(
            &format!(
                "<r xmlns='urn:d'{} xmlns='urn:e'><x>t</x></r>",
                decls("q", n)
            ),
            false,
            true,
        );
    }
}

/// Many bindings restored from a memo (they are in the first bytes): read through the index made
/// for them, as on the first reading. What follows the memo's place (the first order's symbol's
/// start tag) differs from one message to the next: the first two symbols' content, and the last
/// order's.
fn many_bindings_from_a_memo() {
    let head = format!(
        "<r{} xmlns:p0='{M}'><m:buyStocks xmlns:m='{M}'>",
        decls("q", 40)
    );
    let texts = [
        "//m:order[2]/m:symbol",
        "//m:order[1]/m:symbol",
        "//m:symbol",
    ];
    let paths: Vec<StreamPath> = texts.iter().map(|t| sp(t)).collect();
    let mut r = Rng(0x6a09_e667_f3bc_c909);
    let before = MEMO_HITS.get();
    for k in 0..24 {
        let orders: String = (0..300)
            .map(|j| {
                let symbol = match j {
                    0 | 1 => after_memo(&mut r),
                    _ => format!("S{j}"),
                };
                format!("<p0:order p0:id='{j}'><p0:symbol>{symbol}</p0:symbol></p0:order>")
            })
            .collect();
        let doc =
            format!("{head}{orders}<m:order><m:symbol>X{k}</m:symbol></m:order></m:buyStocks></r>");
        let lib = parse(doc.as_bytes()).map(Lib).unwrap();
        for (text, s) in texts.iter().zip(&paths) {
            assert!(check(doc.as_bytes(), &lib, text, s));
        }
    }
    assert!(MEMO_HITS.get() > before, "no reading from a memo");
}

/// Bindings go out of scope with their elements, the index with them.
fn bindings_go_out_of_scope() {
    let doc = format!(
        "<r xmlns:p0='urn:other'><a{}><p0:order/></a><p0:order xmlns:p0='{M}'/><b{}/><m:order xmlns:m='{M}'/></r>",
        decls("q", 40),
        decls("s", 40)
    );
    let lib = parse(doc.as_bytes()).map(Lib).unwrap();
    for text in ["count(//m:order)", "count(/r/m:order)"] {
        assert!(check(doc.as_bytes(), &lib, text, &sp(text)));
    }
}
