use super::*;
use std::collections::HashMap;

struct M(HashMap<(PropScope, String), String>);
impl Env for M {
    fn property(&self, scope: PropScope, name: &str) -> Option<Cow<'_, str>> {
        self.0
            .get(&(scope, name.to_owned()))
            .map(|s| Cow::Borrowed(s.as_str()))
    }
    fn url_param(&self, name: &str) -> Option<Cow<'_, str>> {
        (name == "q").then_some(Cow::Borrowed("v"))
    }
}

fn env() -> M {
    let mut m = HashMap::new();
    m.insert(
        (PropScope::Transport, "routing".into()),
        "xadmin;server1".into(),
    );
    m.insert((PropScope::Default, "foo".into()), "bar".into());
    m.insert((PropScope::Axis2, "HTTP_SC".into()), "202".into());
    M(m)
}

#[test]
fn property_forms() {
    let e = env();
    for (src, want) in [
        ("$trp:routing", "xadmin;server1"),
        (" $ctx:foo ", "bar"),
        ("$axis2:HTTP_SC", "202"),
        ("get-property('foo')", "bar"),
        ("get-property('transport','routing')", "xadmin;server1"),
        ("get-property( \"axis2\" , 'HTTP_SC' )", "202"),
        ("'lit'", "lit"),
        ("$url:q", "v"),
        ("$trp:missing", ""),
    ] {
        let x = Expr::compile(src, &[]).unwrap_or_else(|e| panic!("{src}: {e}"));
        assert_eq!(x.eval_string(&e).unwrap(), want, "{src}");
        assert_eq!(x.body_need(), BodyNeed::None);
    }
}

#[test]
fn xpath_compiles_and_garbage_is_invalid() {
    let c = |s: &str| Expr::compile(s, &[]);
    assert_eq!(c("//order[1]/symbol").unwrap().body_need(), BodyNeed::Full);
    assert_eq!(
        c("concat(get-property(//a), 'b')").unwrap_err().kind,
        ExprErrorKind::Unsupported
    );
    assert_eq!(
        c("get-property('a','b','c')").unwrap_err().kind,
        ExprErrorKind::Invalid
    );
    // A first argument that is not a scope is the name, the second a date format (Synapse).
    assert!(matches!(
        c("get-property('nope','b')").unwrap(),
        Expr::Property { scope: PropScope::Default, ref name } if name == "nope"
    ));
    assert!(matches!(
        c("get-property('func','b')").unwrap(),
        Expr::Property { scope: PropScope::Func, ref name } if name == "b"
    ));
    assert!(matches!(
        c("$func:b").unwrap(),
        Expr::Property { scope: PropScope::Func, ref name } if name == "b"
    ));
    assert_eq!(
        c("get-property('registry','b','c')").unwrap_err().kind,
        ExprErrorKind::Invalid
    );
    assert_eq!(
        c("get-property('SYSTEM_DATE', 'yyyy-MM-ddTHH')")
            .unwrap_err()
            .kind,
        ExprErrorKind::Invalid
    );
    assert_eq!(
        c("get-property('a'").unwrap_err().kind,
        ExprErrorKind::Invalid
    );
    assert_eq!(c("//order[").unwrap_err().kind, ExprErrorKind::Invalid);
    assert_eq!(c("").unwrap_err().kind, ExprErrorKind::Invalid);
    // Without the document, an XPath cannot be evaluated: an error, never a silent empty string.
    assert!(c("//a").unwrap().eval_string(&env()).is_err());
}

/// Properties and a document.
struct Both(M, sluice_xml::Document);
impl Env for Both {
    fn property(&self, scope: PropScope, name: &str) -> Option<Cow<'_, str>> {
        self.0.property(scope, name)
    }
    fn url_param(&self, name: &str) -> Option<Cow<'_, str>> {
        self.0.url_param(name)
    }
    fn document(&self) -> Result<&sluice_xml::Document, ExprError> {
        Ok(&self.1)
    }
}

