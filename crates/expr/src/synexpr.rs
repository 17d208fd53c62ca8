//! MI 4.4's Synapse expressions, `${...}`: a small language over the message that newer WSO2
//! artifacts write where older ones wrote XPath or JsonPath (`<variable expression>`, log
//! `<message>` templates, any `expression` attribute). Compiled once at load into a tree;
//! evaluated per message to a JSON value.
//!
//! What Sluice reads (the forms MI's own integration tests use; anything else is refused at load as
//! `unsupported`, never guessed):
//!
//! | Form | Value |
//! |---|---|
//! | `payload`, `payload.a.b[0]`, `payload["a-b"]` | the JSON body, or a member of it (`null` when missing); `payload` alone on an XML body is its text |
//! | `vars.x`, `var.x` (4.4 alphas), `vars.x.a[0]` | a variable (the `variable` mediator), or a member of a JSON one |
//! | `headers.X`, `headers["Content-Type"]` | a transport header of the message |
//! | `properties.synapse.x` / `props.synapse.x`, `.axis2.x`, `.transport.x`, `.operation.x` | a property in that scope (`synapse` is the default scope) |
//! | `params.queryParams.x`, `params.pathParams.x` / `uriParams`, `params.functionParams.x` | a query parameter, a REST API's URI variable, a template parameter |
//! | `xpath('...')` | an XPath over the message, with the namespaces in scope at the element |
//! | `xpath('...', 'NAME')` | an XPath over the XML the variable NAME holds |
//! | `'text'`, `"text"`, `12`, `1.5`, `true`, `false`, `null` | literals |
//! | `+ - * / %`, `== != < <= > >=`, `&& \|\| !`, `c ? a : b`, `( )` | numbers add, else `+` joins text; comparisons of numbers or text |
//! | `length toUpper toLower trim contains startsWith endsWith exists not string integer float boolean` | functions of those names |

use crate::stream::Cmp;
use crate::{invalid, unsupported, BodyNeed, Env, Expr, ExprError, PropScope};
use serde_json::Value;

/// A compiled `${...}` expression.
#[derive(Debug)]
pub struct SynExpr {
    /// As written, braces included.
    text: String,
    root: Node,
    need: BodyNeed,
}

#[derive(Debug)]
enum Node {
    Lit(Value),
    Payload(Vec<Seg>),
    Var(String, Vec<Seg>),
    Prop(PropScope, String),
    Query(String),
    XPath(Box<Expr>),
    /// `xpath('...', 'NAME')`: over the XML the variable holds.
    XPathVar(Box<Expr>, String),
    Not(Box<Node>),
    Neg(Box<Node>),
    Bin(Op, Box<Node>, Box<Node>),
    Cond(Box<Node>, Box<Node>, Box<Node>),
    Call(Func, Vec<Node>),
}

/// A step into a JSON value: a member or an element.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seg {
    Key(String),
    Index(usize),
}

