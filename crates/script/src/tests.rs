use super::*;

fn snap() -> Snapshot {
    Snapshot {
        xml: Some("<m:getQuote xmlns:m=\"urn:q\"><m:symbol>IBM</m:symbol></m:getQuote>".into()),
        props: vec![("ERROR_MESSAGE".into(), "it broke".into())],
        message_id: "urn:uuid:1".into(),
        ..Snapshot::default()
    }
}

fn inline(source: &str) -> Result<Outcome, ScriptError> {
    Script::compile(source, vec![], None)?.run(&snap(), None)
}

#[test]
fn an_inline_script_reads_the_payload_and_sets_it_and_properties_in_order() {
    let out = inline(
        r#"var p = mc.getPayloadXML();
           var sym = p.match(/<m:symbol>(.*)<\/m:symbol>/)[1];
           mc.setProperty("symbol", sym);
           mc.setPayloadXML("<r>" + sym.toLowerCase() + "</r>");
           mc.setProperty("n", 5, "axis2");
           mc.removeProperty("ERROR_MESSAGE");
           mc.setProperty("ignored", 1, "registry");"#,
    )
    .unwrap();
    assert!(out.proceed);
    assert_eq!(
        out.ops,
        vec![
            Op::Set {
                scope: "default".into(),
                name: "symbol".into(),
                value: "IBM".into()
            },
            Op::PayloadXml("<r>ibm</r>".into()),
            Op::Set {
                scope: "axis2".into(),
                name: "n".into(),
                value: "5".into()
            },
            Op::Remove {
                scope: "default".into(),
                name: "ERROR_MESSAGE".into()
            },
        ]
    );
}

#[test]
fn only_a_boolean_false_stops_the_flow() {
    assert!(
        !inline("mc.getPayloadXML().indexOf('HP') >= 0;")
            .unwrap()
            .proceed
    );
    assert!(
        inline("mc.getPayloadXML().indexOf('IBM') >= 0;")
            .unwrap()
            .proceed
    );
    assert!(inline("null;").unwrap().proceed);
    assert!(inline("0;").unwrap().proceed);
    assert!(inline("'false';").unwrap().proceed);
}

#[test]
fn properties_read_back_what_the_script_set_and_null_when_missing() {
    let out = inline(
        r#"mc.setProperty("a", "1");
           mc.setProperty("b", mc.getProperty("a") + mc.getProperty("ERROR_MESSAGE") + mc.getProperty("none"));"#,
    )
    .unwrap();
    assert_eq!(
        out.ops[1],
        Op::Set {
            scope: "default".into(),
            name: "b".into(),
            value: "1it brokenull".into()
        }
    );
}

