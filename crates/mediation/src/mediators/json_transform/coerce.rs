//! MI's JSON schema processor (`synapse-commons`' `JsonProcessor.parseJson`), which the
//! `jsontransform` mediator runs: the payload checked against a JSON Schema and its values made the
//! types the schema names (`"7.5"` where a number is wanted becomes `7.5`, a single value where an
//! array is wanted becomes a one-element array). It reads `type` (one, or several), `properties`,
//! `required`, `minProperties`/`maxProperties`, `patternProperties`, `additionalProperties`,
//! `items` (one schema or one per position), `additionalItems`, `minItems`/`maxItems`,
//! `uniqueItems`, `minLength`/`maxLength`, `pattern`, `enum`, `const`, `minimum`/`maximum`,
//! `exclusiveMinimum`/`exclusiveMaximum` (numbers) and `multipleOf`; nothing else (no `$ref`,
//! `allOf`, `format`...), as MI.
//!
//! MI's quirks are kept, since its clients see them: a number is written with as many decimals as
//! its text has characters after the first `.` (or as the whole text has, when there is none:
//! `12` becomes `12.00`), a key `patternProperties` matches moves to the end, and a string a
//! pattern property makes keeps its JSON quotes inside it.

use serde_json::{Map, Value};

/// A JSON value as the processor writes it: numbers kept as the text MI prints.
#[derive(Debug, Clone, PartialEq)]
pub enum Out {
    Null,
    Bool(bool),
    Num(String),
    Str(String),
    Arr(Vec<Out>),
    Obj(Vec<(String, Out)>),
}

impl Out {
    fn from_json(v: &Value) -> Out {
        match v {
            Value::Null => Out::Null,
            Value::Bool(b) => Out::Bool(*b),
            Value::Number(n) => Out::Num(n.to_string()),
            Value::String(s) => Out::Str(s.clone()),
            Value::Array(a) => Out::Arr(a.iter().map(Out::from_json).collect()),
            Value::Object(m) => Out::Obj(
                m.iter()
                    .map(|(k, v)| (k.clone(), Out::from_json(v)))
                    .collect(),
            ),
        }
    }

    pub fn write(&self, out: &mut String) {
        match self {
            Out::Null => out.push_str("null"),
            Out::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Out::Num(n) => out.push_str(n),
            Out::Str(s) => out.push_str(&Value::String(s.clone()).to_string()),
            Out::Arr(a) => {
                out.push('[');
                for (i, v) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    v.write(out);
                }
                out.push(']');
            }
            Out::Obj(m) => {
                out.push('{');
                for (i, (k, v)) in m.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&Value::String(k.clone()).to_string());
                    out.push(':');
                    v.write(out);
                }
                out.push('}');
            }
        }
    }
}

/// `parseJson(input, schema)`: the payload as the schema makes it, or why not (MI's messages).
pub fn parse_json(input: &str, schema: &str) -> Result<String, String> {
    if input.trim().is_empty() || schema.trim().is_empty() {
        return Err("Input json and schema should not be null".into());
    }
    let schema: Value =
        serde_json::from_str(schema).map_err(|_| "Invalid JSON schema".to_owned())?;
    let s = match &schema {
        Value::Object(m) if m.is_empty() => return Ok(input.to_owned()),
        Value::Object(m) => m,
        Value::Bool(true) => return Ok(input.to_owned()),
        Value::Bool(false) => {
            return Err("JSON schema is false, so all validations will fail".into())
        }
        _ => return Err("JSON schema should be an object or boolean".into()),
    };
    let Some(ty) = s.get("type") else {
        return Err("JSON schema should contain a type declaration".into());
    };
    let raw = input.trim();
    let unquoted = raw.trim_matches('"');
    let out = match ty.as_str() {
        Some("object") => match serde_json::from_str::<Value>(raw) {
            Ok(Value::Object(o)) => object(&o, s)?,
            _ => return Err(format!("Expected a JSON as input but found : {raw}")),
        },
        Some("array") => {
            let v: Value = serde_json::from_str(raw).map_err(|e| e.to_string())?;
            array(&v, s)?
        }
        Some("boolean") => boolean(unquoted, s)?,
        Some("number") => number(unquoted, s, false)?,
        Some("integer") => number(unquoted, s, true)?,
        Some("string" | "String") => {
            string(raw, s)?;
            return Ok(raw.to_owned());
        }
        Some("null") => Out::Null,
        _ => return Ok("{}".into()),
    };
    let mut text = String::new();
    out.write(&mut text);
    Ok(text)
}

