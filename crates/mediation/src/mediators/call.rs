//! `<call>`: the message goes to the endpoint (or its `To`, else the proxy's target) and mediation
//! goes on with the response after it. With MI's `<source>` / `<target>` it compiles to a nested
//! list of the steps MI's call mediator takes around the call itself.

use crate::mediators::enrich::{enrich_source, EnrichSourcePlan};
use crate::mediators::prelude::*;
use sluice_xml::Fragment;

/// One of the steps a `call` compiles to.
#[derive(Debug)]
pub enum CallStep {
    /// The call itself: to this endpoint, or (None) to the message's `To` (else the proxy's target);
    /// mediation goes on with the response after this step.
    Endpoint(Option<Arc<EndpointPlan>>),
    /// Before a call whose response goes into a property: the message is kept aside
    /// ([`crate::Message::save`]).
    SaveMessage,
    /// The `<source>`: the payload made from it, without reading the message's.
    Source(CallSourcePlan),
    /// After a call with a property target: the response payload goes into the property (XML,
    /// JSON or text, as it came; empty for no body), then, when `restore`, the message kept aside
    /// is the message again.
    Target { property: String, restore: bool },
}

/// A `call`'s `<source>`: where the payload comes from, and the Content-Type it goes out with.
#[derive(Debug)]
pub struct CallSourcePlan {
    pub source: EnrichSourcePlan,
    pub content_type: Option<String>,
}

pub(crate) fn compile(
    c: &mut Compiler,
    endpoint: Option<&cfg::EndpointRef>,
    io: Option<&cfg::CallIo>,
    el: &str,
) -> Option<Step> {
    let ep = match endpoint {
        Some(e) => Some(c.endpoint_ref(e)?),
        None => None,
    };
    match io {
        None => Some(Step::Call(CallStep::Endpoint(ep))),
        Some(io) => call_io(c, io, ep, el),
    }
}

/// A `call` with MI's `<source>` / `<target>`, as the steps MI's call mediator takes around
/// the call itself, run as one nested list (so that the response goes on through its rest).
/// A source other than the body makes the payload (`Source`); with a property target, the
/// message is kept aside first (`SaveMessage`) when there is such a source or no `<source>`
/// at all, and `Target` puts the response into the property and the message back.
fn call_io(
    c: &mut Compiler,
    io: &cfg::CallIo,
    ep: Option<Arc<EndpointPlan>>,
    el: &str,
) -> Option<Step> {
    let source = match &io.source {
        Some(s) if !matches!(s.kind, cfg::EnrichSourceKind::Body) => Some(c.enrich_source(s, el)?),
        _ => None,
    };
    // MI: a target alone sends the body as it is and still keeps the message aside.
    let restore = io.target.is_some() && (source.is_some() || io.source.is_none());
    let mut steps = Vec::new();
    if restore {
        steps.push(Step::Call(CallStep::SaveMessage));
    }
    if let Some(source) = source {
        steps.push(Step::Call(CallStep::Source(CallSourcePlan {
            source,
            content_type: io.content_type.clone(),
        })));
    }
    steps.push(Step::Call(CallStep::Endpoint(ep)));
    if let Some(property) = &io.target {
        steps.push(Step::Call(CallStep::Target {
            property: property.clone(),
            restore,
        }));
    }
    Some(Step::Sequence(SequencePlan(Arc::new(SeqPlan::new(
        None,
        steps.into(),
    )))))
}

impl Mediator for CallStep {
    fn reads(&self, _json: bool) -> Reads {
        match self {
            // What follows a call reads the response.
            CallStep::Endpoint(_) => Reads::THEN_RESPONSE,
            // The body kept aside is the whole of it; so is the response put in a property.
            CallStep::SaveMessage | CallStep::Target { .. } => Reads::WHOLE,
            CallStep::Source(c) => Reads::of(c.source.body_need()),
        }
    }

    fn by_head(&self, f: &mut dyn FnMut(&Expr) -> bool) -> ByHead {
        match self {
            CallStep::Endpoint(_) => ByHead::StopHere,
            CallStep::Source(c) => c.source.body_exprs_all(f).into(),
            CallStep::SaveMessage | CallStep::Target { .. } => ByHead::No,
        }
    }

    fn leaves(&self) -> Option<&'static str> {
        matches!(self, CallStep::Endpoint(_)).then_some("call")
    }

    fn calls(&self) -> bool {
        matches!(self, CallStep::Endpoint(_))
    }

    #[inline]
    fn run(&self, cx: &mut Cx<'_>) -> Result<Option<Flow>, Error> {
        match self {
            CallStep::Endpoint(ep) => Ok(Some(Flow::Call(ep.clone(), cx.after_this()))),
            CallStep::SaveMessage => {
                unread_body(cx.msg, "the message to keep aside")?;
                cx.msg.save();
                Ok(None)
            }
            CallStep::Source(c) => {
                call_source(c, cx.msg, cx.doc)?;
                Ok(None)
            }
            CallStep::Target { property, restore } => {
                call_target(property, cx.msg, cx.doc)?;
                if *restore && cx.msg.restore() {
                    *cx.doc = DocCache::new();
                }
                Ok(None)
            }
        }
    }
}

/// A `call`'s `<source>`: the payload made from it, without reading the message's own. XML goes
/// in an envelope of the SOAP version the `contentType` names (bare for other XML types, the
/// message's own version without one); text (JSON among it) is the body as it is. The
/// `contentType` becomes the Content-Type, `messageType` and `ContentType`, so that XML sent as
/// JSON is converted on the way out.
fn call_source(c: &CallSourcePlan, msg: &mut Message, doc: &mut DocCache) -> Result<(), Error> {
    let what = "call source";
    let frag = enrich_source(&c.source, msg, doc)?;
    if let Some(t) = &c.content_type {
        msg.set_header(http::header::CONTENT_TYPE, t)?;
        msg.axis2.set("messageType", t.clone());
        msg.axis2.set("ContentType", t.clone());
    }
    let body = if frag.elements().next().is_some() {
        let xml = frag.to_xml_string().map_err(|e| xml_error(what, e))?;
        // An XML type names the envelope; XML sent as JSON keeps the message's own.
        if c.content_type
            .as_deref()
            .is_some_and(|t| !crate::json::is_json_type(t))
        {
            msg.soap = crate::message::soap_version(&msg.headers);
        }
        envelope_with(&xml, msg.soap)
    } else {
        bytes::Bytes::from(frag.last_text().unwrap_or_default())
    };
    msg.body = Body::Bytes(body);
    msg.headers.remove(http::header::CONTENT_LENGTH);
    *doc = DocCache::new();
    Ok(())
}

/// A `call`'s property target: the response payload as it came, XML (the payload element) when
/// it is XML, else its text (JSON among it); empty for a response without a body.
pub(crate) fn call_target(property: &str, msg: &mut Message, doc: &DocCache) -> Result<(), Error> {
    unread_body(msg, "the response for the target property")?;
    let json = msg
        .headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(crate::json::is_json_type);
    let text = match &msg.body {
        Body::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
        _ => String::new(),
    };
    if !json && !text.trim().is_empty() {
        let view = View { msg, doc };
        if let Ok(d) = view.document() {
            if let Some(n) = payload_node(d) {
                let xml = Fragment::from_nodes(&[n]).and_then(|f| f.to_xml_string());
                let xml = xml.map_err(|e| xml_error("call target", e))?;
                msg.props.set_xml(property, xml);
                return Ok(());
            }
        }
    }
    msg.props.set(property, text);
    Ok(())
}