/// Where a whole expression reads, when it is one place ([`SynExpr::place`]).
#[derive(Debug)]
pub enum Place<'a> {
    /// `payload` and the steps into it.
    Payload(&'a [Seg]),
    /// `vars.NAME` and the steps into it.
    Var(&'a str, &'a [Seg]),
    /// `xpath('...')`.
    XPath(&'a Expr),
    /// `xpath('...', 'NAME')`: over the XML variable NAME.
    XPathVar(&'a Expr, &'a str),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Or,
    And,
    Cmp(Cmp),
    Add,
    Sub,
    Mul,
    Div,
    Rem,
}

impl Op {
    /// Binding strength: higher binds tighter.
    fn power(self) -> u8 {
        match self {
            Op::Or => 1,
            Op::And => 2,
            Op::Cmp(Cmp::Eq | Cmp::Ne) => 3,
            Op::Cmp(_) => 4,
            Op::Add | Op::Sub => 5,
            Op::Mul | Op::Div | Op::Rem => 6,
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum Func {
    Length,
    ToUpper,
    ToLower,
    Trim,
    Contains,
    StartsWith,
    EndsWith,
    Exists,
    Not,
    String,
    Integer,
    Float,
    Boolean,
}

impl Func {
    fn named(name: &str) -> Option<(Func, usize)> {
        Some(match name {
            "length" => (Func::Length, 1),
            "toUpper" => (Func::ToUpper, 1),
            "toLower" => (Func::ToLower, 1),
            "trim" => (Func::Trim, 1),
            "contains" => (Func::Contains, 2),
            "startsWith" => (Func::StartsWith, 2),
            "endsWith" => (Func::EndsWith, 2),
            "exists" => (Func::Exists, 1),
            "not" => (Func::Not, 1),
            "string" => (Func::String, 1),
            "integer" => (Func::Integer, 1),
            "float" => (Func::Float, 1),
            "boolean" => (Func::Boolean, 1),
            _ => return None,
        })
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Ident(String),
    Str(String),
    Num(f64),
    Punct(&'static str),
}

const PUNCTS: [&str; 20] = [
    "==", "!=", "<=", ">=", "&&", "||", "<", ">", "+", "-", "*", "/", "%", "!", "?", ":", ".", ",",
    "(", ")",
];

fn tokens(src: &str) -> Result<Vec<Tok>, ExprError> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c == b'[' || c == b']' {
            out.push(Tok::Punct(if c == b'[' { "[" } else { "]" }));
            i += 1;
        } else if c == b'\'' || c == b'"' {
            let (s, next) = string(src, i)?;
            out.push(Tok::Str(s));
            i = next;
        } else if c.is_ascii_digit() {
            let start = i;
            while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.') {
                i += 1;
            }
            let n = src[start..i]
                .parse()
                .map_err(|_| invalid(format!("'{}' is not a number", &src[start..i])))?;
            out.push(Tok::Num(n));
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'-') {
                i += 1;
            }
            out.push(Tok::Ident(src[start..i].to_owned()));
        } else if let Some(p) = PUNCTS.iter().find(|p| src[i..].starts_with(**p)) {
            out.push(Tok::Punct(p));
            i += p.len();
        } else {
            let ch = src[i..].chars().next().unwrap_or('?');
            // Parts of MI's language Sluice does not read yet (JSONPath filters, regex match).
            if matches!(ch, '@' | '$' | '=' | '~') {
                return Err(unsupported(format!("'{ch}' in an expression")));
            }
            return Err(invalid(format!("unexpected '{ch}'")));
        }
    }
    Ok(out)
}

/// A quoted string from `at` (its quote), with `\` escapes: the text and where it ends.
fn string(src: &str, at: usize) -> Result<(String, usize), ExprError> {
    let quote = src.as_bytes()[at] as char;
    let mut out = String::new();
    let mut chars = src[at + 1..].char_indices();
    while let Some((k, c)) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some((_, 'n')) => out.push('\n'),
                Some((_, 't')) => out.push('\t'),
                Some((_, e)) => out.push(e),
                None => break,
            },
            c if c == quote => return Ok((out, at + 1 + k + 1)),
            c => out.push(c),
        }
    }
    Err(invalid("a string is not closed"))
}