fn object(input: &Map<String, Value>, s: &Map<String, Value>) -> Result<Out, String> {
    let shown = || Value::Object(input.clone()).to_string();
    if let Some(Value::Array(req)) = s.get("required") {
        if req
            .iter()
            .filter_map(Value::as_str)
            .any(|k| !input.contains_key(k))
        {
            return Err(format!(
                "Input object : {} does not contains all the elements required in the schema : {}",
                shown(),
                Value::Object(s.clone())
            ));
        }
    }
    let count = input.len() as f64;
    if s.get("minProperties")
        .and_then(Value::as_f64)
        .is_some_and(|m| count < m)
    {
        return Err(format!(
            "Object violates the minimum number of properties constraint : {}",
            shown()
        ));
    }
    if s.get("maxProperties")
        .and_then(Value::as_f64)
        .is_some_and(|m| count > m)
    {
        return Err(format!(
            "Object violates the maximum number of properties constraint : {}",
            shown()
        ));
    }
    let props = s.get("properties").and_then(Value::as_object);
    let mut out: Vec<(String, Out)> = Vec::with_capacity(input.len());
    for (k, v) in input {
        let value = match props.and_then(|p| p.get(k)).and_then(Value::as_object) {
            Some(ps) if ps.contains_key("type") => typed(v, ps)?,
            _ => Out::from_json(v),
        };
        out.push((k.clone(), value));
    }
    // Keys a pattern matches: coerced from their JSON text, and moved to the end.
    let patterns = s.get("patternProperties").and_then(Value::as_object);
    let mut matched = Vec::new();
    for (pattern, ps) in patterns.into_iter().flatten() {
        let re =
            regex::Regex::new(pattern).map_err(|e| format!("Invalid pattern {pattern}: {e}"))?;
        let ps = ps
            .as_object()
            .filter(|p| p.contains_key("type"))
            .ok_or_else(|| format!("Schema for object must have a type declaration : {ps}"))?;
        for (k, v) in input.iter().filter(|(k, _)| re.is_match(k)) {
            matched.push(k.clone());
            let coerced = typed(&Value::String(v.to_string()), ps)?;
            out.retain(|(key, _)| key != k);
            out.push((k.clone(), coerced));
        }
    }
    match s.get("additionalProperties") {
        Some(Value::Bool(false)) => {
            let extra = input
                .keys()
                .any(|k| !props.is_some_and(|p| p.contains_key(k)) && !matched.contains(k));
            if extra {
                return Err(format!(
                    "Input object : {} has additional properties than schema : {} and additional properties are not allowed",
                    shown(),
                    Value::Object(s.clone())
                ));
            }
        }
        Some(Value::Object(ps)) if ps.contains_key("type") => {
            for (k, v) in input {
                if props.is_some_and(|p| p.contains_key(k)) || matched.contains(k) {
                    continue;
                }
                let coerced = typed(&Value::String(v.to_string()), ps)?;
                out.retain(|(key, _)| key != k);
                out.push((k.clone(), coerced));
            }
        }
        _ => {}
    }
    Ok(Out::Obj(out))
}

/// `v` made what schema `s` (which has a `type`) says.
fn typed(v: &Value, s: &Map<String, Value>) -> Result<Out, String> {
    match s.get("type") {
        Some(Value::Array(types)) => {
            let types: Vec<&str> = types.iter().filter_map(Value::as_str).collect();
            several(v, s, &types)
        }
        Some(Value::String(t)) => one(v, s, t),
        _ => Err(format!(
            "Invalid type declaration in the schema : {}",
            Value::Object(s.clone())
        )),
    }
}

fn one(v: &Value, s: &Map<String, Value>, ty: &str) -> Result<Out, String> {
    match ty {
        "object" => match v {
            Value::Object(o) => object(o, s),
            other => Err(format!("Expected a JSON as input but found : {other}")),
        },
        "array" => array(v, s),
        _ => {
            let text = as_string(v).ok_or_else(|| format!("Cannot read {v} as a {ty}"))?;
            match ty {
                "string" | "String" => string(&text, s).map(|()| Out::Str(text)),
                "number" => number(&text, s, false),
                "integer" => number(&text, s, true),
                "boolean" => boolean(&text, s),
                "null" if text == "null" => Ok(Out::Null),
                "null" => Err(format!("Expected a null but found a value : {text}")),
                other => Err(format!("Unknown type {other} in the schema")),
            }
        }
    }
}

