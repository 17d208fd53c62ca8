//! Synapse expressions, compiled once at load.
//!
//! Property forms that do not read the message body — `$trp:NAME`, `$ctx:NAME`, `$axis2:NAME`,
//! `$url:NAME`, `get-property('NAME')`, `get-property('SCOPE', 'NAME')`, string literals — are evaluated
//! without touching the body. Every other expression is XPath 1.0 over the SOAP envelope (libxml2,
//! compiled once), with prefixes from the mediator element's namespace declarations. Synapse's variables
//! (`$body`, `$header`, `$ctx:`, `$trp:`, `$axis2:`, `$url:`) and `get-property()` with literal
//! arguments may appear inside it (the `synapse` module rewrites them at load), and so may Synapse's functions
//! `base64Encode`, `base64Decode` and `url-encode` (the `functions` module).
//!
//! Regexes follow Java's `String.matches()`: the whole string must match.
//!
//! XPath in the `stream` module's subset is evaluated over the raw message bytes when the environment offers them
//! ([`Env::raw_xml`]), which avoids building a libxml2 tree; everything else, and every case the streaming
//! evaluator cannot decide, goes through libxml2.

mod date;
mod functions;
mod head;
mod jsonpath;
mod stream;
mod synapse;
pub mod synexpr;
/// Helpers for the workspace's deterministic mutation tests.
#[doc(hidden)]
pub mod testing;

pub use head::HeadNames;
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

/// A JSON body's bytes, and what holds their share of the memory budget while they are read
/// ([`Env::unparsed_json`]).
pub type UnparsedJson<'a> = (&'a [u8], Box<dyn std::any::Any>);

/// The values an expression can read.
pub trait Env {
    /// A property's value; `None` when it is not set (and where the environment has none).
    fn property(&self, _scope: PropScope, _name: &str) -> Option<Cow<'_, str>> {
        None
    }
    /// Synapse's `$url:NAME`, a query parameter of the request; `None` when it has none.
    fn url_param(&self, _name: &str) -> Option<Cow<'_, str>> {
        None
    }
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
    /// The error for a message whose [`Env::raw_xml`] the streaming reader found the parse would
    /// refuse (`error`, the parse's own), without parsing it. An environment that keeps its parse
    /// keeps this in its place, so that [`Env::document`] answers the same without parsing.
    fn refused(&self, error: sluice_xml::XmlError) -> ExprError {
        ExprError {
            kind: ExprErrorKind::BadMessage,
            message: error.to_string(),
        }
    }
    /// The body bytes when they are JSON (not XML), as they came, whether or not something read
    /// the message as XML since.
    fn raw_json(&self) -> Option<&[u8]> {
        None
    }
    /// The JSON body's bytes while no tree of it has been made (see [`Env::json`]), with what holds
    /// their share of the memory budget while a path reads them
    /// ([`JsonPath::evaluate_text`]); `None` when there is a tree, or no JSON body, to read.
    fn unparsed_json(&self) -> Result<Option<UnparsedJson<'_>>, ExprError> {
        Ok(None)
    }
    /// The message as JSON, parsed on first use: `None` when the body is empty (nothing to find);
    /// an error when it is not JSON or not available.
    fn json(&self) -> Result<Option<&serde_json::Value>, ExprError> {
        Err(invalid(
            "the message body is not available to this expression",
        ))
    }
    /// A variable set by the `variable` mediator (MI 4.4); `None` when it is not set.
    fn variable(&self, _name: &str) -> Option<serde_json::Value> {
        None
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
    /// MI 4.4's `${...}` ([`synexpr`]).
    Synapse(Box<synexpr::SynExpr>),
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
    /// The message's tree would take more memory than all messages may hold at once.
    TooLarge,
    /// The memory all messages may hold at once is taken now: the message may be tried again.
    Overloaded,
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
    // Read at load through [`Registry`], as constants: handled before the scope is looked up.
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

/// The get-property scopes whose values are known at load.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoadScope {
    /// `get-property('registry', KEY)`: a registry resource or local entry (`KEY@NAME`: one of a
    /// resource's properties).
    Registry,
    /// `get-property('file', KEY)`: MI's `conf/file.properties`.
    File,
}

/// Reads `get-property('registry' | 'file', KEY)` at load: the text for a key, or why there is
/// none.
pub type Registry<'r> = &'r dyn Fn(LoadScope, &str) -> Result<String, String>;

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

/// The context node of an XPath over a message: its root element (a SOAP message's Envelope), as
/// Synapse evaluates with the envelope as context, so that relative paths such as
/// `s11:Body/child::*[1]` start there; the document itself when it has no element.
fn message_context(doc: &sluice_xml::Document) -> sluice_xml::Node<'_> {
    doc.root_element().unwrap_or_else(|| doc.as_node())
}

impl Expr {
    /// Compiles an expression as written in a mediator attribute; `ns` are the (prefix, uri) declarations
    /// in scope at the element.
    pub fn compile(text: &str, ns: &[(String, String)]) -> Result<Expr, ExprError> {
        Self::compile_with_registry(text, ns, &|_, key: &str| {
            Err(format!("nothing to read '{key}' from"))
        })
    }

