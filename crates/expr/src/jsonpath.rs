//! JsonPath over a JSON message, the subset of Jayway JsonPath (what WSO2 MI's `json-eval()` and
//! `evaluator="json"` arguments use) that integration flows write: `$`, `.name`, `['name']`,
//! `["name"]`, `.*`, `[*]`, `[n]` (negative from the end), `[n,m]`, `['a','b']`, `[from:to]`, and
//! the deep scans `..name`, `..*`, `..[n]`, filters `[?(...)]` (see [`Filter`]), and a function
//! last (`.length()`, `.size()`, `.min()`, `.max()`, `.avg()`, `.stddev()`, `.sum()`, and from later
//! Jayway versions `.keys()`), applied as Jayway 2.4 does: to the value of a definite path, to each
//! match of an indefinite one.
//! Compiled once at load; functions with parameters are refused there with the reason.
//!
//! As in Jayway, a path without a wildcard, deep scan, slice, union or filter is *definite*: it
//! selects at most one value, and a value it does not find is "nothing". An indefinite path
//! selects a list (possibly empty). Several names as the last step (`$.a['b','c']`) select one
//! object of those members (Jayway's merge), so that path is definite too.

use serde_json::Value;
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hash, Hasher};

/// One step of a path.
#[derive(Clone, Debug)]
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
    /// `[?(...)]`: the elements of an array (or an object itself) the filter accepts.
    Filter(Box<Filter>),
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
#[derive(Clone, Debug)]
pub struct JsonPath {
    text: String,
    steps: Vec<Step>,
    /// A function applied to what the steps select (its one result is the path's value).
    func: Option<Func>,
}

/// Jayway's functions without parameters, as a path's last step.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Func {
    /// `length()`, `size()`: the members of an array or an object.
    Length,
    Min,
    Max,
    Avg,
    Stddev,
    Sum,
    /// `keys()`: an object's member names.
    Keys,
}

impl Func {
    fn named(name: &str) -> Option<Func> {
        Some(match name {
            "length" | "size" => Func::Length,
            "min" => Func::Min,
            "max" => Func::Max,
            "avg" => Func::Avg,
            "stddev" => Func::Stddev,
            "sum" => Func::Sum,
            "keys" => Func::Keys,
            _ => return None,
        })
    }

    /// The function of `model` (a value the steps selected), or nothing where Jayway gives null or
    /// fails (WSO2 then gives ""). The numeric ones read the numbers of an array (others are
    /// skipped) and give doubles, as Jayway does; an array without numbers, or no array, fails.
    fn apply(self, model: &Value) -> Option<Value> {
        let numbers = || -> Option<Vec<f64>> {
            let n: Vec<f64> = model.as_array()?.iter().filter_map(Value::as_f64).collect();
            (!n.is_empty()).then_some(n)
        };
        let double = |x: f64| serde_json::Number::from_f64(x).map(Value::Number);
        match self {
            Func::Length => match model {
                Value::Array(a) => Some(Value::from(a.len())),
                Value::Object(m) => Some(Value::from(m.len())),
                _ => None,
            },
            Func::Keys => Some(Value::Array(
                model
                    .as_object()?
                    .keys()
                    .cloned()
                    .map(Value::String)
                    .collect(),
            )),
            Func::Sum => double(numbers()?.iter().sum()),
            Func::Avg => {
                let n = numbers()?;
                double(n.iter().sum::<f64>() / n.len() as f64)
            }
            Func::Stddev => {
                let n = numbers()?;
                let count = n.len() as f64;
                let mean = n.iter().sum::<f64>() / count;
                let square = n.iter().map(|x| x * x).sum::<f64>() / count;
                double((square - mean * mean).max(0.0).sqrt())
            }
            Func::Min => double(numbers()?.into_iter().reduce(f64::min)?),
            Func::Max => double(numbers()?.into_iter().reduce(f64::max)?),
        }
    }
}

impl JsonPath {
    /// Compiles `text` (it starts with `$`); `Err` says what is not supported or not valid.
    pub fn compile(text: &str) -> Result<JsonPath, JsonPathError> {
        let t = text.trim();
        let mut rest = t
            .strip_prefix('$')
            .ok_or_else(|| format!("JsonPath '{t}' does not start with '$'"))?;
        let mut steps = Vec::new();
        let mut func = None;
        while !rest.is_empty() {
            if let Some((name, after)) = rest
                .strip_prefix('.')
                .and_then(|r| r.split_once('('))
                .filter(|(name, _)| name.bytes().all(|b| b.is_ascii_alphanumeric()))
            {
                let Some(f) = Func::named(name) else {
                    return Err(JsonPathError::Unsupported(format!(
                        "JsonPath '{t}': the function {name}() is not supported"
                    )));
                };
                if after.trim() != ")" {
                    return Err(JsonPathError::Unsupported(format!(
                        "JsonPath '{t}': only functions without parameters, last in the path, are supported ({name}({after})"
                    )));
                }
                func = Some(f);
                break;
            }
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
            func,
        })
    }

    /// The path as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether the path selects at most one value (Jayway's "definite" path; a function keeps it
    /// as it is).
    pub fn is_definite(&self) -> bool {
        let last = self.steps.len().saturating_sub(1);
        self.steps.iter().enumerate().all(|(k, s)| match s {
            Step::Names(n) => n.len() == 1 || k == last,
            Step::Indexes(i) => i.len() == 1,
            Step::Slice(..) | Step::Wild | Step::Deep(_) | Step::Filter(_) => false,
        })
    }

    /// The values the path selects in `root`, in document order: borrowed from it, except the
    /// objects a last step of several names makes.
    pub fn select<'v>(&self, root: &'v Value) -> Vec<Cow<'v, Value>> {
        self.select_from(root, root).unwrap_or_default()
    }

    /// What the path selects in `root`, and whether it is one value at most (for its string value):
    /// the path's own answer, or nothing as one value when its function failed (Jayway throws,
    /// and WSO2 gives "" even for an indefinite path).
    pub fn evaluate<'v>(&self, root: &'v Value) -> (Vec<Cow<'v, Value>>, bool) {
        match self.select_from(root, root) {
            Some(found) => (found, self.is_definite()),
            None => (Vec::new(), true),
        }
    }

    /// [`JsonPath::select`] from `start` (a filter's `@`), `root` being `$`; `None` when the
    /// function failed.
    fn select_from<'v>(&self, start: &'v Value, root: &'v Value) -> Option<Vec<Cow<'v, Value>>> {
        let found = self.select_steps_from(start, root);
        let Some(f) = self.func else {
            return Some(found);
        };
        // As Jayway 2.4: the function of each value selected; one that fails fails the whole.
        found.iter().map(|v| f.apply(v).map(Cow::Owned)).collect()
    }

    fn select_steps_from<'v>(&self, start: &'v Value, root: &'v Value) -> Vec<Cow<'v, Value>> {
        let (merge, steps) = match self.steps.split_last() {
            Some((Step::Names(names), init)) if names.len() > 1 => (Some(names), init),
            _ => (None, &self.steps[..]),
        };
        let current = select_steps(steps, start, root);
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

/// `steps` applied from `start` in turn (`root` is what `$` in a filter means).
fn select_steps<'v>(steps: &[Step], start: &'v Value, root: &'v Value) -> Vec<&'v Value> {
    let mut current = vec![start];
    for step in steps {
        let mut next = Vec::new();
        match step {
            Step::Deep(inner) if current.len() > 1 => {
                deep_from_each(inner, &current, root, &mut next)
            }
            _ => {
                for v in current {
                    apply(step, v, root, &mut next);
                }
            }
        }
        current = next;
    }
    current
}

/// `..inner` from each of `starts` in turn, the same values as [`apply`] from each gives, but
/// each node scanned once: where one start lies in another's subtree (`$..a..b` over nested
/// `a`s, `$..*..b`), the matches in its subtree are taken again instead of scanning it again,
/// so the time is linear in the nodes scanned plus the length of the answer (which has the
/// repeats Jayway's has), not their size times their depth.
fn deep_from_each<'v>(
    inner: &Step,
    starts: &[&'v Value],
    root: &'v Value,
    out: &mut Vec<&'v Value>,
) {
    // For each start that has members or elements, once scanned, where its matches are in
    // `found` (a scalar's scan is the step alone: done again, it costs no more).
    let mut spans: Spans = starts
        .iter()
        .filter(|v| matches!(v, Value::Object(_) | Value::Array(_)))
        .map(|&v| (v as *const Value, None))
        .collect();
    let mut found = Vec::new();
    for &v in starts {
        let (a, b) = match spans.get(&(v as *const Value)) {
            Some(&Some(span)) => span,
            _ => scan(inner, v, root, &mut spans, &mut found),
        };
        out.extend_from_slice(&found[a..b]);
    }
}

/// [`deep_from_each`]'s starts, by address.
type Spans = HashMap<*const Value, Option<(usize, usize)>, BuildHasherDefault<AddressHasher>>;

/// Hashes an address with a multiplication (a node's address is unique while the document
/// lives; SipHash would cost more than the rest of the scan).
#[derive(Default)]
struct AddressHasher(u64);

impl Hasher for AddressHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_usize(usize::from(b) ^ self.0 as usize);
        }
    }

    fn write_usize(&mut self, n: usize) {
        // The product's high bits depend on every bit of the address (its low ones are zero):
        // rotated down to where the table takes its index.
        self.0 = (n as u64)
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            .rotate_left(32);
    }
}

