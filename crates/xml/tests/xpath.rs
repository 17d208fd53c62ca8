//! XPath: compile once, namespaces, variables, Synapse string-value, threads.

use sluice_xml::{Document, NodeKind, VariableResolver, XPath, XPathValue, XmlErrorKind};
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

fn payload() -> Vec<u8> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "../../../shared/reference/wso2-perf/performance-ei/requests/current/1000B_buyStocks.xml",
    );
    std::fs::read(&p).unwrap_or_else(|e| panic!("reading {}: {e}", p.display()))
}

const NONE: &() = &();

#[test]
fn first_order_symbol_of_the_perf_payload() {
    let doc = Document::parse(&payload()).unwrap();
    let xp = XPath::compile("//order[1]/symbol", &[]).unwrap();
    assert_eq!(xp.eval_string(&doc, NONE).unwrap(), "N");
    // `//order[1]` is "first order child of each parent": here one node.
    match xp.eval(&doc, NONE).unwrap() {
        XPathValue::NodeSet(nodes) => {
            assert_eq!(nodes.len(), 1);
            assert_eq!(nodes[0].name(), "symbol");
            assert_eq!(nodes[0].line(), Some(4));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn soap_header_routing_with_namespace_bindings() {
    let doc = Document::parse(&payload()).unwrap();
    let xp = XPath::compile(
        "/soapenv:Envelope/soapenv:Header/t:routing",
        &[
            ("soapenv", "http://schemas.xmlsoap.org/soap/envelope/"),
            ("t", "http://someuri"),
        ],
    )
    .unwrap();
    assert_eq!(
        xp.eval_string(&doc, NONE).unwrap(),
        "xadmin;server1;community#1.0##"
    );
    assert!(xp.eval_bool(&doc, NONE).unwrap());
    // The prefix in the expression need not match the document's.
    let other = XPath::compile(
        "/e:Envelope/e:Header/x:routing",
        &[
            ("e", "http://schemas.xmlsoap.org/soap/envelope/"),
            ("x", "http://someuri"),
        ],
    )
    .unwrap();
    assert_eq!(
        other.eval_string(&doc, NONE).unwrap(),
        "xadmin;server1;community#1.0##"
    );
    // Wrong namespace: empty node-set, empty string, false.
    let wrong = XPath::compile("//t:routing", &[("t", "http://elsewhere")]).unwrap();
    assert_eq!(wrong.eval_string(&doc, NONE).unwrap(), "");
    assert!(!wrong.eval_bool(&doc, NONE).unwrap());
    // Unbound prefix: evaluation error naming the expression.
    let unbound = XPath::compile("//q:routing", &[]).unwrap();
    let err = unbound.eval(&doc, NONE).unwrap_err();
    assert_eq!(err.kind(), XmlErrorKind::XPathEval);
    assert!(err.message().contains("//q:routing"), "{err}");
}

#[test]
fn synapse_string_value_concatenates_every_node() {
    let doc = Document::parse(&payload()).unwrap();
    let symbols = XPath::compile("//symbol", &[]).unwrap();
    assert_eq!(
        symbols.eval_string(&doc, NONE).unwrap(),
        "NSUNMSFTIBMNSUNMSFT"
    );
    // XPath's own string() takes the first node only.
    let first = XPath::compile("string(//symbol)", &[]).unwrap();
    assert_eq!(first.eval_string(&doc, NONE).unwrap(), "N");
    // Union in document order even when written backwards; attributes too.
    let d = Document::parse(br#"<r><a x="1">A</a><b>B<c>C</c></b></r>"#).unwrap();
    let u = XPath::compile("//b | //a | //a/@x", &[]).unwrap();
    assert_eq!(u.eval_string(&d, NONE).unwrap(), "A1BC");
    match u.eval(&d, NONE).unwrap() {
        XPathValue::NodeSet(n) => {
            let kinds: Vec<_> = n.iter().map(|n| n.kind()).collect();
            assert_eq!(
                kinds,
                [NodeKind::Element, NodeKind::Attribute, NodeKind::Element]
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn scalar_results_and_number_formatting() {
    let doc = Document::parse(&payload()).unwrap();
    let count = XPath::compile("count(//order)", &[]).unwrap();
    assert_eq!(count.eval(&doc, NONE).unwrap(), XPathValue::Number(7.0));
    // Numbers as Synapse writes them (Java's Double.toString).
    assert_eq!(count.eval_string(&doc, NONE).unwrap(), "7.0");
    let sum = XPath::compile("sum(//order/price)", &[]).unwrap();
    assert_eq!(sum.eval_string(&doc, NONE).unwrap(), "218.58");
    let vol = XPath::compile("sum(//volume) div 2", &[]).unwrap();
    assert_eq!(vol.eval_string(&doc, NONE).unwrap(), "9531.0");
    let nan = XPath::compile("number('x')", &[]).unwrap();
    assert_eq!(nan.eval_string(&doc, NONE).unwrap(), "NaN");
    let b = XPath::compile("count(//order) > 5", &[]).unwrap();
    assert_eq!(b.eval(&doc, NONE).unwrap(), XPathValue::Boolean(true));
    assert_eq!(b.eval_string(&doc, NONE).unwrap(), "true");
    let s = XPath::compile("concat('a', 'b')", &[]).unwrap();
    assert_eq!(s.eval(&doc, NONE).unwrap(), XPathValue::String("ab".into()));
    assert!(!XPath::compile("''", &[])
        .unwrap()
        .eval_bool(&doc, NONE)
        .unwrap());
    assert_eq!(
        XPath::compile("//price", &[])
            .unwrap()
            .eval_number(&doc, NONE)
            .unwrap(),
        1.0
    );
}

#[test]
fn variables_are_resolved_as_strings() {
    let doc = Document::parse(&payload()).unwrap();
    let xp = XPath::compile("//order[symbol = $sym]/buyerID", &[]).unwrap();
    let mut vars = HashMap::new();
    vars.insert("sym".to_string(), "IBM".to_string());
    assert_eq!(xp.eval_string(&doc, &vars).unwrap(), "john");
    vars.insert("sym".to_string(), "SUN".to_string());
    assert_eq!(xp.eval_string(&doc, &vars).unwrap(), "indikaindika");
    let pairs: &[(&str, &str)] = &[("sym", "MSFT")];
    assert_eq!(xp.eval_string(&doc, pairs).unwrap(), "doedoe");
    // Undefined variable: an error, not an empty result.
    let err = xp.eval_string(&doc, NONE).unwrap_err();
    assert_eq!(err.kind(), XmlErrorKind::XPathEval);
    assert!(
        err.details().join(" ").contains("Undefined variable"),
        "{err} {:?}",
        err.details()
    );

    struct Prefixed;
    impl VariableResolver for Prefixed {
        fn resolve(&self, name: &str, ns_uri: Option<&str>) -> Option<String> {
            (ns_uri == Some("urn:v")).then(|| format!("v-{name}"))
        }
    }
    let q = XPath::compile("concat($p:one, '/', $p:two)", &[("p", "urn:v")]).unwrap();
    assert_eq!(q.eval_string(&doc, &Prefixed).unwrap(), "v-one/v-two");
}

/// A resolver that panics with its message.
struct Boom(&'static str);

impl VariableResolver for Boom {
    fn resolve(&self, _: &str, _: Option<&str>) -> Option<String> {
        panic!("{}", self.0)
    }
}

#[test]
#[should_panic(expected = "resolver exploded")]
fn a_panicking_resolver_propagates_its_panic() {
    let doc = Document::parse(b"<a/>").unwrap();
    let _ = XPath::compile("$x", &[])
        .unwrap()
        .eval_string(&doc, &Boom("resolver exploded"));
}

#[test]
fn evaluation_relative_to_a_context_node() {
    let doc = Document::parse(&payload()).unwrap();
    let third = XPath::compile("(//order)[3]", &[]).unwrap();
    let XPathValue::NodeSet(nodes) = third.eval(&doc, NONE).unwrap() else {
        panic!()
    };
    let order = nodes[0];
    let rel = XPath::compile("symbol", &[]).unwrap();
    assert_eq!(rel.eval_string_at(order, NONE).unwrap(), "MSFT");
    assert!(XPath::compile("price > 20", &[])
        .unwrap()
        .eval_bool_at(order, NONE)
        .unwrap());
    match rel.eval_at(order, NONE).unwrap() {
        XPathValue::NodeSet(n) => assert_eq!(n[0].text_content(), "MSFT"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn compile_errors_name_the_expression() {
    let err = XPath::compile("//order[", &[]).unwrap_err();
    assert_eq!(err.kind(), XmlErrorKind::XPathCompile);
    assert!(err.message().contains("//order["), "{err}");
    assert!(!err.details().is_empty());
    let err = XPath::compile("a\0b", &[]).unwrap_err();
    assert_eq!(err.kind(), XmlErrorKind::InvalidArgument);
}

#[test]
fn one_compiled_xpath_shared_by_four_threads() {
    let xp = Arc::new(
        XPath::compile(
            "/soapenv:Envelope/soapenv:Body/m:buyStocks/order[symbol = $s]/volume",
            &[
                ("soapenv", "http://schemas.xmlsoap.org/soap/envelope/"),
                ("m", "http://services.samples/xsd"),
            ],
        )
        .unwrap(),
    );
    let input = Arc::new(payload());
    let cases = [
        ("N", "11"),
        ("SUN", "500500"),
        ("MSFT", "80308030"),
        ("IBM", "2000"),
    ];
    let handles: Vec<_> = (0..4)
        .map(|t| {
            let xp = Arc::clone(&xp);
            let input = Arc::clone(&input);
            std::thread::spawn(move || {
                let doc = Document::parse(&input).unwrap();
                for i in 0..500 {
                    let (sym, want) = cases[(t + i) % cases.len()];
                    let vars: &[(&str, &str)] = &[("s", sym)];
                    assert_eq!(xp.eval_string(&doc, vars).unwrap(), want);
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
}

/// Resolves `$inner` by evaluating another expression over another document while the outer
/// evaluation is still running on this thread (the thread's context is taken then).
struct Nested {
    doc: Document,
    xp: XPath,
}

impl VariableResolver for Nested {
    fn resolve(&self, name: &str, _: Option<&str>) -> Option<String> {
        (name == "inner").then(|| self.xp.eval_string(&self.doc, NONE).unwrap())
    }
}

#[test]
fn an_evaluation_inside_another_gets_its_own_context() {
    let nested = Nested {
        doc: Document::parse(b"<q:r xmlns:q='urn:q'><q:v>inner</q:v></q:r>").unwrap(),
        xp: XPath::compile("/p:r/p:v", &[("p", "urn:q")]).unwrap(),
    };
    let doc = Document::parse(b"<r xmlns='urn:o'><v>outer</v></r>").unwrap();
    // The outer expression binds the same prefix to another URI: neither sees the other's.
    let outer = XPath::compile(
        "concat(/p:r/p:v, '+', $inner, '+', /p:r/p:v)",
        &[("p", "urn:o")],
    )
    .unwrap();
    assert_eq!(
        outer.eval_string(&doc, &nested).unwrap(),
        "outer+inner+outer"
    );
    // And the thread's context is whole afterwards, for both.
    assert_eq!(
        outer.eval_string(&doc, &nested).unwrap(),
        "outer+inner+outer"
    );
    assert_eq!(nested.xp.eval_string(&nested.doc, NONE).unwrap(), "inner");
}

#[test]
fn the_thread_context_is_clean_after_a_panic_and_an_error() {
    let doc = Document::parse(b"<a xmlns='urn:a'><b>1</b></a>").unwrap();
    let bound = XPath::compile("string(/x:a/x:b)", &[("x", "urn:a")]).unwrap();
    let boom = XPath::compile("concat(/x:a/x:b, $v)", &[("x", "urn:a")]).unwrap();
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        boom.eval_string(&doc, &Boom("boom"))
    }));
    assert!(panicked.is_err());
    assert_eq!(bound.eval_string(&doc, NONE).unwrap(), "1");
    // A failed evaluation (unknown variable) leaves nothing behind either.
    assert!(boom.eval_string(&doc, NONE).is_err());
    assert_eq!(bound.eval_string(&doc, NONE).unwrap(), "1");
    // An expression without bindings does not see the last one's.
    let unbound = XPath::compile("string(/x:a/x:b)", &[]).unwrap();
    assert!(unbound.eval_string(&doc, NONE).is_err());
}

#[test]
fn an_empty_prefix_is_refused_at_compile_time() {
    let err = XPath::compile("/a", &[("", "urn:a")]).unwrap_err();
    assert_eq!(err.kind(), XmlErrorKind::InvalidArgument);
}

#[test]
fn resolvers_cannot_shadow_core_functions_and_the_last_binding_counts() {
    struct Shadow;
    impl VariableResolver for Shadow {
        fn resolve(&self, _: &str, _: Option<&str>) -> Option<String> {
            None
        }
        fn functions(&self) -> &[&std::ffi::CStr] {
            &[c"concat", c"shout"]
        }
        fn call(&self, name: &str, args: &[String]) -> Result<String, String> {
            Ok(format!("{name}:{}", args.join(",").to_uppercase()))
        }
    }
    let doc = Document::parse(b"<a xmlns='urn:two'><b>x</b></a>").unwrap();
    let xp = XPath::compile("concat('a', shout('b'))", &[]).unwrap();
    assert_eq!(xp.eval_string(&doc, &Shadow).unwrap(), "ashout:B");
    // As xmlXPathRegisterNs did: a prefix bound twice means the last URI.
    let xp = XPath::compile("string(/p:a/p:b)", &[("p", "urn:one"), ("p", "urn:two")]).unwrap();
    assert_eq!(xp.eval_string(&doc, NONE).unwrap(), "x");
}
