//! The sequence executor. It is synchronous: it runs mediators until one decides where the message goes,
//! and returns that decision to the transport, which does the I/O. Nothing here awaits.

use crate::error::{Error, ErrorKind};
use crate::message::{Body, Direction, Message};
use crate::plan::{Cond, EndpointPlan, FaultPlan, LogPlan, Step, Value, XsltPlan};
use sluice_config::{LogCategory, LogLevel, PropertyType, Scope};
use sluice_expr::{Env, Expr, ExprError, ExprErrorKind, PropScope};
use std::borrow::Cow;
use std::cell::OnceCell;
use std::fmt::Write;
use std::sync::Arc;

/// What a sequence decided.
#[derive(Debug, Clone)]
pub enum Flow {
    /// The sequence ended without deciding.
    Continue,
    /// `send`: to this endpoint, or (None) to the client if the message is a response, else to `To`.
    Send(Option<Arc<EndpointPlan>>),
    /// `respond`: the current message goes back to the client.
    Respond,
    /// `drop`: mediation of this message stops.
    Drop,
}

/// Checks and normalises a value for a typed property.
pub fn typed(ty: PropertyType, s: &str) -> Result<String, String> {
    let t = s.trim();
    let ok = match ty {
        PropertyType::String | PropertyType::Om => return Ok(s.to_owned()),
        PropertyType::Integer => t.parse::<i32>().map(|v| v.to_string()).ok(),
        PropertyType::Short => t.parse::<i16>().map(|v| v.to_string()).ok(),
        PropertyType::Long => t.parse::<i64>().map(|v| v.to_string()).ok(),
        PropertyType::Double | PropertyType::Float => t.parse::<f64>().map(|v| v.to_string()).ok(),
        PropertyType::Boolean => {
            // Java's Boolean.parseBoolean: "true" (any case) is true, everything else false.
            Some(t.eq_ignore_ascii_case("true").to_string())
        }
    };
    ok.ok_or_else(|| format!("'{s}' is not a valid {ty:?}"))
}

/// The message as expressions see it: its properties, and the body parsed as XML on the first XPath
/// that needs it (at most once per run; a mediator that replaces the body drops the parse).
struct View<'a> {
    msg: &'a Message,
    doc: &'a OnceCell<Result<sluice_xml::Document, ExprError>>,
}

impl Env for View<'_> {
    fn property(&self, scope: PropScope, name: &str) -> Option<Cow<'_, str>> {
        self.msg.property(scope, name)
    }
    fn url_param(&self, name: &str) -> Option<Cow<'_, str>> {
        self.msg.url_param(name)
    }
    fn document(&self) -> Result<&sluice_xml::Document, ExprError> {
        self.doc
            .get_or_init(|| parse_body(self.msg))
            .as_ref()
            .map_err(Clone::clone)
    }
    /// The body bytes while no tree has been built: once one exists, mediators may have changed it, so
    /// expressions read the tree.
    fn raw_xml(&self) -> Option<&[u8]> {
        match &self.msg.body {
            Body::Bytes(b) if self.doc.get().is_none() => Some(b),
            _ => None,
        }
    }
}

fn parse_body(msg: &Message) -> Result<sluice_xml::Document, ExprError> {
    let bad = |m: String| ExprError {
        kind: ExprErrorKind::BadMessage,
        message: m,
    };
    match &msg.body {
        Body::Bytes(b) => sluice_xml::parse_untrusted(b, &sluice_xml::Limits::default())
            .map_err(|e| bad(format!("the message is not acceptable XML: {e}"))),
        Body::Empty => Err(bad("the message has no body".to_owned())),
        Body::Stream => Err(ExprError {
            kind: ExprErrorKind::Invalid,
            message: "internal: the body was not read for an expression that needs it".to_owned(),
        }),
    }
}

type DocCache = OnceCell<Result<sluice_xml::Document, ExprError>>;

fn expr_error(e: ExprError) -> Error {
    let kind = if e.kind == ExprErrorKind::BadMessage {
        ErrorKind::BadRequest
    } else {
        ErrorKind::Mediation
    };
    Error::new(kind, e.message)
}