/// Gson's `getAsString`: a primitive's text, the only element of a one-element array.
fn as_string(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Array(a) if a.len() == 1 => as_string(&a[0]),
        _ => None,
    }
}

/// A value for a `type` that lists several.
fn several(v: &Value, s: &Map<String, Value>, types: &[&str]) -> Result<Out, String> {
    let has = |t: &str| types.contains(&t);
    match v {
        Value::Object(o) if has("object") => object(o, s),
        Value::Object(_) if has("array") => array(v, s),
        Value::Array(_) if has("array") => array(v, s),
        Value::Null if has("null") => Ok(Out::Null),
        Value::Object(_) | Value::Array(_) | Value::Null => Err(format!(
            "{v} does not match any of the types {types:?} in the schema"
        )),
        _ => {
            let text = as_string(v).unwrap_or_default();
            let order: &[&str] = if text == "true" || text == "false" {
                &["boolean", "string"]
            } else if parsable(&text) {
                &["integer", "number", "string"]
            } else {
                &["string", "boolean", "integer", "number"]
            };
            let mut last = None;
            for t in order.iter().filter(|t| has(t)) {
                match one(&Value::String(text.clone()), s, t) {
                    Ok(o) => return Ok(o),
                    Err(e) => last = Some(e),
                }
            }
            Err(last.unwrap_or_else(|| format!("{text} does not match any of the types {types:?}")))
        }
    }
}

/// Commons Lang's `NumberUtils.isParsable`: an optional sign, digits, at most one '.', no exponent.
fn parsable(t: &str) -> bool {
    let t = t.strip_prefix(['-', '+']).unwrap_or(t);
    !t.is_empty()
        && !t.ends_with('.')
        && t.bytes().filter(|&b| b == b'.').count() <= 1
        && t.bytes().all(|b| b.is_ascii_digit() || b == b'.')
}

fn array(v: &Value, s: &Map<String, Value>) -> Result<Out, String> {
    let items: Vec<Value> = match v {
        Value::Array(a) => a.clone(),
        other => vec![other.clone()],
    };
    let shown = || Value::Array(items.clone()).to_string();
    let bound = |k: &str| -> Result<Option<usize>, String> {
        match s.get(k).and_then(Value::as_i64) {
            Some(n) if n < 0 => Err(format!("Invalid {k} constraint in the schema")),
            n => Ok(n.map(|n| n as usize)),
        }
    };
    let broken = |what: &str| {
        format!("Error occurs while validating the structure of array : {}. Array violated the {what} constraint", shown())
    };
    if bound("minItems")?.is_some_and(|m| items.len() < m) {
        return Err(broken("minItems"));
    }
    if bound("maxItems")?.is_some_and(|m| items.len() > m) {
        return Err(broken("maxItems"));
    }
    if s.get("uniqueItems") == Some(&Value::Bool(true)) {
        for (i, a) in items.iter().enumerate() {
            if items[..i].contains(a) {
                return Err(broken("uniqueItems"));
            }
        }
    }
    let mut out = Vec::with_capacity(items.len());
    match s.get("items") {
        Some(Value::Object(is)) if is.is_empty() => out.extend(items.iter().map(Out::from_json)),
        Some(Value::Object(is)) => {
            if !is.contains_key("type") {
                return Err(format!(
                    "Schema for array must have a type declaration : {}",
                    Value::Object(is.clone())
                ));
            }
            for v in &items {
                out.push(typed(v, is)?);
            }
        }
        Some(Value::Array(tuple)) => {
            if items.len() < tuple.len() {
                return Err(format!(
                    "Array : {} has fewer items than the schema expects",
                    shown()
                ));
            }
            for (v, is) in items.iter().zip(tuple) {
                match is.as_object() {
                    Some(is) if is.is_empty() => out.push(Out::from_json(v)),
                    Some(is) if is.contains_key("type") => out.push(typed(v, is)?),
                    _ => return Err("Array items should contain a type declaration".into()),
                }
            }
            let extra = &items[tuple.len()..];
            match s.get("additionalItems") {
                Some(Value::Bool(false)) if !extra.is_empty() => {
                    return Err(format!(
                        "Array : {} has more items than allowed in the schema",
                        shown()
                    ));
                }
                Some(Value::Object(ais)) if ais.contains_key("type") => {
                    for v in extra {
                        out.push(typed(v, ais)?);
                    }
                }
                _ => out.extend(extra.iter().map(Out::from_json)),
            }
        }
        _ => out.extend(items.iter().map(Out::from_json)),
    }
    Ok(Out::Arr(out))
}

