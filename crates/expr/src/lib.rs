//! Synapse expressions, compiled once at load.
//!
//! Property forms that do not read the message body — `$trp:NAME`, `$ctx:NAME`, `$axis2:NAME`,
//! `$url:NAME`, `get-property('NAME')`, `get-property('SCOPE', 'NAME')`, string literals — are evaluated
//! without touching the body. Every other expression is XPath 1.0 over the SOAP envelope (libxml2,
//! compiled once), with prefixes from the mediator element's namespace declarations. Synapse's variables
//! (`$body`, `$header`, `$ctx:`, `$trp:`, `$axis2:`, `$url:`) and `get-property()` with literal
//! arguments may appear inside it ([`synapse`] rewrites them at load), and so may Synapse's functions
//! `base64Encode`, `base64Decode` and `url-encode` ([`functions`]).
//!
//! Regexes follow Java's `String.matches()`: the whole string must match.
//!
//! XPath in the [`stream`] subset is evaluated over the raw message bytes when the environment offers them
//! ([`Env::raw_xml`]), which avoids building a libxml2 tree; everything else, and every case the streaming
//! evaluator cannot decide, goes through libxml2.

mod date;
mod functions;
mod jsonpath;
mod stream;
mod synapse;
/// Helpers for the workspace's deterministic mutation tests.
#[doc(hidden)]
pub mod testing;

pub use jsonpath::JsonPath;
use std::borrow::Cow;
use std::fmt;
pub use stream::StreamPath;

/// Where a property lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PropScope {
    /// Synapse message-context properties (and the special names `To`, `Action`, `MessageID`, ...).
    Default,
    /// HTTP headers of the current message.
    Transport,
    /// Axis2 message-context properties (`HTTP_SC`, `messageType`, ...).
    Axis2,
    /// Operation-scope properties (shared by request and response).
    Operation,
    /// Process environment / system properties.
    System,
    /// The parameters of the template being run (`$func:`, `get-property('func', ...)`).
    Func,
}

/// What an expression needs from the message body.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum BodyNeed {
    None,
    Headers,
    Full,
}

/// The values an expression can read.
pub trait Env {
    fn property(&self, scope: PropScope, name: &str) -> Option<Cow<'_, str>>;
    fn url_param(&self, name: &str) -> Option<Cow<'_, str>>;
    /// The message as an XML document, parsed on first use; an error when the body is not well-formed
    /// XML or was not read.
    fn document(&self) -> Result<&sluice_xml::Document, ExprError> {
        Err(invalid(
            "the message body is not available to this expression",
        ))
    }
    /// The message as unparsed XML bytes, when they are still what [`Env::document`] would parse (no
    /// tree built or changed yet); lets the streaming subset answer without building a tree.
    fn raw_xml(&self) -> Option<&[u8]> {
        None
    }
    /// The body bytes when they are JSON (not XML), as they came, whether or not something read
    /// the message as XML since.
    fn raw_json(&self) -> Option<&[u8]> {
        None
    }
    /// The message as JSON, parsed on first use: `None` when the body is empty (nothing to find);
    /// an error when it is not JSON or not available.
    fn json(&self) -> Result<Option<&serde_json::Value>, ExprError> {
        Err(invalid(
            "the message body is not available to this expression",
        ))
    }
}

/// The most text a JsonPath's value may make (a deep scan repeats nested values): 64 MiB, the body
/// size limit.
const MAX_JSON_TEXT: usize = 64 * 1024 * 1024;

#[derive(Debug)]
pub enum Expr {
    Literal(String),
    Property {
        scope: PropScope,
        name: String,
    },
    UrlParam(String),
    /// The time of each evaluation: `get-property('SYSTEM_TIME')` or
    /// `get-property('SYSTEM_DATE'[, FORMAT])` alone (inside a larger XPath they are variables).
    Clock(Clock),
    /// `json-eval(PATH)`, or an `evaluator="json"` argument: a JsonPath over the JSON body.
    Json(Box<JsonPath>),
    XPath(Box<XPathExpr>),
}

/// What an [`Expr::Clock`] reads: the milliseconds since 1970 or the formatted local time.
#[derive(Debug)]
pub struct Clock(synapse::Var);

