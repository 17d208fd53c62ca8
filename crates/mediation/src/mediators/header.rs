//! `<header>`: sets or removes an HTTP header (transport scope), the `To` address, the
//! WS-Addressing / SOAP action, or a SOAP header block.

use crate::mediators::prelude::*;
use crate::message::ActionChange;
use http::{HeaderName, HeaderValue};
use sluice_xml::{Fragment, Placement};

#[derive(Debug)]
pub enum HeaderPlan {
    SetHttp {
        name: HeaderName,
        value: Value,
    },
    RemoveHttp(HeaderName),
    SetTo(Value),
    RemoveTo,
    /// `<header name="Action">`: the WS-Addressing action, which is also the SOAP action.
    SetAction(Value),
    RemoveAction,
    /// A SOAP header block `<prefix:local xmlns:prefix="ns">value</prefix:local>` added to the
    /// Header (created when absent), as Synapse's header mediator does.
    SetSoap {
        ns: String,
        prefix: String,
        local: String,
        value: Value,
    },
    /// Every SOAP header block with this namespace and local name is removed.
    RemoveSoap {
        ns: String,
        local: String,
    },
    /// Elements given inline (`<header><h:block xmlns:h="..">..</h:block></header>`) appended to
    /// the Header, as Synapse 3.0.1 adds them.
    AddSoapXml(String),
}

pub(crate) fn compile(c: &mut Compiler, h: &cfg::Header, m: &cfg::Mediator) -> Option<Step> {
    let el = m.element.as_str();
    let set = |c: &mut Compiler, v: &cfg::ValueSrc| c.value(v, el);
    if let Some(xml) = &h.inline {
        // Checked once here: each message parses it again (a plan is shared between threads).
        if let Err(e) = Fragment::parse(xml) {
            c.report(
                Severity::Error,
                &m.loc,
                el,
                format!("inline header XML: {e}"),
            );
            return None;
        }
        return Some(Step::Header(HeaderPlan::AddSoapXml(xml.clone())));
    }
    let plan = match h.scope {
        cfg::HeaderScope::Transport => {
            let Ok(name) = HeaderName::from_bytes(h.name.as_bytes()) else {
                c.report(
                    Severity::Error,
                    &m.loc,
                    el,
                    format!("'{}' is not a valid HTTP header name", h.name),
                );
                return None;
            };
            match &h.action {
                cfg::Action::Remove => HeaderPlan::RemoveHttp(name),
                cfg::Action::Set(v) => {
                    let value = set(c, v)?;
                    check_header_value(c, &value, &m.loc, el)?;
                    HeaderPlan::SetHttp { name, value }
                }
            }
        }
        cfg::HeaderScope::Default if h.namespace.is_none() && h.name == "To" => match &h.action {
            cfg::Action::Remove => HeaderPlan::RemoveTo,
            cfg::Action::Set(v) => HeaderPlan::SetTo(set(c, v)?),
        },
        cfg::HeaderScope::Default if h.namespace.is_none() && h.name == "Action" => {
            match &h.action {
                cfg::Action::Remove => HeaderPlan::RemoveAction,
                cfg::Action::Set(v) => {
                    let value = set(c, v)?;
                    check_header_value(c, &value, &m.loc, el)?;
                    HeaderPlan::SetAction(value)
                }
            }
        }
        cfg::HeaderScope::Default => soap_block(c, h, m)?,
    };
    Some(Step::Header(plan))
}

/// A namespace-qualified SOAP header block; any other name is reported.
fn soap_block(c: &mut Compiler, h: &cfg::Header, m: &cfg::Mediator) -> Option<HeaderPlan> {
    let el = m.element.as_str();
    if let (Some(ns), Some((prefix, local))) = (&h.namespace, h.name.split_once(':')) {
        return Some(match &h.action {
            cfg::Action::Remove => HeaderPlan::RemoveSoap {
                ns: ns.clone(),
                local: local.to_owned(),
            },
            cfg::Action::Set(v) => HeaderPlan::SetSoap {
                ns: ns.clone(),
                prefix: prefix.to_owned(),
                local: local.to_owned(),
                value: c.value(v, el)?,
            },
        });
    }
    if h.namespace.is_none()
        && matches!(
            h.name.as_str(),
            "From" | "ReplyTo" | "FaultTo" | "MessageID" | "RelatesTo"
        )
    {
        c.report(
            Severity::Unsupported,
            &m.loc,
            el,
            format!(
                "the WS-Addressing header '{}' is not supported yet (only To and Action)",
                h.name
            ),
        );
    } else {
        c.report(Severity::Unsupported, &m.loc, el, format!("SOAP header '{}': a SOAP header needs a namespace-qualified name (prefix:Name with xmlns:prefix)", h.name));
    }
    None
}

pub(crate) fn check_header_value(
    c: &mut Compiler,
    v: &Value,
    loc: &Location,
    el: &str,
) -> Option<()> {
    if let Value::Literal(s) = v {
        if HeaderValue::from_str(s).is_err() {
            c.report(
                Severity::Error,
                loc,
                el,
                format!("'{s}' is not a valid HTTP header value"),
            );
            return None;
        }
    }
    Some(())
}