struct Parser<'a> {
    toks: Vec<Tok>,
    at: usize,
    ns: &'a [(String, String)],
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.at)
    }

    fn eat(&mut self, p: &str) -> bool {
        if matches!(self.peek(), Some(Tok::Punct(q)) if *q == p) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, p: &str) -> Result<(), ExprError> {
        if self.eat(p) {
            Ok(())
        } else {
            Err(invalid(format!("'{p}' expected")))
        }
    }

    fn expr(&mut self) -> Result<Node, ExprError> {
        let c = self.binary(0)?;
        if !self.eat("?") {
            return Ok(c);
        }
        let a = self.expr()?;
        self.expect(":")?;
        let b = self.expr()?;
        Ok(Node::Cond(Box::new(c), Box::new(a), Box::new(b)))
    }

    fn binary(&mut self, min: u8) -> Result<Node, ExprError> {
        let mut left = self.unary()?;
        while let Some(Tok::Punct(p)) = self.peek() {
            let op = match *p {
                "||" => Op::Or,
                "&&" => Op::And,
                "==" => Op::Cmp(Cmp::Eq),
                "!=" => Op::Cmp(Cmp::Ne),
                "<" => Op::Cmp(Cmp::Lt),
                "<=" => Op::Cmp(Cmp::Le),
                ">" => Op::Cmp(Cmp::Gt),
                ">=" => Op::Cmp(Cmp::Ge),
                "+" => Op::Add,
                "-" => Op::Sub,
                "*" => Op::Mul,
                "/" => Op::Div,
                "%" => Op::Rem,
                _ => break,
            };
            if op.power() <= min {
                break;
            }
            self.at += 1;
            let right = self.binary(op.power())?;
            left = Node::Bin(op, Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    fn unary(&mut self) -> Result<Node, ExprError> {
        if self.eat("!") {
            return Ok(Node::Not(Box::new(self.unary()?)));
        }
        if self.eat("-") {
            return Ok(Node::Neg(Box::new(self.unary()?)));
        }
        self.primary()
    }

    fn primary(&mut self) -> Result<Node, ExprError> {
        let tok = self
            .toks
            .get(self.at)
            .cloned()
            .ok_or_else(|| invalid("the expression ends too early"))?;
        self.at += 1;
        match tok {
            Tok::Str(s) => Ok(Node::Lit(Value::String(s))),
            Tok::Num(n) => Ok(Node::Lit(number(n))),
            Tok::Punct("(") => {
                let e = self.expr()?;
                self.expect(")")?;
                Ok(e)
            }
            Tok::Ident(name) if self.eat("(") => self.call(&name),
            Tok::Ident(name) => self.path(&name),
            Tok::Punct(p) => Err(invalid(format!("unexpected '{p}'"))),
        }
    }

    fn call(&mut self, name: &str) -> Result<Node, ExprError> {
        let mut args = Vec::new();
        if !self.eat(")") {
            loop {
                args.push(self.expr()?);
                if self.eat(")") {
                    break;
                }
                self.expect(",")?;
            }
        }
        if name == "xpath" {
            return match args.as_slice() {
                [Node::Lit(Value::String(x))] => {
                    Ok(Node::XPath(Box::new(Expr::compile(x, self.ns)?)))
                }
                [Node::Lit(Value::String(x)), Node::Lit(Value::String(v))] => Ok(Node::XPathVar(
                    Box::new(Expr::compile(x, self.ns)?),
                    v.clone(),
                )),
                _ => Err(invalid("xpath() takes the XPath as a quoted string")),
            };
        }
        let (f, arity) =
            Func::named(name).ok_or_else(|| unsupported(format!("the function {name}()")))?;
        if args.len() != arity {
            return Err(invalid(format!("{name}() takes {arity} argument(s)")));
        }
        Ok(Node::Call(f, args))
    }

    /// The members after a root: `.name`, `["name"]`, `[0]`.
    fn segments(&mut self) -> Result<Vec<Seg>, ExprError> {
        let mut segs = Vec::new();
        loop {
            if self.eat(".") {
                match self.toks.get(self.at).cloned() {
                    Some(Tok::Ident(n)) => {
                        self.at += 1;
                        segs.push(Seg::Key(n));
                    }
                    _ => return Err(invalid("a name is expected after '.'")),
                }
            } else if self.eat("[") {
                let seg = match self.toks.get(self.at).cloned() {
                    Some(Tok::Str(s)) => Seg::Key(s),
                    Some(Tok::Num(n)) if n >= 0.0 && n.fract() == 0.0 => Seg::Index(n as usize),
                    _ => return Err(unsupported("only a name or an index between [ and ]")),
                };
                self.at += 1;
                self.expect("]")?;
                segs.push(seg);
            } else {
                return Ok(segs);
            }
        }
    }

    fn path(&mut self, root: &str) -> Result<Node, ExprError> {
        match root {
            "true" => return Ok(Node::Lit(Value::Bool(true))),
            "false" => return Ok(Node::Lit(Value::Bool(false))),
            "null" => return Ok(Node::Lit(Value::Null)),
            _ => {}
        }
        let mut segs = self.segments()?.into_iter();
        let mut name = |what: &str| match segs.next() {
            Some(Seg::Key(k)) => Ok(k),
            _ => Err(invalid(format!("{root} needs {what}"))),
        };
        let node = match root {
            "payload" => return Ok(Node::Payload(segs.collect())),
            "vars" | "var" => {
                let n = name("a variable name")?;
                return Ok(Node::Var(n, segs.collect()));
            }
            "headers" => Node::Prop(PropScope::Transport, name("a header name")?),
            "properties" | "props" => {
                let scope = match name("a scope")?.as_str() {
                    "synapse" | "default" => PropScope::Default,
                    "axis2" => PropScope::Axis2,
                    "transport" => PropScope::Transport,
                    "operation" => PropScope::Operation,
                    s => return Err(unsupported(format!("the property scope '{s}'"))),
                };
                Node::Prop(scope, name("a property name")?)
            }
            "params" => match name("a parameter kind")?.as_str() {
                "queryParams" => Node::Query(name("a parameter name")?),
                "pathParams" | "uriParams" => {
                    Node::Prop(PropScope::Default, format!("uri.var.{}", name("a name")?))
                }
                "functionParams" => Node::Prop(PropScope::Func, name("a parameter name")?),
                k => return Err(unsupported(format!("params.{k}"))),
            },
            r => return Err(unsupported(format!("'{r}' in an expression"))),
        };
        if segs.next().is_some() {
            return Err(unsupported(format!("members of {root} values")));
        }
        Ok(node)
    }
}

fn number(n: f64) -> Value {
    if n.fract() == 0.0 && n.abs() < 9.0e15 {
        Value::from(n as i64)
    } else {
        serde_json::Number::from_f64(n).map_or(Value::Null, Value::Number)
    }
}

impl SynExpr {
    /// `text` is the whole attribute, `${` and `}` included; `ns` the namespaces in scope (for
    /// `xpath()`).
    pub fn compile(text: &str, ns: &[(String, String)]) -> Result<SynExpr, ExprError> {
        let t = text.trim();
        let inner = t
            .strip_prefix("${")
            .and_then(|r| r.strip_suffix('}'))
            .ok_or_else(|| invalid("a Synapse expression is written ${...}"))?;
        let parse = || {
            let mut p = Parser {
                toks: tokens(inner)?,
                at: 0,
                ns,
            };
            let root = p.expr()?;
            if p.at < p.toks.len() {
                return Err(invalid("unexpected text after the expression"));
            }
            Ok(root)
        };
        let root = parse().map_err(|e: ExprError| ExprError {
            message: format!("{t}: {}", e.message),
            ..e
        })?;
        let need = need(&root);
        Ok(SynExpr {
            text: t.to_owned(),
            root,
            need,
        })
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    pub fn body_need(&self) -> BodyNeed {
        self.need
    }

    /// Where the expression reads when it is one place a value can be put back (MI's foreach
    /// puts its results there); `None` for anything computed.
    pub fn place(&self) -> Option<Place<'_>> {
        match &self.root {
            Node::Payload(segs) => Some(Place::Payload(segs)),
            Node::Var(name, segs) => Some(Place::Var(name, segs)),
            Node::XPath(x) => Some(Place::XPath(x)),
            Node::XPathVar(x, v) => Some(Place::XPathVar(x, v)),
            _ => None,
        }
    }

    /// Whether it reads the JSON body (`payload`).
    pub fn reads_json(&self) -> bool {
        reads_payload(&self.root)
    }

    pub fn eval(&self, env: &dyn Env) -> Result<Value, ExprError> {
        eval(&self.root, env).map_err(|e| ExprError {
            message: format!("{}: {}", self.text, e.message),
            ..e
        })
    }

    /// The value as text: a string as it is, `null` as nothing, anything else as JSON.
    pub fn eval_string(&self, env: &dyn Env) -> Result<String, ExprError> {
        Ok(text(&self.eval(env)?))
    }

    pub fn eval_bool(&self, env: &dyn Env) -> Result<bool, ExprError> {
        Ok(truthy(&self.eval(env)?))
    }
}

fn children(n: &Node) -> Vec<&Node> {
    match n {
        Node::Not(a) | Node::Neg(a) => vec![a],
        Node::Bin(_, a, b) => vec![a, b],
        Node::Cond(c, a, b) => vec![c, a, b],
        Node::Call(_, args) => args.iter().collect(),
        _ => Vec::new(),
    }
}

fn need(n: &Node) -> BodyNeed {
    let own = match n {
        Node::Payload(_) => BodyNeed::Full,
        Node::XPath(x) => x.body_need(),
        _ => BodyNeed::None,
    };
    children(n).into_iter().map(need).fold(own, BodyNeed::max)
}

fn reads_payload(n: &Node) -> bool {
    matches!(n, Node::Payload(_)) || children(n).into_iter().any(reads_payload)
}

/// The message as an XPath over an XML variable sees it: that variable's XML as the document,
/// everything else the message's.
pub struct VarXml<'e> {
    env: &'e dyn Env,
    doc: sluice_xml::Document,
}

impl<'e> VarXml<'e> {
    /// The XML variable `name` of the message `env` reads, parsed.
    pub fn parse(env: &'e dyn Env, name: &str) -> Result<VarXml<'e>, ExprError> {
        let text = match env.variable(name) {
            Some(Value::String(s)) => s,
            Some(_) => return Err(invalid(format!("the variable {name} holds no XML"))),
            None => return Err(invalid(format!("no variable {name}"))),
        };
        let doc = sluice_xml::parse_untrusted(text.as_bytes(), &sluice_xml::Limits::default())
            .map_err(|e| ExprError {
                kind: crate::ExprErrorKind::BadMessage,
                message: format!("the variable {name} is not XML: {e}"),
            })?;
        Ok(VarXml { env, doc })
    }

    pub fn document(&self) -> &sluice_xml::Document {
        &self.doc
    }

    pub fn into_document(self) -> sluice_xml::Document {
        self.doc
    }
}

impl Env for VarXml<'_> {
    fn property(&self, scope: PropScope, name: &str) -> Option<std::borrow::Cow<'_, str>> {
        self.env.property(scope, name)
    }
    fn url_param(&self, name: &str) -> Option<std::borrow::Cow<'_, str>> {
        self.env.url_param(name)
    }
    fn document(&self) -> Result<&sluice_xml::Document, ExprError> {
        Ok(&self.doc)
    }
    fn variable(&self, name: &str) -> Option<Value> {
        self.env.variable(name)
    }
}

