use super::*;
use crate::ExprErrorKind;
use std::borrow::Cow;
use std::cell::OnceCell;

/// A message: its body (JSON or XML), its properties and variables.
struct Msg {
    body: &'static str,
    json: OnceCell<Option<Value>>,
    doc: OnceCell<sluice_xml::Document>,
    props: Vec<(PropScope, &'static str, &'static str)>,
    vars: Vec<(&'static str, Value)>,
}

fn msg(body: &'static str) -> Msg {
    Msg {
        body,
        json: OnceCell::new(),
        doc: OnceCell::new(),
        props: vec![
            (PropScope::Default, "prop1", "p-one"),
            (PropScope::Transport, "Content-Type", "application/json"),
            (PropScope::Axis2, "HTTP_SC", "200"),
            (PropScope::Default, "uri.var.id", "42"),
            (PropScope::Func, "who", "tmpl"),
        ],
        vars: vec![
            ("id", Value::from("123<456")),
            ("n", Value::from(5)),
            ("list", serde_json::json!({"data": {"list": [1, 2, 3]}})),
            (
                "xml",
                Value::from("<pets><pet>cat</pet><pet>dog</pet></pets>"),
            ),
        ],
    }
}

impl Env for Msg {
    fn property(&self, scope: PropScope, name: &str) -> Option<Cow<'_, str>> {
        self.props
            .iter()
            .find(|(s, n, _)| *s == scope && *n == name)
            .map(|(_, _, v)| Cow::Borrowed(*v))
    }
    fn url_param(&self, name: &str) -> Option<Cow<'_, str>> {
        (name == "q").then_some(Cow::Borrowed("query"))
    }
    fn raw_json(&self) -> Option<&[u8]> {
        (!self.body.trim_start().starts_with('<')).then_some(self.body.as_bytes())
    }
    fn json(&self) -> Result<Option<&Value>, ExprError> {
        if self.body.trim_start().starts_with('<') {
            return Err(invalid("the message body is not JSON"));
        }
        let v = serde_json::from_str(self.body).map_err(|e| invalid(e.to_string()))?;
        Ok(self.json.get_or_init(|| Some(v)).as_ref())
    }
    fn document(&self) -> Result<&sluice_xml::Document, ExprError> {
        if self.doc.get().is_none() {
            let d = sluice_xml::Document::parse(self.body.as_bytes())
                .map_err(|e| invalid(e.to_string()))?;
            let _ = self.doc.set(d);
        }
        Ok(self.doc.get().expect("set above"))
    }
    fn variable(&self, name: &str) -> Option<Value> {
        self.vars
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.clone())
    }
}

const PET: &str = r#"{"pet": {"name": "Rex", "type": "dog"}, "type": "fruit", "data": {"name": "n", "list": [{"a": 1}, {"a": 2}]}, "requestId": 77}"#;

fn eval(text: &str, body: &'static str) -> String {
    let e = Expr::compile(text, &[]).unwrap_or_else(|e| panic!("{text}: {e}"));
    e.eval_string(&msg(body))
        .unwrap_or_else(|e| panic!("{text}: {e}"))
        .into_owned()
}

