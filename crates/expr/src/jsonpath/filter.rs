//! JsonPath filters (`[?(...)]`): their parser, and their evaluation as Jayway evaluates them.

use super::*;

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
pub(super) enum Op {
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
pub(super) struct FilterError(String);

impl FilterError {
    pub(super) fn within(self, whole: &str) -> JsonPathError {
        JsonPathError::Invalid(format!("JsonPath '{whole}': filter: {}", self.0))
    }
}

/// How deep brackets and parentheses may nest in a filter (the parser and the paths inside a
/// filter recurse).
const FILTER_DEPTH: usize = 32;

impl Filter {
    pub(super) fn parse(text: &str) -> Result<Filter, FilterError> {
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
    pub(super) fn accepts(&self, v: &Value, root: &Value) -> bool {
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
pub(super) fn same(a: &Value, b: &Value) -> bool {
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
pub(super) fn strictly_same(a: &Value, b: &Value) -> bool {
    std::mem::discriminant(a) == std::mem::discriminant(b) && same(a, b)
}

pub(super) fn relate(l: &Value, op: Op, r: &Value) -> bool {
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
pub(super) const FEW_MEMBERS: usize = 8;
pub(super) const FEW_PAIRS: usize = 256;

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