impl Mediator for HeaderPlan {
    fn reads(&self, _json: bool) -> Reads {
        match self {
            HeaderPlan::SetHttp { value, .. }
            | HeaderPlan::SetTo(value)
            | HeaderPlan::SetAction(value) => Reads::of(value.body_need()),
            HeaderPlan::SetSoap { .. }
            | HeaderPlan::RemoveSoap { .. }
            | HeaderPlan::AddSoapXml(_) => Reads::WHOLE,
            HeaderPlan::RemoveHttp(_) | HeaderPlan::RemoveTo | HeaderPlan::RemoveAction => {
                Reads::NOTHING
            }
        }
    }

    fn by_head(&self, f: &mut dyn FnMut(&Expr) -> bool) -> ByHead {
        match self {
            HeaderPlan::SetHttp { value, .. }
            | HeaderPlan::SetTo(value)
            | HeaderPlan::SetAction(value) => value_by_head(value, f).into(),
            HeaderPlan::SetSoap { .. }
            | HeaderPlan::RemoveSoap { .. }
            | HeaderPlan::AddSoapXml(_) => ByHead::No,
            HeaderPlan::RemoveHttp(_) | HeaderPlan::RemoveTo | HeaderPlan::RemoveAction => {
                ByHead::Yes
            }
        }
    }

    #[inline]
    fn run(&self, cx: &mut Cx<'_>) -> Result<Option<Flow>, Error> {
        let (msg, doc) = (&mut *cx.msg, &mut *cx.doc);
        match self {
            HeaderPlan::SetHttp { name, value } => {
                let v = eval_value(value, msg, doc)?;
                msg.set_header(name.clone(), &v)?;
            }
            HeaderPlan::RemoveHttp(name) => {
                msg.headers.remove(name);
            }
            HeaderPlan::SetTo(v) => msg.to = Some(eval_value(v, msg, doc)?),
            HeaderPlan::RemoveTo => msg.to = None,
            HeaderPlan::SetAction(v) => {
                let a = eval_value(v, msg, doc)?;
                // It goes out in a header: refused here, where the reason can name it.
                if HeaderValue::from_str(&a).is_err() {
                    return Err(Error::new(
                        ErrorKind::Mediation,
                        format!("the Action '{a}' is not a valid HTTP header value"),
                    ));
                }
                msg.action = Some(ActionChange::Set(a));
            }
            HeaderPlan::RemoveAction => msg.action = Some(ActionChange::Removed),
            HeaderPlan::SetSoap {
                ns,
                prefix,
                local,
                value,
            } => {
                let v = eval_value(value, msg, doc)?;
                set_soap_header(ns, prefix, local, &v, msg, doc)?;
            }
            HeaderPlan::RemoveSoap { ns, local } => remove_soap_header(ns, local, msg, doc)?,
            HeaderPlan::AddSoapXml(xml) => {
                let frag = Fragment::parse(xml).map_err(|e| xml_error("header", e))?;
                add_soap_header(&frag, msg, doc)?;
            }
        }
        Ok(None)
    }
}

fn set_soap_header(
    ns: &str,
    prefix: &str,
    local: &str,
    value: &str,
    msg: &mut Message,
    doc: &mut DocCache,
) -> Result<(), Error> {
    let what = "header";
    let mut block = String::new();
    block.push('<');
    block.push_str(prefix);
    block.push(':');
    block.push_str(local);
    block.push_str(" xmlns:");
    block.push_str(prefix);
    block.push_str("=\"");
    crate::fault::escape(ns, &mut block);
    block.push_str("\">");
    crate::fault::escape(value, &mut block);
    block.push_str("</");
    block.push_str(prefix);
    block.push(':');
    block.push_str(local);
    block.push('>');
    let frag = Fragment::parse(&block).map_err(|e| xml_error(what, e))?;
    add_soap_header(&frag, msg, doc)
}

/// Appends `blocks` to the SOAP Header, made when absent.
fn add_soap_header(blocks: &Fragment, msg: &mut Message, doc: &mut DocCache) -> Result<(), Error> {
    let what = "header";
    let mut d = take_doc(msg, doc)?;
    let header = match d.ensure_soap_header() {
        Ok(Some(h)) => h,
        Ok(None) => {
            // Not a SOAP envelope: nothing to add a header to (Synapse's POX messages have an
            // envelope only inside the engine). Leave the message as it was.
            *doc = DocCache::from(Ok(d));
            return Ok(());
        }
        Err(e) => return Err(xml_error(what, e)),
    };
    d.insert(header, blocks, Placement::LastChild)
        .map_err(|e| xml_error(what, e))?;
    put_doc(msg, doc, d, what)
}

fn remove_soap_header(
    ns: &str,
    local: &str,
    msg: &mut Message,
    doc: &mut DocCache,
) -> Result<(), Error> {
    let what = "header";
    let mut d = take_doc(msg, doc)?;
    let blocks: Vec<sluice_xml::NodeId> = d
        .soap_header()
        .map(|h| {
            h.child_elements()
                .filter(|c| c.name() == local && c.namespace_uri() == Some(ns))
                .map(|c| c.id())
                .collect()
        })
        .unwrap_or_default();
    if blocks.is_empty() {
        *doc = DocCache::from(Ok(d));
        return Ok(());
    }
    for b in blocks {
        d.remove(b).map_err(|e| xml_error(what, e))?;
    }
    put_doc(msg, doc, d, what)
}