/// [`deep_from_each`]'s scan of `v`'s subtree: its matches pushed onto `found`, in document
/// order; returns where they are.
fn scan<'v>(
    inner: &Step,
    v: &'v Value,
    root: &'v Value,
    spans: &mut Spans,
    found: &mut Vec<&'v Value>,
) -> (usize, usize) {
    let a = found.len();
    let start = match v {
        Value::Object(_) | Value::Array(_) => spans.get(&(v as *const Value)).copied(),
        _ => {
            apply(inner, v, root, found);
            return (a, found.len());
        }
    };
    if let Some(Some((from, to))) = start {
        // A start scanned before, inside this subtree: its matches again, where this scan
        // has got to.
        found.extend_from_within(from..to);
        return (a, found.len());
    }
    apply(inner, v, root, found);
    match v {
        Value::Object(m) => m.values().for_each(|c| {
            scan(inner, c, root, spans, found);
        }),
        Value::Array(e) => e.iter().for_each(|c| {
            scan(inner, c, root, spans, found);
        }),
        _ => {}
    }
    let span = (a, found.len());
    if start.is_some() {
        spans.insert(v, Some(span));
    }
    span
}

/// `step` applied to `v`, its results pushed onto `out`.
fn apply<'v>(step: &Step, v: &'v Value, root: &'v Value, out: &mut Vec<&'v Value>) {
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
            apply(inner, v, root, out);
            match v {
                Value::Object(m) => m.values().for_each(|c| apply(step, c, root, out)),
                Value::Array(a) => a.iter().for_each(|c| apply(step, c, root, out)),
                _ => {}
            }
        }
        // As Jayway: an array's elements the filter accepts; an object, itself if it accepts it.
        Step::Filter(f) => match v {
            Value::Array(a) => out.extend(a.iter().filter(|e| f.accepts(e, root))),
            Value::Object(_) if f.accepts(v, root) => out.push(v),
            _ => {}
        },
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
            "JsonPath '{whole}': a function ({name}) is supported only as the last step, after a dot"
        )));
    }
    Ok((Step::Names(vec![name.to_owned()]), &r[end..]))
}