impl Clock {
    fn now(&self) -> String {
        self.0.time().unwrap_or_default()
    }
}

/// An XPath over the message, compiled once.
#[derive(Debug)]
pub struct XPathExpr {
    /// The expression as written (messages quote it; `xpath` may be the rewritten form).
    text: String,
    xpath: sluice_xml::XPath,
    need: BodyNeed,
    /// The same expression for the streaming evaluator, when it is in its subset.
    stream: Option<StreamPath>,
    /// What the variables `$sluice.pN` made from Synapse's variables stand for (N indexes this).
    vars: Vec<synapse::Var>,
    /// The expression reads no node (only properties and literals): evaluated without the message.
    no_nodes: bool,
    /// It calls Synapse's extension functions.
    functions: bool,
    /// It calls `json-eval()` inside the XPath: it reads the JSON body.
    json: bool,
}

impl XPathExpr {
    fn vars<'e>(&'e self, env: &'e dyn Env) -> Vars<'e> {
        Vars {
            env,
            vars: &self.vars,
            functions: self.functions,
        }
    }
}

/// The variables of an [`XPathExpr`], resolved from the message's properties, and Synapse's
/// functions when it calls them.
struct Vars<'e> {
    env: &'e dyn Env,
    vars: &'e [synapse::Var],
    functions: bool,
}

impl sluice_xml::VariableResolver for Vars<'_> {
    fn functions(&self) -> &[&std::ffi::CStr] {
        if self.functions {
            functions::NAMES
        } else {
            &[]
        }
    }

    fn call(&self, name: &str, args: &[String]) -> Result<String, String> {
        functions::call(name, args)
    }

    fn resolve(&self, name: &str, ns_uri: Option<&str>) -> Option<String> {
        if ns_uri.is_some() {
            return None;
        }
        let k: usize = name.strip_prefix(synapse::VAR_PREFIX)?.parse().ok()?;
        // A missing property is the empty string, as for the plain forms.
        let value = match self.vars.get(k)? {
            synapse::Var::Property(scope, name) => self.env.property(*scope, name),
            synapse::Var::UrlParam(name) => self.env.url_param(name),
            synapse::Var::Const(value) => Some(Cow::Borrowed(value.as_str())),
            clock @ (synapse::Var::SystemDate(_) | synapse::Var::SystemTime) => {
                clock.time().map(Cow::Owned)
            }
        };
        Some(value.map(Cow::into_owned).unwrap_or_default())
    }
}

thread_local! {
    /// What an expression that reads no node is evaluated against.
    static NO_MESSAGE: sluice_xml::Document =
        sluice_xml::Document::parse(b"<none/>").expect("a constant document parses");
}

const SOAP11_ENV: &str = "http://schemas.xmlsoap.org/soap/envelope/";
const SOAP12_ENV: &str = "http://www.w3.org/2003/05/soap-envelope";