#[test]
fn synapse_variables_inside_xpath() {
    let soap = Both(
        env(),
        sluice_xml::Document::parse(
            br#"<s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/"><s:Header><h>H</h></s:Header><s:Body><m:buyStocks xmlns:m="urn:m"><order><symbol>IBM</symbol></order></m:buyStocks></s:Body></s:Envelope>"#,
        )
        .unwrap(),
    );
    let ns = vec![("m".to_owned(), "urn:m".to_owned())];
    for (src, want) in [
        (
            "concat(get-property('foo'), '-', $trp:routing)",
            "bar-xadmin;server1",
        ),
        (
            "fn:concat($ctx:foo, $url:q, get-property('missing'))",
            "barv",
        ),
        ("$axis2:HTTP_SC = '202'", "true"),
        (
            "$ctx:foo = 'bar' and $body/m:buyStocks/order/symbol = 'IBM'",
            "true",
        ),
        ("$body/m:buyStocks/order/symbol", "IBM"),
        ("count($body/*)", "1.0"),
        ("$header/h", "H"),
        ("local-name($env)", "Envelope"),
        ("count($env/*)", "2.0"),
        (
            "string-length(get-property('transport', 'routing'))",
            "14.0",
        ),
    ] {
        let x = Expr::compile(src, &ns).unwrap_or_else(|e| panic!("{src}: {e}"));
        assert_eq!(x.eval_string(&soap).unwrap(), want, "{src}");
    }
    // A payload that is not a SOAP envelope: $body is above its root, as if wrapped in a Body.
    let pox = Both(
        env(),
        sluice_xml::Document::parse(b"<order><symbol>MSFT</symbol></order>").unwrap(),
    );
    let x = Expr::compile("$body/order/symbol", &[]).unwrap();
    assert_eq!(x.eval_string(&pox).unwrap(), "MSFT");
    assert_eq!(
        Expr::compile("count($header)", &[])
            .unwrap()
            .eval_string(&pox)
            .unwrap(),
        "0.0"
    );
}

#[test]
fn synapse_functions_inside_xpath() {
    let e = env();
    let x = Expr::compile(
        "concat('Basic ', base64Encode(concat($ctx:foo, ':', get-property('transport', 'routing'))))",
        &[],
    )
    .unwrap();
    assert_eq!(x.body_need(), BodyNeed::None);
    assert_eq!(x.eval_string(&e).unwrap(), "Basic YmFyOnhhZG1pbjtzZXJ2ZXIx");
    let x = Expr::compile("base64Decode(base64Encode(url-encode('a b?c=d e')))", &[]).unwrap();
    assert_eq!(x.eval_string(&e).unwrap(), "a%20b?c=d%20e");
    let x = Expr::compile("base64Encode('x', 'EBCDIC')", &[]).unwrap();
    let err = x.eval_string(&e).unwrap_err();
    assert!(
        err.message.contains("unsupported charset 'EBCDIC'"),
        "{err}"
    );
    // Over the body, and in an XPath that selects nodes for a mediator.
    let soap = Both(
        env(),
        sluice_xml::Document::parse(b"<a><b>eA==</b><b>eQ==</b></a>").unwrap(),
    );
    let x = Expr::compile("base64Decode(/a/b[2])", &[]).unwrap();
    assert_eq!(x.body_need(), BodyNeed::Full);
    assert_eq!(x.eval_string(&soap).unwrap(), "y");
    let x = Expr::compile("/a/b[base64Decode(.) = 'x']", &[]).unwrap();
    let nodes = x.nodes(&soap.1, &soap).unwrap();
    assert_eq!(nodes.len(), 1);
    assert_eq!(nodes[0].text_content(), "eA==");
}

#[test]
fn system_date_in_a_java_format() {
    let e = env();
    let x = Expr::compile("get-property('SYSTEM_DATE', 'yyyy-MM-dd')", &[]).unwrap();
    assert_eq!(x.body_need(), BodyNeed::None);
    // Alone, the clock is read directly; inside a larger XPath it is one of its variables.
    assert!(matches!(x, Expr::Clock(_)), "{x:?}");
    let v = x.eval_string(&e).unwrap().into_owned();
    assert_eq!(v, chrono::Local::now().format("%Y-%m-%d").to_string());
    let x = Expr::compile(
        "concat('at ', get-property('default', 'SYSTEM_DATE', 'HH'))",
        &[],
    )
    .unwrap();
    assert!(matches!(x, Expr::XPath(_)), "{x:?}");
    let v = x.eval_string(&e).unwrap().into_owned();
    assert!(v.starts_with("at ") && v.len() == 5, "{v}");
    // SYSTEM_TIME in any scope, as in Synapse.
    for t in [
        "get-property('SYSTEM_TIME')",
        "get-property('transport', 'SYSTEM_TIME')",
    ] {
        let x = Expr::compile(t, &[]).unwrap();
        assert!(matches!(x, Expr::Clock(_)), "{t}: {x:?}");
        let v = x.eval_string(&e).unwrap().into_owned();
        assert!(
            v.len() >= 13 && v.bytes().all(|b| b.is_ascii_digit()),
            "{t}: {v}"
        );
    }
    // Java's default pattern: "M/d/yy, h:mm a".
    let x = Expr::compile("get-property('SYSTEM_DATE')", &[]).unwrap();
    let v = x.eval_string(&e).unwrap().into_owned();
    assert!(
        v.contains(", ") && (v.ends_with(" AM") || v.ends_with(" PM")),
        "{v}"
    );
}