/// A `[...]` step: the step and the rest of the path.
fn bracket<'t>(r: &'t str, whole: &str) -> Result<(Step, &'t str), JsonPathError> {
    let inner_start = &r[1..];
    // The closing bracket, outside quotes, outside a filter's `/regex/` (after `=~`, or before it
    // where an operand starts) and outside the brackets and parentheses of a filter.
    let mut quote = None;
    let mut close = None;
    let mut depth = 0usize;
    let mut escaped = false;
    // The last two characters other than white space, outside quotes.
    let mut prev = [' ', ' '];
    for (k, c) in inner_start.char_indices() {
        if escaped {
            escaped = false;
            continue;
        }
        let regex_start = c == '/' && depth > 0 && (prev == ['=', '~'] || "(&|!".contains(prev[1]));
        if quote.is_none() && !c.is_whitespace() {
            prev = [prev[1], c];
        }
        match (quote, c) {
            (Some(_), '\\') => escaped = true,
            (None, '/') if regex_start => quote = Some('/'),
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), _) if c == q => quote = None,
            (None, '[' | '(') => depth += 1,
            (None, ')') => depth = depth.saturating_sub(1),
            (None, ']') if depth > 0 => depth -= 1,
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
    if let Some(f) = inner.strip_prefix('?') {
        let body = f
            .trim()
            .strip_prefix('(')
            .and_then(|f| f.strip_suffix(')'))
            .ok_or_else(|| format!("JsonPath '{whole}': a filter is written [?(...)]"))?;
        let filter = Filter::parse(body).map_err(|e| e.within(whole))?;
        return Ok((Step::Filter(Box::new(filter)), after));
    }
    if inner.starts_with('(') {
        return Err(JsonPathError::Unsupported(format!(
            "JsonPath '{whole}': script expressions ([{inner}]) are not supported"
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

/// A filter (`[?(...)]`), as Jayway 2.4 (what WSO2 MI ships) evaluates them: comparisons of `@`
/// paths (the element tested), `$` paths and literals (numbers, `'strings'`, `"strings"`, `true`,
/// `false`, `null`, lists, JSON objects), with `==`, `!=`, `===`, `!==`, `<`, `<=`, `>`, `>=`,
/// `=~ /regex/` (a whole-string match; flag `i`), `in`, `nin`, `subsetof`, `contains`, `all`,
/// `size`, `empty` and `exists` (operator names in any case; also `anyof` and `noneof` from later
/// Jayway versions); a path alone tests that it exists, `!` before one that it does not, `!(...)`
/// negates; `&&` binds tighter than `||`; parentheses group. A path that finds nothing is
/// "undefined": every comparison with it is false but `!=`, `!==` and `nin`. As in Jayway, a number
/// equals a string that parses to the same number, and a string a number whose text it is.
#[derive(Clone, Debug)]
pub struct Filter(Node);

#[derive(Clone, Debug)]
enum Node {
    Or(Box<Node>, Box<Node>),
    And(Box<Node>, Box<Node>),
    Not(Box<Node>),
    Exists(Operand),
    Rel(Operand, Op, Operand),
    Match(Operand, regex::Regex),
}

#[derive(Clone, Debug)]
enum Operand {
    /// `@...` (relative) or `$...` (from the root); definite or not.
    Path {
        relative: bool,
        path: JsonPath,
    },
    Lit(Value),
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Op {
    Eq,
    Ne,
    /// `===`, `!==`: equal values of the same type.
    StrictEq,
    StrictNe,
    Contains,
    All,
    /// `exists true|false`.
    ExistsIs,
    Lt,
    Le,
    Gt,
    Ge,
    In,
    Nin,
    SubsetOf,
    AnyOf,
    NoneOf,
    Size,
    Empty,
}

/// A filter's syntax error (the path is added by [`FilterError::within`]).
struct FilterError(String);

impl FilterError {
    fn within(self, whole: &str) -> JsonPathError {
        JsonPathError::Invalid(format!("JsonPath '{whole}': filter: {}", self.0))
    }
}

/// How deep brackets and parentheses may nest in a filter (the parser and the paths inside a
/// filter recurse).
const FILTER_DEPTH: usize = 32;

impl Filter {
    fn parse(text: &str) -> Result<Filter, FilterError> {
        let (mut depth, mut deepest) = (0usize, 0usize);
        for c in text.bytes() {
            match c {
                b'(' | b'[' => {
                    depth += 1;
                    deepest = deepest.max(depth);
                }
                b')' | b']' => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
        if deepest > FILTER_DEPTH {
            return Err(FilterError(format!(
                "brackets and parentheses nest deeper than {FILTER_DEPTH}"
            )));
        }
        let mut p = FilterParser { s: text, at: 0 };
        let node = p.or()?;
        p.ws();
        if p.at != p.s.len() {
            return Err(FilterError(format!("unexpected '{}'", &p.s[p.at..])));
        }
        Ok(Filter(node))
    }

    /// Whether the filter accepts `v` (`@`), `root` being `$`.
    fn accepts(&self, v: &Value, root: &Value) -> bool {
        eval(&self.0, v, root)
    }
}

fn eval(n: &Node, v: &Value, root: &Value) -> bool {
    match n {
        Node::Or(a, b) => eval(a, v, root) || eval(b, v, root),
        Node::And(a, b) => eval(a, v, root) && eval(b, v, root),
        Node::Not(a) => !eval(a, v, root),
        Node::Exists(o) => operand(o, v, root).is_some(),
        // Jayway matches a number or a boolean by its text, anything else as "".
        Node::Match(o, re) => match operand(o, v, root).as_deref() {
            Some(Value::String(s)) => re.is_match(s),
            Some(n @ (Value::Number(_) | Value::Bool(_))) => re.is_match(&n.to_string()),
            _ => re.is_match(""),
        },
        Node::Rel(l, Op::ExistsIs, r) => {
            let found = operand(l, v, root).is_some();
            matches!(operand(r, v, root).as_deref(), Some(Value::Bool(want)) if *want == found)
        }
        Node::Rel(l, op, r) => {
            let (l, r) = (operand(l, v, root), operand(r, v, root));
            let (Some(l), Some(r)) = (l, r) else {
                return matches!(op, Op::Ne | Op::StrictNe | Op::Nin);
            };
            relate(&l, *op, &r)
        }
    }
}

/// An operand's value: a definite path's value (None when it finds nothing), an indefinite path's
/// matches as an array, a literal.
fn operand<'v>(o: &'v Operand, v: &'v Value, root: &'v Value) -> Option<Cow<'v, Value>> {
    match o {
        Operand::Lit(l) => Some(Cow::Borrowed(l)),
        Operand::Path { relative, path } => {
            let start = if *relative { v } else { root };
            let found = path.select_from(start, root)?;
            if path.is_definite() {
                found.into_iter().next()
            } else {
                Some(Cow::Owned(Value::Array(
                    found.into_iter().map(Cow::into_owned).collect(),
                )))
            }
        }
    }
}

/// Two values equal as Jayway compares them: numbers by value; a number and a string that parses
/// to it; a string and a number whose text it is; everything else as JSON.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Number(x), Value::String(y)) => {
            y.trim().parse::<f64>().ok() == x.as_f64() && x.as_f64().is_some()
        }
        (Value::String(x), Value::Number(y)) => *x == y.to_string(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        _ => a == b,
    }
}

/// `===`: equal, and of the same JSON type.
fn strictly_same(a: &Value, b: &Value) -> bool {
    std::mem::discriminant(a) == std::mem::discriminant(b) && same(a, b)
}

fn relate(l: &Value, op: Op, r: &Value) -> bool {
    use std::cmp::Ordering;
    let order = || match (l, r) {
        (Value::Number(x), Value::Number(y)) => x.as_f64()?.partial_cmp(&y.as_f64()?),
        (Value::String(x), Value::String(y)) => Some(x.cmp(y)),
        _ => None,
    };
    let len = |x: &Value| match x {
        Value::Array(a) => Some(a.len()),
        Value::Object(m) => Some(m.len()),
        // Java counts UTF-16 units.
        Value::String(s) => Some(s.encode_utf16().count()),
        _ => None,
    };
    match op {
        Op::Eq => same(l, r),
        Op::Ne => !same(l, r),
        Op::StrictEq => strictly_same(l, r),
        Op::StrictNe => !strictly_same(l, r),
        Op::Contains => match (l, r) {
            (Value::Array(_), _) => within(r, l),
            (Value::String(x), Value::String(y)) => x.contains(y.as_str()),
            _ => false,
        },
        Op::All => match (l, r) {
            (Value::Array(_), Value::Array(want)) => within_each(want, l, true),
            _ => false,
        },
        Op::ExistsIs => false,
        Op::Lt => order() == Some(Ordering::Less),
        Op::Le => matches!(order(), Some(Ordering::Less | Ordering::Equal)),
        Op::Gt => order() == Some(Ordering::Greater),
        Op::Ge => matches!(order(), Some(Ordering::Greater | Ordering::Equal)),
        Op::In => within(l, r),
        Op::Nin => matches!(r, Value::Array(_)) && !within(l, r),
        Op::SubsetOf => matches!(l, Value::Array(a) if within_each(a, r, true)),
        Op::AnyOf => matches!(l, Value::Array(a) if within_each(a, r, false)),
        Op::NoneOf => matches!(l, Value::Array(a) if !within_each(a, r, false)),
        // As Jayway: the size argument taken as a whole number.
        Op::Size => match (l, len(l), r.as_f64()) {
            (Value::Array(_) | Value::String(_), Some(n), Some(want)) => n as f64 == want.trunc(),
            _ => false,
        },
        Op::Empty => match (len(l), r) {
            (Some(n), Value::Bool(want)) => (n == 0) == *want,
            _ => false,
        },
    }
}

/// Whether `set` is an array with an element `x` is [`same`] to.
fn within(x: &Value, set: &Value) -> bool {
    match set {
        Value::Array(a) => a.iter().any(|e| same(x, e)),
        _ => false,
    }
}

/// Below this many elements on either side, or this many pairs, [`within_each`] compares every
/// pair (cheaper than making a [`Members`]).
const FEW_MEMBERS: usize = 8;
const FEW_PAIRS: usize = 256;

/// Whether every one of `xs` (`all`) or some one is [`within`] `set`: with both long (two arrays
/// from the message), through a [`Members`] of `set`, in time linear in their lengths instead of
/// their product.
fn within_each(xs: &[Value], set: &Value, all: bool) -> bool {
    let Value::Array(elements) = set else {
        return all && xs.is_empty();
    };
    let (n, m) = (xs.len(), elements.len());
    if n.min(m) <= FEW_MEMBERS || n.saturating_mul(m) <= FEW_PAIRS {
        return if all {
            xs.iter().all(|x| within(x, set))
        } else {
            xs.iter().any(|x| within(x, set))
        };
    }
    let members = Members::new(elements);
    if all {
        xs.iter().all(|x| members.has(x))
    } else {
        xs.iter().any(|x| members.has(x))
    }
}

/// The elements of an array indexed by what [`same`] compares of them: `has(x)` is
/// `within(x, array)`. [`same`] is not an equivalence (a number is the same as any string that
/// parses to it, a string only as a number that prints as it), so each kind of value `x` can be
/// is looked up by its own key: a number by its value among the numbers and the strings that
/// parse to one; a string by its text among the strings and the numbers' texts; arrays and
/// objects by a hash that [`same`] values share ([`same_hash`]), then compared.
struct Members<'v> {
    /// [`number_key`]s of the numbers, and of the strings that parse (trimmed) to a number.
    numbers: HashSet<u64>,
    /// The strings, and the numbers as they print.
    texts: HashSet<Cow<'v, str>>,
    null: bool,
    /// Whether `false`, `true` is there.
    bools: [bool; 2],
    nested: HashMap<u64, Vec<&'v Value>>,
}

impl<'v> Members<'v> {
    fn new(elements: &'v [Value]) -> Members<'v> {
        let mut m = Members {
            numbers: HashSet::new(),
            texts: HashSet::new(),
            null: false,
            bools: [false; 2],
            nested: HashMap::new(),
        };
        for e in elements {
            match e {
                Value::Null => m.null = true,
                Value::Bool(b) => m.bools[usize::from(*b)] = true,
                Value::Number(n) => {
                    // Always a value: serde_json's `arbitrary_precision` is off.
                    if let Some(f) = n.as_f64() {
                        m.numbers.insert(number_key(f));
                    }
                    m.texts.insert(Cow::Owned(n.to_string()));
                }
                Value::String(s) => {
                    if let Some(f) = numeric(s) {
                        m.numbers.insert(number_key(f));
                    }
                    m.texts.insert(Cow::Borrowed(s));
                }
                Value::Array(_) | Value::Object(_) => {
                    m.nested.entry(same_hash(e)).or_default().push(e);
                }
            }
        }
        m
    }

    fn has(&self, x: &Value) -> bool {
        match x {
            Value::Null => self.null,
            Value::Bool(b) => self.bools[usize::from(*b)],
            Value::Number(n) => n
                .as_f64()
                .is_some_and(|f| self.numbers.contains(&number_key(f))),
            Value::String(s) => self.texts.contains(s.as_str()),
            Value::Array(_) | Value::Object(_) => self
                .nested
                .get(&same_hash(x))
                .is_some_and(|c| c.iter().any(|e| same(x, e))),
        }
    }
}

/// A string's number, as [`same`] parses it for a number it is compared with (NaN equals none).
fn numeric(s: &str) -> Option<f64> {
    s.trim().parse::<f64>().ok().filter(|f| !f.is_nan())
}

/// A number's key: equal numbers (`0.0 == -0.0`), equal keys.
fn number_key(f: f64) -> u64 {
    if f == 0.0 {
        0
    } else {
        f.to_bits()
    }
}

/// A hash that values [`same`] to each other share (within arrays, a number and a string that
/// parses to it hash alike: a string is the same as a number only when it is its text, which
/// parses to it); objects as [`equal_hash`].
fn same_hash(v: &Value) -> u64 {
    fn feed(v: &Value, h: &mut std::collections::hash_map::DefaultHasher) {
        match v {
            Value::Null => 0u8.hash(h),
            Value::Bool(b) => (1u8, b).hash(h),
            Value::Number(n) => (2u8, n.as_f64().map(number_key)).hash(h),
            Value::String(s) => match numeric(s) {
                Some(f) => (2u8, Some(number_key(f))).hash(h),
                None => (3u8, s).hash(h),
            },
            Value::Array(a) => {
                (4u8, a.len()).hash(h);
                a.iter().for_each(|e| feed(e, h));
            }
            Value::Object(_) => (5u8, equal_hash(v)).hash(h),
        }
    }
    let mut h = std::collections::hash_map::DefaultHasher::new();
    feed(v, &mut h);
    h.finish()
}

/// A hash that equal values (serde_json's `==`, what [`same`] uses for objects) share: numbers
/// of the same kind and value, object members in any order.
fn equal_hash(v: &Value) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    match v {
        Value::Null => 0u8.hash(&mut h),
        Value::Bool(b) => (1u8, b).hash(&mut h),
        Value::Number(n) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
            (Some(u), _, _) => (6u8, u).hash(&mut h),
            (None, Some(i), _) => (7u8, i).hash(&mut h),
            (None, None, f) => (8u8, f.map(number_key)).hash(&mut h),
        },
        Value::String(s) => (3u8, s).hash(&mut h),
        Value::Array(a) => {
            (4u8, a.len()).hash(&mut h);
            a.iter().for_each(|e| equal_hash(e).hash(&mut h));
        }
        Value::Object(m) => {
            let members = m.iter().fold(0u64, |sum, (k, e)| {
                let mut one = std::collections::hash_map::DefaultHasher::new();
                (k, equal_hash(e)).hash(&mut one);
                sum.wrapping_add(one.finish())
            });
            (5u8, m.len(), members).hash(&mut h);
        }
    }
    h.finish()
}

struct FilterParser<'s> {
    s: &'s str,
    at: usize,
}

impl<'s> FilterParser<'s> {
    fn rest(&self) -> &'s str {
        &self.s[self.at..]
    }

    fn ws(&mut self) {
        let r = self.rest();
        self.at += r.len() - r.trim_start().len();
    }

    fn eat(&mut self, t: &str) -> bool {
        self.ws();
        if self.rest().starts_with(t) {
            self.at += t.len();
            true
        } else {
            false
        }
    }

    fn or(&mut self) -> Result<Node, FilterError> {
        let mut n = self.and()?;
        while self.eat("||") {
            n = Node::Or(Box::new(n), Box::new(self.and()?));
        }
        Ok(n)
    }

    fn and(&mut self) -> Result<Node, FilterError> {
        let mut n = self.unit()?;
        while self.eat("&&") {
            n = Node::And(Box::new(n), Box::new(self.unit()?));
        }
        Ok(n)
    }

    fn unit(&mut self) -> Result<Node, FilterError> {
        if self.eat("!") {
            self.ws();
            if self.rest().starts_with('(') {
                return Ok(Node::Not(Box::new(self.unit()?)));
            }
            // `!@.x`: the path does not exist. Before a comparison Jayway drops the `!`.
            return match self.unit()? {
                Node::Exists(o) => Ok(Node::Not(Box::new(Node::Exists(o)))),
                other => Ok(other),
            };
        }
        if self.eat("(") {
            let n = self.or()?;
            if !self.eat(")") {
                return Err(FilterError("'(' without ')'".into()));
            }
            return Ok(n);
        }
        self.ws();
        // The pattern may come first: `/regex/ =~ @.x`.
        if self.rest().starts_with('/') {
            let re = self.regex()?;
            if !self.eat("=~") {
                return Err(FilterError("a /regex/ goes with =~".into()));
            }
            return Ok(Node::Match(self.operand()?, re));
        }
        let left = self.operand()?;
        self.ws();
        const SYMBOLS: [(&str, Op); 8] = [
            ("===", Op::StrictEq),
            ("!==", Op::StrictNe),
            ("==", Op::Eq),
            ("!=", Op::Ne),
            ("<=", Op::Le),
            (">=", Op::Ge),
            ("<", Op::Lt),
            (">", Op::Gt),
        ];
        const WORDS: [(&str, Op); 10] = [
            ("nin", Op::Nin),
            ("in", Op::In),
            ("subsetof", Op::SubsetOf),
            ("anyof", Op::AnyOf),
            ("noneof", Op::NoneOf),
            ("contains", Op::Contains),
            ("all", Op::All),
            ("size", Op::Size),
            ("empty", Op::Empty),
            ("exists", Op::ExistsIs),
        ];
        if self.eat("=~") {
            if self.rest().trim_start().starts_with('/') {
                return Ok(Node::Match(left, self.regex()?));
            }
            return Err(FilterError("=~ takes a /regex/".into()));
        }
        for (t, op) in SYMBOLS {
            if self.eat(t) {
                let right = self.operand()?;
                return Ok(Node::Rel(left, op, right));
            }
        }
        // Operator words, in any case, followed by white space.
        let r = self.rest();
        let word_len = r
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(r.len());
        let word = &r[..word_len];
        if !word.is_empty() && r[word_len..].starts_with(' ') {
            match WORDS.iter().find(|(w, _)| w.eq_ignore_ascii_case(word)) {
                Some((_, op)) => {
                    self.at += word_len;
                    let right = self.operand()?;
                    return Ok(Node::Rel(left, *op, right));
                }
                None => return Err(FilterError(format!("unknown operator '{word}'"))),
            }
        }
        match left {
            Operand::Path { .. } => Ok(Node::Exists(left)),
            Operand::Lit(_) => Err(FilterError(format!(
                "a literal needs a comparison at '{}'",
                self.rest()
            ))),
        }
    }

    /// `/pattern/` with an optional `i`: matched against the whole string, as Java's `matches`.
    fn regex(&mut self) -> Result<regex::Regex, FilterError> {
        self.ws();
        let r = self.rest();
        let body = r
            .strip_prefix('/')
            .ok_or_else(|| FilterError("=~ takes a /regex/".into()))?;
        let end = body
            .char_indices()
            .scan(false, |escaped, (k, c)| {
                let hit = !*escaped && c == '/';
                *escaped = !*escaped && c == '\\';
                Some((k, hit))
            })
            .find(|&(_, hit)| hit)
            .map(|(k, _)| k)
            .ok_or_else(|| FilterError("a /regex/ without its closing '/'".into()))?;
        let pattern = &body[..end];
        let mut used = 1 + end + 1;
        let insensitive = body[end + 1..].starts_with('i');
        if insensitive {
            used += 1;
        }
        let re = regex::RegexBuilder::new(&format!("^(?:{})$", crate::java_dots(pattern)))
            .case_insensitive(insensitive)
            .size_limit(1 << 20)
            .build()
            .map_err(|e| FilterError(format!("/{pattern}/: {e}")))?;
        self.at += used;
        Ok(re)
    }

    fn operand(&mut self) -> Result<Operand, FilterError> {
        self.ws();
        let r = self.rest();
        let first = r
            .chars()
            .next()
            .ok_or_else(|| FilterError("an operand is missing".into()))?;
        if first == '@' || first == '$' {
            // The path runs to white space or an operator, outside its brackets and quotes.
            let (mut depth, mut quote, mut end) = (0usize, None, r.len());
            for (k, c) in r.char_indices().skip(1) {
                match (quote, c) {
                    (None, '\'' | '"') => quote = Some(c),
                    (Some(q), _) if c == q => quote = None,
                    (Some(_), _) => {}
                    (None, '[' | '(') => depth += 1,
                    (None, ']') => depth = depth.saturating_sub(1),
                    (None, ')') if depth > 0 => depth -= 1,
                    (None, c) if depth == 0 && (c.is_whitespace() || "=!<>&|)~".contains(c)) => {
                        end = k;
                        break;
                    }
                    _ => {}
                }
            }
            let text = format!("${}", &r[1..end]);
            let path = JsonPath::compile(&text).map_err(|e| FilterError(e.to_string()))?;
            self.at += end;
            return Ok(Operand::Path {
                relative: first == '@',
                path,
            });
        }
        if first == '\'' || first == '"' {
            // To the closing quote that no backslash escapes; `\'` and `\"` stand for the quote.
            let body = &r[1..];
            let mut escaped = false;
            let end = body
                .char_indices()
                .find(|&(_, c)| {
                    let close = !escaped && c == first;
                    escaped = !escaped && c == '\\';
                    close
                })
                .map(|(k, _)| k)
                .ok_or_else(|| FilterError("a string without its closing quote".into()))?;
            self.at += end + 2;
            let text = &body[..end];
            let value = if first == '"' {
                serde_json::from_str::<String>(&format!("\"{text}\""))
                    .unwrap_or_else(|_| text.to_owned())
            } else {
                text.replace("\\'", "'")
            };
            return Ok(Operand::Lit(Value::String(value)));
        }
        if first == '-' || first == '.' || first.is_ascii_digit() {
            // As Jayway: digits, '-' and '.' (so `.5` and `007` are numbers, `1e3` is not).
            let end = r
                .find(|c: char| !(c.is_ascii_digit() || c == '-' || c == '.'))
                .unwrap_or(r.len());
            let text = &r[..end];
            let n = match text.parse::<i64>() {
                Ok(i) => serde_json::Number::from(i),
                Err(_) => text
                    .parse::<f64>()
                    .ok()
                    .and_then(serde_json::Number::from_f64)
                    .ok_or_else(|| FilterError(format!("not a number: '{text}'")))?,
            };
            self.at += end;
            return Ok(Operand::Lit(Value::Number(n)));
        }
        for (word, value) in [
            ("true", Value::Bool(true)),
            ("false", Value::Bool(false)),
            ("null", Value::Null),
        ] {
            if r.starts_with(word)
                && !r[word.len()..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
            {
                self.at += word.len();
                return Ok(Operand::Lit(value));
            }
        }
        if first == '[' {
            // A list of literals, whose strings may be quoted either way (Jayway is lenient).
            self.at += 1;
            let mut items = Vec::new();
            if !self.eat("]") {
                loop {
                    match self.operand()? {
                        Operand::Lit(v) => items.push(v),
                        Operand::Path { .. } => {
                            return Err(FilterError("a path inside a list".into()))
                        }
                    }
                    if self.eat("]") {
                        break;
                    }
                    if !self.eat(",") {
                        return Err(FilterError("a list without its closing ']'".into()));
                    }
                }
            }
            return Ok(Operand::Lit(Value::Array(items)));
        }
        // A JSON object: the longest prefix that parses as one.
        let mut de = serde_json::Deserializer::from_str(r).into_iter::<Value>();
        match de.next() {
            Some(Ok(v)) => {
                self.at += de.byte_offset();
                Ok(Operand::Lit(v))
            }
            _ => Err(FilterError(format!("not an operand: '{r}'"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{relate, same, strictly_same, JsonPath, Op, Step};
    use crate::testing::{mutate, Rng};
    use serde_json::{json, Value};
    use std::borrow::Cow;

    fn sel(path: &str, v: &Value) -> Vec<Value> {
        JsonPath::compile(path)
            .unwrap_or_else(|e| panic!("{path}: {e}"))
            .select(v)
            .into_iter()
            .map(|c| c.into_owned())
            .collect()
    }

    /// Where the values `path` selects in `v` are.
    fn sel_refs(path: &str, v: &Value) -> Vec<*const Value> {
        JsonPath::compile(path)
            .unwrap()
            .select(v)
            .iter()
            .map(|c| &**c as *const Value)
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
        assert!(!d("$.a[?(@.b)]"));
        for bad in [
            "a.b",
            "$.a[?(@.b == )]",
            "$.a[?@.b]",
            "$.a[?(@.b =~ /x)]",
            "$.a[?(@.b == 1 &&)]",
            "$.a[?('x')]",
            "$.a[?(@.b fancy 1)]",
            "$.a[?(@.b == 1e3)]",
            "$.a[?(/x/)]",
            "$.a[?((@.b == 1)]",
            "$.a[(@.length-1)]",
            "$.a.concat('x')",
            "$.a.length().b",
            "$.a.nope()",
            &format!("$.a[?({}@.b{})]", "(".repeat(40), ")".repeat(40)),
            "$.a[",
            "$.",
            "$a",
            "$.a[x]",
            "$.a]",
        ] {
            assert!(JsonPath::compile(bad).is_err(), "{bad}");
        }
    }

    /// The document the filter tests select from.
    fn filter_doc() -> Value {
        json!({
            "limit": 2,
            "order": {"symbol": "IBM", "qty": 3, "tags": ["a", "b", "c"]},
            "orders": [
                {"symbol": "IBM", "price": 1.5, "tags": ["a", "x"]},
                {"symbol": "SUN", "price": 2, "tags": []},
                {"symbol": "MSFT", "price": 2.5, "note": null}
            ]
        })
    }

    #[test]
    fn filters_compare_as_jayway_does() {
        let v = filter_doc();
        let symbols = |p: &str| -> Vec<Value> {
            sel(p, &v)
                .into_iter()
                .map(|o| o["symbol"].clone())
                .collect()
        };
        assert_eq!(
            symbols("$.orders[?(@.price > 1.6)]"),
            [json!("SUN"), json!("MSFT")]
        );
        assert_eq!(symbols("$.orders[?(@.price == 2.0)]"), [json!("SUN")]);
        assert_eq!(
            sel("$.orders[?(@.symbol == 'IBM')].price", &v),
            [json!(1.5)]
        );
        assert_eq!(
            sel("$.orders[?(@.symbol == \"SUN\")].price", &v),
            [json!(2)]
        );
        assert_eq!(symbols("$.orders[?(@.symbol != 'IBM')]").len(), 2);
        // A path that finds nothing: only != holds.
        assert_eq!(symbols("$.orders[?(@.missing != 'x')]").len(), 3);
        assert!(sel("$.orders[?(@.missing == null)]", &v).is_empty());
        assert_eq!(symbols("$.orders[?(@.note == null)]"), [json!("MSFT")]);
        // A path alone: it exists (null counts).
        assert_eq!(symbols("$.orders[?(@.note)]"), [json!("MSFT")]);
        assert!(sel("$.orders[?(@.nope)]", &v).is_empty());
        // A number equals a string that parses to it, and a string the number's text (Jayway);
        // order is only between numbers or between strings.
        assert_eq!(symbols("$.orders[?(@.price == '2')]"), [json!("SUN")]);
        assert_eq!(symbols("$.orders[?(@.price == '2.00')]"), [json!("SUN")]);
        assert_eq!(symbols("$.orders[?(@.price in ['2'])]"), [json!("SUN")]);
        assert_eq!(symbols("$.orders[?('1.5' == @.price)]"), [json!("IBM")]);
        assert!(sel("$.orders[?(@.price === '2')]", &v).is_empty());
        assert_eq!(symbols("$.orders[?(@.price === 2)]"), [json!("SUN")]);
        assert_eq!(symbols("$.orders[?(@.price !== 2)]").len(), 2);
        assert!(sel("$.orders[?(@.symbol < 3)]", &v).is_empty());
        assert_eq!(symbols("$.orders[?(@.symbol < 'J')]"), [json!("IBM")]);
        // Regexes match whole strings; `i` ignores case; numbers by their text, a missing value
        // as ""; the pattern may come first.
        assert_eq!(symbols("$.orders[?(@.symbol =~ /i.m/i)]"), [json!("IBM")]);
        assert_eq!(
            symbols("$.orders[?(@.price =~ /\\d\\.\\d/)]"),
            [json!("IBM"), json!("MSFT")]
        );
        assert_eq!(symbols("$.orders[?(@.missing =~ /.*/)]").len(), 3);
        assert_eq!(symbols("$.orders[?(/S.*/ =~ @.symbol)]"), [json!("SUN")]);
        // A regex holding brackets, parentheses and quotes.
        assert_eq!(
            symbols("$.orders[?(@.symbol =~ /[A-I]]*B(M)'?/)]"),
            [json!("IBM")]
        );
        assert_eq!(
            symbols("$.orders[?(@.symbol =~ /.*[)].*/ || @.price == 2)]"),
            [json!("SUN")]
        );
        assert!(sel("$.orders[?(@.symbol =~ /B/)]", &v).is_empty());
        assert_eq!(
            symbols("$.orders[?(@.symbol =~ /.*S.*/)]"),
            [json!("SUN"), json!("MSFT")]
        );
    }

    #[test]
    fn filters_select_sets_and_logic_as_jayway_does() {
        let v = filter_doc();
        let symbols = |p: &str| -> Vec<Value> {
            sel(p, &v)
                .into_iter()
                .map(|o| o["symbol"].clone())
                .collect()
        };
        // Sets, sizes.
        assert_eq!(
            symbols("$.orders[?(@.symbol in ['SUN','X'])]"),
            [json!("SUN")]
        );
        assert_eq!(symbols("$.orders[?(@.symbol nin ['SUN','X'])]").len(), 2);
        assert_eq!(
            symbols("$.orders[?(@.tags subsetof ['a','x','y'])]"),
            [json!("IBM"), json!("SUN")]
        );
        assert_eq!(symbols("$.orders[?(@.tags anyof ['x'])]"), [json!("IBM")]);
        assert_eq!(symbols("$.orders[?(@.tags noneof ['x'])]"), [json!("SUN")]);
        assert_eq!(symbols("$.orders[?(@.tags size 2)]"), [json!("IBM")]);
        assert_eq!(symbols("$.orders[?(@.symbol size 4)]"), [json!("MSFT")]);
        assert_eq!(symbols("$.orders[?(@.tags empty true)]"), [json!("SUN")]);
        assert_eq!(symbols("$.orders[?(@.tags contains 'x')]"), [json!("IBM")]);
        assert_eq!(
            symbols("$.orders[?(@.symbol contains 'SF')]"),
            [json!("MSFT")]
        );
        assert_eq!(
            symbols("$.orders[?(@.tags all ['x', 'a'])]"),
            [json!("IBM")]
        );
        assert_eq!(symbols("$.orders[?(@.note exists true)]"), [json!("MSFT")]);
        assert_eq!(symbols("$.orders[?(@.note EXISTS false)]").len(), 2);
        assert_eq!(sel("$[?(@.order empty false)].limit", &v), [json!(2)]);
        // A missing value: nin holds, as !=.
        assert_eq!(symbols("$.orders[?(@.missing nin ['x'])]").len(), 3);
        // Negation; numbers and keywords right before `)`, `&&`, `||`; no spaces.
        assert_eq!(symbols("$.orders[?(!@.note)]").len(), 2);
        assert_eq!(symbols("$.orders[?(!(@.price > 1.6))]"), [json!("IBM")]);
        assert_eq!(
            symbols("$.orders[?(@.price == 1.5 || (@.price == 2))]"),
            [json!("IBM"), json!("SUN")]
        );
        assert_eq!(
            symbols("$.orders[?((@.price > 2) && @.note == null)]"),
            [json!("MSFT")]
        );
        assert_eq!(
            symbols("$.orders[?(@.price<2&&@.symbol=='IBM')]"),
            [json!("IBM")]
        );
        assert_eq!(
            symbols("$.orders[?(@.price > .5 && @.price < 002)]"),
            [json!("IBM")]
        );
        assert_eq!(
            symbols("$.orders[?(@.symbol == 'IB\\'M' || @.symbol == \"SU\\u004E\")]"),
            [json!("SUN")]
        );
        // && binds tighter than ||; parentheses group.
        assert_eq!(
            symbols("$.orders[?(@.price >= 2 && @.symbol == 'SUN' || @.symbol == 'IBM')]"),
            [json!("IBM"), json!("SUN")]
        );
        assert_eq!(
            symbols("$.orders[?((@.price >= 2 || @.symbol == 'IBM') && @.price < 2)]"),
            [json!("IBM")]
        );
        // `$` is the document; brackets inside a filter; `@` alone is the element.
        assert_eq!(symbols("$.orders[?(@.price < $.limit)]"), [json!("IBM")]);
        assert_eq!(symbols("$.orders[?(@.tags[0] == 'a')]"), [json!("IBM")]);
        assert_eq!(symbols("$.orders[?(@['symbol'] == 'SUN')]"), [json!("SUN")]);
        assert_eq!(sel("$.order.tags[?(@ == 'b')]", &v), [json!("b")]);
        // On an object, the object itself when it passes; deep scans filter at every level.
        assert_eq!(sel("$.order[?(@.qty == 3)].symbol", &v), [json!("IBM")]);
        assert!(sel("$.order[?(@.qty == 4)]", &v).is_empty());
        assert_eq!(sel("$..orders[?(@.price == 2)].symbol", &v), [json!("SUN")]);
        assert_eq!(sel("$..[?(@.symbol == 'IBM')].qty", &v), [json!(3)]);
    }

    #[test]
    fn functions_last_in_a_path() {
        let v = json!({
            "prices": [1, 2.5, "x", 4],
            "empty": [],
            "scores": [1, 3],
            "order": {"symbol": "IBM", "qty": 3},
            "orders": [{"p": 1, "tags": ["a"]}, {"p": 3, "tags": ["a", "b"]}]
        });
        let one = |p: &str| -> Value {
            let c = JsonPath::compile(p).unwrap_or_else(|e| panic!("{p}: {e}"));
            assert!(c.is_definite(), "{p}");
            let mut found = c.select(&v);
            assert_eq!(found.len(), 1, "{p}");
            found.remove(0).into_owned()
        };
        assert_eq!(one("$.prices.length()"), json!(4));
        assert_eq!(one("$.order.size()"), json!(2));
        assert_eq!(one("$.prices.sum()"), json!(7.5));
        assert_eq!(one("$.prices.min()"), json!(1.0));
        assert_eq!(one("$.prices.max()"), json!(4.0));
        assert_eq!(one("$.prices.avg()"), json!(2.5));
        assert_eq!(one("$.order.keys()"), json!(["symbol", "qty"]));
        let sd = one("$.scores.stddev()").as_f64().unwrap();
        assert!((sd - 1.0).abs() < 1e-12, "{sd}");
        // After an indefinite path, the function of each match (the path stays indefinite); one
        // that fails (a number has no sum) fails the whole, as in Jayway 2.4.
        let c = JsonPath::compile("$.orders[*].tags.length()").unwrap();
        assert!(!c.is_definite());
        assert_eq!(sel("$.orders[*].tags.length()", &v), [json!(1), json!(2)]);
        assert!(sel("$.orders[*].p.sum()", &v).is_empty());
        assert!(sel("$..p.max()", &v).is_empty());
        // Nothing where Jayway gives null or fails: no numbers, no array.
        assert!(sel("$.order.symbol.length()", &v).is_empty());
        assert!(sel("$.empty.min()", &v).is_empty());
        assert!(sel("$.empty.avg()", &v).is_empty());
        assert!(sel("$.empty.sum()", &v).is_empty());
        assert!(sel("$.order.sum()", &v).is_empty());
        assert!(sel("$.nothing.length()", &v).is_empty());
        // In a filter.
        assert_eq!(sel("$.orders[?(@.tags.length() > 1)].p", &v), [json!(3)]);
    }

    /// [`relate`] as it was before [`super::within_each`]: every pair compared, the reference
    /// for `within_each_answers_as_every_pair_compared`.
    fn old_relate(l: &Value, op: Op, r: &Value) -> bool {
        use std::cmp::Ordering;
        let order = || match (l, r) {
            (Value::Number(x), Value::Number(y)) => x.as_f64()?.partial_cmp(&y.as_f64()?),
            (Value::String(x), Value::String(y)) => Some(x.cmp(y)),
            _ => None,
        };
        let within = |x: &Value, set: &Value| match set {
            Value::Array(a) => a.iter().any(|e| same(x, e)),
            _ => false,
        };
        let len = |x: &Value| match x {
            Value::Array(a) => Some(a.len()),
            Value::Object(m) => Some(m.len()),
            // Java counts UTF-16 units.
            Value::String(s) => Some(s.encode_utf16().count()),
            _ => None,
        };
        match op {
            Op::Eq => same(l, r),
            Op::Ne => !same(l, r),
            Op::StrictEq => strictly_same(l, r),
            Op::StrictNe => !strictly_same(l, r),
            Op::Contains => match (l, r) {
                (Value::Array(_), _) => within(r, l),
                (Value::String(x), Value::String(y)) => x.contains(y.as_str()),
                _ => false,
            },
            Op::All => match (l, r) {
                (Value::Array(_), Value::Array(want)) => want.iter().all(|w| within(w, l)),
                _ => false,
            },
            Op::ExistsIs => false,
            Op::Lt => order() == Some(Ordering::Less),
            Op::Le => matches!(order(), Some(Ordering::Less | Ordering::Equal)),
            Op::Gt => order() == Some(Ordering::Greater),
            Op::Ge => matches!(order(), Some(Ordering::Greater | Ordering::Equal)),
            Op::In => within(l, r),
            Op::Nin => matches!(r, Value::Array(_)) && !within(l, r),
            Op::SubsetOf => matches!(l, Value::Array(a) if a.iter().all(|e| within(e, r))),
            Op::AnyOf => matches!(l, Value::Array(a) if a.iter().any(|e| within(e, r))),
            Op::NoneOf => matches!(l, Value::Array(a) if !a.iter().any(|e| within(e, r))),
            // As Jayway: the size argument taken as a whole number.
            Op::Size => match (l, len(l), r.as_f64()) {
                (Value::Array(_) | Value::String(_), Some(n), Some(want)) => {
                    n as f64 == want.trunc()
                }
                _ => false,
            },
            Op::Empty => match (len(l), r) {
                (Some(n), Value::Bool(want)) => (n == 0) == *want,
                _ => false,
            },
        }
    }

    /// Numbers of every kind serde_json keeps (unsigned, negative, floating, `-0.0`, past 2^53),
    /// strings that parse to them or nearly (white space, `+`, exponents, `inf`, `NaN`, their
    /// printed texts), and the rest: where `same` is not plain equality.
    const NUMBERS: &[&str] = &[
        "0",
        "-0",
        "0.0",
        "-0.0",
        "1",
        "1.0",
        "1e0",
        "10",
        "-1",
        "-1.0",
        "0.1",
        "0.30000000000000004",
        "1.5",
        "2",
        "9007199254740992",
        "9007199254740993",
        "18446744073709551615",
        "-9223372036854775808",
        "1e21",
        "1e300",
    ];
    const STRINGS: &[&str] = &[
        "1",
        "1.0",
        " 1 ",
        "01",
        "1e0",
        "+1",
        "-0",
        "0",
        "0.0",
        "-0.0",
        "inf",
        "NaN",
        "nan",
        "abc",
        "",
        "true",
        "null",
        "1.5",
        "2",
        " 2",
        "\t2\n",
        "0.1",
        "9007199254740992",
        "9007199254740993",
        "18446744073709551615",
        "1e21",
        "1e+21",
        "1e300",
        "\u{e9}",
    ];

    fn gen_value(r: &mut Rng, depth: usize) -> Value {
        match r.below(if depth < 2 { 12 } else { 9 }) {
            0..=2 => serde_json::from_str(NUMBERS[r.below(NUMBERS.len())]).unwrap(),
            3..=5 => json!(STRINGS[r.below(STRINGS.len())]),
            6 => json!(r.below(2) == 0),
            7 => Value::Null,
            8 => json!(format!("s{}", r.below(40))),
            9 | 10 => Value::Array((0..r.below(4)).map(|_| gen_value(r, depth + 1)).collect()),
            _ => {
                // Members in either order, so that equal objects differ in order.
                let mut members: Vec<(String, Value)> = (0..r.below(3))
                    .map(|_| {
                        (
                            ["a", "b", "c"][r.below(3)].to_owned(),
                            gen_value(r, depth + 1),
                        )
                    })
                    .collect();
                members.dedup_by(|x, y| x.0 == y.0);
                if r.below(2) == 0 {
                    members.reverse();
                }
                Value::Object(members.into_iter().collect())
            }
        }
    }

    /// An array of up to `max` values, half the time drawn from `pool` (so that both sides share
    /// values, spelled alike or not).
    fn gen_array(r: &mut Rng, pool: &[Value], max: usize) -> Vec<Value> {
        (0..r.below(max + 1))
            .map(|_| match r.below(2) {
                0 if !pool.is_empty() => pool[r.below(pool.len())].clone(),
                _ => gen_value(r, 0),
            })
            .collect()
    }

    /// The operators that look values up in an array (`in`, `nin`, `contains`, `all`,
    /// `subsetof`, `anyof`, `noneof`), on generated arrays of numbers, strings, booleans, nulls,
    /// objects and arrays, short and long (compared pair by pair, or through an index), answer
    /// as every pair compared with `same` did.
    #[test]
    fn within_each_answers_as_every_pair_compared() {
        let mut r = Rng(0x3c6e_f372_fe94_f82b);
        let ops = [
            Op::In,
            Op::Nin,
            Op::Contains,
            Op::All,
            Op::SubsetOf,
            Op::AnyOf,
            Op::NoneOf,
        ];
        // Per operator: answers true, false; pairs of arrays both long enough for an index.
        let mut seen = [(0, 0); 7];
        let mut indexed = 0;
        for round in 0..3000 {
            let max = [4, 12, 40, 120][round % 4];
            let pool: Vec<Value> = (0..1 + r.below(30)).map(|_| gen_value(&mut r, 0)).collect();
            let (a, b) = (gen_array(&mut r, &pool, max), gen_array(&mut r, &pool, max));
            if a.len().min(b.len()) > super::FEW_MEMBERS && a.len() * b.len() > super::FEW_PAIRS {
                indexed += 1;
            }
            // One side a subset of the other now and then: `all`, `subsetof` hold.
            let sub: Vec<Value> = b.iter().filter(|_| r.below(3) == 0).cloned().collect();
            let x = gen_value(&mut r, 0);
            let (a, b, sub) = (Value::Array(a), Value::Array(b), Value::Array(sub));
            for (k, &op) in ops.iter().enumerate() {
                for (l, rt) in [
                    (&a, &b),
                    (&sub, &b),
                    (&b, &sub),
                    (&x, &b),
                    (&a, &x),
                    (&x, &x),
                ] {
                    let want = old_relate(l, op, rt);
                    assert_eq!(relate(l, op, rt), want, "{op:?}\n{l}\n{rt}");
                    if want {
                        seen[k].0 += 1;
                    } else {
                        seen[k].1 += 1;
                    }
                }
            }
        }
        eprintln!("{indexed} of 3000 pairs indexed; (true, false) per operator: {seen:?}");
        assert!(indexed >= 1000, "{indexed} pairs indexed");
        for (k, (t, f)) in seen.iter().enumerate() {
            assert!(*t >= 500 && *f >= 500, "{:?}: {t} true, {f} false", ops[k]);
        }
        // Each kind of value found through the index, spelled otherwise: a number through a
        // string that parses to it, a string through a number that prints as it, `-0.0` as
        // `0`, objects in another order, arrays of those.
        // `v` after 40 strings of its own (`pad` apart: the probes' and the set's differ).
        let long = |pad: &str, v: Value| {
            let mut a: Vec<Value> = (0..40).map(|k| json!(format!("{pad}{k}"))).collect();
            a.push(v);
            Value::Array(a)
        };
        for (x, set) in [
            (json!(1), json!(" 1.0 ")),
            (json!("1.0"), json!(1.0)),
            (json!(0), serde_json::from_str::<Value>("-0.0").unwrap()),
            (json!({"a": 1, "b": [2]}), json!({"b": [2], "a": 1})),
            (json!([1, "2", {"c": null}]), json!(["1", 2, {"c": null}])),
        ] {
            let (probes, set) = (long("p", x), long("s", set));
            assert!(relate(&probes, Op::AnyOf, &set), "{probes} {set}");
            assert!(old_relate(&probes, Op::AnyOf, &set));
        }
        // And what differs only in spelling is not: "1.0" is no "1", 1 no 1.0 inside an object.
        for (x, set) in [
            (json!("1.0"), json!("1")),
            (json!({"a": 1}), json!({"a": 1.0})),
            (json!(["1.0"]), json!([1])),
        ] {
            let (probes, set) = (long("p", x), long("s", set));
            assert!(!relate(&probes, Op::AnyOf, &set), "{probes} {set}");
            assert!(!old_relate(&probes, Op::AnyOf, &set));
        }
    }

    /// A deep scan from many values at once (`$..a..b`, `$..*..b`, a value twice) selects what
    /// the scan from each in turn selects, in the same order and as often (Jayway repeats a match
    /// under nested starts), on generated nested documents.
    #[test]
    fn deep_scans_from_many_starts_select_as_from_each() {
        fn gen_doc(r: &mut Rng, depth: usize) -> Value {
            let leaf = |r: &mut Rng| match r.below(3) {
                0 => json!(r.below(5)),
                1 => json!(["x", "y"][r.below(2)]),
                _ => Value::Null,
            };
            if depth >= 6 || r.below(5) == 0 {
                return leaf(r);
            }
            if r.below(3) == 0 {
                Value::Array((0..r.below(4)).map(|_| gen_doc(r, depth + 1)).collect())
            } else {
                let mut m = serde_json::Map::new();
                for _ in 0..r.below(4) {
                    m.insert(
                        ["a", "b", "c"][r.below(3)].to_owned(),
                        gen_doc(r, depth + 1),
                    );
                }
                Value::Object(m)
            }
        }
        let cases = [
            ("$..a", "..b"),
            ("$..a", "..a"),
            ("$..*", "..b"),
            ("$..*", "..*"),
            ("$..a", "..[0]"),
            ("$..[*]", "..a"),
            ("$..a", "..[?(@.b)]"),
            ("$..[0,0]", "..b"),
            ("$..a[0,0,-1]", "..c"),
            ("$..b", "..*"),
        ];
        let mut r = Rng(0xbb67_ae85_84ca_a73b);
        let (mut many, mut nested) = (0, 0);
        for _ in 0..300 {
            let doc = gen_doc(&mut r, 0);
            for (first, then) in cases {
                let starts = JsonPath::compile(first).unwrap().select(&doc);
                let whole = sel(&format!("{first}{then}"), &doc);
                // From each start alone (one start: the scan as it always was).
                let each = JsonPath::compile(&format!("${then}")).unwrap();
                let mut want = Vec::new();
                for v in &starts {
                    want.extend(each.select(v).into_iter().map(|c| c.into_owned()));
                }
                assert_eq!(whole, want, "{first}{then} on {doc}");
                many += usize::from(starts.len() > 1);
                // A start below another (found again, not scanned again).
                let below: std::collections::HashSet<*const Value> =
                    starts.iter().flat_map(|v| sel_refs("$..*", v)).collect();
                nested += usize::from(
                    starts
                        .iter()
                        .any(|v| below.contains(&(&**v as *const Value))),
                );
            }
        }
        // Paths list a start before those below it; in the other order (and with repeats), the
        // matches below a start scanned first are taken again inside the later scan.
        for _ in 0..300 {
            let doc = gen_doc(&mut r, 0);
            let mut starts: Vec<&Value> = JsonPath::compile("$..*")
                .unwrap()
                .select(&doc)
                .into_iter()
                .map(|c| match c {
                    Cow::Borrowed(v) => v,
                    Cow::Owned(_) => unreachable!(),
                })
                .collect();
            starts.reverse();
            let again: Vec<&Value> = starts.iter().step_by(3).copied().collect();
            starts.extend(again);
            for inner in [
                Step::Names(vec!["b".into()]),
                Step::Wild,
                Step::Indexes(vec![0]),
            ] {
                let mut got = Vec::new();
                super::deep_from_each(&inner, &starts, &doc, &mut got);
                let (deep, mut want) = (Step::Deep(Box::new(inner)), Vec::new());
                for v in &starts {
                    super::apply(&deep, v, &doc, &mut want);
                }
                assert_eq!(got, want, "{doc}");
            }
        }
        eprintln!("{many} with many starts, {nested} with a start below another");
        assert!(
            many >= 1000 && nested >= 500,
            "{many} with many starts, {nested} nested"
        );
    }

    /// Documents that made membership filters and nested deep scans cost the product of their
    /// sizes: how long each path takes (a measurement to read, not an assertion; run with
    /// `--ignored --nocapture`).
    #[test]
    #[ignore]
    fn adversarial_sizes_timings() {
        use std::time::Instant;
        for n in [1_000usize, 4_000, 16_000] {
            // Two long arrays from the message, of strings, numbers and numeric strings: one
            // item's tags all allowed but found last (the allowed list reversed), the other's
            // none allowed (every probe a miss).
            let allowed: Vec<Value> = (0..n)
                .map(|k| match k % 3 {
                    0 => json!(format!("s{k}")),
                    1 => json!(k),
                    _ => json!(format!("{k}.5")),
                })
                .collect();
            let hits: Vec<Value> = allowed.iter().rev().cloned().collect();
            let misses: Vec<Value> = (0..n)
                .map(|k| match k % 2 {
                    0 => json!(format!("t{k}")),
                    _ => json!(k as f64 + 0.25),
                })
                .collect();
            let doc =
                json!({"allowed": allowed, "hits": [{"tags": hits}], "misses": [{"tags": misses}]});
            for (op, items) in [
                ("subsetof", "hits"),
                ("all", "hits"),
                ("anyof", "misses"),
                ("noneof", "misses"),
            ] {
                let path = format!("$.{items}[?(@.tags {op} $.allowed)]");
                let p = JsonPath::compile(&path).unwrap();
                let t = Instant::now();
                let found = p.select(&doc).len();
                eprintln!("{op:>8} n={n:>6}: {:>9.1?} ({found})", t.elapsed());
            }
        }
        // `..a..b` over `a`s nested `depth` deep, each level with `width` other members: every
        // `a` scanned again from each `a` above it (as often as there are `a`s above it).
        for (depth, width) in [(50usize, 100usize), (100, 100), (100, 1_000)] {
            let mut v = json!({"b": 1});
            for level in 0..depth {
                let mut m = serde_json::Map::new();
                for k in 0..width {
                    m.insert(format!("x{k}"), json!([level, k, "pad"]));
                }
                m.insert("a".into(), v);
                v = Value::Object(m);
            }
            for path in ["$..a..b", "$..a..x0", "$..a..nothing", "$..[?(@..b)].x0"] {
                let p = JsonPath::compile(path).unwrap();
                let t = Instant::now();
                let found = p.select(&v).len();
                eprintln!(
                    "{path:>16} depth={depth} width={width}: {:>9.1?} ({found})",
                    t.elapsed()
                );
            }
        }
    }

    /// Deterministic mutation fuzzing of the compiler and of selection: valid paths of every kind
    /// with characters replaced, deleted, inserted (the path syntax's own, white space and
    /// multi-byte ones, where a byte index would fall inside a character), spans duplicated and
    /// tails cut must compile or be refused, never panic; a compiled one selects without panicking,
    /// a definite path selects one value at most, and its text compiles again to the same selection.
    #[test]
    fn mutated_paths_never_panic() {
        let seeds = [
            "$",
            "$.order.symbol",
            "$['order']['qty']",
            "$[\"odd key\"]",
            "$.order.tags[-1]",
            "$.order.tags[0,2]",
            "$.order.tags[1:]",
            "$.order.tags[:-1]",
            "$.orders[*].symbol",
            "$..symbol",
            "$..[1]",
            "$..*",
            "$.order['symbol','qty']",
            "$.orders[?(@.price > 1.6 && @.symbol != 'IBM')].symbol",
            "$.orders[?(@.symbol =~ /i.m/i || !@.note)]",
            "$.orders[?(@.tags anyof ['x'] && @.tags size 2)]",
            "$.orders[?((@.price >= 2 || @['symbol'] in ['SUN','X']) && @.price < $.limit)]",
            "$.orders[?(@.tags[0] == 'a' || @.symbol == \"S\\\"N\")]",
            "$.orders[*].tags.length()",
            "$.deep..a[?(@.length() > 1)]",
            "$.prices.avg()",
        ];
        let doc = json!({
            "limit": 2,
            "order": {"symbol": "IBM", "qty": 3, "tags": ["a", "b", "c"]},
            "orders": [
                {"symbol": "IBM", "price": 1.5, "tags": ["a", "x"]},
                {"symbol": "SUN", "price": 2, "tags": []},
                {"symbol": "MSFT", "price": 2.5, "note": null}
            ],
            "odd key": true,
            "prices": [1, 2.5, "x"],
            "deep": {"a": {"a": {"a": [1, [2, [3]], {"a": "é"}]}}}
        });
        let mut rng = Rng(0x51_7cc1_b727_220a);
        let specials: Vec<char> = "$.[]()?@*:,'\"/\\=!<>~&|- 0-1aé\u{0}\u{1F600}"
            .chars()
            .collect();
        let (mut compiled, mut rounds) = (0, 0);
        for seed in seeds.iter().cycle().take(20_000) {
            rounds += 1;
            let text = mutate(seed, &specials, &mut rng);
            let Ok(path) = JsonPath::compile(&text) else {
                continue;
            };
            compiled += 1;
            let found = path.select(&doc);
            if path.is_definite() {
                assert!(found.len() <= 1, "{text}: definite, selected {found:?}");
            }
            let (values, one) = path.evaluate(&doc);
            assert!(
                !one || values.len() <= 1,
                "{text}: one value, gave {values:?}"
            );
            let again = JsonPath::compile(path.as_str())
                .unwrap_or_else(|e| panic!("{text}: compiled, but its text does not: {e}"));
            assert_eq!(again.select(&doc), found, "{text}");
        }
        // The edits leave enough paths valid for the selection checks to mean something.
        assert!(compiled * 5 > rounds, "{compiled} of {rounds} compiled");
    }
}
