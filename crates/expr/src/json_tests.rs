use super::*;

/// A message whose body is these bytes, untouched (parsed as JSON on first use).
struct Body(&'static str, std::cell::OnceCell<Option<serde_json::Value>>);

fn body(text: &'static str) -> Body {
    Body(text, std::cell::OnceCell::new())
}

impl Env for Body {
    fn raw_xml(&self) -> Option<&[u8]> {
        Some(self.0.as_bytes())
    }
    fn raw_json(&self) -> Option<&[u8]> {
        (!self.0.trim_start().starts_with('<')).then_some(self.0.as_bytes())
    }
    fn json(&self) -> Result<Option<&serde_json::Value>, ExprError> {
        if self.0.trim().is_empty() {
            return Ok(None);
        }
        let v = serde_json::from_str(self.0).map_err(|e| ExprError {
            kind: ExprErrorKind::BadMessage,
            message: format!("the message body is not JSON: {e}"),
        })?;
        Ok(self.1.get_or_init(|| Some(v)).as_ref())
    }
}

const ORDER: &str = r#"{"order": {"symbol": "IBM", "qty": 10, "price": 10.5, "ok": true,
    "note": null, "tags": ["a", "b"], "lines": [{"n": 1}, {"n": 2}], "by": {"z": 1, "a": 2}}}"#;

fn eval(text: &str, text_body: &'static str) -> Result<String, ExprError> {
    let e = Expr::compile(text, &[])?;
    assert!(matches!(e, Expr::Json(_)), "{text}: {e:?}");
    assert_eq!(e.body_need(), BodyNeed::Full);
    e.eval_string(&body(text_body)).map(Cow::into_owned)
}

#[test]
fn json_eval_gives_wso2s_string_values() {
    let v = |t: &str| eval(t, ORDER).unwrap();
    assert_eq!(v("json-eval($.order.symbol)"), "IBM");
    assert_eq!(v("json-eval( $.order.qty )"), "10");
    assert_eq!(v("json-eval($.order.price)"), "10.5");
    assert_eq!(v("json-eval($.order.ok)"), "true");
    assert_eq!(v("json-eval($.order.note)"), "null");
    // Objects and arrays: compact JSON, members in their order.
    assert_eq!(v("json-eval($.order.by)"), r#"{"z":1,"a":2}"#);
    assert_eq!(v("json-eval($.order.tags)"), r#"["a","b"]"#);
    // Nothing found by a definite path: the empty string.
    assert_eq!(v("json-eval($.order.missing)"), "");
    // An indefinite path: always an array, empty when nothing is found.
    assert_eq!(v("json-eval($.order.lines[*].n)"), "[1,2]");
    assert_eq!(v("json-eval($..symbol)"), r#"["IBM"]"#);
    assert_eq!(v("json-eval($..nothing)"), "[]");
    // The whole body: as it came.
    assert_eq!(v("json-eval($)"), ORDER);
    // Several names last: one object.
    assert_eq!(
        v("json-eval($.order['qty','ok'])"),
        r#"{"qty":10,"ok":true}"#
    );
    // An empty body: nothing found.
    assert_eq!(eval("json-eval($.a)", " ").unwrap(), "");
    assert_eq!(eval("json-eval($..a)", "").unwrap(), "[]");
}

#[test]
fn json_eval_refusals_and_bad_bodies() {
    let e = Expr::compile("json-eval($.a.concat('x'))", &[]).unwrap_err();
    assert_eq!(e.kind, ExprErrorKind::Unsupported, "{e}");
    let e = Expr::compile("json-eval(a.b[)", &[]).unwrap_err();
    assert_eq!(e.kind, ExprErrorKind::Invalid, "{e}");
    // A path without `$` starts at the root's member, as in Jayway.
    assert!(matches!(
        Expr::compile("json-eval(a.b)", &[]),
        Ok(Expr::Json(_))
    ));
    let e = eval("json-eval($.a)", "<a/>").unwrap_err();
    assert_eq!(e.kind, ExprErrorKind::BadMessage, "{e}");
    assert!(e.message.contains("not JSON"), "{e}");
    // evaluator="json" arguments: a plain path, or one still in json-eval().
    for p in ["$.order.symbol", "json-eval($.order.symbol)"] {
        let e = Expr::json(p).unwrap();
        let body = body(ORDER);
        let (values, definite) = e.json_values(&body).unwrap();
        assert!(definite);
        assert_eq!(
            values,
            vec![Cow::<serde_json::Value>::Owned(serde_json::json!("IBM"))]
        );
    }
}
