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
    /// Synapse's `$ctx:NAME...`, `$trp:NAME...`, `$axis2:NAME...`: the path runs over that
    /// property's value read as JSON, not over the body.
    pub over: Option<(crate::PropScope, String)>,
    /// How [`JsonPath::evaluate_text`] reads the text, where it can.
    plan: Option<project::Plan>,
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

/// `$ctx:NAME`, `$trp:NAME`, `$axis2:NAME` at the start of `t`: the scope, the property's name
/// (up to a `.` or `[`), and the path over its value (from `$`).
fn over_property(t: &str) -> Option<(crate::PropScope, &str, String)> {
    let (scope, rest) = [
        ("$ctx:", crate::PropScope::Default),
        ("$trp:", crate::PropScope::Transport),
        ("$axis2:", crate::PropScope::Axis2),
    ]
    .into_iter()
    .find_map(|(p, scope)| t.strip_prefix(p).map(|r| (scope, r)))?;
    let end = rest.find(['.', '[']).unwrap_or(rest.len());
    Some((scope, &rest[..end], format!("${}", &rest[end..])))
}

impl JsonPath {
    /// Compiles `text` (it starts with `$`); `Err` says what is not supported or not valid.
    pub fn compile(text: &str) -> Result<JsonPath, JsonPathError> {
        let t = text.trim();
        // As SynapseJsonPath: a path over a property, and a last '.' dropped (`$.` is `$`).
        let over_text;
        let (over, t) = match over_property(t) {
            Some((scope, name, rest)) => {
                over_text = rest;
                (Some((scope, name.to_owned())), over_text.as_str())
            }
            None => (None, t),
        };
        let t = t
            .strip_suffix('.')
            .filter(|r| !r.ends_with('.') && !r.ends_with(char::is_whitespace))
            .unwrap_or(t);
        // As Jayway: a path that does not start at the root (`$`) or the current node (`@`)
        // starts at the root's member (`name.x` is `$.name.x`).
        let rooted;
        let t = if t.starts_with('$') || t.starts_with('@') || t.is_empty() {
            t
        } else {
            rooted = format!("$.{t}");
            &rooted
        };
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
            } else if let Some(r) = rest.strip_prefix('.').filter(|r| r.starts_with('[')) {
                // As Jayway: a dot before a bracket is read as the bracket alone (`$.[0]`).
                bracket(r, t)?
            } else if let Some(r) = rest.strip_prefix('.') {
                member(r, t)?
            } else if rest.starts_with('[') {
                bracket(rest, t)?
            } else if !steps.is_empty() {
                // As Jayway: after a step, a name with no dot before it is a member too
                // (`$.a[0]b`); right after the root it is refused (`$a`).
                member(rest, t)?
            } else {
                return Err(format!("JsonPath '{t}': unexpected '{rest}'").into());
            };
            steps.push(step);
            rest = after;
        }
        Ok(JsonPath {
            over,
            text: t.to_owned(),
            plan: project::Plan::of(&steps),
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

    /// Puts `value` where this definite path points in `root` (Jayway's `set`: a missing last
    /// member of an object is added; `$` replaces the whole). `false` when the path is not
    /// definite, a step before the last finds nothing, or an index is out of range.
    /// Where the values the path selects in `root` are.
    fn addresses(&self, root: &Value) -> Addresses {
        (self.select(root).iter())
            .filter_map(|v| match v {
                Cow::Borrowed(b) => Some(*b as *const Value),
                Cow::Owned(_) => None,
            })
            .collect()
    }

    /// Removes every value the path selects in `root` (Jayway's `delete`): members from their
    /// objects, elements from their arrays; the root itself is never removed. How many went.
    pub fn delete(&self, root: &mut Value) -> usize {
        let doomed = self.addresses(root);
        if doomed.is_empty() {
            return 0;
        }
        delete_in(root, &doomed)
    }

    /// Renames the member `from` of each object the path selects to `to` (Jayway's `renameKey`:
    /// the member moves to the end). How many were renamed.
    pub fn rename_key(&self, root: &mut Value, from: &str, to: &str) -> usize {
        let targets = self.addresses(root);
        rename_in(root, &targets, from, to)
    }

    pub fn set(&self, root: &mut Value, value: Value) -> bool {
        if self.func.is_some() || !self.is_definite() {
            return false;
        }
        let Some((last, init)) = self.steps.split_last() else {
            *root = value;
            return true;
        };
        let mut at = root;
        for step in init {
            let next = match step {
                Step::Names(n) => at.get_mut(n[0].as_str()),
                Step::Indexes(i) => index_mut(at, i[0]),
                _ => None,
            };
            match next {
                Some(v) => at = v,
                None => return false,
            }
        }
        match last {
            Step::Names(n) if n.len() == 1 => match at.as_object_mut() {
                Some(o) => {
                    o.insert(n[0].clone(), value);
                    true
                }
                None => false,
            },
            Step::Indexes(i) => match index_mut(at, i[0]) {
                Some(slot) => {
                    *slot = value;
                    true
                }
                None => false,
            },
            _ => false,
        }
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

/// Element `i` of an array (negative: from the end).
fn index_mut(v: &mut Value, i: i64) -> Option<&mut Value> {
    let a = v.as_array_mut()?;
    let k = if i < 0 {
        a.len().checked_sub(i.unsigned_abs() as usize)?
    } else {
        i as usize
    };
    a.get_mut(k)
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

/// Values by their address in a document.
type Addresses = HashSet<*const Value, BuildHasherDefault<AddressHasher>>;

/// [`JsonPath::delete`] below `v`: the children whose address is in `doomed` removed (their
/// addresses taken before anything moves), the rest searched.
fn delete_in(
    v: &mut Value,
    doomed: &HashSet<*const Value, BuildHasherDefault<AddressHasher>>,
) -> usize {
    match v {
        Value::Object(m) => {
            let gone: Vec<String> = (m.iter())
                .filter(|(_, c)| doomed.contains(&(*c as *const Value)))
                .map(|(k, _)| k.clone())
                .collect();
            let mut n = 0;
            for (k, c) in m.iter_mut() {
                if !gone.contains(k) {
                    n += delete_in(c, doomed);
                }
            }
            for k in &gone {
                m.shift_remove(k);
            }
            n + gone.len()
        }
        Value::Array(a) => {
            let gone: Vec<usize> = (a.iter().enumerate())
                .filter(|(_, c)| doomed.contains(&(*c as *const Value)))
                .map(|(i, _)| i)
                .collect();
            let mut n = 0;
            for (i, c) in a.iter_mut().enumerate() {
                if gone.binary_search(&i).is_err() {
                    n += delete_in(c, doomed);
                }
            }
            for &i in gone.iter().rev() {
                a.remove(i);
            }
            n + gone.len()
        }
        _ => 0,
    }
}

/// [`JsonPath::rename_key`] at and below `v`.
fn rename_in(v: &mut Value, targets: &Addresses, from: &str, to: &str) -> usize {
    let here = targets.contains(&(v as *const Value));
    let mut n = 0;
    match v {
        Value::Object(m) => {
            for c in m.values_mut() {
                n += rename_in(c, targets, from, to);
            }
            if here {
                if let Some(val) = m.shift_remove(from) {
                    m.insert(to.to_owned(), val);
                    n += 1;
                }
            }
        }
        Value::Array(a) => {
            for c in a.iter_mut() {
                n += rename_in(c, targets, from, to);
            }
        }
        _ => {}
    }
    n
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

mod filter;
mod project;
#[cfg(test)]
mod tests;

use filter::*;
