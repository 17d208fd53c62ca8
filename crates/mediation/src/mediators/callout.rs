//! `<callout>`: Synapse's blocking call with a request of its own. It compiles to a nested list:
//! the message is kept aside; the request is made (the `<source>` node or property in a new
//! envelope, else the message as it is) with the `action`; the call; then [`CalloutResultPlan`]
//! puts the message back and the response's payload where the `<target>` says. Mediation goes on
//! after it with the message.
//!
//! | `<target>` | The response's payload (the first element of its Body) |
//! |---|---|
//! | `xpath` | replaces the first node the XPath selects in the message |
//! | `key` | goes into that property (as XML) |
//! | none | the response's body becomes the message's body |

use crate::mediators::call::{call_target, CallSourcePlan, CallStep};
use crate::mediators::header::HeaderPlan;
use crate::mediators::prelude::*;
use sluice_xml::{Fragment, Placement};

/// Where a callout's response goes.
#[derive(Debug)]
pub enum CalloutTarget {
    XPath(Expr),
    Property(String),
    Body,
}

/// The last step of a callout: the message back, with the response's payload put in.
#[derive(Debug)]
pub struct CalloutResultPlan(CalloutTarget);

pub(crate) fn compile(c: &mut Compiler, co: &cfg::Callout, m: &cfg::Mediator) -> Option<Step> {
    let el = m.element.as_str();
    let ep = match &co.endpoint {
        Some(e) => Some(c.endpoint_ref(e)?),
        None => None,
    };
    let mut steps = vec![Step::Call(CallStep::SaveMessage)];
    if let Some(src) = &co.source {
        let kind = match src {
            cfg::CalloutPart::XPath(x) => cfg::EnrichSourceKind::Custom(x.clone()),
            cfg::CalloutPart::Key(k) => cfg::EnrichSourceKind::Property(k.clone()),
        };
        let src = cfg::EnrichSource {
            kind,
            clone: true,
            loc: m.loc.clone(),
        };
        let source = c.enrich_source(&src, el)?;
        steps.push(Step::Call(CallStep::Source(CallSourcePlan {
            source,
            content_type: None,
        })));
    }
    if let Some(a) = &co.action {
        steps.push(Step::Header(HeaderPlan::SetAction(Value::Literal(
            a.clone(),
        ))));
    }
    steps.push(Step::Call(CallStep::Endpoint(ep)));
    let target = match &co.target {
        Some(cfg::CalloutPart::XPath(x)) => CalloutTarget::XPath(c.expr(x, el)?),
        Some(cfg::CalloutPart::Key(k)) => CalloutTarget::Property(k.clone()),
        None => CalloutTarget::Body,
    };
    steps.push(Step::Callout(CalloutResultPlan(target)));
    Some(Step::Sequence(SequencePlan(Arc::new(SeqPlan::new(
        None,
        steps.into(),
    )))))
}

impl Mediator for CalloutResultPlan {
    fn run(&self, cx: &mut Cx<'_>) -> Result<Option<Flow>, Error> {
        unread_body(cx.msg, "the callout's response")?;
        match &self.0 {
            CalloutTarget::Property(k) => {
                call_target(k, cx.msg, cx.doc)?;
                put_back(cx);
            }
            CalloutTarget::Body => {
                let (body, soap) = (cx.msg.body.clone(), cx.msg.soap);
                put_back(cx);
                cx.msg.body = body;
                cx.msg.soap = soap;
                cx.msg.headers.remove(http::header::CONTENT_LENGTH);
            }
            CalloutTarget::XPath(x) => {
                let payload = response_payload(cx)?;
                put_back(cx);
                replace_node(x, &payload, cx.msg, cx.doc)?;
            }
        }
        Ok(None)
    }
}

/// The message kept aside before the call is the message again.
fn put_back(cx: &mut Cx<'_>) {
    cx.msg.restore();
    *cx.doc = DocCache::new();
}

/// The response's payload element, declaring the namespaces it uses.
fn response_payload(cx: &mut Cx<'_>) -> Result<Fragment, Error> {
    let view = View {
        msg: cx.msg,
        doc: cx.doc,
    };
    let d = view.document().map_err(expr_error)?;
    let p = payload_node(d).ok_or_else(|| {
        Error::new(
            ErrorKind::Mediation,
            "callout: the response has no payload element",
        )
    })?;
    Fragment::from_nodes(&[p]).map_err(|e| xml_error("callout", e))
}

/// `payload` in place of the first node `x` selects in the message.
fn replace_node(
    x: &Expr,
    payload: &Fragment,
    msg: &mut Message,
    doc: &mut DocCache,
) -> Result<(), Error> {
    let mut d = take_doc(msg, doc)?;
    let id = {
        let none = DocCache::new();
        let env = View { msg, doc: &none };
        let nodes = x.nodes(&d, &env).map_err(expr_error)?;
        match nodes.first() {
            Some(n) if n.is_element() => n.id(),
            _ => {
                return Err(Error::new(
                    ErrorKind::Mediation,
                    "callout: the target XPath selects no element in the message",
                ))
            }
        }
    };
    let is_root = d.root_element().is_some_and(|r| r.id() == id);
    if is_root {
        d.replace_payload(payload)
    } else {
        d.insert(id, payload, Placement::After)
            .and_then(|()| d.remove(id))
    }
    .map_err(|e| xml_error("callout", e))?;
    put_doc(msg, doc, d, "callout")
}
