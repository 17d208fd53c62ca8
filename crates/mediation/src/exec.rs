//! The sequence executor. It is synchronous: it runs mediators until one decides where the message goes,
//! and returns that decision to the transport, which does the I/O. Nothing here awaits.

use crate::error::{Error, ErrorKind};
use crate::message::{Body, Direction, Message};
use crate::plan::{Cond, EndpointPlan, FaultPlan, LogPlan, Step, Value};
use sluice_config::{LogCategory, LogLevel, PropertyType, Scope};
use std::borrow::Cow;
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

fn eval<'m>(v: &'m Value, msg: &'m Message) -> Cow<'m, str> {
    match v {
        Value::Literal(s) => Cow::Borrowed(s),
        Value::Expr(e) => e.eval_string(msg),
    }
}

/// Runs steps in order until one of them decides the flow.
pub fn run(steps: &[Step], msg: &mut Message) -> Result<Flow, Error> {
    for step in steps {
        match step {
            Step::Send(ep) => return Ok(Flow::Send(ep.clone())),
            Step::Respond => return Ok(Flow::Respond),
            Step::Drop => return Ok(Flow::Drop),
            Step::Log(l) => log(l, msg),
            Step::SetProperty {
                scope,
                name,
                ty,
                value,
            } => {
                let v = eval(value, msg).into_owned();
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
                let v = eval(value, msg).into_owned();
                msg.set_header(name.clone(), &v)?;
            }
            Step::RemoveHeader(name) => {
                msg.headers.remove(name);
            }
            Step::SetTo(v) => msg.to = Some(eval(v, msg).into_owned()),
            Step::RemoveTo => msg.to = None,
            Step::Filter {
                cond,
                then,
                otherwise,
            } => {
                let branch = if test(cond, msg) { then } else { otherwise };
                match run(branch, msg)? {
                    Flow::Continue => {}
                    f => return Ok(f),
                }
            }
            Step::Switch {
                source,
                cases,
                default,
            } => {
                let value = source.eval_string(msg).into_owned();
                let branch = cases
                    .iter()
                    .find(|(re, _)| re.matches(&value))
                    .map(|(_, s)| s)
                    .unwrap_or(default);
                match run(branch, msg)? {
                    Flow::Continue => {}
                    f => return Ok(f),
                }
            }
            Step::Call(seq) => match run(&seq.steps, msg)? {
                Flow::Continue => {}
                f => return Ok(f),
            },
            Step::MakeFault(f) => make_fault(f, msg),
        }
    }
    Ok(Flow::Continue)
}

fn test(cond: &Cond, msg: &Message) -> bool {
    match cond {
        Cond::Regex { source, regex } => regex.matches(&source.eval_string(msg)),
    }
}

fn make_fault(f: &FaultPlan, msg: &mut Message) {
    let body = match &f.fixed {
        Some(b) => b.clone(),
        None => {
            let reason = eval(&f.reason, msg).into_owned();
            let detail = match &f.detail {
                Some(crate::plan::DetailPlan::Value(v)) => Some(eval(v, msg).into_owned()),
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
}

fn log(l: &LogPlan, msg: &mut Message) {
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
    let line = log_line(l, msg);
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
pub fn log_line(l: &LogPlan, msg: &mut Message) -> String {
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
        parts.push(format!("{name} = {}", eval(v, msg)));
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
}
