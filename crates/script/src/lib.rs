//! JavaScript for the `<script>` mediator, on QuickJS (`rquickjs`).
//!
//! A script never touches the message. It runs over a [`Snapshot`] of what it may read, through
//! Synapse's `mc` object (`prelude.js`, written in JavaScript), and returns what it changed as
//! [`Op`]s, in order; the mediator applies them. So no Rust value is borrowed by JavaScript, and
//! a script that fails leaves the message as it was.
//!
//! | Rule | Why |
//! |---|---|
//! | One context a thread, Sluice's own JavaScript loaded once; a script's source runs through direct eval inside a function (`runner.js`), the globals it made without `var` deleted after, and a run that fails drops the context | nothing of one run reaches the next message, as Synapse gives each run fresh bindings; a context a run cost 1 ms (docs/benchmarks/script.md) |
//! | Sloppy mode, global code | Synapse's engines run scripts as plain scripts: an inline script's value is its last statement's |
//! | At most [`MEMORY_LIMIT`] bytes a runtime, [`TIME_LIMIT`] a run, and stopped when the message's run is stopped | a script cannot take the process's memory or hold its thread for ever |
//! | Checked at load ([`Script::compile`]) | a script that does not parse is an artifact that does not deploy, as in Synapse |
//!
//! Payloads come as the script is written for. A script with E4X syntax (Rhino's, Synapse 3.0.1's
//! `js`), or `language="rhinoJs"`, gets E4X XML objects: its XML literals, `..`, `.*::` and `.@` are
//! rewritten at load (`e4x.rs`) into calls on `e4x.js`. Any other script gets strings, as MI 4.4's
//! GraalJS gives them. E4X beyond that (`x.name`, filters, `for each`) is refused at load with
//! [`ScriptErrorKind::E4x`].

use rquickjs::{CatchResultExt, CaughtError, Context, Ctx, Function, Runtime, Value};
use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Memory a thread's JavaScript runtime may take.
pub const MEMORY_LIMIT: usize = 64 * 1024 * 1024;

/// How long one run of a script may take before it is stopped.
pub const TIME_LIMIT: Duration = Duration::from_secs(2);

/// The stack a script may use (deep recursion is stopped with an error, not a crash).
const STACK_LIMIT: usize = 512 * 1024;

const PRELUDE: &str = include_str!("prelude.js");

/// How a script's source runs in the thread's context (sloppy code: direct eval in a function).
const RUNNER: &str = include_str!("runner.js");

/// The XML objects E4X scripts get (`e4x.rs` rewrites the syntax into calls on them).
const E4X: &str = include_str!("e4x.js");

mod e4x;

/// What kind of failure a script had.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScriptErrorKind {
    /// It does not parse.
    Syntax,
    /// It uses E4X, which is not supported.
    E4x,
    /// It calls what Sluice's `mc` does not have yet, or Java classes.
    Unsupported,
    /// It threw, or `mc` refused what it was given.
    Thrown,
    /// The function to call is not defined.
    NoFunction,
    /// It ran past its time, or its message's run was stopped.
    Stopped,
    /// The engine itself failed (out of memory, no runtime).
    Engine,
}

#[derive(Clone, Debug)]
pub struct ScriptError {
    pub kind: ScriptErrorKind,
    pub message: String,
}

impl fmt::Display for ScriptError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ScriptError {}

fn error(kind: ScriptErrorKind, message: impl Into<String>) -> ScriptError {
    ScriptError {
        kind,
        message: message.into(),
    }
}

/// What a script may read of its message. Parts a script never names are left `None` (not made).
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    /// The payload (the SOAP body's first child, or the root of plain XML) as XML text.
    pub xml: Option<String>,
    /// The payload as JSON text, when the message is JSON.
    pub json: Option<String>,
    /// The whole envelope as XML text.
    pub envelope: Option<String>,
    /// Default-scope properties.
    pub props: Vec<(String, String)>,
    /// Axis2-scope properties.
    pub axis2: Vec<(String, String)>,
    /// Transport headers.
    pub transport: Vec<(String, String)>,
    pub message_id: String,
    /// The WS-Addressing To.
    pub to: Option<String>,
}