/// Whether an absolute path stays inside the SOAP Header (so a parse could stop after the header).
fn header_only(text: &str, ns: &[(String, String)]) -> bool {
    let mut steps = text.trim().strip_prefix('/').unwrap_or("").split('/');
    let is_soap = |step: Option<&str>, local: &str| {
        step.and_then(|s| s.split_once(':')).is_some_and(|(p, l)| {
            l == local
                && ns
                    .iter()
                    .any(|(np, u)| np == p && (u == SOAP11_ENV || u == SOAP12_ENV))
        })
    };
    is_soap(steps.next(), "Envelope") && is_soap(steps.next(), "Header")
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExprErrorKind {
    /// Valid Synapse, not supported by Sluice yet.
    Unsupported,
    /// Not a valid expression.
    Invalid,
    /// The message cannot be evaluated against (its body is not well-formed XML, or too deep / large).
    BadMessage,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExprError {
    pub kind: ExprErrorKind,
    pub message: String,
}

impl fmt::Display for ExprError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ExprError {}

fn invalid(m: impl Into<String>) -> ExprError {
    ExprError {
        kind: ExprErrorKind::Invalid,
        message: m.into(),
    }
}

fn unsupported(m: impl Into<String>) -> ExprError {
    ExprError {
        kind: ExprErrorKind::Unsupported,
        message: m.into(),
    }
}

/// Parses a quoted string literal ('..' or ".."), returning it and the rest.
fn literal(s: &str) -> Option<(&str, &str)> {
    let q = s.chars().next()?;
    if q != '\'' && q != '"' {
        return None;
    }
    let end = s[1..].find(q)? + 1;
    Some((&s[1..end], &s[end + 1..]))
}

/// get-property's scope names (Synapse's `XMLConfigConstants`), each with the scope Sluice reads
/// for it (`None`: not supported yet).
const SCOPES: &[(&str, Option<PropScope>)] = &[
    ("default", Some(PropScope::Default)),
    ("transport", Some(PropScope::Transport)),
    ("axis2", Some(PropScope::Axis2)),
    ("axis2-client", Some(PropScope::Axis2)),
    ("operation", Some(PropScope::Operation)),
    ("system", Some(PropScope::System)),
    ("env", Some(PropScope::System)),
    ("registry", None),
    ("func", Some(PropScope::Func)),
    ("file", None),
];

/// Whether `name` is one of get-property's scope names.
fn is_scope(name: &str) -> bool {
    SCOPES.iter().any(|(n, _)| *n == name)
}

fn scope_by_name(name: &str) -> Result<PropScope, ExprError> {
    match SCOPES.iter().find(|(n, _)| *n == name) {
        Some((_, Some(scope))) => Ok(*scope),
        Some((_, None)) => Err(unsupported(format!(
            "get-property('{name}', ...) is not supported here yet"
        ))),
        None => Err(invalid(format!("unknown property scope '{name}'"))),
    }
}

/// Reads `get-property('registry', KEY)` at load: the text for a key, or why there is none.
pub type Registry<'r> = &'r dyn Fn(&str) -> Result<String, String>;

/// Synapse's `SYSTEM_TIME`: milliseconds since 1970, now.
pub fn system_time() -> String {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis().to_string())
        .unwrap_or_default()
}

fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

impl Expr {
    /// Compiles an expression as written in a mediator attribute; `ns` are the (prefix, uri) declarations
    /// in scope at the element.
    pub fn compile(text: &str, ns: &[(String, String)]) -> Result<Expr, ExprError> {
        Self::compile_with_registry(text, ns, &|key: &str| {
            Err(format!("no registry to read '{key}' from"))
        })
    }

    /// [`Expr::compile`], reading `get-property('registry', KEY)` through `registry` at load: the
    /// text of the resource or local entry with that key, or why there is none. (Synapse reads the
    /// registry when the expression runs and caches it; Sluice's registry is the application's
    /// files, which do not change while it runs.)
    pub fn compile_with_registry(
        text: &str,
        ns: &[(String, String)],
        registry: Registry<'_>,
    ) -> Result<Expr, ExprError> {
        let t = text.trim();
        if t.is_empty() {
            return Err(invalid("empty expression"));
        }
        for (prefix, scope) in [
            ("$trp:", PropScope::Transport),
            ("$ctx:", PropScope::Default),
            ("$axis2:", PropScope::Axis2),
            ("$func:", PropScope::Func),
        ] {
            if let Some(name) = t.strip_prefix(prefix) {
                if is_name(name) {
                    return Ok(Expr::Property {
                        scope,
                        name: name.to_owned(),
                    });
                }
                // More than a property: XPath with Synapse's variables in it.
                return Self::xpath(t, ns, registry);
            }
        }
        if let Some(name) = t.strip_prefix("$url:") {
            if is_name(name) {
                return Ok(Expr::UrlParam(name.to_owned()));
            }
        }
        if let Some((lit, rest)) = literal(t) {
            if rest.trim().is_empty() {
                return Ok(Expr::Literal(lit.to_owned()));
            }
        }
        if let Some(path) = json_eval_path(t) {
            return Self::json(path);
        }
        if let Some(args) = t
            .strip_prefix("get-property")
            .map(str::trim_start)
            .and_then(|r| r.strip_prefix('('))
        {
            if let Some(plain) = Self::get_property(args, t, registry)? {
                return Ok(plain);
            }
        }
        Self::xpath(t, ns, registry)
    }

    /// A JsonPath over the JSON body (`evaluator="json"`; a `json-eval(...)` around it is taken
    /// off, as WSO2 does).
    pub fn json(path: &str) -> Result<Expr, ExprError> {
        let path = json_eval_path(path.trim()).unwrap_or(path);
        JsonPath::compile(path)
            .map(|p| Expr::Json(Box::new(p)))
            .map_err(|e| match e {
                jsonpath::JsonPathError::Invalid(m) => invalid(m),
                jsonpath::JsonPathError::Unsupported(m) => unsupported(m),
            })
    }

    /// The values a [`Expr::Json`] selects in the JSON body, and whether its path is definite
    /// (one value at most). `Err` for the other kinds, and when the body is not JSON.
    pub fn json_values<'e>(
        &self,
        env: &'e dyn Env,
    ) -> Result<(Vec<Cow<'e, serde_json::Value>>, bool), ExprError> {
        let Expr::Json(p) = self else {
            return Err(invalid("not a JsonPath"));
        };
        let (values, definite) = match env.json() {
            Ok(Some(body)) => p.evaluate(body),
            // An empty body: nothing to find (WSO2: "Json Payload is empty").
            Ok(None) => (Vec::new(), p.is_definite()),
            Err(e) => {
                return Err(ExprError {
                    message: format!("json-eval({}): {}", p.as_str(), e.message),
                    ..e
                })
            }
        };
        Ok((values, definite))
    }

    fn xpath(t: &str, ns: &[(String, String)], registry: Registry<'_>) -> Result<Expr, ExprError> {
        let (text, vars) = match synapse::rewrite(t, registry)? {
            Some((text, vars)) => (Cow::Owned(text), vars),
            None => (Cow::Borrowed(t), Vec::new()),
        };
        let pairs: Vec<(&str, &str)> = ns
            .iter()
            .filter(|(p, _)| !p.is_empty())
            .map(|(p, u)| (p.as_str(), u.as_str()))
            .collect();
        let xpath = sluice_xml::XPath::compile(&text, &pairs)
            .map_err(|e| invalid(format!("XPath '{t}': {e}")))?;
        let functions = functions::called_in(&text);
        let json = functions::calls(&text, "json-eval");
        let rewritten = matches!(text, Cow::Owned(_)) || functions;
        let no_nodes = rewritten && synapse::reads_no_nodes(&text);
        let need = if no_nodes {
            BodyNeed::None
        } else if header_only(&text, ns) {
            BodyNeed::Headers
        } else {
            BodyNeed::Full
        };
        let stream = if rewritten {
            None
        } else {
            StreamPath::compile(t, ns)
        };
        Ok(Expr::XPath(Box::new(XPathExpr {
            text: t.to_owned(),
            xpath,
            need,
            stream,
            vars,
            no_nodes,
            functions,
            json,
        })))
    }

    /// A plain `get-property(...)` (nothing after the call; `None` otherwise: XPath around it).
    fn get_property(
        args: &str,
        whole: &str,
        registry: Registry<'_>,
    ) -> Result<Option<Expr>, ExprError> {
        let (var, after) = synapse::get_property(args, whole, registry)?;
        if !after.trim().is_empty() {
            return Ok(None);
        }
        Ok(Some(match var {
            synapse::Var::Property(scope, name) => Expr::Property { scope, name },
            synapse::Var::UrlParam(name) => Expr::UrlParam(name),
            synapse::Var::Const(value) => Expr::Literal(value),
            clock @ (synapse::Var::SystemDate(_) | synapse::Var::SystemTime) => {
                Expr::Clock(Clock(clock))
            }
        }))
    }

    /// Whether this is an XPath the streaming evaluator handles (when the environment has raw bytes).
    pub fn streams(&self) -> bool {
        matches!(self, Expr::XPath(x) if x.stream.is_some())
    }

    /// Whether this expression's value is known from `head`, the start of a message: always for
    /// expressions that do not read the body; for XPath, when the streaming evaluator answers from
    /// those bytes as a string, which decides the boolean too (it answers only once nothing later can
    /// change the answer, so the whole message would give the same).
    pub fn decided_by(&self, head: &[u8]) -> bool {
        match self {
            Expr::XPath(x) if x.no_nodes => true,
            Expr::XPath(x) => x
                .stream
                .as_ref()
                // The string value needs everything the boolean does (membership, and the text too):
                // when it is decided, so is the boolean.
                .is_some_and(|s| s.eval_string(head).is_some()),
            _ => true,
        }
    }

    /// Whether it reads the JSON body: a JsonPath, or an XPath that calls `json-eval()`.
    pub fn reads_json(&self) -> bool {
        match self {
            Expr::Json(_) => true,
            Expr::XPath(x) => x.json,
            _ => false,
        }
    }

    pub fn body_need(&self) -> BodyNeed {
        match self {
            Expr::XPath(x) => x.need,
            Expr::Json(_) => BodyNeed::Full,
            _ => BodyNeed::None,
        }
    }

    /// Synapse's string value: a missing property is the empty string; a node-set is the text of every
    /// node in it, in document order.
    pub fn eval_string<'e>(&'e self, env: &'e dyn Env) -> Result<Cow<'e, str>, ExprError> {
        Ok(match self {
            Expr::Literal(s) => Cow::Borrowed(s),
            Expr::Property { scope, name } => {
                env.property(*scope, name).unwrap_or(Cow::Borrowed(""))
            }
            Expr::UrlParam(name) => env.url_param(name).unwrap_or(Cow::Borrowed("")),
            Expr::Clock(c) => Cow::Owned(c.now()),
            Expr::Json(p) => {
                // The whole JSON body is its text as it came (an XML one is written as JSON).
                if p.as_str() == "$" {
                    if let Some(raw) = env.raw_json() {
                        return Ok(Cow::Owned(String::from_utf8_lossy(raw).into_owned()));
                    }
                }
                let (values, definite) = self.json_values(env)?;
                Cow::Owned(json_string_value(&values, definite).map_err(|m| ExprError {
                    kind: ExprErrorKind::BadMessage,
                    message: format!("json-eval({}): {m}", p.as_str()),
                })?)
            }
            Expr::XPath(x) => {
                if let (Some(s), Some(raw)) = (&x.stream, env.raw_xml()) {
                    if let Some(v) = s.eval_string(raw) {
                        return Ok(Cow::Owned(v));
                    }
                }
                let vars = x.vars(env);
                let v = if x.no_nodes {
                    NO_MESSAGE.with(|doc| x.xpath.eval_string(doc, &vars))
                } else {
                    x.xpath.eval_string(env.document()?, &vars)
                };
                Cow::Owned(v.map_err(|e| invalid(format!("XPath '{}': {e}", x.text)))?)
            }
        })
    }

    /// The first node an XPath selects in `doc` (for mediators that work on a node, like `xslt`);
    /// `env` gives the properties the XPath reads (its document is not used).
    pub fn first_node<'d>(
        &self,
        doc: &'d sluice_xml::Document,
        env: &dyn Env,
    ) -> Result<Option<sluice_xml::Node<'d>>, ExprError> {
        Ok(self.nodes(doc, env)?.into_iter().next())
    }

    /// Every node an XPath selects in `doc`, in document order (for mediators that work on nodes).
    pub fn nodes<'d>(
        &self,
        doc: &'d sluice_xml::Document,
        env: &dyn Env,
    ) -> Result<Vec<sluice_xml::Node<'d>>, ExprError> {
        self.nodes_at(doc.as_node(), env)
    }

    /// Like [`Expr::nodes`], with `context` as the context node (relative paths start there).
    pub fn nodes_at<'d>(
        &self,
        context: sluice_xml::Node<'d>,
        env: &dyn Env,
    ) -> Result<Vec<sluice_xml::Node<'d>>, ExprError> {
        match self {
            Expr::XPath(x) => match x.xpath.eval_at(context, &x.vars(env)) {
                Ok(sluice_xml::XPathValue::NodeSet(nodes)) => Ok(nodes),
                Ok(_) => Err(invalid(format!("XPath '{}' does not select nodes", x.text))),
                Err(e) => Err(invalid(format!("XPath '{}': {e}", x.text))),
            },
            _ => Err(invalid("a node-selecting XPath is needed here")),
        }
    }

    /// The selected nodes as XML (elements serialised, declaring the namespaces they use; other
    /// nodes as their text), for what `aggregate` gathers; property forms and non-node results as
    /// [`Expr::eval_string`].
    pub fn eval_nodes_xml<'e>(&'e self, env: &'e dyn Env) -> Result<Cow<'e, str>, ExprError> {
        match self.eval_nodes_xml_each(env)? {
            Some(parts) => Ok(Cow::Owned(parts.concat())),
            None => self.eval_string(env),
        }
    }

    /// Each selected node as XML (as [`Expr::eval_nodes_xml`]), in document order; `None` when the
    /// expression selects no nodes (a property form, or a number, string or boolean XPath).
    pub fn eval_nodes_xml_each(&self, env: &dyn Env) -> Result<Option<Vec<String>>, ExprError> {
        let Expr::XPath(x) = self else {
            return Ok(None);
        };
        if x.no_nodes {
            return Ok(None);
        }
        let doc = env.document()?;
        let nodes = match x.xpath.eval(doc, &x.vars(env)) {
            Ok(sluice_xml::XPathValue::NodeSet(nodes)) => nodes,
            Ok(_) => return Ok(None),
            Err(e) => return Err(invalid(format!("XPath '{}': {e}", x.text))),
        };
        let mut out = Vec::with_capacity(nodes.len());
        for n in nodes {
            if n.kind() == sluice_xml::NodeKind::Element {
                let xml = sluice_xml::Fragment::from_nodes(&[n])
                    .and_then(|f| f.to_xml_string())
                    .map_err(|e| invalid(format!("XPath '{}': {e}", x.text)))?;
                out.push(xml);
            } else {
                let text = n.text_content();
                out.push(
                    text.replace('&', "&amp;")
                        .replace('<', "&lt;")
                        .replace('>', "&gt;"),
                );
            }
        }
        Ok(Some(out))
    }

    /// Synapse's `stringValueOf` as used where XML may be the value (OM properties, payloadFactory
    /// arguments): a text node gives its text, an attribute its value, an element its own text
    /// children, or, when those are blank, the element itself serialised as XML (declaring the
    /// namespaces it uses). Property forms and non-node XPath results are as [`Expr::eval_string`].
    pub fn eval_xml_aware<'e>(&'e self, env: &'e dyn Env) -> Result<Cow<'e, str>, ExprError> {
        let Expr::XPath(x) = self else {
            return self.eval_string(env);
        };
        if x.no_nodes {
            return self.eval_string(env);
        }
        let doc = env.document()?;
        let nodes = match x.xpath.eval(doc, &x.vars(env)) {
            Ok(sluice_xml::XPathValue::NodeSet(nodes)) => nodes,
            Ok(_) => return self.eval_string(env),
            Err(e) => return Err(invalid(format!("XPath '{}': {e}", x.text))),
        };
        let mut out = String::new();
        for n in nodes {
            if n.kind() == sluice_xml::NodeKind::Element {
                let own: String = n
                    .children()
                    .filter(|c| {
                        matches!(
                            c.kind(),
                            sluice_xml::NodeKind::Text | sluice_xml::NodeKind::CData
                        )
                    })
                    .map(|c| c.text_content())
                    .collect();
                if own.trim().is_empty() {
                    let xml = sluice_xml::Fragment::from_nodes(&[n])
                        .and_then(|f| f.to_xml_string())
                        .map_err(|e| invalid(format!("XPath '{}': {e}", x.text)))?;
                    out.push_str(&xml);
                } else {
                    out.push_str(&own);
                }
            } else {
                out.push_str(&n.text_content());
            }
        }
        Ok(Cow::Owned(out))
    }

    /// The boolean value (XPath's `boolean()`; a non-empty string for the property forms).
    pub fn eval_bool(&self, env: &dyn Env) -> Result<bool, ExprError> {
        match self {
            Expr::XPath(x) => {
                if let (Some(s), Some(raw)) = (&x.stream, env.raw_xml()) {
                    if let Some(b) = s.eval_bool(raw) {
                        return Ok(b);
                    }
                }
                let vars = x.vars(env);
                if x.no_nodes {
                    NO_MESSAGE.with(|doc| x.xpath.eval_bool(doc, &vars))
                } else {
                    x.xpath.eval_bool(env.document()?, &vars)
                }
                .map_err(|e| invalid(format!("XPath '{}': {e}", x.text)))
            }
            other => Ok(!other.eval_string(env)?.is_empty()),
        }
    }
}