/// A value as text: what a log line or a string property shows.
pub(crate) fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn truthy(v: &Value) -> bool {
    match v {
        Value::Bool(b) => *b,
        Value::Null => false,
        Value::String(s) => !s.is_empty() && s != "false",
        Value::Number(n) => n.as_f64() != Some(0.0),
        _ => true,
    }
}

fn member<'v>(mut v: &'v Value, segs: &[Seg]) -> Option<&'v Value> {
    for s in segs {
        v = match s {
            Seg::Key(k) => v.get(k.as_str())?,
            Seg::Index(i) => v.get(*i)?,
        };
    }
    Some(v)
}

fn eval(n: &Node, env: &dyn Env) -> Result<Value, ExprError> {
    Ok(match n {
        Node::Lit(v) => v.clone(),
        // An XML body: `payload` alone is the SOAP Body's first element (the document when it is
        // no envelope), as XML; its members are read from the body as JSON (WSO2's conversion).
        Node::Payload(segs) if segs.is_empty() && env.raw_json().is_none() => {
            match env.document() {
                Ok(doc) => Value::String(payload_xml(doc)?),
                Err(_) => env.json()?.cloned().unwrap_or(Value::Null),
            }
        }
        Node::Payload(segs) => match env.json()? {
            Some(body) => member(body, segs).cloned().unwrap_or(Value::Null),
            None => Value::Null,
        },
        Node::Var(name, segs) => match env.variable(name) {
            Some(v) => member(&v, segs).cloned().unwrap_or(Value::Null),
            None => Value::Null,
        },
        Node::Prop(scope, name) => env
            .property(*scope, name)
            .map_or(Value::Null, |s| Value::String(s.into_owned())),
        Node::Query(name) => env
            .url_param(name)
            .map_or(Value::Null, |s| Value::String(s.into_owned())),
        Node::XPath(x) => Value::String(x.eval_nodes_xml(env)?.into_owned()),
        Node::XPathVar(x, v) => {
            let over = VarXml::parse(env, v)?;
            Value::String(x.eval_nodes_xml(&over)?.into_owned())
        }
        Node::Not(a) => Value::Bool(!truthy(&eval(a, env)?)),
        Node::Neg(a) => number(-as_number(&eval(a, env)?)?),
        Node::Cond(c, a, b) => {
            if truthy(&eval(c, env)?) {
                eval(a, env)?
            } else {
                eval(b, env)?
            }
        }
        Node::Bin(Op::And, a, b) => Value::Bool(truthy(&eval(a, env)?) && truthy(&eval(b, env)?)),
        Node::Bin(Op::Or, a, b) => Value::Bool(truthy(&eval(a, env)?) || truthy(&eval(b, env)?)),
        Node::Bin(op, a, b) => binary(*op, &eval(a, env)?, &eval(b, env)?)?,
        Node::Call(f, args) => {
            let vals = args
                .iter()
                .map(|a| eval(a, env))
                .collect::<Result<Vec<_>, _>>()?;
            call(*f, &vals)?
        }
    })
}