fn string(v: &str, s: &Map<String, Value>) -> Result<(), String> {
    let len = v.encode_utf16().count() as f64;
    if s.get("maxLength")
        .and_then(Value::as_f64)
        .is_some_and(|m| len > m)
    {
        return Err(format!("String \"{v}\" violated the max length constraint"));
    }
    if s.get("minLength")
        .and_then(Value::as_f64)
        .is_some_and(|m| len < m)
    {
        return Err(format!("String \"{v}\" violated the min length constraint"));
    }
    if let Some(p) = s.get("pattern").and_then(Value::as_str) {
        let re = regex::Regex::new(&format!("^(?:{p})$"))
            .map_err(|e| format!("Invalid pattern {p}: {e}"))?;
        if !re.is_match(v) {
            return Err(format!("String \"{v}\" violated the regex constraint {p}"));
        }
    }
    if let Some(Value::Array(e)) = s.get("enum") {
        if !e.iter().any(|x| as_string(x).as_deref() == Some(v)) {
            return Err(format!(
                "String \"{v}\" not contains any element from the enum"
            ));
        }
    }
    if let Some(c) = s.get("const") {
        if as_string(c).as_deref() != Some(v) {
            return Err(format!("String \"{v}\" is not equal to the const value"));
        }
    }
    Ok(())
}

fn number(v: &str, s: &Map<String, Value>, integer: bool) -> Result<Out, String> {
    let v = v.trim_matches('"');
    let n: f64 = v.parse().map_err(|_| format!("\"{v}\" is not a number"))?;
    let f = |k: &str| s.get(k).and_then(Value::as_f64);
    let fails = [
        f("multipleOf").is_some_and(|m| m != 0.0 && n % m != 0.0),
        f("minimum").is_some_and(|m| n < m),
        f("maximum").is_some_and(|m| n > m),
        f("exclusiveMinimum").is_some_and(|m| n <= m),
        f("exclusiveMaximum").is_some_and(|m| n >= m),
    ];
    let names = [
        "multipleOf",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
    ];
    if let Some(i) = fails.iter().position(|&x| x) {
        return Err(format!("Number {v} violated the {} constraint", names[i]));
    }
    if let Some(Value::Array(e)) = s.get("enum") {
        if !e.iter().any(|x| x.as_f64() == Some(n)) {
            return Err(format!("Number {v} not contains any element from the enum"));
        }
    }
    if s.get("const")
        .and_then(Value::as_f64)
        .is_some_and(|c| c != n)
    {
        return Err(format!("Number {v} is not equal to the const value"));
    }
    if integer {
        let digits = v.strip_prefix(['-', '+']).unwrap_or(v);
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!("NumberFormatException: For input string: \"{v}\""));
        }
        let trimmed = digits.trim_start_matches('0');
        let abs = if trimmed.is_empty() { "0" } else { trimmed };
        let neg = v.starts_with('-') && abs != "0";
        return Ok(Out::Num(format!("{}{abs}", if neg { "-" } else { "" })));
    }
    Ok(Out::Num(java_scaled(v)))
}