/// The path inside `json-eval(...)`, when `t` is exactly that.
fn json_eval_path(t: &str) -> Option<&str> {
    t.strip_prefix("json-eval")?
        .trim_start()
        .strip_prefix('(')?
        .strip_suffix(')')
        .map(str::trim)
}

/// WSO2's string value of a JsonPath result (`SynapseJsonPath.stringValueOf` over Jayway): a string
/// as its text, without quotes; numbers, booleans and `null` as written in JSON; objects and
/// arrays as compact JSON in their order; nothing found by a definite path is the empty string;
/// an indefinite path (wildcard, deep scan, slice, union) always gives a JSON array of what it
/// found.
/// `Err` when the text would pass [`MAX_JSON_TEXT`].
pub fn json_string_value(
    values: &[Cow<'_, serde_json::Value>],
    definite: bool,
) -> Result<String, String> {
    let too_large = || format!("the value is larger than {MAX_JSON_TEXT} bytes");
    if !definite {
        let mut out = String::from("[");
        for (k, v) in values.iter().enumerate() {
            if k > 0 {
                out.push(',');
            }
            out.push_str(&v.to_string());
            if out.len() > MAX_JSON_TEXT {
                return Err(too_large());
            }
        }
        out.push(']');
        return Ok(out);
    }
    Ok(match values.first().map(|v| &**v) {
        None => String::new(),
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
    })
}

/// A regex with Java `matches()` semantics: it must match the whole input, and `.` matches any
/// character but a line terminator (`\n`, `\r`, U+0085, U+2028, U+2029), as in `java.util.regex`.
#[derive(Clone, Debug)]
pub struct FullRegex {
    how: Match,
    source: String,
}

#[derive(Clone, Debug)]
enum Match {
    /// `.*`: any string without a line terminator.
    AnyLine,
    /// Literal characters and `.` (`None`), the usual routing pattern: compared char by char, or,
    /// when the pattern is ASCII, as byte slices between its dots (their positions given).
    Dotted(Vec<Option<char>>, Option<Vec<usize>>),
    Regex(regex::Regex),
}

/// Java's line terminators, which `.` does not match.
fn is_line_terminator(c: char) -> bool {
    matches!(c, '\n' | '\r' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

/// `pattern` with each `.` outside a character class made Java's `.`.
fn java_dots(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len() + 16);
    let (mut class, mut chars) = (0usize, pattern.chars());
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                out.push(c);
                if let Some(n) = chars.next() {
                    out.push(n);
                }
                continue;
            }
            '[' => class += 1,
            ']' if class > 0 => class -= 1,
            '.' if class == 0 => {
                out.push_str("[^\\n\\r\\x{85}\\x{2028}\\x{2029}]");
                continue;
            }
            _ => {}
        }
        out.push(c);
    }
    out
}