fn payload_xml(doc: &sluice_xml::Document) -> Result<String, ExprError> {
    let node = doc.soap_body_first_child().or_else(|| doc.root_element());
    match node {
        Some(n) => sluice_xml::Fragment::from_nodes(&[n])
            .and_then(|f| f.to_xml_string())
            .map_err(|x| invalid(x.to_string())),
        None => Ok(String::new()),
    }
}

fn as_number(v: &Value) -> Result<f64, ExprError> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        Value::Bool(b) => Some(f64::from(u8::from(*b))),
        _ => None,
    }
    .ok_or_else(|| invalid(format!("{} is not a number", text(v))))
}

fn binary(op: Op, a: &Value, b: &Value) -> Result<Value, ExprError> {
    let both_numbers = a.is_number() && b.is_number();
    Ok(match op {
        Op::Add if both_numbers => number(as_number(a)? + as_number(b)?),
        Op::Add => Value::String(text(a) + &text(b)),
        Op::Sub => number(as_number(a)? - as_number(b)?),
        Op::Mul => number(as_number(a)? * as_number(b)?),
        Op::Div => number(as_number(a)? / as_number(b)?),
        Op::Rem => number(as_number(a)? % as_number(b)?),
        Op::Cmp(c @ (Cmp::Eq | Cmp::Ne)) => {
            let same = if both_numbers {
                as_number(a)? == as_number(b)?
            } else {
                a == b || (!a.is_object() && !a.is_array() && text(a) == text(b) && !a.is_null())
            };
            Value::Bool(same == (c == Cmp::Eq))
        }
        Op::Cmp(c) => {
            let ord = match (as_number(a), as_number(b)) {
                (Ok(x), Ok(y)) => x.partial_cmp(&y),
                _ => Some(text(a).cmp(&text(b))),
            };
            Value::Bool(ord.is_some_and(|o| c.of(o)))
        }
        Op::And | Op::Or => unreachable!("short-circuited in eval"),
    })
}

