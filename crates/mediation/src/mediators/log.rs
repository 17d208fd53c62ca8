//! `<log>`: a line in Synapse's order (the standard fields, headers, envelope, then the custom
//! properties) at the level and category asked for, through `tracing` (target `sluice::log`).

use crate::mediators::prelude::*;
use crate::message::Direction;
use sluice_config::{LogCategory, LogLevel};
use std::fmt::Write;

#[derive(Debug)]
pub struct LogPlan {
    pub level: cfg::LogLevel,
    pub category: cfg::LogCategory,
    pub separator: String,
    pub properties: Vec<(String, Value)>,
    /// MI 4.4's `<message>` template: the line is its text, then `,name = value` per property.
    pub message: Option<Vec<Value>>,
}

pub(crate) fn compile(c: &mut Compiler, l: &cfg::Log, el: &str) -> Option<Step> {
    let mut properties = Vec::new();
    for (n, v) in &l.properties {
        properties.push((n.clone(), c.value(v, el)?));
    }
    let message = match &l.message {
        Some(parts) => Some(
            parts
                .iter()
                .map(|p| c.value(p, el))
                .collect::<Option<Vec<_>>>()?,
        ),
        None => None,
    };
    Some(Step::Log(LogPlan {
        level: l.level,
        category: l.category,
        separator: l.separator.clone(),
        properties,
        message,
    }))
}

impl Mediator for LogPlan {
    fn reads(&self, _json: bool) -> Reads {
        let mut n = if self.level == LogLevel::Full && self.message.is_none() {
            BodyNeed::Full
        } else {
            BodyNeed::None
        };
        for v in self
            .properties
            .iter()
            .map(|(_, v)| v)
            .chain(self.message.iter().flatten())
        {
            n = n.max(v.body_need());
        }
        Reads::of(n)
    }

    fn by_head(&self, f: &mut dyn FnMut(&Expr) -> bool) -> ByHead {
        let full = self.level == LogLevel::Full && self.message.is_none();
        let mut values = self.properties.iter().map(|(_, v)| v);
        let by_head = values.all(|v| value_by_head(v, f))
            && self.message.iter().flatten().all(|v| value_by_head(v, f));
        (!full && by_head).into()
    }

    #[inline]
    fn run(&self, cx: &mut Cx<'_>) -> Result<Option<Flow>, Error> {
        log(self, cx.msg, cx.doc);
        Ok(None)
    }
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
            tracing::trace!(target: "sluice::log", proxy = %msg.service, correlation_id = %msg.correlation, "{line}")
        }
        LogCategory::Debug => {
            tracing::debug!(target: "sluice::log", proxy = %msg.service, correlation_id = %msg.correlation, "{line}")
        }
        LogCategory::Info => {
            tracing::info!(target: "sluice::log", proxy = %msg.service, correlation_id = %msg.correlation, "{line}")
        }
        LogCategory::Warn => {
            tracing::warn!(target: "sluice::log", proxy = %msg.service, correlation_id = %msg.correlation, "{line}")
        }
        LogCategory::Error | LogCategory::Fatal => {
            tracing::error!(target: "sluice::log", proxy = %msg.service, correlation_id = %msg.correlation, "{line}")
        }
    }
}

/// The text of a log mediator's line, in Synapse's order: the standard fields, headers, envelope, then the
/// custom properties.
fn log_line(l: &LogPlan, msg: &mut Message, doc: &DocCache) -> String {
    if let Some(parts) = &l.message {
        return template_line(l, parts, msg, doc);
    }
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
            Body::Stream | Body::Head(_) => "(body not read)".to_owned(),
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

/// MI 4.4's line for a `<message>` template: the template's text with each `${...}` evaluated,
/// then `,name = value` for each property (MI's own separator; `separator` is the older log's).
fn template_line(l: &LogPlan, parts: &[Value], msg: &mut Message, doc: &DocCache) -> String {
    let mut out = String::new();
    for p in parts {
        match eval_value(p, msg, doc) {
            Ok(v) => out.push_str(&v),
            Err(e) => {
                let _ = write!(out, "(error: {})", e.context);
            }
        }
    }
    for (name, v) in &l.properties {
        let value = eval_value(v, msg, doc).unwrap_or_else(|e| format!("(error: {})", e.context));
        let _ = write!(out, ",{name} = {value}");
    }
    out
}