#[test]
fn json_payloads_are_parsed_on_demand_and_set_as_text_or_values() {
    let s = Snapshot {
        json: Some(r#"{"price": 10, "items": [1, 2]}"#.into()),
        ..Snapshot::default()
    };
    let script = Script::compile(
        r#"var o = mc.getPayloadJSON();
           o.price = o.price * 2;
           mc.setPayloadJSON(o);
           mc.setProperty("t", mc.getPayloadText());"#,
        vec![],
        None,
    )
    .unwrap();
    assert!(script.uses().payload);
    let out = script.run(&s, None).unwrap();
    assert_eq!(
        out.ops[0],
        Op::PayloadJson(r#"{"price":20,"items":[1,2]}"#.into())
    );
    // A string is JSON text as it is.
    let out = inline(r#"mc.setPayloadJSON('{"a" : 1}');"#).unwrap();
    assert_eq!(out.ops, vec![Op::PayloadJson(r#"{"a" : 1}"#.into())]);
    // No JSON payload: an empty object, as Synapse gives.
    let out = inline(r#"mc.setProperty("k", Object.keys(mc.getPayloadJSON()).length);"#).unwrap();
    assert_eq!(
        out.ops[0],
        Op::Set {
            scope: "default".into(),
            name: "k".into(),
            value: "0".into()
        }
    );
}

#[test]
fn a_keyed_script_calls_its_function_after_its_includes() {
    let script = Script::compile(
        "function transform(mc) { mc.setProperty('x', helper()); return false; }",
        vec!["function helper() { return 'from the include'; }".into()],
        Some("transform".into()),
    )
    .unwrap();
    let out = script.run(&snap(), None).unwrap();
    assert!(!out.proceed);
    assert_eq!(
        out.ops,
        vec![Op::Set {
            scope: "default".into(),
            name: "x".into(),
            value: "from the include".into()
        }]
    );
    // A script's own variables named as the runner's parameters change nothing.
    let script = Script::compile(
        "var name = 'other'; var includes = []; var src = ''; function t(mc) { mc.setProperty('x', 'ran'); }",
        vec!["var k = 5;".into()],
        Some("t".into()),
    )
    .unwrap();
    assert_eq!(script.run(&snap(), None).unwrap().ops.len(), 1);
    let missing = Script::compile("var a = 1;", vec![], Some("mediate".into())).unwrap();
    let e = missing.run(&snap(), None).unwrap_err();
    assert_eq!(e.kind, ScriptErrorKind::NoFunction);
}

#[test]
fn globals_do_not_outlive_a_run() {
    // A var, an undeclared assignment and a function: none is there for the next run (the
    // thread's context is kept between runs).
    let script = Script::compile(
        "if (typeof seen !== 'undefined' || typeof loose !== 'undefined' || typeof made !== 'undefined') { mc.setProperty('leak', 'yes'); }\n\
         var seen = 'yes'; loose = 1; var made = function () {};",
        vec![],
        None,
    )
    .unwrap();
    for _ in 0..3 {
        assert_eq!(script.run(&snap(), None).unwrap().ops, vec![]);
    }
    let declares = Script::compile("function declared() {}", vec![], None).unwrap();
    declares.run(&snap(), None).unwrap();
    let looks = Script::compile("mc.setProperty('t', typeof declared);", vec![], None).unwrap();
    assert_eq!(
        looks.run(&snap(), None).unwrap().ops[0],
        Op::Set {
            scope: "default".into(),
            name: "t".into(),
            value: "undefined".into()
        }
    );
    // Nor a keyed script's functions for another script.
    let keyed = Script::compile("function f(mc) { return 1; }", vec![], Some("f".into())).unwrap();
    keyed.run(&snap(), None).unwrap();
    let other = Script::compile("var x = 1;", vec![], Some("f".into())).unwrap();
    assert_eq!(
        other.run(&snap(), None).unwrap_err().kind,
        ScriptErrorKind::NoFunction
    );
    let e = Script::compile("1;", vec![], Some("a b".into())).unwrap_err();
    assert_eq!(e.kind, ScriptErrorKind::Syntax);
}

#[test]
fn failures_are_kinds_with_the_reason() {
    let e = Script::compile("var x = ;", vec![], None).unwrap_err();
    assert_eq!(e.kind, ScriptErrorKind::Syntax, "{e}");
    let e = Script::compile(
        "var s = mc.getPayloadXML()..*::order.(symbol == 'IBM');",
        vec![],
        None,
    )
    .unwrap_err();
    assert_eq!(e.kind, ScriptErrorKind::E4x, "{e}");
    let e = inline("throw new Error('custom failure');").unwrap_err();
    assert_eq!(
        (e.kind, e.message.as_str()),
        (ScriptErrorKind::Thrown, "custom failure")
    );
    let e = inline("mc.setPayloadXML(null);").unwrap_err();
    assert_eq!(e.kind, ScriptErrorKind::Thrown, "{e}");
    // Nothing applies from a run that failed: the ops are never returned.
    let e = inline("mc.setProperty('a', 1); undefinedFunction();").unwrap_err();
    assert!(e.message.contains("undefinedFunction"), "{e}");
}

#[test]
fn a_script_that_never_ends_is_stopped() {
    let stop = Arc::new(AtomicBool::new(true));
    let script = Script::compile("while (true) {}", vec![], None).unwrap();
    let e = script.run(&snap(), Some(stop)).unwrap_err();
    assert_eq!(e.kind, ScriptErrorKind::Stopped, "{e}");
    // Its own time limit, without a stop from outside.
    let started = Instant::now();
    let e = script.run(&snap(), None).unwrap_err();
    assert_eq!(e.kind, ScriptErrorKind::Stopped, "{e}");
    assert!(started.elapsed() >= TIME_LIMIT);
    // The thread's runtime still runs scripts after.
    assert!(inline("true;").unwrap().proceed);
}

#[test]
fn a_script_that_takes_too_much_memory_fails_alone() {
    let e = inline("var a = []; while (true) { a.push(new Array(100000).fill(1)); }").unwrap_err();
    assert!(
        matches!(e.kind, ScriptErrorKind::Thrown | ScriptErrorKind::Engine),
        "{e:?}"
    );
    assert!(inline("true;").unwrap().proceed);
}

#[test]
fn what_sluice_lacks_is_refused_at_load_by_name() {
    for (src, says) in [
        (
            "var x = mc.getSoapAction();",
            "mc.getSoapAction is not supported yet",
        ),
        (
            "java.lang.Thread.sleep(100);",
            "Java classes are not available to scripts (java.lang.Thread.sleep)",
        ),
        (
            "var T = Java.type('java.io.File');",
            "Java classes are not available",
        ),
    ] {
        let e = Script::compile(src, vec![], None).unwrap_err();
        assert_eq!(e.kind, ScriptErrorKind::Unsupported, "{src}");
        assert!(e.message.contains(says), "{src}: {e}");
    }
    // Names that only look alike are fine.
    Script::compile(
        "var amc = {}; amc.x = 1; var myjava = 1; mc.getProperty('a');",
        vec![],
        None,
    )
    .unwrap();
}

#[test]
fn nashorn_scripts_select_nodes_by_xpath_and_build_the_envelope() {
    let out = inline(
        r#"mc.getEnvelope().buildWithAttachments();
           var nodes = mc.getXpathResult("//*[local-name()='symbol']").selectNodes(mc.getPayloadXML());
           mc.setProperty("found", nodes.size() + ":" + nodes.get(0).getText());
           var none = mc.getXpathResult("//nothing").selectNodes("<a/>");
           mc.setProperty("none", none.isEmpty());"#,
    )
    .unwrap();
    assert_eq!(
        out.ops,
        vec![
            Op::Set {
                scope: "default".into(),
                name: "found".into(),
                value: "1:IBM".into()
            },
            Op::Set {
                scope: "default".into(),
                name: "none".into(),
                value: "true".into()
            },
        ]
    );
    // A broken expression or payload is the script's error, with the reason.
    let e = inline("mc.getXpathResult('//[').selectNodes('<a/>');").unwrap_err();
    assert!(e.message.contains("XPath '//['"), "{e}");
    let e = inline("mc.getXpathResult('//a').selectNodes('<a>');").unwrap_err();
    assert!(e.message.contains("does not parse"), "{e}");
}

/// Synapse's sample 350 script (`stockquoteTransform.js`, E4X for Rhino): written here the same way.
const STOCKQUOTE: &str = r#"
function transformRequest(mc) {
    var symbol = mc.getPayloadXML()..*::Code.toString();
    mc.setPayloadXML(
        <m:getQuote xmlns:m="http://services.samples">
            <m:request>
                <m:symbol>{symbol}</m:symbol>
            </m:request>
        </m:getQuote>);
}
function transformResponse(mc) {
    var symbol = mc.getPayloadXML()..*::symbol.toString();
    var price = mc.getPayloadXML()..*::last.toString();
    mc.setPayloadXML(
        <m:CheckPriceResponse xmlns:m="http://services.samples/xsd">
            <m:Code>{symbol}</m:Code>
            <m:Price>{price}</m:Price>
        </m:CheckPriceResponse>);
}
"#;

#[test]
fn e4x_scripts_read_and_write_xml_objects() {
    let s = Snapshot {
        xml: Some(
            "<m:CheckPriceRequest xmlns:m=\"urn:x\"><m:Code>A&amp;B</m:Code></m:CheckPriceRequest>"
                .into(),
        ),
        ..Snapshot::default()
    };
    let script = Script::compile(STOCKQUOTE, vec![], Some("transformRequest".into())).unwrap();
    assert_eq!(
        script.run(&s, None).unwrap().ops,
        vec![Op::PayloadXml(
            "<m:getQuote xmlns:m=\"http://services.samples\"><m:request><m:symbol>A&amp;B</m:symbol></m:request></m:getQuote>".into()
        )]
    );
    let s = Snapshot {
        xml: Some("<ns:getQuoteResponse xmlns:ns=\"urn:s\"><ns:return><ax:last xmlns:ax=\"urn:ax\">12.5</ax:last><ax:symbol xmlns:ax=\"urn:ax\">IBM</ax:symbol></ns:return></ns:getQuoteResponse>".into()),
        ..Snapshot::default()
    };
    let script = Script::compile(STOCKQUOTE, vec![], Some("transformResponse".into())).unwrap();
    assert_eq!(
        script.run(&s, None).unwrap().ops,
        vec![Op::PayloadXml(
            "<m:CheckPriceResponse xmlns:m=\"http://services.samples/xsd\"><m:Code>IBM</m:Code><m:Price>12.5</m:Price></m:CheckPriceResponse>".into()
        )]
    );
    // Attributes, an unnamespaced descendant, a list's length and an element's XML.
    let out = inline(
        r#"var x = <a id="7"><b>1</b><b>2</b><c><b>3</b></c></a>;
           mc.setProperty("r", x.@id + ":" + x..b.length() + ":" + x.*::c + ":" + x..*::b[1]);"#,
    )
    .unwrap();
    assert_eq!(
        out.ops,
        vec![Op::Set {
            scope: "default".into(),
            name: "r".into(),
            value: "7:3:<c><b>3</b></c>:2".into()
        }]
    );
    // A Rhino script without E4X syntax gets the payload as an XML object too.
    let script = Script::compile_with(
        "mc.setProperty('t', typeof mc.getPayloadXML());",
        vec![],
        None,
        true,
    )
    .unwrap();
    assert_eq!(
        script.run(&snap(), None).unwrap().ops[0],
        Op::Set {
            scope: "default".into(),
            name: "t".into(),
            value: "object".into()
        }
    );
}

#[test]
fn the_to_address_is_read_and_set() {
    let s = Snapshot {
        to: Some("http://a/x".into()),
        ..Snapshot::default()
    };
    let script = Script::compile(
        "mc.setProperty('to', mc.getTo().getAddress()); mc.setTo(mc.getReplyTo()); mc.setTo('http://b/y');",
        vec![],
        None,
    )
    .unwrap();
    let out = script.run(&s, None).unwrap();
    assert_eq!(
        out.ops,
        vec![
            Op::Set {
                scope: "default".into(),
                name: "to".into(),
                value: "http://a/x".into()
            },
            Op::To(None),
            Op::To(Some("http://b/y".into())),
        ]
    );
}