#[test]
fn registry_values_are_read_at_load() {
    let registry = |scope: LoadScope, key: &str| match (scope, key) {
        (LoadScope::File, "testKey") => Ok("from the file".to_owned()),
        (LoadScope::File, _) => Ok(String::new()),
        (LoadScope::Registry, "conf:/greeting.txt") => Ok("hello".to_owned()),
        // A resource's property (KEY@NAME): the caller's registry reads it.
        (LoadScope::Registry, "conf:/greeting.txt@owner") => Ok("me".to_owned()),
        _ => Err(format!("no local entry or registry resource '{key}'")),
    };
    let c = |t: &str| Expr::compile_with_registry(t, &[], &registry);
    let e = env();
    let x = c("get-property('registry', 'conf:/greeting.txt')").unwrap();
    assert!(matches!(&x, Expr::Literal(v) if v == "hello"));
    let x = c("concat(get-property('registry', 'conf:/greeting.txt'), ' ', $ctx:foo)").unwrap();
    assert_eq!(x.body_need(), BodyNeed::None);
    assert_eq!(x.eval_string(&e).unwrap(), "hello bar");
    let err = c("concat(get-property('registry', 'conf:/nope'), 'x')").unwrap_err();
    assert_eq!(err.kind, ExprErrorKind::Invalid);
    assert!(err.message.contains("'conf:/nope'"), "{err}");
    let x = c("get-property('registry', 'conf:/greeting.txt@owner')").unwrap();
    assert!(matches!(&x, Expr::Literal(v) if v == "me"));
    // Without a registry (Expr::compile), the key is not found.
    let err = Expr::compile("get-property('registry', 'conf:/greeting.txt')", &[]).unwrap_err();
    assert_eq!(err.kind, ExprErrorKind::Invalid);
    // MI's file scope: conf/file.properties, read at load too.
    let x = c("get-property('file', 'testKey')").unwrap();
    assert!(matches!(&x, Expr::Literal(v) if v == "from the file"));
    let x = c("concat(get-property('file', 'other'), '!')").unwrap();
    assert_eq!(x.eval_string(&e).unwrap(), "!");
}

#[test]
fn xpath_over_properties_only_does_not_read_the_message() {
    // `env()` has no document: an expression that needed one would fail.
    let e = env();
    let x = Expr::compile("concat(get-property('foo'), '/', $trp:routing)", &[]).unwrap();
    assert_eq!(x.body_need(), BodyNeed::None);
    assert_eq!(x.eval_string(&e).unwrap(), "bar/xadmin;server1");
    assert!(x.eval_bool(&e).unwrap());
    let x = Expr::compile("$ctx:foo = 'nope'", &[]).unwrap();
    assert_eq!(x.body_need(), BodyNeed::None);
    assert!(!x.eval_bool(&e).unwrap());
    let x = Expr::compile("concat($ctx:foo, //a)", &[]).unwrap();
    assert_eq!(x.body_need(), BodyNeed::Full);
    assert!(x.eval_string(&e).is_err());
}

#[test]
fn header_expressions_are_decided_by_the_start_of_the_message() {
    let ns = vec![
        (
            "s".to_owned(),
            "http://schemas.xmlsoap.org/soap/envelope/".to_owned(),
        ),
        ("t".to_owned(), "http://someuri".to_owned()),
    ];
    let msg = br#"<s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/"><s:Header><t:routing xmlns:t="http://someuri">r1</t:routing></s:Header><s:Body><m:buy xmlns:m="urn:m"><order><symbol>IBM</symbol></order></m:buy></s:Body></s:Envelope>"#;
    let header_end = msg.windows(11).position(|w| w == b"</s:Header>").unwrap() + 11;
    let h = Expr::compile("/s:Envelope/s:Header/t:routing", &ns).unwrap();
    assert_eq!(h.body_need(), BodyNeed::Headers);
    for cut in 0..msg.len() {
        // Never decided before the header is complete; always once it is.
        assert_eq!(h.decided_by(&msg[..cut]), cut >= header_end, "cut at {cut}");
    }
    // A path into the Body is only decided by the whole message (every node counts).
    let body = Expr::compile("//order[1]/symbol", &ns).unwrap();
    assert!(!body.decided_by(&msg[..msg.len() - 1]));
    assert!(body.decided_by(msg));
    // Expressions that do not read the body are always decided.
    assert!(Expr::compile("$trp:routing", &ns).unwrap().decided_by(b""));
    // `decided_by` asks the string value only: wherever that is known, so is the boolean.
    for text in [
        "/s:Envelope/s:Header/t:routing",
        "//order[1]/symbol",
        "count(//order)",
        "count(/s:Envelope/s:Header/t:routing) = 1",
        "boolean(/s:Envelope/s:Header/t:routing)",
        "not(/s:Envelope/s:Header/t:routing)",
        "'r1' = /s:Envelope/s:Header/t:routing",
        "/s:Envelope/s:Header/t:routing/text()",
    ] {
        let Expr::XPath(x) = Expr::compile(text, &ns).unwrap() else {
            panic!("{text} is an XPath")
        };
        let s = x.stream.as_ref().expect("streamable");
        for cut in 0..=msg.len() {
            if s.eval_string(&msg[..cut]).is_some() {
                assert!(s.eval_bool(&msg[..cut]).is_some(), "{text} cut at {cut}");
            }
        }
    }
}