/// One change a script made, to apply to the message in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// `setPayloadXML`: the new payload's XML text.
    PayloadXml(String),
    /// `setPayloadJSON`: the new payload's JSON text.
    PayloadJson(String),
    /// `setProperty(name, value, scope)`: scope `default`, `operation`, `axis2` or `transport`.
    Set {
        scope: String,
        name: String,
        value: String,
    },
    /// `removeProperty(name, scope)`.
    Remove { scope: String, name: String },
    /// `setTo(address)`: the WS-Addressing To (`None`: none, as `setTo(null)`).
    To(Option<String>),
}

/// What a run did: whether the flow goes on (anything but a boolean `false`), and its changes.
#[derive(Debug)]
pub struct Outcome {
    pub proceed: bool,
    pub ops: Vec<Op>,
}

/// What of the message a script's source names, found by its text at load.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Uses {
    /// The payload: read or replaced (`getPayloadXML`, `setPayloadJSON`, ...).
    pub payload: bool,
    /// The whole envelope (`getEnvelopeXML`, `getPayloadText`).
    pub envelope: bool,
}

/// A script checked at load: its source, the included sources run after it, and the function to
/// call (`None`: an inline script, run as it is).
#[derive(Debug)]
pub struct Script {
    source: String,
    includes: Vec<String>,
    function: Option<String>,
    uses: Uses,
    /// Payloads are E4X XML objects (Rhino's), not strings (GraalJS's).
    e4x: bool,
}

impl Script {
    /// Checks `source` (and each of `includes`) parses as a script; `function` is the function a
    /// keyed script calls (`mediate` by default in Synapse). E4X in them is rewritten.
    pub fn compile(
        source: &str,
        includes: Vec<String>,
        function: Option<String>,
    ) -> Result<Script, ScriptError> {
        Script::compile_with(source, includes, function, false)
    }

