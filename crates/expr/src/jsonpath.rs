//! JsonPath over a JSON message, the subset of Jayway JsonPath (what WSO2 MI's `json-eval()` and
//! `evaluator="json"` arguments use) that integration flows write: `$`, `.name`, `['name']`,
//! `["name"]`, `.*`, `[*]`, `[n]` (negative from the end), `[n,m]`, `['a','b']`, `[from:to]`, and
//! the deep scans `..name`, `..*`, `..[n]`. Compiled once at load; a filter (`[?(...)]`) or a
//! function call is refused there with the reason.
//!
//! As in Jayway, a path without a wildcard, deep scan, slice, union or filter is *definite*: it
//! selects at most one value, and a value it does not find is "nothing". An indefinite path
//! selects a list (possibly empty). Several names as the last step (`$.a['b','c']`) select one
//! object of those members (Jayway's merge), so that path is definite too.

use serde_json::Value;
use std::borrow::Cow;

/// One step of a path.
#[derive(Clone, Debug, PartialEq)]
enum Step {
    /// `.name`, `['name']`; several for `['a','b']`.
    Names(Vec<String>),
    /// `[n]`; several for `[n,m]`.
    Indexes(Vec<i64>),
    /// `[from:to]` (either may be missing).
    Slice(Option<i64>, Option<i64>),
    /// `.*`, `[*]`: every member or element.
    Wild,
    /// `..` followed by the step it applies at every depth.
    Deep(Box<Step>),
}

/// Why a path does not compile: it is not a JsonPath, or it uses what Sluice does not support yet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JsonPathError {
    Invalid(String),
    Unsupported(String),
}

impl std::fmt::Display for JsonPathError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JsonPathError::Invalid(m) | JsonPathError::Unsupported(m) => f.write_str(m),
        }
    }
}

impl From<String> for JsonPathError {
    fn from(m: String) -> Self {
        JsonPathError::Invalid(m)
    }
}

/// A compiled JsonPath.
#[derive(Clone, Debug, PartialEq)]
pub struct JsonPath {
    text: String,
    steps: Vec<Step>,
}

impl JsonPath {
    /// Compiles `text` (it starts with `$`); `Err` says what is not supported or not valid.
    pub fn compile(text: &str) -> Result<JsonPath, JsonPathError> {
        let t = text.trim();
        let mut rest = t
            .strip_prefix('$')
            .ok_or_else(|| format!("JsonPath '{t}' does not start with '$'"))?;
        let mut steps = Vec::new();
        while !rest.is_empty() {
            let (step, after) = if let Some(r) = rest.strip_prefix("..") {
                let (inner, after) = if r.starts_with('[') {
                    bracket(r, t)?
                } else {
                    member(r, t)?
                };
                (Step::Deep(Box::new(inner)), after)
            } else if let Some(r) = rest.strip_prefix('.') {
                member(r, t)?
            } else if rest.starts_with('[') {
                bracket(rest, t)?
            } else {
                return Err(format!("JsonPath '{t}': unexpected '{rest}'").into());
            };
            steps.push(step);
            rest = after;
        }
        Ok(JsonPath {
            text: t.to_owned(),
            steps,
        })
    }

    /// The path as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether the path selects at most one value (Jayway's "definite" path).
    pub fn is_definite(&self) -> bool {
        let last = self.steps.len().saturating_sub(1);
        self.steps.iter().enumerate().all(|(k, s)| match s {
            Step::Names(n) => n.len() == 1 || k == last,
            Step::Indexes(i) => i.len() == 1,
            Step::Slice(..) | Step::Wild | Step::Deep(_) => false,
        })
    }

    /// The values the path selects in `root`, in document order: borrowed from it, except the
    /// objects a last step of several names makes.
    pub fn select<'v>(&self, root: &'v Value) -> Vec<Cow<'v, Value>> {
        let (merge, steps) = match self.steps.split_last() {
            Some((Step::Names(names), init)) if names.len() > 1 => (Some(names), init),
            _ => (None, &self.steps[..]),
        };
        let mut current = vec![root];
        for step in steps {
            let mut next = Vec::new();
            for v in current {
                apply(step, v, &mut next);
            }
            current = next;
        }
        match merge {
            None => current.into_iter().map(Cow::Borrowed).collect(),
            Some(names) => current
                .into_iter()
                .filter_map(|v| v.as_object())
                .map(|m| {
                    let merged = names
                        .iter()
                        .filter_map(|n| m.get(n).map(|v| (n.clone(), v.clone())))
                        .collect();
                    Cow::Owned(Value::Object(merged))
                })
                .collect(),
        }
    }
}