#[test]
fn xpath_over_the_envelope() {
    let env = WithDoc(
        sluice_xml::Document::parse(
            br#"<s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/"><s:Header><routing xmlns="http://someuri">r1</routing></s:Header><s:Body><m:buy xmlns:m="urn:m"><order><symbol>IBM</symbol></order><order><symbol>SUN</symbol></order></m:buy></s:Body></s:Envelope>"#,
        )
        .unwrap(),
    );
    let ns = vec![
        ("soapenv".to_owned(), SOAP11_ENV.to_owned()),
        ("t".to_owned(), "http://someuri".to_owned()),
    ];
    let h = Expr::compile("/soapenv:Envelope/soapenv:Header/t:routing", &ns).unwrap();
    assert_eq!(h.body_need(), BodyNeed::Headers);
    assert_eq!(h.eval_string(&env).unwrap(), "r1");
    let first = Expr::compile("//order[1]/symbol", &ns).unwrap();
    assert_eq!(first.eval_string(&env).unwrap(), "IBM");
    let all = Expr::compile("//symbol", &ns).unwrap();
    assert_eq!(
        all.eval_string(&env).unwrap(),
        "IBMSUN",
        "Synapse joins every node of a node-set"
    );
    assert!(Expr::compile("count(//order) = 2", &ns)
        .unwrap()
        .eval_bool(&env)
        .unwrap());
    assert!(!Expr::compile("//nothing", &ns)
        .unwrap()
        .eval_bool(&env)
        .unwrap());
}

#[test]
fn xml_aware_values_serialise_elements_without_own_text() {
    let env = WithDoc(
        sluice_xml::Document::parse(
            br#"<s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/"><s:Body><m:buy xmlns:m="urn:m" a="1"><m:order><m:symbol>IBM</m:symbol></m:order></m:buy></s:Body></s:Envelope>"#,
        )
        .unwrap(),
    );
    let ns = vec![("m".to_owned(), "urn:m".to_owned())];
    let x = |s: &str| Expr::compile(s, &ns).unwrap();
    assert_eq!(
        x("//m:order").eval_xml_aware(&env).unwrap(),
        r#"<m:order xmlns:m="urn:m"><m:symbol>IBM</m:symbol></m:order>"#
    );
    assert_eq!(x("//m:symbol").eval_xml_aware(&env).unwrap(), "IBM");
    assert_eq!(x("//m:buy/@a").eval_xml_aware(&env).unwrap(), "1");
    assert_eq!(x("count(//m:order)").eval_xml_aware(&env).unwrap(), "1.0");
    assert_eq!(x("//m:order").eval_string(&env).unwrap(), "IBM");
    let doc = env.document().unwrap();
    assert_eq!(x("//m:symbol").nodes(doc, &env).unwrap().len(), 1);
    let root = doc.root_element().unwrap();
    let rel = Expr::compile("s:Body/*[1]", &[("s".to_owned(), SOAP11_ENV.to_owned())]).unwrap();
    assert_eq!(rel.nodes_at(root, &env).unwrap()[0].name(), "buy");
    assert!(x("'lit'").nodes(doc, &env).is_err());
}