fn eval_value(v: &Value, msg: &Message, doc: &DocCache) -> Result<String, Error> {
    match v {
        Value::Literal(s) => Ok(s.clone()),
        Value::Expr(e) => e
            .eval_string(&View { msg, doc })
            .map(Cow::into_owned)
            .map_err(expr_error),
    }
}

fn eval_expr(e: &Expr, msg: &Message, doc: &DocCache) -> Result<String, Error> {
    e.eval_string(&View { msg, doc })
        .map(Cow::into_owned)
        .map_err(expr_error)
}

/// Runs steps in order until one of them decides the flow. libxml2 values made here never leave it.
pub fn run(steps: &[Step], msg: &mut Message) -> Result<Flow, Error> {
    let mut doc = DocCache::new();
    run_steps(steps, msg, &mut doc)
}

fn run_steps(steps: &[Step], msg: &mut Message, doc: &mut DocCache) -> Result<Flow, Error> {
    for step in steps {
        match step {
            Step::Send(ep) => return Ok(Flow::Send(ep.clone())),
            Step::Respond => return Ok(Flow::Respond),
            Step::Drop => return Ok(Flow::Drop),
            Step::Log(l) => log(l, msg, doc),
            Step::SetProperty {
                scope,
                name,
                ty,
                value,
            } => {
                let v = eval_value(value, msg, doc)?;
                let v = typed(*ty, &v).map_err(|e| {
                    Error::new(ErrorKind::Mediation, format!("property {name}: {e}"))
                })?;
                match scope {
                    Scope::Default | Scope::Operation => msg.props.set(name, v),
                    Scope::Axis2 | Scope::Axis2Client => {
                        if name == "HTTP_SC" {
                            let sc = v.trim().parse::<http::StatusCode>().map_err(|e| {
                                Error::new(ErrorKind::Mediation, format!("HTTP_SC '{v}'"))
                                    .with_source(e)
                            })?;
                            msg.status = Some(sc);
                        }
                        msg.axis2.set(name, v)
                    }
                    Scope::Transport => {
                        unreachable!("transport properties compile to header steps")
                    }
                }
            }
            Step::RemoveProperty { scope, name } => match scope {
                Scope::Default | Scope::Operation => msg.props.remove(name),
                _ => msg.axis2.remove(name),
            },
            Step::SetHeader { name, value } => {
                let v = eval_value(value, msg, doc)?;
                msg.set_header(name.clone(), &v)?;
            }
            Step::RemoveHeader(name) => {
                msg.headers.remove(name);
            }
            Step::SetTo(v) => msg.to = Some(eval_value(v, msg, doc)?),
            Step::RemoveTo => msg.to = None,
            Step::Filter {
                cond,
                then,
                otherwise,
            } => {
                let branch = if test(cond, msg, doc)? {
                    then
                } else {
                    otherwise
                };
                match run_steps(branch, msg, doc)? {
                    Flow::Continue => {}
                    f => return Ok(f),
                }
            }
            Step::Switch {
                source,
                cases,
                default,
            } => {
                let value = eval_expr(source, msg, doc)?;
                let branch = cases
                    .iter()
                    .find(|(re, _)| re.matches(&value))
                    .map(|(_, s)| s)
                    .unwrap_or(default);
                match run_steps(branch, msg, doc)? {
                    Flow::Continue => {}
                    f => return Ok(f),
                }
            }
            Step::Call(seq) => match run_steps(&seq.steps, msg, doc)? {
                Flow::Continue => {}
                f => return Ok(f),
            },
            Step::Xslt(x) => xslt(x, msg, doc)?,
            Step::MakeFault(f) => {
                make_fault(f, msg, doc)?;
                // The body changed: a later XPath must see the fault, not the old parse.
                *doc = DocCache::new();
            }
        }
    }
    Ok(Flow::Continue)
}

fn test(cond: &Cond, msg: &Message, doc: &DocCache) -> Result<bool, Error> {
    match cond {
        Cond::Regex { source, regex } => Ok(regex.matches(&eval_expr(source, msg, doc)?)),
        Cond::XPath(x) => x.eval_bool(&View { msg, doc }).map_err(expr_error),
    }
}