    /// [`Script::compile`]; `rhino` (`language="rhinoJs"`) gives E4X payloads even to a script
    /// without E4X syntax.
    pub fn compile_with(
        source: &str,
        includes: Vec<String>,
        function: Option<String>,
        rhino: bool,
    ) -> Result<Script, ScriptError> {
        if let Some(name) = &function {
            let mut chars = name.chars();
            let first = chars
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$');
            if !first || !chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$') {
                return Err(error(
                    ScriptErrorKind::Syntax,
                    format!("function '{name}' is not a JavaScript name"),
                ));
            }
        }
        let mut e4x = rhino;
        let mut plain = |s: &str| -> Result<String, ScriptError> {
            let js = match e4x::rewrite(s) {
                Ok((js, used)) => {
                    e4x |= used;
                    js
                }
                // Not E4X as Sluice reads it: the parse says what is wrong.
                Err(_) => s.to_owned(),
            };
            check_syntax(&js, s)?;
            check_names(s)?;
            Ok(js)
        };
        let source = plain(source)?;
        let includes = includes
            .iter()
            .map(|s| plain(s))
            .collect::<Result<Vec<_>, _>>()?;
        let source = source.as_str();
        let all = std::iter::once(source).chain(includes.iter().map(String::as_str));
        let mut uses = Uses::default();
        for s in all {
            uses.payload |= ["PayloadXML", "PayloadJSON", "getPayloadText", "jsonObject"]
                .iter()
                .any(|m| s.contains(m));
            uses.envelope |= s.contains("getEnvelope") || s.contains("getPayloadText");
        }
        Ok(Script {
            source: source.to_owned(),
            includes,
            function,
            uses,
            e4x,
        })
    }

    /// What of the message the script names.
    pub fn uses(&self) -> Uses {
        self.uses
    }

    /// Runs the script over `snap`. `stop`, when set, stops it (its message's run was stopped).
    pub fn run(
        &self,
        snap: &Snapshot,
        stop: Option<Arc<AtomicBool>>,
    ) -> Result<Outcome, ScriptError> {
        RUNTIME.with(|rt| {
            let rt = rt
                .as_ref()
                .map_err(|e| error(ScriptErrorKind::Engine, e.clone()))?;
            let cx = CONTEXT.with(|c| match &*c.borrow() {
                Some(cx) => Ok(cx.clone()),
                None => thread_context(rt),
            })?;
            let started = Instant::now();
            let stopped = Arc::new(AtomicBool::new(false));
            let flag = stopped.clone();
            rt.set_interrupt_handler(Some(Box::new(move || {
                let stop = stop.as_ref().is_some_and(|s| s.load(Ordering::Relaxed))
                    || started.elapsed() > TIME_LIMIT;
                if stop {
                    flag.store(true, Ordering::Relaxed);
                }
                stop
            })));
            let out = cx.with(|ctx| self.run_in(&ctx, snap));
            rt.set_interrupt_handler(None);
            // A run that failed may have left anything behind: the next gets a new context.
            CONTEXT.with(|c| *c.borrow_mut() = out.is_ok().then_some(cx));
            match out {
                Err(_) if stopped.load(Ordering::Relaxed) => Err(error(
                    ScriptErrorKind::Stopped,
                    format!(
                        "the script was stopped: it ran past {} s or its message's run was stopped",
                        TIME_LIMIT.as_secs()
                    ),
                )),
                out => out,
            }
        })
    }

    fn run_in(&self, ctx: &Ctx<'_>, snap: &Snapshot) -> Result<Outcome, ScriptError> {
        let global = |name: &str| -> Result<Function, ScriptError> {
            ctx.globals().get(name).catch(ctx).map_err(|e| thrown(&e))
        };
        global("__sluice_setup")?
            .call::<_, ()>((snapshot_json(snap, self.e4x),))
            .catch(ctx)
            .map_err(|e| thrown(&e))?;
        let result: Value = match &self.function {
            None => global("__sluice_run")?
                .call((self.source.as_str(),))
                .catch(ctx)
                .map_err(|e| thrown(&e))?,
            Some(name) => {
                let called: rquickjs::Array = global("__sluice_call")?
                    .call((self.source.as_str(), self.includes.clone(), name.as_str()))
                    .catch(ctx)
                    .map_err(|e| thrown(&e))?;
                if called.get::<bool>(0).ok() != Some(true) {
                    return Err(error(
                        ScriptErrorKind::NoFunction,
                        format!("the script defines no function {name}"),
                    ));
                }
                called.get(1).catch(ctx).map_err(|e| thrown(&e))?
            }
        };
        let proceed = result.as_bool() != Some(false);
        global("__sluice_clean")?
            .call::<_, ()>(())
            .catch(ctx)
            .map_err(|e| thrown(&e))?;
        let ops: Function = ctx
            .globals()
            .get("__sluice_ops")
            .catch(ctx)
            .map_err(|e| thrown(&e))?;
        let ops: String = ops.call(()).catch(ctx).map_err(|e| thrown(&e))?;
        Ok(Outcome {
            proceed,
            ops: parse_ops(&ops)?,
        })
    }
}

/// The thread's context: Sluice's own code (`mc`, E4X's objects, the runner) loaded once, and the
/// globals it has then noted (`__sluice_clean`).
fn thread_context(rt: &Runtime) -> Result<Context, ScriptError> {
    let cx = Context::full(rt).map_err(|e| {
        error(
            ScriptErrorKind::Engine,
            format!("no JavaScript context: {e}"),
        )
    })?;
    cx.with(|ctx| -> Result<(), ScriptError> {
        let xpath = Function::new(ctx.clone(), |ctx: Ctx<'_>, xml: String, expr: String| {
            xpath_texts(&xml, &expr).map_err(|e| rquickjs::Exception::throw_message(&ctx, &e))
        })
        .map_err(|e| error(ScriptErrorKind::Engine, e.to_string()))?;
        ctx.globals()
            .set("__sluice_xpath", xpath)
            .map_err(|e| error(ScriptErrorKind::Engine, e.to_string()))?;
        for code in [E4X, PRELUDE, RUNNER, "__sluice_setup('{\"props\":{},\"axis2\":{},\"transport\":{},\"xml\":null,\"json\":null}'); __sluice_clean();"] {
            eval::<Value>(&ctx, code)?;
        }
        Ok(())
    })?;
    Ok(cx)
}