impl FullRegex {
    pub fn compile(pattern: &str) -> Result<FullRegex, ExprError> {
        const META: &[char] = &[
            '\\', '[', ']', '{', '}', '(', ')', '*', '+', '?', '^', '$', '|',
        ];
        let fast = if pattern == ".*" {
            Some(Match::AnyLine)
        } else if !pattern.contains(META) {
            Some(Match::Dotted(
                pattern.chars().map(|c| (c != '.').then_some(c)).collect(),
                pattern
                    .is_ascii()
                    .then(|| memchr::memchr_iter(b'.', pattern.as_bytes()).collect()),
            ))
        } else {
            None
        };
        if let Some(how) = fast {
            return Ok(FullRegex {
                how,
                source: pattern.to_owned(),
            });
        }
        let anchored = format!("^(?:{})$", java_dots(pattern));
        match regex::Regex::new(&anchored) {
            Ok(re) => Ok(FullRegex {
                how: Match::Regex(re),
                source: pattern.to_owned(),
            }),
            Err(e) => {
                let kind = if pattern.contains("(?=")
                    || pattern.contains("(?!")
                    || pattern.contains("(?<")
                {
                    ExprErrorKind::Unsupported
                } else {
                    ExprErrorKind::Invalid
                };
                Err(ExprError {
                    kind,
                    message: format!("regex '{pattern}': {e}"),
                })
            }
        }
    }