fn xml_error(what: &str, e: sluice_xml::XmlError) -> Error {
    Error::new(ErrorKind::Mediation, format!("{what}: {e}"))
}

/// `xslt`: the source node (default: the first child of the SOAP Body) is transformed and the result
/// replaces it. `fastXSLT`: the whole message is transformed and the output becomes the body as is.
fn xslt(x: &XsltPlan, msg: &mut Message, doc: &mut DocCache) -> Result<(), Error> {
    let mut params = Vec::with_capacity(x.params.len());
    for (n, v) in &x.params {
        params.push((n.as_str(), eval_value(v, msg, doc)?));
    }
    let params: Vec<(&str, &str)> = params.iter().map(|(n, v)| (*n, v.as_str())).collect();
    let what = format!("xslt {}", x.key);
    let parsed = match doc.take() {
        Some(d) => d,
        None => parse_body(msg),
    };
    let mut d = parsed.map_err(expr_error)?;
    if x.fast {
        let out = x
            .sheet
            .transform_to_bytes(&d, &params)
            .map_err(|e| xml_error(&what, e))?;
        msg.body = Body::Bytes(out.into());
        msg.headers.remove(http::header::CONTENT_LENGTH);
        return Ok(());
    }
    let (target, input) = {
        let node = match &x.source {
            Some(e) => e.first_node(&d).map_err(expr_error)?,
            None => d.soap_body_first_child().or_else(|| {
                if d.soap_body().is_none() {
                    d.root_element()
                } else {
                    None
                }
            }),
        };
        let node = node.ok_or_else(|| {
            Error::new(
                ErrorKind::Mediation,
                format!("{what}: the source selects nothing in the message"),
            )
        })?;
        (
            node.id(),
            node.to_document().map_err(|e| xml_error(&what, e))?,
        )
    };
    let result = x
        .sheet
        .transform(&input, &params)
        .map_err(|e| xml_error(&what, e))?;
    d.replace_node(target, &result)
        .map_err(|e| xml_error(&what, e))?;
    let bytes = d
        .to_bytes_with(sluice_xml::SerializeOptions {
            xml_declaration: false,
            indent: false,
        })
        .map_err(|e| xml_error(&what, e))?;
    msg.body = Body::Bytes(bytes.into());
    msg.headers.remove(http::header::CONTENT_LENGTH);
    // The tree is the new body: later XPath in this run reads it without parsing again.
    *doc = DocCache::from(Ok(d));
    Ok(())
}

fn make_fault(f: &FaultPlan, msg: &mut Message, doc: &DocCache) -> Result<(), Error> {
    let body = match &f.fixed {
        Some(b) => b.clone(),
        None => {
            let reason = eval_value(&f.reason, msg, doc)?;
            let detail = match &f.detail {
                Some(crate::plan::DetailPlan::Value(v)) => Some(eval_value(v, msg, doc)?),
                _ => None,
            };
            f.render(&reason, detail.as_deref())
        }
    };
    msg.set_body(body, crate::fault::content_type(f.version));
    msg.is_fault = true;
    msg.soap = f.version;
    if f.response {
        msg.props.set("RESPONSE", "true".to_owned());
    }
    Ok(())
}

fn log(l: &LogPlan, msg: &mut Message, doc: &DocCache) {
    let enabled = match l.category {
        LogCategory::Trace => tracing::enabled!(target: "sluice::log", tracing::Level::TRACE),
        LogCategory::Debug => tracing::enabled!(target: "sluice::log", tracing::Level::DEBUG),
        LogCategory::Info => tracing::enabled!(target: "sluice::log", tracing::Level::INFO),
        LogCategory::Warn => tracing::enabled!(target: "sluice::log", tracing::Level::WARN),
        LogCategory::Error | LogCategory::Fatal => {
            tracing::enabled!(target: "sluice::log", tracing::Level::ERROR)
        }
    };
    if !enabled {
        return;
    }
    let line = log_line(l, msg, doc);
    match l.category {
        LogCategory::Trace => {
            tracing::trace!(target: "sluice::log", proxy = %msg.service, "{line}")
        }
        LogCategory::Debug => {
            tracing::debug!(target: "sluice::log", proxy = %msg.service, "{line}")
        }
        LogCategory::Info => tracing::info!(target: "sluice::log", proxy = %msg.service, "{line}"),
        LogCategory::Warn => tracing::warn!(target: "sluice::log", proxy = %msg.service, "{line}"),
        LogCategory::Error | LogCategory::Fatal => {
            tracing::error!(target: "sluice::log", proxy = %msg.service, "{line}")
        }
    }
}

