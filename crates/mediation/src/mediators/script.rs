//! `<script language="js">`: JavaScript on the message, through Synapse's `mc` object.
//!
//! The script runs over a snapshot of the message (`sluice-script`) and its changes are applied
//! after it, in order; a script that fails changes nothing and its message goes to the fault
//! sequence.
//!
//! | Synapse | Sluice |
//! |---|---|
//! | inline: the text runs for each message; its last statement's value `false` stops the flow | the same; the flow stops as `drop` stops it (the client is answered, 202) |
//! | `key` + `function` (default `mediate`): the source, then each `<include>`, then the function with `mc` | the same, the source a local entry's or registry resource's text |
//! | `getPayloadXML()`: an E4X XML object (Rhino: Synapse 3.0.1's `js`, MI's `rhinoJs`), or a string (GraalJS: MI 4.4's `js`) | an XML object when the script uses E4X syntax or is `rhinoJs`, else a string; E4X literals, `..`, `.*::`, `.@` supported, `x.name`, filters and `for each` refused at load |
//! | `setPayloadJSON(v)`: the payload becomes JSON, `messageType` unchanged | the payload becomes JSON and the message `application/json` |
//! | a script reading no payload | the body is not read (the message streams) |
//! | scripts run where the message is mediated | a flow holding a script is mediated off the event loop ([`Mediator::heavy`]), whatever the message's size |
//! | a script that never ends holds its thread | stopped after `sluice_script::TIME_LIMIT` (its message to the fault sequence), or when the run's deadline passes |

use super::prelude::*;
use sluice_script::{Op, Script, ScriptErrorKind, Snapshot};

#[derive(Debug)]
pub struct ScriptPlan {
    script: Script,
    /// The script as errors name it: "the inlined js script", "the js script 'KEY' (function F)".
    what: String,
}

pub(crate) fn compile(c: &mut Compiler, s: &cfg::Script, m: &cfg::Mediator) -> Option<Step> {
    let el = m.element.as_str();
    let (source, function, what) = match &s.source {
        cfg::ScriptSource::Inline(text) => (
            text.clone(),
            None,
            format!("the inlined {} script", s.language),
        ),
        cfg::ScriptSource::Key { key, function } => (
            c.script_text(key, &m.loc, el)?,
            Some(function.clone()),
            format!("the {} script '{key}' (function {function})", s.language),
        ),
    };
    let mut includes = Vec::new();
    for k in &s.includes {
        includes.push(c.script_text(k, &m.loc, el)?);
    }
    match Script::compile_with(&source, includes, function, s.language == "rhinoJs") {
        Ok(script) => Some(Step::Script(ScriptPlan { script, what })),
        Err(e) => {
            let sev = match e.kind {
                ScriptErrorKind::E4x | ScriptErrorKind::Unsupported => Severity::Unsupported,
                _ => Severity::Error,
            };
            c.report(sev, &m.loc, el, format!("{what}: {e}"));
            None
        }
    }
}

impl Compiler<'_> {
    /// A script's source by key: a local entry's text, or a registry resource's (an XML
    /// resource or entry gives its text content, as Synapse reads `<x><![CDATA[...]]></x>`).
    fn script_text(&mut self, key: &str, loc: &cfg::Location, el: &str) -> Option<String> {
        let xml_text = |t: &str| match sluice_xml::Document::parse(t.as_bytes()) {
            Ok(d) => d.root_element().map(|r| r.text_content()),
            Err(_) => None,
        };
        let found = match self.local_entries.get(key).map(|le| &le.value) {
            Some(cfg::LocalEntryValue::Text(t)) => Ok(t.clone()),
            Some(cfg::LocalEntryValue::Xml { text, .. }) => xml_text(text).ok_or(Severity::Error),
            Some(cfg::LocalEntryValue::Src(u)) => {
                let why = format!("local entry '{key}' refers to '{u}', which is not fetched (no network at load)");
                self.report(Severity::Unsupported, loc, el, why);
                return None;
            }
            None => match self
                .resources
                .get(crate::compile::normalize_registry_key(key).as_str())
            {
                Some(r) => match std::str::from_utf8(&r.bytes) {
                    Ok(t) if t.trim_start().starts_with('<') => xml_text(t).ok_or(Severity::Error),
                    Ok(t) => Ok(t.to_owned()),
                    Err(_) => Err(Severity::Error),
                },
                None => {
                    let (severity, why) = self.no_such_key(key);
                    self.report(severity, loc, el, why);
                    return None;
                }
            },
        };
        found
            .map_err(|sev| {
                let why = format!("'{key}' does not hold a script's text");
                self.report(sev, loc, el, why)
            })
            .ok()
    }
}

impl Mediator for ScriptPlan {
    fn reads(&self, _json: bool) -> Reads {
        let uses = self.script.uses();
        if uses.payload || uses.envelope {
            Reads::WHOLE
        } else {
            Reads::NOTHING
        }
    }