fn call(f: Func, v: &[Value]) -> Result<Value, ExprError> {
    let s = |k: usize| text(&v[k]);
    Ok(match f {
        Func::Length => match &v[0] {
            Value::Array(a) => Value::from(a.len()),
            Value::Object(o) => Value::from(o.len()),
            other => Value::from(text(other).chars().count()),
        },
        Func::ToUpper => Value::String(s(0).to_uppercase()),
        Func::ToLower => Value::String(s(0).to_lowercase()),
        Func::Trim => Value::String(s(0).trim().to_owned()),
        Func::Contains => Value::Bool(s(0).contains(&s(1))),
        Func::StartsWith => Value::Bool(s(0).starts_with(&s(1))),
        Func::EndsWith => Value::Bool(s(0).ends_with(&s(1))),
        Func::Exists => Value::Bool(!v[0].is_null()),
        Func::Not => Value::Bool(!truthy(&v[0])),
        Func::String => Value::String(s(0)),
        Func::Integer => Value::from(as_number(&v[0])?.trunc() as i64),
        Func::Float => {
            serde_json::Number::from_f64(as_number(&v[0])?).map_or(Value::Null, Value::Number)
        }
        Func::Boolean => Value::Bool(truthy(&v[0])),
    })
}

#[cfg(test)]
#[path = "synexpr_tests.rs"]
mod tests;