/// The text of a log mediator's line, in Synapse's order: the standard fields, headers, envelope, then the
/// custom properties.
fn log_line(l: &LogPlan, msg: &mut Message, doc: &DocCache) -> String {
    let sep = l.separator.as_str();
    let mut parts: Vec<String> = Vec::new();
    if l.level != LogLevel::Custom {
        let id = msg.message_id().to_owned();
        if let Some(to) = &msg.to {
            parts.push(format!("To: {to}"));
        }
        if let Some(a) = msg.soap_action() {
            parts.push(format!("WSAction: {a}"));
            parts.push(format!("SOAPAction: {a}"));
        }
        parts.push(format!("MessageID: {id}"));
        parts.push(format!(
            "Direction: {}",
            if msg.direction == Direction::Request {
                "request"
            } else {
                "response"
            }
        ));
    }
    if matches!(l.level, LogLevel::Headers | LogLevel::Full) {
        for (k, v) in &msg.headers {
            parts.push(format!("{}: {}", k, String::from_utf8_lossy(v.as_bytes())));
        }
    }
    if l.level == LogLevel::Full {
        let env = match &msg.body {
            Body::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
            Body::Empty => String::new(),
            Body::Stream => "(body not read)".to_owned(),
        };
        parts.push(format!("Envelope: {}", env.trim()));
    }
    for (name, v) in &l.properties {
        // A property that cannot be evaluated is logged as such rather than failing the message.
        let value = eval_value(v, msg, doc).unwrap_or_else(|e| format!("(error: {})", e.context));
        parts.push(format!("{name} = {value}"));
    }
    let mut out = String::new();
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            out.push_str(sep);
        }
        let _ = write!(out, "{p}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_values() {
        assert_eq!(typed(PropertyType::Integer, " 42 ").unwrap(), "42");
        assert!(typed(PropertyType::Integer, "x").is_err());
        assert_eq!(typed(PropertyType::Boolean, "TRUE").unwrap(), "true");
        assert_eq!(typed(PropertyType::Boolean, "yes").unwrap(), "false");
        assert_eq!(typed(PropertyType::String, " a ").unwrap(), " a ");
    }

    #[test]
    fn xpath_streams_over_unparsed_bytes_and_reads_the_tree_once_there_is_one() {
        let mut msg = Message::request(
            "p".into(),
            http::Method::POST,
            "/".into(),
            http::HeaderMap::new(),
        );
        let body: &[u8] = b"<a><b>1</b><b>2</b></a>";
        msg.body = Body::Bytes(bytes::Bytes::from_static(body));
        let doc = DocCache::new();
        let second = Expr::compile("//b[2]", &[]).unwrap();
        assert!(second.streams());
        assert_eq!(
            View {
                msg: &msg,
                doc: &doc
            }
            .raw_xml(),
            Some(body)
        );
        assert_eq!(eval_expr(&second, &msg, &doc).unwrap(), "2");
        assert!(doc.get().is_none(), "answered without building a tree");
        // Outside the streaming subset: the body is parsed, and from then on the tree is what counts.
        let last = Expr::compile("//b[last()]", &[]).unwrap();
        assert!(!last.streams());
        assert_eq!(eval_expr(&last, &msg, &doc).unwrap(), "2");
        assert!(doc.get().is_some());
        assert_eq!(
            View {
                msg: &msg,
                doc: &doc
            }
            .raw_xml(),
            None
        );
        assert_eq!(eval_expr(&second, &msg, &doc).unwrap(), "2");
    }
}