thread_local! {
    /// The thread's context, once made ([`thread_context`]); dropped after a run that failed.
    static CONTEXT: RefCell<Option<Context>> = const { RefCell::new(None) };

    /// The thread's runtime, made on first use with its limits.
    static RUNTIME: Result<Runtime, String> = Runtime::new()
        .inspect(|rt| {
            rt.set_memory_limit(MEMORY_LIMIT);
            rt.set_max_stack_size(STACK_LIMIT);
        })
        .map_err(|e| format!("no JavaScript runtime: {e}"));
}

/// The text of each node `expr` selects in `xml` (`mc.getXpathResult(expr).selectNodes(xml)`).
/// Each thread compiles an expression once and keeps it (up to [`XPATHS_KEPT`]).
fn xpath_texts(xml: &str, expr: &str) -> Result<Vec<String>, String> {
    struct NoProperties;
    impl sluice_expr::Env for NoProperties {}
    thread_local! {
        static COMPILED: RefCell<HashMap<String, Arc<sluice_expr::Expr>>> = RefCell::default();
    }
    let compiled = COMPILED.with(|c| c.borrow().get(expr).cloned());
    let e = match compiled {
        Some(e) => e,
        None => {
            let e = Arc::new(
                sluice_expr::Expr::compile(expr, &[])
                    .map_err(|e| format!("XPath '{expr}': {e}"))?,
            );
            COMPILED.with(|c| {
                let mut c = c.borrow_mut();
                if c.len() >= XPATHS_KEPT {
                    c.clear();
                }
                c.insert(expr.to_owned(), e.clone());
            });
            e
        }
    };
    let doc = sluice_xml::Document::parse(xml.as_bytes())
        .map_err(|e| format!("selectNodes: the XML does not parse: {e}"))?;
    let nodes = e.nodes(&doc, &NoProperties).map_err(|e| e.to_string())?;
    Ok(nodes.iter().map(|n| n.text_content()).collect())
}

/// Compiled `getXpathResult` expressions a thread keeps.
const XPATHS_KEPT: usize = 256;

/// Evaluates `source` as global code in sloppy mode (as Synapse's engines run scripts).
fn eval<'js, V: rquickjs::FromJs<'js>>(ctx: &Ctx<'js>, source: &str) -> Result<V, ScriptError> {
    let mut opts = rquickjs::context::EvalOptions::default();
    opts.strict = false;
    ctx.eval_with_options(source, opts)
        .catch(ctx)
        .map_err(|e| thrown(&e))
}

fn thrown(e: &CaughtError<'_>) -> ScriptError {
    let message = match e {
        CaughtError::Exception(ex) => match (ex.message(), ex.stack()) {
            (Some(m), _) => m,
            (None, Some(s)) => s,
            (None, None) => "an exception without a message".to_owned(),
        },
        CaughtError::Value(v) => v
            .as_string()
            .and_then(|s| s.to_string().ok())
            .unwrap_or_else(|| format!("a value of type {}", v.type_name())),
        CaughtError::Error(e) => e.to_string(),
    };
    error(ScriptErrorKind::Thrown, message)
}

/// Whether `source` (`written` after its E4X was rewritten) parses as a script, without running
/// it (in a context of its own).
fn check_syntax(source: &str, written: &str) -> Result<(), ScriptError> {
    RUNTIME.with(|rt| {
        let rt = rt
            .as_ref()
            .map_err(|e| error(ScriptErrorKind::Engine, e.clone()))?;
        let cx = Context::full(rt)
            .map_err(|e| error(ScriptErrorKind::Engine, format!("no JavaScript context: {e}")))?;
        cx.with(|ctx| {
            // The source as a function's body: parsed, not run.
            let make: Function = eval(&ctx, "(function (s) { return new Function(s); })")?;
            match make.call::<_, Value>((source,)).catch(&ctx) {
                Ok(_) => Ok(()),
                Err(e) => {
                    let e = thrown(&e);
                    if looks_like_e4x(written) {
                        Err(error(
                            ScriptErrorKind::E4x,
                            format!("E4X beyond XML literals, `..`, `.*::` and `.@` is not supported yet ({e})"),
                        ))
                    } else {
                        Err(error(ScriptErrorKind::Syntax, format!("the script does not parse: {e}")))
                    }
                }
            }
        })
    })
}