/// `step` applied to `v`, its results pushed onto `out`.
fn apply<'v>(step: &Step, v: &'v Value, out: &mut Vec<&'v Value>) {
    match step {
        Step::Names(names) => {
            if let Value::Object(m) = v {
                out.extend(names.iter().filter_map(|n| m.get(n)));
            }
        }
        Step::Indexes(ix) => {
            if let Value::Array(a) = v {
                out.extend(ix.iter().filter_map(|&i| index(a.len(), i).map(|k| &a[k])));
            }
        }
        Step::Slice(from, to) => {
            if let Value::Array(a) = v {
                let n = a.len() as i64;
                // As Jayway: a bound counts from the end only in `[-n:]` and `[:-n]`.
                let from_end = from.is_none() || to.is_none();
                let clamp =
                    |i: i64| (if i < 0 && from_end { n + i } else { i }).clamp(0, n) as usize;
                let (f, t) = (clamp(from.unwrap_or(0)), clamp(to.unwrap_or(n)));
                if f < t {
                    out.extend(&a[f..t]);
                }
            }
        }
        Step::Wild => match v {
            Value::Object(m) => out.extend(m.values()),
            Value::Array(a) => out.extend(a),
            _ => {}
        },
        Step::Deep(inner) => {
            // The step at this level, then at every level below, in document order.
            apply(inner, v, out);
            match v {
                Value::Object(m) => m.values().for_each(|c| apply(step, c, out)),
                Value::Array(a) => a.iter().for_each(|c| apply(step, c, out)),
                _ => {}
            }
        }
    }
}

/// An index into an array of `len`, negative ones counted from the end.
fn index(len: usize, i: i64) -> Option<usize> {
    let k = if i < 0 { len as i64 + i } else { i };
    usize::try_from(k).ok().filter(|&k| k < len)
}

/// A `.name` or `.*` step (after the dot): the step and the rest of the path.
fn member<'t>(r: &'t str, whole: &str) -> Result<(Step, &'t str), JsonPathError> {
    if let Some(after) = r.strip_prefix('*') {
        return Ok((Step::Wild, after));
    }
    let end = r.find(['.', '[']).unwrap_or(r.len());
    let name = &r[..end];
    if name.is_empty() {
        return Err(format!("JsonPath '{whole}': a name is missing after '.'").into());
    }
    if name.contains([']', '\'', '"']) {
        return Err(format!("JsonPath '{whole}': '{name}' is not a name").into());
    }
    if name.contains('(') {
        return Err(JsonPathError::Unsupported(format!(
            "JsonPath '{whole}': functions ({name}) are not supported yet"
        )));
    }
    Ok((Step::Names(vec![name.to_owned()]), &r[end..]))
}

/// A `[...]` step: the step and the rest of the path.
fn bracket<'t>(r: &'t str, whole: &str) -> Result<(Step, &'t str), JsonPathError> {
    let inner_start = &r[1..];
    // The closing bracket, outside quotes.
    let mut quote = None;
    let mut close = None;
    for (k, c) in inner_start.char_indices() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), _) if c == q => quote = None,
            (None, ']') => {
                close = Some(k);
                break;
            }
            _ => {}
        }
    }
    let close = close.ok_or_else(|| format!("JsonPath '{whole}': '[' without ']'"))?;
    let inner = inner_start[..close].trim();
    let after = &inner_start[close + 1..];
    if inner == "*" {
        return Ok((Step::Wild, after));
    }
    if inner.starts_with('?') || inner.starts_with('(') {
        return Err(JsonPathError::Unsupported(format!(
            "JsonPath '{whole}': filters and script expressions ([{inner}]) are not supported yet"
        )));
    }
    if inner.starts_with('\'') || inner.starts_with('"') {
        let mut names = Vec::new();
        for part in split_outside_quotes(inner) {
            let p = part.trim();
            let q = p.chars().next().unwrap_or('\'');
            let name = p
                .strip_prefix(q)
                .and_then(|p| p.strip_suffix(q))
                .filter(|_| matches!(q, '\'' | '"'))
                .ok_or_else(|| format!("JsonPath '{whole}': bad name '{p}' in brackets"))?;
            names.push(name.to_owned());
        }
        return Ok((Step::Names(names), after));
    }
    if let Some((from, to)) = inner.split_once(':') {
        let bound = |s: &str| -> Result<Option<i64>, String> {
            let s = s.trim();
            if s.is_empty() {
                return Ok(None);
            }
            s.parse()
                .map(Some)
                .map_err(|_| format!("JsonPath '{whole}': bad slice bound '{s}'"))
        };
        if to.contains(':') {
            return Err(JsonPathError::Unsupported(format!(
                "JsonPath '{whole}': slice steps ([{inner}]) are not supported yet"
            )));
        }
        return Ok((Step::Slice(bound(from)?, bound(to)?), after));
    }
    let ix = inner
        .split(',')
        .map(|s| s.trim().parse::<i64>())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| format!("JsonPath '{whole}': bad index '[{inner}]'"))?;
    Ok((Step::Indexes(ix), after))
}