    fn by_head(&self, _f: &mut dyn FnMut(&Expr) -> bool) -> ByHead {
        (self.reads(false) == Reads::NOTHING).into()
    }

    fn heavy(&self) -> bool {
        true
    }

    fn run(&self, cx: &mut Cx<'_>) -> Result<Option<Flow>, Error> {
        let snap = self.snapshot(cx)?;
        let stop = cx.msg.stop.clone();
        let out = self.script.run(&snap, stop.clone()).map_err(|e| {
            // Stopped from outside (its deadline, its client gone) as any run; a script past
            // its own time limit is its message's failure (the fault sequence).
            let outside = stop.is_some_and(|s| s.load(std::sync::atomic::Ordering::Relaxed));
            let kind = match e.kind {
                ScriptErrorKind::Stopped if outside => ErrorKind::Stopped,
                _ => ErrorKind::Mediation,
            };
            Error::new(
                kind,
                format!(
                    "The script engine returned an error executing {}: {e}",
                    self.what
                ),
            )
        })?;
        for op in out.ops {
            apply(cx, op)?;
        }
        Ok((!out.proceed).then_some(Flow::Drop))
    }
}

impl ScriptPlan {
    /// What the script may read: the payload and the envelope only when its source names them.
    fn snapshot(&self, cx: &mut Cx<'_>) -> Result<Snapshot, Error> {
        let uses = self.script.uses();
        let msg = &mut *cx.msg;
        let json = crate::json::is_json_headers(&msg.headers);
        let body_text = |msg: &Message| match &msg.body {
            Body::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
            _ => String::new(),
        };
        let mut snap = Snapshot {
            props: pairs(msg.props.iter()),
            axis2: pairs(msg.axis2.iter()),
            transport: msg
                .headers
                .iter()
                .filter_map(|(k, v)| Some((k.as_str().to_owned(), v.to_str().ok()?.to_owned())))
                .collect(),
            message_id: msg.message_id().to_owned(),
            to: msg.to.clone(),
            ..Snapshot::default()
        };
        if json && (uses.payload || uses.envelope) {
            snap.json = Some(body_text(msg)).filter(|t| !t.trim().is_empty());
        } else if !json && uses.payload && !matches!(msg.body, Body::Empty) {
            let d = cx
                .doc
                .tree(msg)
                .as_ref()
                .map_err(|e| expr_error(e.clone()))?;
            if let Some(p) = payload_node(d) {
                let own = p.to_document().map_err(|e| xml_error("script", e))?;
                let bytes = message_bytes(&own, "script")?;
                snap.xml = Some(String::from_utf8_lossy(&bytes).into_owned());
            }
        }
        if uses.envelope && !json {
            snap.envelope = Some(body_text(msg));
        }
        Ok(snap)
    }
}

fn pairs<'a>(it: impl Iterator<Item = (&'a str, &'a str)>) -> Vec<(String, String)> {
    it.map(|(k, v)| (k.to_owned(), v.to_owned())).collect()
}

/// One change the script made, applied to the message.
fn apply(cx: &mut Cx<'_>, op: Op) -> Result<(), Error> {
    let what = "script";
    let msg = &mut *cx.msg;
    match op {
        Op::PayloadXml(text) => {
            let frag = sluice_xml::Fragment::parse(&text).map_err(|e| {
                Error::new(
                    ErrorKind::Mediation,
                    format!("{what}: setPayloadXML was given no XML element: {e}"),
                )
            })?;
            let was_json = crate::json::is_json_headers(&msg.headers);
            if was_json {
                json_becomes_xml(msg);
            }
            let mut d = match &msg.body {
                _ if was_json => new_message_doc(msg, &frag)?,
                Body::Empty => new_message_doc(msg, &frag)?,
                _ => take_doc(msg, cx.doc)?,
            };
            d.replace_payload(&frag).map_err(|e| xml_error(what, e))?;
            put_doc(msg, cx.doc, d, what)?;
        }
        Op::PayloadJson(text) => {
            crate::exec::made_body(msg, "application/json", text.into());
            *cx.doc = DocCache::new();
        }
        Op::Set { scope, name, value } => match scope.as_str() {
            "axis2" => super::property::set_axis2(msg, &name, value)?,
            "transport" => {
                let name = http::HeaderName::from_bytes(name.as_bytes()).map_err(|e| {
                    Error::new(
                        ErrorKind::Mediation,
                        format!("{what}: header name '{name}'"),
                    )
                    .with_source(e)
                })?;
                msg.set_header(name, &value)?;
            }
            _ => msg.props.set(&name, value),
        },
        Op::To(to) => msg.to = to,
        Op::Remove { scope, name } => match scope.as_str() {
            "axis2" => msg.axis2.remove(&name),
            "transport" => {
                msg.headers.remove(name.as_str());
            }
            _ => msg.props.remove(&name),
        },
    }
    Ok(())
}