/// `new BigDecimal(v).setScale(v.length() - (v.indexOf('.') + 1)).toString()`, for the plain
/// decimal texts JSON numbers are (an exponent is folded in first).
fn java_scaled(v: &str) -> String {
    let scale = v.len() - v.find('.').map_or(0, |i| i + 1);
    let n: f64 = v.parse().unwrap_or(0.0);
    // Plain digits with `scale` decimals: exact for the texts JSON payloads carry.
    let (neg, v) = match v.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, v.strip_prefix('+').unwrap_or(v)),
    };
    if v.contains(['e', 'E']) {
        return format!("{:.*}", scale, n);
    }
    let (int, frac) = v.split_once('.').unwrap_or((v, ""));
    let int = int.trim_start_matches('0');
    let mut frac = frac.to_owned();
    while frac.len() < scale {
        frac.push('0');
    }
    let int = if int.is_empty() { "0" } else { int };
    let sign = if neg { "-" } else { "" };
    if scale == 0 {
        format!("{sign}{int}")
    } else {
        format!("{sign}{int}.{frac}")
    }
}

fn boolean(v: &str, s: &Map<String, Value>) -> Result<Out, String> {
    let b = match v.trim_matches('"') {
        "true" => true,
        "false" => false,
        other => return Err(format!("Cannot convert the sting : {other} to boolean")),
    };
    if let Some(Value::Array(e)) = s.get("enum") {
        if !e.contains(&Value::Bool(b)) {
            return Err(format!(
                "Boolean {b} not contains any element from the enum"
            ));
        }
    }
    if s.get("const").is_some_and(|c| c != &Value::Bool(b)) {
        return Err(format!("Boolean {b} is not equal to the const value"));
    }
    Ok(Out::Bool(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SIMPLE: &str = r#"{"type":"object","properties":{
        "fruit":{"type":"string","minLength":4,"maxLength":6,"pattern":"^[0-9]{1,45}$"},
        "price":{"type":"number","minimum":2,"maximum":20,"exclusiveMaximum":20,"multipleOf":2.5}},
        "required":["price"]}"#;

    #[test]
    fn values_take_the_types_the_schema_names_as_mi_writes_them() {
        let got = parse_json(
            r#"{"fruit":12345,"price":"7.5","other":{"a":["1"]}}"#,
            SIMPLE,
        )
        .unwrap();
        assert_eq!(got, r#"{"fruit":"12345","price":7.5,"other":{"a":["1"]}}"#);
        // MI's scale: as many decimals as the text has characters (12 -> 12.00).
        let got = parse_json(r#"{"price":"10"}"#, SIMPLE).unwrap();
        assert_eq!(got, r#"{"price":10.00}"#);
    }

    #[test]
    fn arrays_integers_booleans_and_patterns() {
        let schema = r#"{"type":"object","properties":{
            "flags":{"type":"array","items":[{"type":"boolean"},{"type":"boolean"},{"type":"string"}]},
            "one":{"type":"array","items":{"type":"number"}},
            "age":{"type":"integer"},
            "all":{"type":"array","items":{"type":"integer"},"uniqueItems":true,"maxItems":3}},
            "patternProperties":{"_goals$":{"type":"integer"}}}"#;
        let got = parse_json(
            r#"{"league_goals":"10","flags":["true","false","true"],"one":1.618,"age":"027","all":["3","1","4"]}"#,
            schema,
        )
        .unwrap();
        assert_eq!(
            got,
            r#"{"flags":[true,false,"true"],"one":[1.618],"age":27,"all":[3,1,4],"league_goals":10}"#
        );
    }

    #[test]
    fn what_the_schema_refuses_is_an_error_with_mi_s_words() {
        assert_eq!(
            parse_json("{}", "").unwrap_err(),
            "Input json and schema should not be null"
        );
        assert_eq!(
            parse_json("{}", r#"{"type": "stri"#).unwrap_err(),
            "Invalid JSON schema"
        );
        assert_eq!(
            parse_json("{}", r#"{"properties":{}}"#).unwrap_err(),
            "JSON schema should contain a type declaration"
        );
        assert!(parse_json(r#"{"fruit":"1"}"#, SIMPLE)
            .unwrap_err()
            .contains("does not contains all the elements required"));
        assert!(parse_json(r#"{"price":"7"}"#, SIMPLE)
            .unwrap_err()
            .contains("multipleOf"));
        assert!(parse_json(r#"{"price":"x"}"#, SIMPLE)
            .unwrap_err()
            .contains("is not a number"));
        assert!(parse_json(r#"{"price":"5","fruit":"abcd"}"#, SIMPLE)
            .unwrap_err()
            .contains("regex"));
        assert_eq!(parse_json(r#"{"a":1}"#, "{}").unwrap(), r#"{"a":1}"#);
    }
}
