//! `<header>`: sets or removes an HTTP header (transport scope), the `To` address, the
//! WS-Addressing / SOAP action, or a SOAP header block.

use crate::mediators::prelude::*;
use crate::message::ActionChange;
use http::{HeaderName, HeaderValue};
use sluice_xml::{Document, Fragment, Placement, XmlError};

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
    /// `<header name="ReplyTo" action="remove"/>` (also From, FaultTo, MessageID, RelatesTo):
    /// the WS-Addressing header of that name, in either WS-Addressing namespace, is removed, so
    /// it does not leave with the message (Synapse clears it from the message context).
    RemoveWsa(&'static str),
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
        cfg::HeaderScope::Transport => transport_header(c, &h.name, &h.action, m)?,
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
    let wsa = ["From", "ReplyTo", "FaultTo", "MessageID", "RelatesTo"]
        .into_iter()
        .find(|n| h.namespace.is_none() && h.name == *n);
    if let (Some(local), cfg::Action::Remove) = (wsa, &h.action) {
        return Some(HeaderPlan::RemoveWsa(local));
    }
    if let Some(local) = wsa {
        let why = format!("setting the WS-Addressing header '{local}' is not supported yet (To and Action are; removing any is)");
        c.report(Severity::Unsupported, &m.loc, el, why);
    } else {
        c.report(Severity::Unsupported, &m.loc, el, format!("SOAP header '{}': a SOAP header needs a namespace-qualified name (prefix:Name with xmlns:prefix)", h.name));
    }
    None
}

/// The plan of a transport header (`<header scope="transport">`, `<property scope="transport">`):
/// `name` must be an HTTP header name, and a literal value a valid header value.
pub(crate) fn transport_header(
    c: &mut Compiler,
    name: &str,
    action: &cfg::Action,
    m: &cfg::Mediator,
) -> Option<HeaderPlan> {
    let el = m.element.as_str();
    let Ok(header) = HeaderName::from_bytes(name.as_bytes()) else {
        let why = format!("'{name}' is not a valid HTTP header name");
        c.report(Severity::Error, &m.loc, el, why);
        return None;
    };
    Some(match action {
        cfg::Action::Remove => HeaderPlan::RemoveHttp(header),
        cfg::Action::Set(v) => {
            let value = c.value(v, el)?;
            check_header_value(c, &value, &m.loc, el)?;
            HeaderPlan::SetHttp {
                name: header,
                value,
            }
        }
    })
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
            | HeaderPlan::RemoveWsa(_)
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
            | HeaderPlan::RemoveWsa(_)
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
                edit_tree(msg, doc, |d| add_block(d, ns, prefix, local, &v))?;
            }
            HeaderPlan::RemoveSoap { ns, local } => {
                edit_tree(msg, doc, |d| remove_blocks(d, ns, local))?;
            }
            HeaderPlan::RemoveWsa(local) => {
                const FINAL: &str = "http://www.w3.org/2005/08/addressing";
                const SUBMISSION: &str = "http://schemas.xmlsoap.org/ws/2004/08/addressing";
                edit_tree(msg, doc, |d| {
                    let a = remove_blocks(d, FINAL, local)?;
                    let b = remove_blocks(d, SUBMISSION, local)?;
                    Ok(a || b)
                })?;
            }
            HeaderPlan::AddSoapXml(xml) => {
                let frag = Fragment::parse(xml).map_err(|e| xml_error("header", e))?;
                edit_tree(msg, doc, |d| add_blocks(d, &frag))?;
            }
        }
        Ok(None)
    }
}

/// Adds the SOAP header block `prefix:local` (in `ns`) holding `value` to the envelope of `d`:
/// whether there was an envelope to add it to.
fn add_block(
    d: &mut Document,
    ns: &str,
    prefix: &str,
    local: &str,
    value: &str,
) -> Result<bool, XmlError> {
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
    add_blocks(d, &Fragment::parse(&block)?)
}

/// Appends `blocks` to the SOAP Header of `d`, made when absent: whether `d` is a SOAP envelope
/// (Synapse's POX messages have an envelope only inside the engine: nothing to add a header to,
/// and the message is left as it was).
fn add_blocks(d: &mut Document, blocks: &Fragment) -> Result<bool, XmlError> {
    let Some(header) = d.ensure_soap_header()? else {
        return Ok(false);
    };
    d.insert(header, blocks, Placement::LastChild)?;
    Ok(true)
}

/// Removes the SOAP header blocks `local` in `ns` from `d`: whether there were any.
fn remove_blocks(d: &mut Document, ns: &str, local: &str) -> Result<bool, XmlError> {
    let blocks: Vec<sluice_xml::NodeId> = d
        .soap_header()
        .map(|h| {
            h.child_elements()
                .filter(|c| c.name() == local && c.namespace_uri() == Some(ns))
                .map(|c| c.id())
                .collect()
        })
        .unwrap_or_default();
    for &b in &blocks {
        d.remove(b)?;
    }
    Ok(!blocks.is_empty())
}

/// Runs `edit` on the message's tree (parsed if it was not yet): when it changed the tree (`true`),
/// the tree is the message's body; when not, the message is left as it was.
fn edit_tree(
    msg: &mut Message,
    doc: &mut DocCache,
    edit: impl FnOnce(&mut Document) -> Result<bool, XmlError>,
) -> Result<(), Error> {
    let what = "header";
    let mut d = take_doc(msg, doc)?;
    if edit(&mut d).map_err(|e| xml_error(what, e))? {
        put_doc(msg, doc, d, what)
    } else {
        *doc = DocCache::from(Ok(d));
        Ok(())
    }
}