    pub fn matches(&self, s: &str) -> bool {
        match &self.how {
            Match::AnyLine => !s.contains(is_line_terminator),
            // An ASCII pattern against a string of as many bytes: byte by byte. A non-ASCII byte
            // there means fewer characters than the pattern has, so no match; a string of another
            // length may still match through non-ASCII characters at the dots.
            Match::Dotted(_, Some(dots)) if self.source.len() == s.len() => {
                let (p, b) = (self.source.as_bytes(), s.as_bytes());
                let mut from = 0;
                for &d in dots {
                    let c = b[d];
                    if p[from..d] != b[from..d] || !c.is_ascii() || c == b'\n' || c == b'\r' {
                        return false;
                    }
                    from = d + 1;
                }
                p[from..] == b[from..]
            }
            Match::Dotted(p, _) => {
                let mut chars = s.chars();
                p.iter().all(|want| match (chars.next(), want) {
                    (Some(c), Some(w)) => c == *w,
                    (Some(c), None) => !is_line_terminator(c),
                    (None, _) => false,
                }) && chars.next().is_none()
            }
            Match::Regex(re) => re.is_match(s),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.source
    }
}

/// A test environment: a parsed document and no properties (libxml2's answers through `Expr`).
#[cfg(test)]
pub(crate) struct WithDoc(pub(crate) sluice_xml::Document);

#[cfg(test)]
impl Env for WithDoc {
    fn property(&self, _: PropScope, _: &str) -> Option<Cow<'_, str>> {
        None
    }
    fn url_param(&self, _: &str) -> Option<Cow<'_, str>> {
        None
    }
    fn document(&self) -> Result<&sluice_xml::Document, ExprError> {
        Ok(&self.0)
    }
}