/// `'a','b'` split at the commas outside quotes.
fn split_outside_quotes(s: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut quote, mut start) = (None, 0);
    for (k, c) in s.char_indices() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), _) if c == q => quote = None,
            (None, ',') => {
                parts.push(&s[start..k]);
                start = k + 1;
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    parts
}

#[cfg(test)]
mod tests {
    use super::JsonPath;
    use serde_json::{json, Value};

    fn sel(path: &str, v: &Value) -> Vec<Value> {
        JsonPath::compile(path)
            .unwrap_or_else(|e| panic!("{path}: {e}"))
            .select(v)
            .into_iter()
            .map(|c| c.into_owned())
            .collect()
    }

    #[test]
    fn the_usual_paths_select_as_jayway_does() {
        let v = json!({
            "order": {"symbol": "IBM", "qty": 3, "tags": ["a", "b", "c"]},
            "orders": [{"symbol": "IBM", "price": 1.5}, {"symbol": "SUN", "price": 2}],
            "odd key": true
        });
        assert_eq!(sel("$", &v), vec![v.clone()]);
        assert_eq!(sel("$.order.symbol", &v), vec![json!("IBM")]);
        assert_eq!(sel("$['order']['qty']", &v), vec![json!(3)]);
        assert_eq!(sel("$[\"odd key\"]", &v), vec![json!(true)]);
        assert_eq!(sel("$.order.tags[1]", &v), vec![json!("b")]);
        assert_eq!(sel("$.order.tags[-1]", &v), vec![json!("c")]);
        assert_eq!(sel("$.order.tags[0,2]", &v), vec![json!("a"), json!("c")]);
        assert_eq!(sel("$.order.tags[1:]", &v), vec![json!("b"), json!("c")]);
        assert_eq!(sel("$.order.tags[:-1]", &v), vec![json!("a"), json!("b")]);
        assert_eq!(sel("$.order.tags[*]", &v).len(), 3);
        assert_eq!(
            sel("$.orders[*].symbol", &v),
            vec![json!("IBM"), json!("SUN")]
        );
        assert_eq!(
            sel("$..symbol", &v),
            vec![json!("IBM"), json!("IBM"), json!("SUN")]
        );
        assert_eq!(sel("$..price", &v), vec![json!(1.5), json!(2)]);
        // Several names last: one object of them (Jayway's merge); elsewhere, each.
        assert_eq!(
            sel("$.order['symbol','qty','none']", &v),
            vec![json!({"symbol": "IBM", "qty": 3})]
        );
        assert_eq!(sel("$['order','orders'].symbol", &v), vec![json!("IBM")]);
        // Both bounds given: neither counts from the end (Jayway).
        assert!(sel("$.order.tags[1:-1]", &v).is_empty());
        assert!(sel("$.nothing.here", &v).is_empty());
        assert!(sel("$.order.tags[7]", &v).is_empty());
        assert!(sel("$.order.symbol.deeper", &v).is_empty());
    }

    #[test]
    fn definite_paths_and_refusals() {
        let d = |p: &str| JsonPath::compile(p).unwrap().is_definite();
        assert!(d("$") && d("$.a.b") && d("$['a'][0]") && d("$.a['b','c']"));
        assert!(!d("$.a[*]") && !d("$..a") && !d("$.a[0,1]") && !d("$.a[1:]"));
        assert!(!d("$['a','b'].c"));
        for bad in [
            "a.b",
            "$.a[?(@.b == 1)]",
            "$.a.length()",
            "$.a[",
            "$.",
            "$a",
            "$.a[x]",
            "$.a]",
        ] {
            assert!(JsonPath::compile(bad).is_err(), "{bad}");
        }
    }
}