#[test]
fn the_forms_mi_tests_use_give_their_values() {
    for (text, want) in [
        ("${payload.requestId}", "77"),
        ("${payload.pet.name}", "Rex"),
        ("${payload.pet}", r#"{"name":"Rex","type":"dog"}"#),
        ("${payload.data.list[1].a}", "2"),
        ("${payload[\"type\"]}", "fruit"),
        ("${payload.missing}", ""),
        ("${payload.type == 'fruit' ? true : false}", "true"),
        ("${payload.pet.type == 'cat'}", "false"),
        ("${payload.data.name + '_123123'}", "n_123123"),
        ("${var.id}", "123<456"),
        ("${vars.list.data.list[2]}", "3"),
        ("${vars.n * 2 + 1}", "11"),
        ("${vars.undefined}", ""),
        ("${properties.synapse.prop1}", "p-one"),
        ("${props.axis2.HTTP_SC}", "200"),
        ("${headers['Content-Type']}", "application/json"),
        ("${headers.missing}", ""),
        ("${params.queryParams.q}", "query"),
        ("${params.pathParams.id}", "42"),
        ("${params.functionParams.who}", "tmpl"),
        (
            "${toUpper(payload.pet.name) + length(payload.data.list)}",
            "REX2",
        ),
        ("${!(vars.n > 3) || contains('abc', 'b')}", "true"),
        (
            "${exists(payload.pet) && not(exists(payload.nothing))}",
            "true",
        ),
        ("${7 % 4 - -1}", "4"),
        ("${'a\\'b' + \"c\"}", "a'bc"),
        ("${1.5 * 2}", "3"),
        ("${10 / 4}", "2.5"),
    ] {
        assert_eq!(eval(text, PET), want, "{text}");
    }
}

#[test]
fn payload_on_xml_is_the_body_element_and_xpath_reads_the_message() {
    let env = r#"<s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/"><s:Body><root><pet>cat</pet></root></s:Body></s:Envelope>"#;
    assert_eq!(eval("${payload}", env), "<root><pet>cat</pet></root>");
    assert_eq!(eval("${xpath('//root/pet/text()')}", env), "cat");
    assert_eq!(eval("${xpath('//root/pet')}", env), "<pet>cat</pet>");
    assert_eq!(
        eval(
            "Request: ${xpath('//pet')}".trim_start_matches("Request: "),
            env
        ),
        "<pet>cat</pet>"
    );
}

#[test]
fn xpath_over_a_variable_reads_its_xml_and_not_the_body() {
    let body = r#"{"a": 1}"#;
    assert_eq!(eval("${xpath('//pet[2]/text()', 'xml')}", body), "dog");
    // The string of a number, as SynapseXPath.stringValueOf writes it.
    assert_eq!(eval("${xpath('count(//pet)', 'xml')}", body), "2.0");
    let not_xml = Expr::compile("${xpath('//a', 'n')}", &[]).unwrap();
    assert!(not_xml.eval_string(&msg(body)).is_err());
    assert_eq!(
        Expr::compile("${xpath('//a', 'xml')}", &[])
            .unwrap()
            .body_need(),
        BodyNeed::None
    );
}

#[test]
fn what_it_needs_of_the_body_is_known_at_load() {
    let need = |t: &str| Expr::compile(t, &[]).unwrap().body_need();
    assert_eq!(need("${vars.x + headers.y}"), BodyNeed::None);
    assert_eq!(need("${vars.x == 'a' ? payload.b : 'c'}"), BodyNeed::Full);
    assert_eq!(need("${xpath('//a')}"), BodyNeed::Full);
    assert!(Expr::compile("${payload.a}", &[]).unwrap().reads_json());
    assert!(!Expr::compile("${vars.a}", &[]).unwrap().reads_json());
}

#[test]
fn what_it_does_not_know_is_refused_at_load_with_a_reason() {
    for (text, kind) in [
        ("${new Date()}", ExprErrorKind::Unsupported),
        ("${configs.x}", ExprErrorKind::Unsupported),
        ("${now()}", ExprErrorKind::Unsupported),
        ("${payload.a[?(@.x)]}", ExprErrorKind::Unsupported),
        ("${payload.a +}", ExprErrorKind::Invalid),
        ("${'open}", ExprErrorKind::Invalid),
        ("${a ? b}", ExprErrorKind::Unsupported),
        ("${(1 + 2}", ExprErrorKind::Invalid),
        ("${1 2}", ExprErrorKind::Invalid),
        ("${length(1, 2)}", ExprErrorKind::Invalid),
    ] {
        let e = Expr::compile(text, &[]).expect_err(text);
        assert_eq!(e.kind, kind, "{text}: {e}");
        assert!(
            e.message.contains(text) || kind == ExprErrorKind::Unsupported,
            "{text}: {e}"
        );
    }
}

#[test]
fn bad_arithmetic_is_an_error_at_run_time_not_a_panic() {
    let e = Expr::compile("${payload.pet.name * 2}", &[]).unwrap();
    let err = e.eval_string(&msg(PET)).unwrap_err();
    assert!(err.message.contains("Rex is not a number"), "{err}");
    // Mutated expressions never panic, compiled or run.
    let mut rng = crate::testing::Rng(7);
    for _ in 0..3000 {
        let t = crate::testing::mutate(
            "${payload.a[0] + vars.b * (1 - 2) == 'x' ? toUpper(headers['c']) : !exists(props.synapse.d)}",
            &['$', '{', '}', '(', ')', '[', ']', '\'', '"', '.', '?', ':', '!', '=', '&', '|'],
            &mut rng,
        );
        if let Ok(e) = Expr::compile(&t, &[]) {
            let _ = e.eval_string(&msg(PET));
        }
    }
}