#[cfg(test)]
mod tests {
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
            ("count($body/*)", "1"),
            ("$header/h", "H"),
            ("string-length(get-property('transport', 'routing'))", "14"),
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
            "0"
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
        let registry = |key: &str| match key {
            "conf:/greeting.txt" => Ok("hello".to_owned()),
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
        let err = c("get-property('registry', 'conf:/greeting.txt@owner')").unwrap_err();
        assert_eq!(err.kind, ExprErrorKind::Unsupported);
        // Without a registry (Expr::compile), the key is not found.
        let err = Expr::compile("get-property('registry', 'conf:/greeting.txt')", &[]).unwrap_err();
        assert_eq!(err.kind, ExprErrorKind::Invalid);
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
        assert_eq!(x("count(//m:order)").eval_xml_aware(&env).unwrap(), "1");
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
        let mut state: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let alphabet: Vec<char> = "$:/'\"()[],=!<>*@.|-_ aZ9\u{e9}\u{0}".chars().collect();
        for i in 0..5000 {
            let mut chars: Vec<char> = seeds[i % seeds.len()].chars().collect();
            for _ in 0..(1 + next() % 4) {
                if chars.is_empty() {
                    break;
                }
                let at = (next() as usize) % chars.len();
                match next() % 3 {
                    0 => chars[at] = alphabet[(next() as usize) % alphabet.len()],
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
}

#[cfg(test)]
mod json_tests {
    use super::*;

    /// A message whose body is these bytes, untouched (parsed as JSON on first use).
    struct Body(&'static str, std::cell::OnceCell<Option<serde_json::Value>>);

    fn body(text: &'static str) -> Body {
        Body(text, std::cell::OnceCell::new())
    }

    impl Env for Body {
        fn property(&self, _: PropScope, _: &str) -> Option<Cow<'_, str>> {
            None
        }
        fn url_param(&self, _: &str) -> Option<Cow<'_, str>> {
            None
        }
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
        let e = Expr::compile("json-eval(a.b)", &[]).unwrap_err();
        assert_eq!(e.kind, ExprErrorKind::Invalid, "{e}");
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
}