#[test]
fn regex_is_full_match() {
    let r = FullRegex::compile("xadmin;server1;community#1.0##").unwrap();
    assert!(r.matches("xadmin;server1;community#1.0##"));
    assert!(!r.matches("xadmin;server1;community#1.0##x"));
    assert!(!r.matches("yxadmin;server1;community#1.0##"));
    let alt = FullRegex::compile("IBM|SUN").unwrap();
    assert!(alt.matches("SUN") && !alt.matches("IBMSUN"));
    assert!(FullRegex::compile(".*").unwrap().matches(""));
    // Java's `.` matches no line terminator, in every form of pattern.
    for (pattern, yes, no) in [
        (".*", "IBM", "I\rBM"),
        ("1.0", "1x0", "1\u{2028}0"),
        ("a.c|x", "abc", "a\nc"),
        ("(.)+", "ab", "a\u{85}"),
        ("[.]b", ".b", "xb"),
        ("\\.b", ".b", "xb"),
        ("é.", "éa", "é"),
        // An ASCII pattern and a string of as many bytes are compared byte by byte.
        ("1.0", "1-0", "1\r0"),
        ("a..b", "axyb", "aéb"),
        ("a.b", "aéb", "a\u{2028}b"),
        // The pieces between dots are compared as slices: a difference after the last dot, or
        // a dot first.
        ("x.y.z", "x1y2z", "x1y2q"),
        (".ab", "zab", "zac"),
    ] {
        let r = FullRegex::compile(pattern).unwrap();
        assert!(r.matches(yes), "{pattern} matches {yes:?}");
        assert!(!r.matches(no), "{pattern} does not match {no:?}");
    }
    assert!(!FullRegex::compile("1.0").unwrap().matches("1.00"));
    assert!(!FullRegex::compile("1.0").unwrap().matches("1."));
    assert_eq!(
        FullRegex::compile("a(?=b)").unwrap_err().kind,
        ExprErrorKind::Unsupported
    );
    assert_eq!(
        FullRegex::compile("a(").unwrap_err().kind,
        ExprErrorKind::Invalid
    );
}

/// Deterministic mutation fuzzing of the expression compiler: never a panic, whatever the input.
#[test]
fn mutated_expressions_never_panic() {
    let seeds = [
        "$trp:routing",
        "get-property('transport','routing')",
        "//order[1]/symbol",
        "/soapenv:Envelope/soapenv:Header/t:routing",
        "count(//order) = 2",
        "'lit'",
        "$url:q",
    ];
    let ns = vec![
        ("soapenv".to_owned(), SOAP11_ENV.to_owned()),
        ("t".to_owned(), "urn:t".to_owned()),
    ];
    let mut r = crate::testing::Rng(0x2545_f491_4f6c_dd1d);
    let alphabet: Vec<char> = "$:/'\"()[],=!<>*@.|-_ aZ9\u{e9}\u{0}".chars().collect();
    for i in 0..5000 {
        let mut chars: Vec<char> = seeds[i % seeds.len()].chars().collect();
        for _ in 0..(1 + r.next() % 4) {
            if chars.is_empty() {
                break;
            }
            let at = r.below(chars.len());
            match r.next() % 3 {
                0 => chars[at] = alphabet[r.below(alphabet.len())],
                1 => {
                    chars.remove(at);
                }
                _ => chars.truncate(at),
            }
        }
        let text: String = chars.into_iter().collect();
        if let Ok(e) = Expr::compile(&text, &ns) {
            let _ = e.eval_string(&env());
        }
        let _ = FullRegex::compile(&text);
    }
}

/// As SynapseJsonPath: `json-eval($trp:NAME.path)` runs over a property's value, and a path
/// ending in '.' is the path without it (`$.` is the whole body).
#[test]
fn json_paths_over_properties_and_with_a_last_dot() {
    let mut e = env();
    e.0.insert(
        (PropScope::Transport, "prop".into()),
        r#"{"store": {"book": [{"price": 8}, {"price": 22}]}}"#.into(),
    );
    e.0.insert((PropScope::Default, "plain".into()), "text".into());
    for (src, want) in [
        (
            "json-eval($trp:prop.store.book[?(@.price > 20)])",
            r#"[{"price":22}]"#,
        ),
        ("json-eval($trp:prop.store.book[0].price)", "8"),
        ("json-eval($ctx:plain)", "text"),
        ("json-eval($ctx:missing.a)", ""),
    ] {
        let x = Expr::compile(src, &[]).unwrap_or_else(|err| panic!("{src}: {err}"));
        assert_eq!(x.body_need(), BodyNeed::None, "{src}");
        assert_eq!(x.eval_string(&e).unwrap(), want, "{src}");
    }
    let whole = Expr::compile("json-eval($.)", &[]).unwrap();
    let Expr::Json(p) = &whole else { panic!() };
    assert_eq!(p.as_str(), "$");
}