    /// [`Expr::compile`], reading `get-property('registry', KEY)` and `get-property('file', KEY)`
    /// through `registry` at load: the text of the resource, local entry or file property with
    /// that key, or why there is none. (Synapse reads the
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
        if t.starts_with("${") && t.ends_with('}') {
            return synexpr::SynExpr::compile(t, ns).map(|e| Expr::Synapse(Box::new(e)));
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
        if let Some((scope, name)) = &p.over {
            // Over a property's value: JSON text parsed, anything else as a JSON string.
            let Some(text) = env.property(*scope, name) else {
                return Ok((Vec::new(), p.is_definite()));
            };
            let value = serde_json::from_str(&text)
                .unwrap_or_else(|_| serde_json::Value::String(text.into_owned()));
            let (found, definite) = p.evaluate(&value);
            let owned = found
                .into_iter()
                .map(|v| Cow::Owned(v.into_owned()))
                .collect();
            return Ok((owned, definite));
        }
        let wrap = |e: ExprError| ExprError {
            message: format!("json-eval({}): {}", p.as_str(), e.message),
            ..e
        };
        if p.reads_text() {
            // Read from the text, where no tree is made yet and the path can be: only what can
            // hold an answer is built. Where it cannot say, the tree below answers.
            if let Some((text, _held)) = env.unparsed_json().map_err(wrap)? {
                if let Some((values, definite)) = p.evaluate_text(text) {
                    return Ok((values.into_iter().map(Cow::Owned).collect(), definite));
                }
            }
        }
        let (values, definite) = match env.json() {
            Ok(Some(body)) => p.evaluate(body),
            // An empty body: nothing to find (WSO2: "Json Payload is empty").
            Ok(None) => (Vec::new(), p.is_definite()),
            Err(e) => return Err(wrap(e)),
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
            Expr::Json(p) => p.over.is_none(),
            Expr::XPath(x) => x.json,
            Expr::Synapse(s) => s.reads_json(),
            _ => false,
        }
    }

    pub fn body_need(&self) -> BodyNeed {
        match self {
            Expr::XPath(x) => x.need,
            Expr::Json(p) if p.over.is_some() => BodyNeed::None,
            Expr::Json(_) => BodyNeed::Full,
            Expr::Synapse(s) => s.body_need(),
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
            Expr::Synapse(s) => Cow::Owned(s.eval_string(env)?),
            Expr::Json(p) => {
                // The whole JSON body is its text as it came (an XML one is written as JSON).
                if p.as_str() == "$" && p.over.is_none() {
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
                    match s.eval_string_checked(raw) {
                        Ok(Some(v)) => return Ok(Cow::Owned(v)),
                        Ok(None) => {}
                        Err(e) => return Err(env.refused(e)),
                    }
                }
                let vars = x.vars(env);
                let v = if x.no_nodes {
                    NO_MESSAGE.with(|doc| x.xpath.eval_string(doc, &vars))
                } else {
                    x.xpath
                        .eval_string_at(message_context(env.document()?), &vars)
                };
                Cow::Owned(v.map_err(|e| invalid(format!("XPath '{}': {e}", x.text)))?)
            }
        })
    }

    /// The value as MI 4.4's expressions give it: a `${...}` expression's own (a number, a
    /// boolean, JSON, text), any other expression's string value as text.
    pub fn eval_value(&self, env: &dyn Env) -> Result<serde_json::Value, ExprError> {
        match self {
            Expr::Synapse(s) => s.eval(env),
            other => Ok(serde_json::Value::String(
                other.eval_string(env)?.into_owned(),
            )),
        }
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
    /// Relative paths start at the root element, as Synapse's start at the envelope.
    pub fn nodes<'d>(
        &self,
        doc: &'d sluice_xml::Document,
        env: &dyn Env,
    ) -> Result<Vec<sluice_xml::Node<'d>>, ExprError> {
        self.nodes_at(message_context(doc), env)
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
        let nodes = match x.xpath.eval_at(message_context(doc), &x.vars(env)) {
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
        let nodes = match x.xpath.eval_at(message_context(doc), &x.vars(env)) {
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
                    match s.eval_bool_checked(raw) {
                        Ok(Some(b)) => return Ok(b),
                        Ok(None) => {}
                        Err(e) => return Err(env.refused(e)),
                    }
                }
                let vars = x.vars(env);
                if x.no_nodes {
                    NO_MESSAGE.with(|doc| x.xpath.eval_bool(doc, &vars))
                } else {
                    x.xpath
                        .eval_bool_at(message_context(env.document()?), &vars)
                }
                .map_err(|e| invalid(format!("XPath '{}': {e}", x.text)))
            }
            Expr::Synapse(s) => s.eval_bool(env),
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
/// `Err` when the text would pass `MAX_JSON_TEXT`.
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
    fn document(&self) -> Result<&sluice_xml::Document, ExprError> {
        Ok(&self.0)
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod json_tests;