/// The `mc` methods `prelude.js` defines.
const MC_METHODS: &[&str] = &[
    "getPayloadXML",
    "setPayloadXML",
    "getPayloadJSON",
    "setPayloadJSON",
    "getPayloadText",
    "getEnvelopeXML",
    "getMessageID",
    "getProperty",
    "setProperty",
    "removeProperty",
    "getJsonText",
    "setJsonText",
    "jsonObject",
    "setJsonObject",
    "getXpathResult",
    "getEnvelope",
    "getTo",
    "setTo",
    "getReplyTo",
];

/// Refuses at load what would fail at every run: an `mc.name` Sluice's `mc` lacks (Synapse's
/// `mc` is a Java object with many more), and Java classes (`java.`, `Packages.`, `Java.type`).
fn check_names(source: &str) -> Result<(), ScriptError> {
    for java in ["java.", "Packages.", "Java.type"] {
        if let Some(at) = find_word(source, java) {
            let end = source[at..]
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '.' || c == '_'))
                .map_or(source.len(), |k| at + k);
            return Err(error(
                ScriptErrorKind::Unsupported,
                format!(
                    "Java classes are not available to scripts ({})",
                    &source[at..end]
                ),
            ));
        }
    }
    let mut from = 0;
    while let Some(at) = find_word(&source[from..], "mc.").map(|k| from + k) {
        let name_at = at + 3;
        let end = source[name_at..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '$'))
            .map_or(source.len(), |k| name_at + k);
        let name = &source[name_at..end];
        if !name.is_empty() && !MC_METHODS.contains(&name) {
            return Err(error(
                ScriptErrorKind::Unsupported,
                format!("mc.{name} is not supported yet"),
            ));
        }
        from = end;
    }
    Ok(())
}

/// The first `word` in `source` not preceded by a name's character.
fn find_word(source: &str, word: &str) -> Option<usize> {
    let b = source.as_bytes();
    source.match_indices(word).map(|(i, _)| i).find(|&i| {
        i == 0 || !(b[i - 1].is_ascii_alphanumeric() || matches!(b[i - 1], b'_' | b'$' | b'.'))
    })
}

/// Whether a source that does not parse uses E4X: an XML literal after `(`, `=`, `,`, `:` or
/// `return`, or E4X's `..*::` / `.@` navigation.
fn looks_like_e4x(source: &str) -> bool {
    if ["::", ".@", ".(", "for each"]
        .iter()
        .any(|p| source.contains(p))
    {
        return true;
    }
    let b = source.as_bytes();
    b.iter().enumerate().any(|(i, &c)| {
        c == b'<'
            && b.get(i + 1).is_some_and(|n| n.is_ascii_alphabetic())
            && source[..i]
                .trim_end()
                .bytes()
                .last()
                .is_some_and(|p| matches!(p, b'(' | b'=' | b',' | b':'))
    }) || source.contains("return <")
}

fn snapshot_json(s: &Snapshot, e4x: bool) -> String {
    let map = |v: &[(String, String)]| {
        serde_json::Value::Object(
            v.iter()
                .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
                .collect(),
        )
    };
    serde_json::json!({
        "xml": s.xml,
        "json": s.json,
        "envelope": s.envelope,
        "props": map(&s.props),
        "axis2": map(&s.axis2),
        "transport": map(&s.transport),
        "id": s.message_id,
        "to": s.to,
        "e4x": e4x,
    })
    .to_string()
}

fn parse_ops(text: &str) -> Result<Vec<Op>, ScriptError> {
    let bad = || {
        error(
            ScriptErrorKind::Engine,
            format!("the script's changes did not read back: {text}"),
        )
    };
    let list: Vec<Vec<String>> = serde_json::from_str(text).map_err(|_| bad())?;
    list.into_iter()
        .map(|mut op| {
            let mut next = || (!op.is_empty()).then(|| op.remove(0)).ok_or_else(bad);
            Ok(match next()?.as_str() {
                "xml" => Op::PayloadXml(next()?),
                "json" => Op::PayloadJson(next()?),
                "set" => Op::Set {
                    scope: next()?,
                    name: next()?,
                    value: next()?,
                },
                "remove" => Op::Remove {
                    scope: next()?,
                    name: next()?,
                },
                "to" => Op::To(next().ok()),
                _ => return Err(bad()),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests;
