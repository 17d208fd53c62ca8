//! The sequence executor. It is synchronous: it runs mediators until one decides where the message goes,
//! and returns that decision to the transport, which does the I/O. Nothing here awaits.

use crate::error::{Error, ErrorKind};
use crate::message::{ActionChange, Body, Direction, Message};
use crate::plan::need_until_call;
use crate::plan::{
    CallSourcePlan, Cond, EndpointPlan, EnrichPlan, EnrichSourcePlan, EnrichTargetPlan, FaultPlan,
    ForeachPlan, LogPlan, PayloadArg, PayloadPlan, Segment, Step, Steps, ValidatePlan, Value,
    XsltPlan,
};
use sluice_config::{EnrichAction, PayloadMedia};
use sluice_config::{LogCategory, LogLevel, PropertyType, Scope};
use sluice_expr::{BodyNeed, Env, Expr, ExprError, ExprErrorKind, PropScope};
use sluice_xml::{Document, Fragment, NodeKind, Placement};
use std::borrow::Cow;
use std::cell::OnceCell;
use std::fmt::Write;
use std::sync::Arc;

/// Where mediation goes on after a `call`: the rest of each step list the call was inside, the
/// innermost first (a branch, then the list holding the filter, then the sequence that referred to
/// that one...).
#[derive(Debug, Clone, Default)]
pub struct Continuation {
    frames: Vec<(Steps, usize)>,
}

impl Continuation {
    /// What the rest reads of the (response) body, JSON or not ([`crate::plan::SeqPlan::need`]), up
    /// to its next `call`.
    pub fn body_need(&self, json: bool) -> BodyNeed {
        let mut need = BodyNeed::None;
        for (steps, from) in &self.frames {
            let (n, called) = need_until_call(&steps[*from..], json);
            need = need.max(n);
            if called {
                break;
            }
        }
        need
    }
}

/// What a sequence decided.
#[derive(Debug, Clone)]
pub enum Flow {
    /// The sequence ended without deciding.
    Continue,
    /// `send`: to this endpoint, or (None) to the client if the message is a response, else to `To`.
    Send(Option<Arc<EndpointPlan>>),
    /// `respond`: the current message goes back to the client.
    Respond,
    /// `loopback`: the current message, as a response, goes through the out-sequence.
    Loopback,
    /// `clone`: a copy of the message goes to each target; the original's mediation ends.
    Clone(Arc<crate::plan::ClonePlan>),
    /// An `aggregate` kept this copy: its mediation ends here (no answer of its own).
    Absorbed,
    /// `iterate`: a new message for each of these bodies (whole envelopes), through the target.
    Iterate(Arc<crate::plan::IteratePlan>, Vec<bytes::Bytes>),
    /// `drop`: mediation of this message stops.
    Drop,
    /// `call`: to this endpoint (None: the message's `To`, else the proxy's target), then the
    /// continuation runs on the response.
    Call(Option<Arc<EndpointPlan>>, Continuation),
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
/// that needs it, or as JSON on the first JsonPath (at most once per run; a mediator that replaces
/// the body drops the parse).
struct View<'a> {
    msg: &'a Message,
    doc: &'a DocCache,
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
            Body::Bytes(b) | Body::Head(b) if self.doc.get().is_none() => Some(b),
            _ => None,
        }
    }
    fn raw_json(&self) -> Option<&[u8]> {
        match &self.msg.body {
            Body::Bytes(b) if !crate::json::looks_like_xml(b) => Some(b),
            _ => None,
        }
    }
    fn json(&self) -> Result<Option<&serde_json::Value>, ExprError> {
        self.doc
            .json
            .get_or_init(|| parse_json(self.msg, self.doc))
            .as_ref()
            .map(Option::as_ref)
            .map_err(Clone::clone)
    }
}

/// The body as JSON: `None` when it is empty. An XML message (or one a mediator made a tree of)
/// is read as WSO2 reads it: its payload element written as JSON. The bytes decide: a mediator
/// that changes the tree writes it back as XML, so JSON bytes are the message as it came, whatever
/// XPath read of it.
fn parse_json(msg: &Message, doc: &DocCache) -> Result<Option<serde_json::Value>, ExprError> {
    let tree = match &msg.body {
        Body::Bytes(b) if crate::json::looks_like_xml(b) => {
            Some(doc.get_or_init(|| parse_body(msg)))
        }
        _ => None,
    };
    if let Some(tree) = tree {
        let d = tree.as_ref().map_err(Clone::clone)?;
        let Some(p) = payload_node(d) else {
            return Ok(None);
        };
        let bad = |m: String| ExprError {
            kind: ExprErrorKind::BadMessage,
            message: format!("the XML message as JSON: {m}"),
        };
        let text = crate::json::xml_to_json(p).map_err(bad)?;
        return serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| bad(e.to_string()));
    }
    match &msg.body {
        Body::Bytes(b) if b.trim_ascii().is_empty() => Ok(None),
        Body::Bytes(b) => serde_json::from_slice(b).map(Some).map_err(|e| ExprError {
            kind: ExprErrorKind::BadMessage,
            message: format!("the message body is not JSON: {e}"),
        }),
        Body::Empty => Ok(None),
        Body::Head(_) | Body::Stream => Err(ExprError {
            kind: ExprErrorKind::Invalid,
            message: "internal: the body was not read whole for an expression that needs it"
                .to_owned(),
        }),
    }
}

fn parse_body(msg: &Message) -> Result<sluice_xml::Document, ExprError> {
    let bad = |m: String| ExprError {
        kind: ExprErrorKind::BadMessage,
        message: m,
    };
    match &msg.body {
        // A JSON message is read as WSO2 reads one: its JSON-to-XML form in a SOAP Body, under a
        // `jsonObject` (`jsonArray` for an array). Written back out as JSON it is the same message.
        Body::Bytes(b) if crate::json::is_json_headers(&msg.headers) && !crate::json::looks_like_xml(b) => {
            let v: serde_json::Value = serde_json::from_slice(b)
                .map_err(|e| bad(format!("the message body is not JSON: {e}")))?;
            let xml = crate::json::json_to_xml_marked(&v).map_err(bad)?;
            let root = if v.is_array() { "jsonArray" } else { "jsonObject" };
            let envelope = format!(
                "<soapenv:Envelope xmlns:soapenv=\"{}\"><soapenv:Body><{root}>{xml}</{root}></soapenv:Body></soapenv:Envelope>",
                crate::fault::SOAP11_ENV
            );
            sluice_xml::parse_untrusted(envelope.as_bytes(), &sluice_xml::Limits::default())
                .map_err(|e| bad(format!("the JSON message as XML: {e}")))
        }
        Body::Bytes(b) => sluice_xml::parse_untrusted(b, &sluice_xml::Limits::default())
            .map_err(|e| bad(format!("the message is not acceptable XML: {e}"))),
        Body::Empty => Err(bad("the message has no body".to_owned())),
        Body::Head(_) => Err(ExprError {
            kind: ExprErrorKind::Invalid,
            message: "internal: only the start of the body was read for an expression that needs all of it"
                .to_owned(),
        }),
        Body::Stream => Err(ExprError {
            kind: ExprErrorKind::Invalid,
            message: "internal: the body was not read for an expression that needs it".to_owned(),
        }),
    }
}

/// The body parsed once per run, as an XML tree (which mediators change in place) and as JSON.
/// Replaced whole whenever a mediator replaces the body.
#[derive(Default)]
struct DocCache {
    xml: OnceCell<Result<sluice_xml::Document, ExprError>>,
    json: OnceCell<Result<Option<serde_json::Value>, ExprError>>,
}

impl DocCache {
    fn new() -> Self {
        Self::default()
    }
    fn get(&self) -> Option<&Result<sluice_xml::Document, ExprError>> {
        self.xml.get()
    }
    fn get_or_init(
        &self,
        f: impl FnOnce() -> Result<sluice_xml::Document, ExprError>,
    ) -> &Result<sluice_xml::Document, ExprError> {
        self.xml.get_or_init(f)
    }
    /// The tree, for a mediator that will change the body (the JSON parse goes with it).
    fn take(&mut self) -> Option<Result<sluice_xml::Document, ExprError>> {
        self.json.take();
        self.xml.take()
    }
}

impl From<Result<sluice_xml::Document, ExprError>> for DocCache {
    fn from(r: Result<sluice_xml::Document, ExprError>) -> Self {
        DocCache {
            xml: OnceCell::from(r),
            json: OnceCell::new(),
        }
    }
}

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
pub fn run(steps: &Steps, msg: &mut Message) -> Result<Flow, Error> {
    let mut doc = DocCache::new();
    let flow = run_steps(steps, 0, msg, &mut doc)?;
    leaving(flow, msg, &doc)
}

/// The message as it leaves a run (to a back-end, to the client, or on to the engine's default):
/// what goes out as JSON when the flow made it JSON (`messageType`) and the body is XML
/// ([`Message::json_out`]).
fn leaving(flow: Flow, msg: &mut Message, doc: &DocCache) -> Result<Flow, Error> {
    msg.json_out = None;
    if !matches!(flow, Flow::Drop) {
        let tree = match doc.get() {
            Some(Ok(d)) => Some(d),
            _ => None,
        };
        msg.json_out = crate::json::json_out(msg, tree)?;
    }
    Ok(flow)
}

/// Goes on after a `call` with the message (its response), until a step decides the flow.
pub fn resume(k: Continuation, msg: &mut Message) -> Result<Flow, Error> {
    let mut doc = DocCache::new();
    let mut frames = k.frames.into_iter();
    while let Some((steps, from)) = frames.next() {
        match run_steps(&steps, from, msg, &mut doc)? {
            Flow::Continue => {}
            Flow::Call(ep, mut inner) => {
                inner.frames.extend(frames);
                return leaving(Flow::Call(ep, inner), msg, &doc);
            }
            f => return leaving(f, msg, &doc),
        }
    }
    leaving(Flow::Continue, msg, &doc)
}

/// The message an aggregate completes with: `parts` inside the element the `enclosing` property
/// holds (else directly in the Body), as the SOAP Body's content in the message's SOAP version.
fn aggregated(
    a: &crate::plan::AggregatePlan,
    parts: &[String],
    msg: &mut Message,
) -> Result<(), Error> {
    let inner: String = parts.concat();
    let enclosing = match a.enclosing.as_deref() {
        None => None,
        Some(p) => Some(msg.props.get(p).ok_or_else(|| {
            Error::new(
                ErrorKind::Mediation,
                format!("aggregate: the enclosing element property '{p}' is not set"),
            )
        })?),
    };
    let payload = match enclosing {
        None => inner,
        Some(wrapper) => {
            let w = wrapper.trim();
            let bad = || {
                Error::new(
                    ErrorKind::Mediation,
                    format!("aggregate: the enclosing element property is not an element: {w}"),
                )
            };
            if !w.starts_with('<') {
                return Err(bad());
            }
            if let Some(open) = w.strip_suffix("/>") {
                let name_end = open[1..]
                    .find(|c: char| c.is_whitespace())
                    .map_or(open.len(), |k| k + 1);
                format!("{}>{inner}</{}>", open.trim_end(), &open[1..name_end])
            } else {
                let close = w.rfind("</").ok_or_else(bad)?;
                format!("{}{inner}{}", &w[..close], &w[close..])
            }
        }
    };
    msg.body = Body::Bytes(envelope_with(&payload, msg.soap));
    msg.headers.remove(http::header::CONTENT_LENGTH);
    msg.json_out = None;
    Ok(())
}

/// The most messages one `iterate` makes (each goes to its target at once).
const MAX_ITERATIONS: usize = 4096;

/// A SOAP envelope (1.2 for a SOAP 1.2 message, 1.1 for SOAP 1.1) whose Body holds `payload`;
/// for a plain XML message the payload itself, as Synapse's POX formatter writes it.
fn envelope_with(payload: &str, soap: sluice_config::FaultVersion) -> bytes::Bytes {
    let env = match soap {
        sluice_config::FaultVersion::Soap12 => crate::fault::SOAP12_ENV,
        sluice_config::FaultVersion::Soap11 => crate::fault::SOAP11_ENV,
        sluice_config::FaultVersion::Pox => return bytes::Bytes::from(payload.to_owned()),
    };
    format!(
        "<soapenv:Envelope xmlns:soapenv=\"{env}\"><soapenv:Body>{payload}</soapenv:Body></soapenv:Envelope>"
    )
    .into()
}

/// One message must not split without bound (an iterate's parts are back-end calls, a foreach's
/// are sequence runs): at most [`MAX_ITERATIONS`] parts.
fn within_parts_cap(what: &str, n: usize) -> Result<(), Error> {
    if n > MAX_ITERATIONS {
        return Err(Error::new(
            ErrorKind::Mediation,
            format!("{what}: the expression selects {n} elements, more than {MAX_ITERATIONS}"),
        ));
    }
    Ok(())
}

/// Fails when the plan did not have the body read for a step that needs all of it.
fn unread_body(msg: &Message, what: &str) -> Result<(), Error> {
    if matches!(msg.body, Body::Stream | Body::Head(_)) {
        return Err(Error::new(
            ErrorKind::Mediation,
            format!("call: {what} was not read"),
        ));
    }
    Ok(())
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
fn call_target(property: &str, msg: &mut Message, doc: &DocCache) -> Result<(), Error> {
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

/// Runs a `<foreach>` ([`ForeachPlan`]): the selected nodes out, each through the sequence as the
/// payload, the payloads it leaves added to the first one's parent, and the message then that
/// envelope again.
fn foreach(f: &ForeachPlan, msg: &mut Message, doc: &mut DocCache) -> Result<(), Error> {
    let what = "foreach";
    let mut d = take_doc(msg, doc)?;
    let original = message_bytes(&d, what)?;
    msg.props.set_xml(
        &format!("{}FOREACH_ORIGINAL_MESSAGE", f.prefix),
        String::from_utf8_lossy(&original).into_owned(),
    );
    let counter = format!("{}FOREACH_COUNTER", f.prefix);
    msg.props.set(&counter, "0".to_owned());
    let (parent, parts, ids) = {
        let nodes = f.expression.nodes(&d, &*msg).map_err(expr_error)?;
        let parent = nodes.first().and_then(|n| n.parent()).map(|p| p.id());
        let mut parts = Vec::with_capacity(nodes.len());
        for n in &nodes {
            let xml = Fragment::from_nodes(&[*n]).and_then(|fr| fr.to_xml_string());
            parts.push(xml.map_err(|e| xml_error(what, e))?);
        }
        (
            parent,
            parts,
            nodes.iter().map(|n| n.id()).collect::<Vec<_>>(),
        )
    };
    let Some(parent) = parent else {
        // Nothing selected: the message goes on as it was.
        *doc = DocCache::from(Ok(d));
        return Ok(());
    };
    within_parts_cap("foreach", parts.len())?;
    for id in ids {
        // A node inside another selected one went out with it (each is still a part, as in
        // Synapse).
        let _ = d.remove(id);
    }
    for (k, part) in parts.iter().enumerate() {
        msg.body = Body::Bytes(envelope_with(part, msg.soap));
        msg.headers.remove(http::header::CONTENT_LENGTH);
        let mut sub = DocCache::new();
        let stop = match run_steps(&f.sequence.steps, 0, msg, &mut sub) {
            Ok(Flow::Continue) => false,
            Ok(Flow::Drop) => true,
            Ok(_) => {
                return Err(Error::new(
                    ErrorKind::Mediation,
                    "foreach: the sequence took the message elsewhere",
                ))
            }
            Err(e) if f.continue_on_failure => {
                tracing::warn!(proxy = %msg.service, "foreach: part {k} failed, going on: {}", e.reason());
                false
            }
            Err(e) => return Err(e),
        };
        // What the part became: the first element of the body.
        let view = View { msg, doc: &sub };
        let result = match view.document() {
            Ok(rd) => payload_node(rd).map(|n| Fragment::from_nodes(&[n])),
            Err(e) if f.continue_on_failure => {
                tracing::warn!(proxy = %msg.service, "foreach: part {k} is not XML any more: {e}");
                None
            }
            Err(e) => return Err(expr_error(e)),
        };
        if let Some(fr) = result {
            let fr = fr.map_err(|e| xml_error(what, e))?;
            d.insert(parent, &fr, Placement::LastChild)
                .map_err(|e| xml_error(what, e))?;
        }
        msg.props.set(&counter, (k + 1).to_string());
        if stop && !f.continue_on_failure {
            break;
        }
    }
    put_doc(msg, doc, d, what)
}

/// Completes a gather whose copies have all ended before its count was reached (some dropped, or
/// failed): the aggregate runs its `onComplete` on the first message it gathered, with what was
/// gathered. `None` when no copy reached an aggregate.
pub fn complete_gather(g: &crate::message::Gather) -> Option<(Message, Result<Flow, Error>)> {
    let (plan, mut msg, parts) = {
        let mut st = g.state.lock().unwrap_or_else(|p| p.into_inner());
        if st.done {
            return None;
        }
        st.done = true;
        let plan = st.plan.take()?;
        let msg = *st.first.take()?;
        (plan, msg, std::mem::take(&mut st.parts))
    };
    let mut doc = DocCache::new();
    let flow =
        completed(&plan, &parts, &mut msg, &mut doc).and_then(|f| leaving(f, &mut msg, &doc));
    Some((msg, flow))
}

/// An aggregate's end, inline or from the engine: the gather is over (an aggregate further on is
/// another one's), the merged message is made, and `onComplete` runs on it.
fn completed(
    a: &crate::plan::AggregatePlan,
    parts: &[String],
    msg: &mut Message,
    doc: &mut DocCache,
) -> Result<Flow, Error> {
    msg.gather = None;
    aggregated(a, parts, msg)?;
    *doc = DocCache::new();
    run_steps(&a.on_complete, 0, msg, doc)
}

/// `flow` from a nested list (a branch or a sequence) run by step `i` of `steps`: a `call` in it
/// goes on after that step once the nested list's rest is done.
fn nested(flow: Flow, steps: &Steps, i: usize) -> Option<Flow> {
    match flow {
        Flow::Continue => None,
        Flow::Call(ep, mut k) => {
            k.frames.push((steps.clone(), i + 1));
            Some(Flow::Call(ep, k))
        }
        f => Some(f),
    }
}

fn run_steps(
    steps: &Steps,
    from: usize,
    msg: &mut Message,
    doc: &mut DocCache,
) -> Result<Flow, Error> {
    for (i, step) in steps.iter().enumerate().skip(from) {
        if let Some(stop) = &msg.stop {
            if stop.load(std::sync::atomic::Ordering::Relaxed) {
                return Err(Error::new(
                    ErrorKind::Stopped,
                    "mediation was stopped: its deadline passed or its client went away",
                ));
            }
        }
        match step {
            Step::CallEndpoint(ep) => {
                let k = Continuation {
                    frames: vec![(steps.clone(), i + 1)],
                };
                return Ok(Flow::Call(ep.clone(), k));
            }
            Step::Send(ep) => return Ok(Flow::Send(ep.clone())),
            Step::Respond => return Ok(Flow::Respond),
            Step::Loopback => return Ok(Flow::Loopback),
            Step::Drop => return Ok(Flow::Drop),
            Step::Log(l) => log(l, msg, doc),
            Step::SetProperty {
                scope,
                name,
                ty,
                value,
            } => {
                if *ty == PropertyType::Om {
                    // Synapse parses the (XML-aware) string value into an element.
                    let v = match value {
                        Value::Literal(s) => s.clone(),
                        Value::Expr(e) => e
                            .eval_xml_aware(&View { msg, doc })
                            .map(Cow::into_owned)
                            .map_err(expr_error)?,
                    };
                    let xml = om_value(&v).map_err(|e| {
                        Error::new(ErrorKind::Mediation, format!("property {name}: {e}"))
                    })?;
                    msg.props.set_xml(name, xml);
                    continue;
                }
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
            Step::SetAction(v) => {
                let a = eval_value(v, msg, doc)?;
                // It goes out in a header: refused here, where the reason can name it.
                if http::HeaderValue::from_str(&a).is_err() {
                    return Err(Error::new(
                        ErrorKind::Mediation,
                        format!("the Action '{a}' is not a valid HTTP header value"),
                    ));
                }
                msg.action = Some(ActionChange::Set(a));
            }
            Step::RemoveAction => msg.action = Some(ActionChange::Removed),
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
                if let Some(f) = nested(run_steps(branch, 0, msg, doc)?, steps, i) {
                    return Ok(f);
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
                if let Some(f) = nested(run_steps(branch, 0, msg, doc)?, steps, i) {
                    return Ok(f);
                }
            }
            Step::Call(seq) => {
                if let Some(f) = nested(run_steps(&seq.steps, 0, msg, doc)?, steps, i) {
                    return Ok(f);
                }
            }
            Step::Template(t) => {
                // The arguments are evaluated where the template is called, then its sequence
                // runs with them as `$func:`; the template is left when its steps end, also after
                // a `call` in it (the continuation leaves it there).
                if let Some(p) = &t.missing {
                    return Err(Error::new(
                        ErrorKind::Mediation,
                        format!(
                            "template {}: the mandatory parameter '{p}' was not given",
                            t.name
                        ),
                    ));
                }
                let mut frame = Vec::with_capacity(t.params.len());
                for (name, v) in &t.params {
                    frame.push((name.clone(), eval_value(v, msg, doc)?));
                }
                msg.func.push(frame);
                let flow = run_steps(&t.template.steps, 0, msg, doc);
                match flow {
                    Ok(Flow::Call(ep, mut k)) => {
                        k.frames.push((Steps::from(vec![Step::LeaveTemplate]), 0));
                        k.frames.push((steps.clone(), i + 1));
                        return Ok(Flow::Call(ep, k));
                    }
                    Ok(Flow::Continue) => {
                        msg.func.pop();
                    }
                    // As in MI, a template left otherwise (a send, an error) keeps its
                    // parameters for what runs next.
                    other => return other,
                }
            }
            Step::LeaveTemplate => {
                msg.func.pop();
            }
            Step::Foreach(f) => foreach(f, msg, doc)?,
            Step::SaveMessage => {
                unread_body(msg, "the message to keep aside")?;
                msg.save();
            }
            Step::CallSource(c) => call_source(c, msg, doc)?,
            Step::CallTarget { property, restore } => {
                call_target(property, msg, doc)?;
                if *restore && msg.restore() {
                    *doc = DocCache::new();
                }
            }
            Step::Clone(c) => return Ok(Flow::Clone(c.clone())),
            Step::Iterate(it) => {
                let parts = it
                    .expression
                    .eval_nodes_xml_each(&View { msg, doc })
                    .map_err(expr_error)?
                    .ok_or_else(|| {
                        Error::new(
                            ErrorKind::Mediation,
                            "iterate: the expression selects no nodes",
                        )
                    })?;
                // One request must not fan out without bound: each part is a back-end call.
                within_parts_cap("iterate", parts.len())?;
                let bodies = parts.iter().map(|p| envelope_with(p, msg.soap)).collect();
                return Ok(Flow::Iterate(it.clone(), bodies));
            }
            Step::Aggregate(a) => {
                // Not a copy a clone or iterate made: nothing to aggregate (Synapse logs it and
                // goes on without onComplete).
                let Some(g) = msg.gather.clone() else {
                    continue;
                };
                let part = a
                    .expression
                    .eval_nodes_xml(&View { msg, doc })
                    .map(Cow::into_owned)
                    .map_err(expr_error)?;
                let (parts, first) = {
                    let mut st = g.state.lock().unwrap_or_else(|p| p.into_inner());
                    if st.done {
                        return Ok(Flow::Absorbed);
                    }
                    st.parts.push(part);
                    // The first message gathered is what the merged one is made from (Synapse).
                    if st.first.is_none() {
                        st.first = Some(Box::new(msg.clone()));
                    }
                    // Complete at min or max, whichever comes first, else at every copy.
                    let want = [a.min, a.max]
                        .into_iter()
                        .flatten()
                        .min()
                        .unwrap_or(g.copies)
                        .min(g.copies);
                    if st.parts.len() < want {
                        st.plan = Some(a.clone());
                        return Ok(Flow::Absorbed);
                    }
                    st.done = true;
                    (std::mem::take(&mut st.parts), st.first.take())
                };
                if let Some(first) = first {
                    *msg = *first;
                }
                if let Some(f) = nested(completed(a, &parts, msg, doc)?, steps, i) {
                    return Ok(f);
                }
            }
            Step::Xslt(x) => xslt(x, msg, doc)?,
            Step::PayloadFactory(p) => payload_factory(p, msg, doc)?,
            Step::Enrich(e) => enrich(e, msg, doc)?,
            Step::Validate(v) => {
                if let Some(reason) = validate(v, msg, doc)? {
                    msg.props.set("ERROR_MESSAGE", reason.0);
                    msg.props.set("ERROR_DETAIL", reason.1);
                    if let Some(f) = nested(run_steps(&v.on_fail, 0, msg, doc)?, steps, i) {
                        return Ok(f);
                    }
                }
            }
            Step::SetSoapHeader {
                ns,
                prefix,
                local,
                value,
            } => {
                let v = eval_value(value, msg, doc)?;
                set_soap_header(ns, prefix, local, &v, msg, doc)?;
            }
            Step::RemoveSoapHeader { ns, local } => remove_soap_header(ns, local, msg, doc)?,
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
        Cond::Response(response) => Ok(msg.is_response() == *response),
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
    if let Some(out) = xslt_streaming(x, msg, doc) {
        msg.body = Body::Bytes(out.into());
        msg.headers.remove(http::header::CONTENT_LENGTH);
        *doc = DocCache::new();
        return Ok(());
    }
    let what = format!("xslt {}", x.key);
    let parsed = match doc.take() {
        Some(d) => d,
        None => parse_body(msg),
    };
    let mut d = parsed.map_err(expr_error)?;
    if x.fast {
        let out = x
            .sheet
            .xslt
            .transform_to_bytes(&d, &params)
            .map_err(|e| xml_error(&what, e))?;
        msg.body = Body::Bytes(out.into());
        msg.headers.remove(http::header::CONTENT_LENGTH);
        return Ok(());
    }
    let (target, input) = {
        let node = match &x.source {
            Some(e) => e.first_node(&d, &*msg).map_err(expr_error)?,
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
        .xslt
        .transform(&input, &params)
        .map_err(|e| xml_error(&what, e))?;
    d.replace_node(target, &result)
        .map_err(|e| xml_error(&what, e))?;
    // The tree is the new body: later XPath in this run reads it without parsing again.
    put_doc(msg, doc, d, &what)
}

/// The streaming fast path (`sluice-stx`), when the stylesheet is in its subset, takes no parameters,
/// transforms the default source, and the body is still the bytes received (no tree built yet): the
/// new body, or `None` for libxslt to do it (which also reports any error in the message).
fn xslt_streaming(x: &XsltPlan, msg: &Message, doc: &DocCache) -> Option<Vec<u8>> {
    let sheet = x.sheet.stream.as_ref()?;
    let Body::Bytes(input) = &msg.body else {
        return None;
    };
    if !x.params.is_empty() || x.source.is_some() || doc.get().is_some() {
        return None;
    }
    let mut out = Vec::with_capacity(input.len() + input.len() / 8);
    let done = if x.fast {
        sheet.transform(input, &mut out)
    } else {
        sheet.transform_soap_body_child(input, &mut out)
    };
    done.ok().map(|()| out)
}

/// The parsed body, taken out of the cache to be changed (put it back with `put_doc`).
fn take_doc(msg: &Message, doc: &mut DocCache) -> Result<Document, Error> {
    match doc.take() {
        Some(d) => d,
        None => parse_body(msg),
    }
    .map_err(expr_error)
}

/// A tree as a message body is written: no XML declaration, no indentation.
fn message_bytes(d: &Document, what: &str) -> Result<Vec<u8>, Error> {
    d.to_bytes_with(sluice_xml::SerializeOptions {
        xml_declaration: false,
        indent: false,
    })
    .map_err(|e| xml_error(what, e))
}

/// Makes a changed tree the message: serialised into the body, and kept for later XPath.
fn put_doc(msg: &mut Message, doc: &mut DocCache, d: Document, what: &str) -> Result<(), Error> {
    msg.body = Body::Bytes(message_bytes(&d, what)?.into());
    msg.headers.remove(http::header::CONTENT_LENGTH);
    *doc = DocCache::from(Ok(d));
    Ok(())
}

/// An OM property value: the text must be XML with an element (Synapse's `stringToOM`). Returns it
/// as stored (trimmed).
pub fn om_value(s: &str) -> Result<String, String> {
    let t = s.trim();
    match Fragment::parse(t) {
        Ok(f) if f.elements().next().is_some() => Ok(t.to_owned()),
        Ok(_) => Err(format!("'{t}' is not an XML element (type OM)")),
        Err(e) => Err(format!("'{t}' is not XML (type OM): {e}")),
    }
}

/// Synapse's preparation of a payloadFactory argument for an XML format: a value that is XML
/// (ends with '>', parses) goes in as is; anything else is XML-escaped (`escapeXml10`).
pub fn prepare_payload_arg(v: String) -> String {
    if is_xml_value(&v) {
        return v;
    }
    escape_xml(&v)
}

/// Whether a value is XML to WSO2's payloadFactory (starts with `<`, ends with `>`, parses).
fn is_xml_value(v: &str) -> bool {
    let t = v.trim();
    t.len() >= 4 && t.starts_with('<') && t.ends_with('>') && Fragment::parse(t).is_ok()
}

/// `v` XML-escaped (commons-lang `escapeXml10`: the five predefined entities).
pub(crate) fn escape_xml(v: &str) -> String {
    let mut out = String::with_capacity(v.len() + 8);
    for c in v.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            _ => out.push(c),
        }
    }
    out
}

/// `v` as a JSON string's content, as WSO2's payloadFactory escapes it: backslash, quote, and
/// `\b \f \n \r \t` (no other control character).
fn escape_json(v: &str) -> String {
    let mut out = String::with_capacity(v.len() + 8);
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            _ => out.push(c),
        }
    }
    out
}

/// A text value for a JSON format: as JSON when it starts with `{` or `[` (and is not
/// `literal`), else escaped as a string's content (the format's quotes stay as written).
fn json_text_arg(v: String, literal: bool) -> String {
    let t = v.trim_start();
    if !literal && (t.starts_with('{') || t.starts_with('[')) {
        v
    } else {
        escape_json(&v)
    }
}

/// A literal `value` argument for a JSON format, prepared at load as WSO2 does: XML-escaped first
/// (WSO2 passes every static value through `escapeXml10`, for JSON formats too), then as any text.
pub(crate) fn json_literal_arg(v: &str, literal: bool) -> String {
    json_text_arg(escape_xml(v), literal)
}

/// An expression argument's value as it goes into the format: for JSON formats, a JsonPath's
/// objects, arrays, numbers, booleans and null as JSON and its strings escaped; for XML formats,
/// a JsonPath's objects and arrays as XML elements (WSO2's JSON to XML mapping), anything else
/// escaped unless it is XML.
fn payload_arg_value(
    expr: &Expr,
    literal: bool,
    media: PayloadMedia,
    view: &View<'_>,
) -> Result<String, Error> {
    let json_format = media == PayloadMedia::Json;
    if let Expr::Json(_) = expr {
        let (values, definite) = expr.json_values(view).map_err(expr_error)?;
        let text = || sluice_expr::json_string_value(&values, definite).map_err(json_xml_error);
        // Text goes in as it is.
        if media == PayloadMedia::Text {
            return text();
        }
        let one = if definite {
            values.first().map(|v| &**v)
        } else {
            None
        };
        return match (json_format, literal, one) {
            (true, true, _) => Ok(escape_json(&text()?)),
            (true, false, Some(serde_json::Value::String(s))) => {
                Ok(json_text_arg(s.clone(), false))
            }
            (true, false, _) => text(),
            (false, true, _) | (false, false, Some(serde_json::Value::String(_))) => {
                Ok(escape_xml(&text()?))
            }
            (false, false, Some(v)) if !(v.is_object() || v.is_array()) => text(),
            (false, false, Some(v)) => crate::json::json_to_xml(v).map_err(json_xml_error),
            (false, false, None) if definite => Ok(String::new()),
            (false, false, None) => {
                let all =
                    serde_json::Value::Array(values.into_iter().map(Cow::into_owned).collect());
                crate::json::json_to_xml(&all).map_err(json_xml_error)
            }
        };
    }
    if media == PayloadMedia::Text {
        return expr
            .eval_string(view)
            .map(Cow::into_owned)
            .map_err(expr_error);
    }
    let v = expr
        .eval_xml_aware(view)
        .map(Cow::into_owned)
        .map_err(expr_error)?;
    if !json_format {
        return Ok(if literal {
            escape_xml(&v)
        } else {
            prepare_payload_arg(v)
        });
    }
    if !literal && is_xml_value(&v) {
        // As WSO2 does: the XML under a `jsonObject`, written as JSON (`<name>x</name>` is
        // `{"name":"x"}`).
        let wrapped = format!("<jsonObject>{}</jsonObject>", v.trim());
        let bad = |m: String| {
            Error::new(
                ErrorKind::Mediation,
                format!("payloadFactory: the XML argument as JSON: {m}"),
            )
        };
        let d = sluice_xml::Document::parse(wrapped.as_bytes()).map_err(|e| bad(e.to_string()))?;
        let root = d
            .root_element()
            .ok_or_else(|| bad("no element".to_owned()))?;
        return crate::json::xml_to_json(root).map_err(bad);
    }
    Ok(json_text_arg(v, literal))
}

fn json_xml_error(m: String) -> Error {
    Error::new(
        ErrorKind::BadRequest,
        format!("payloadFactory argument: {m}"),
    )
}

fn payload_factory(p: &PayloadPlan, msg: &mut Message, doc: &mut DocCache) -> Result<(), Error> {
    let what = "payloadFactory";
    let mut values = Vec::with_capacity(p.args.len());
    for a in &p.args {
        values.push(match a {
            PayloadArg::Ready(s) => Cow::Borrowed(s.as_str()),
            PayloadArg::Expr { expr, literal } => Cow::Owned(payload_arg_value(
                expr,
                *literal,
                p.media,
                &View { msg, doc },
            )?),
        });
    }
    let mut text = String::new();
    for s in &p.segments {
        match s {
            Segment::Text(t) => text.push_str(t),
            Segment::Arg(i) => text.push_str(&values[*i]),
        }
    }
    let made = match p.media {
        // As WSO2 does: the JSON trimmed and not checked; the message is JSON from here.
        PayloadMedia::Json => Some(("application/json", text.trim().to_owned())),
        // Plain text, as it came out.
        PayloadMedia::Text => Some(("text/plain", std::mem::take(&mut text))),
        PayloadMedia::Xml => None,
    };
    if let Some((media, body)) = made {
        msg.body = Body::Bytes(body.into());
        msg.headers.insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static(media),
        );
        msg.headers.remove(http::header::CONTENT_LENGTH);
        msg.axis2.set("messageType", media.to_owned());
        msg.axis2.set("ContentType", media.to_owned());
        *doc = DocCache::new();
        return Ok(());
    }
    let was_json = crate::json::is_json_headers(&msg.headers);
    let invalid = |e: sluice_xml::XmlError| {
        Error::new(
            ErrorKind::Mediation,
            format!("{what}: unable to create a valid XML payload: {e}"),
        )
    };
    if p.envelope {
        let d = sluice_xml::Document::parse(text.trim().as_bytes()).map_err(invalid)?;
        if was_json {
            json_becomes_xml(msg);
        }
        return put_doc(msg, doc, d, what);
    }
    let frag = Fragment::parse(&text).map_err(invalid)?;
    if was_json {
        json_becomes_xml(msg);
    }
    let mut d = match &msg.body {
        // A JSON body has no XML to put the payload in: it is a new message.
        _ if was_json => new_message_doc(msg, &frag)?,
        Body::Empty => new_message_doc(msg, &frag)?,
        _ => take_doc(msg, doc)?,
    };
    d.replace_payload(&frag).map_err(|e| xml_error(what, e))?;
    put_doc(msg, doc, d, what)
}

/// A JSON message given an XML payload becomes plain XML (WSO2 sets `application/xml` for a
/// message that was neither SOAP nor XML).
fn json_becomes_xml(msg: &mut Message) {
    msg.headers.insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static(crate::fault::POX_CONTENT_TYPE),
    );
    for k in ["messageType", "ContentType"] {
        if msg.axis2.get(k).is_some() {
            msg.axis2.set(k, "application/xml".to_owned());
        }
    }
    msg.soap = sluice_config::FaultVersion::Pox;
}

/// A document for a message that had no body: an empty SOAP envelope in the message's SOAP
/// version, or (POX) the fragment's first element.
fn new_message_doc(msg: &mut Message, frag: &Fragment) -> Result<Document, Error> {
    let text = match msg.soap {
        sluice_config::FaultVersion::Soap11 => format!(
            "<soapenv:Envelope xmlns:soapenv=\"{}\"><soapenv:Body/></soapenv:Envelope>",
            crate::fault::SOAP11_ENV
        ),
        sluice_config::FaultVersion::Soap12 => format!(
            "<soapenv:Envelope xmlns:soapenv=\"{}\"><soapenv:Body/></soapenv:Envelope>",
            crate::fault::SOAP12_ENV
        ),
        sluice_config::FaultVersion::Pox => {
            msg.headers.insert(
                http::header::CONTENT_TYPE,
                http::HeaderValue::from_static(crate::fault::POX_CONTENT_TYPE),
            );
            frag.to_xml_string()
                .map_err(|e| xml_error("payloadFactory", e))?
        }
    };
    Document::parse(text.as_bytes()).map_err(|e| xml_error("payloadFactory", e))
}

/// The payload element: the first element of the SOAP Body, or the root of a plain XML message.
pub(crate) fn payload_node(d: &Document) -> Option<sluice_xml::Node<'_>> {
    match d.soap_body() {
        Some(b) => b.first_child_element(),
        None => d.root_element(),
    }
}

fn enrich_source(
    source: &EnrichSourcePlan,
    msg: &Message,
    doc: &DocCache,
) -> Result<Fragment, Error> {
    let what = "enrich source";
    let x = |r: Result<Fragment, sluice_xml::XmlError>| r.map_err(|err| xml_error(what, err));
    match source {
        EnrichSourcePlan::Custom(ex) => {
            // An XPath over properties only is text, and the body may not even have been read.
            if matches!(ex, Expr::XPath(_)) && ex.body_need() != BodyNeed::None {
                let view = View { msg, doc };
                let d = view.document().map_err(expr_error)?;
                match ex.nodes(d, &view) {
                    Ok(nodes) => x(Fragment::from_nodes(&nodes)),
                    // Not a node-set (a string, number...): its value as text.
                    Err(_) => x(Fragment::text(&eval_expr(ex, msg, doc)?)),
                }
            } else {
                x(Fragment::text(&eval_expr(ex, msg, doc)?))
            }
        }
        EnrichSourcePlan::Envelope | EnrichSourcePlan::Body => {
            let view = View { msg, doc };
            let d = view.document().map_err(expr_error)?;
            let node = if matches!(source, EnrichSourcePlan::Envelope) {
                d.root_element()
            } else {
                payload_node(d)
            };
            match node {
                Some(n) => x(Fragment::from_nodes(&[n])),
                None => x(Fragment::empty()),
            }
        }
        EnrichSourcePlan::Property(name) => match msg.props.get(name) {
            Some(v) if msg.props.is_xml(name) => x(Fragment::parse(v)),
            Some(v) => x(Fragment::text(v)),
            None => x(Fragment::empty()),
        },
        EnrichSourcePlan::Xml(t) => x(Fragment::parse(t)),
        EnrichSourcePlan::Text(t) => x(Fragment::text(t)),
    }
}

fn enrich(e: &EnrichPlan, msg: &mut Message, doc: &mut DocCache) -> Result<(), Error> {
    let what = "enrich";
    let source = enrich_source(&e.source, msg, doc)?;
    match &e.target {
        EnrichTargetPlan::Property(name) => {
            let xml = source.to_xml_string().map_err(|err| xml_error(what, err))?;
            msg.props.set_xml(name, xml);
            Ok(())
        }
        EnrichTargetPlan::Envelope => {
            let env = source
                .elements()
                .next()
                .filter(|n| {
                    n.name() == "Envelope"
                        && matches!(
                            n.namespace_uri(),
                            Some(crate::fault::SOAP11_ENV) | Some(crate::fault::SOAP12_ENV)
                        )
                })
                .ok_or_else(|| {
                    Error::new(
                        ErrorKind::Mediation,
                        "enrich: a SOAP envelope is expected for an envelope target",
                    )
                })?;
            let d = Fragment::from_nodes(&[env])
                .and_then(Fragment::into_document)
                .map_err(|err| xml_error(what, err))?;
            put_doc(msg, doc, d, what)
        }
        EnrichTargetPlan::Body => {
            if source.is_empty() {
                return Ok(());
            }
            let mut d = take_doc(msg, doc)?;
            let target = payload_node(&d).map(|n| n.id());
            let r = match target {
                Some(t) => insert_into_element(&mut d, t, &source, e.action),
                // An empty Body: the source's elements become its children.
                None => match d.soap_body().map(|b| b.id()) {
                    Some(b) => d.insert(b, &source, Placement::LastChild),
                    None => Ok(()),
                },
            };
            let r = r.map_err(|err| xml_error(what, err));
            let put = put_doc(msg, doc, d, what);
            r.and(put)
        }
        EnrichTargetPlan::Custom(ex) => {
            if source.is_empty() {
                // Synapse logs "Cannot Enrich message from an empty source" and goes on.
                return Ok(());
            }
            let mut d = take_doc(msg, doc)?;
            let r = enrich_custom(ex, &mut d, &source, e.action, &*msg);
            let put = put_doc(msg, doc, d, what);
            r.and(put)
        }
    }
}

fn enrich_custom(
    ex: &Expr,
    d: &mut Document,
    source: &Fragment,
    action: EnrichAction,
    // The message's properties (its body is `d`, taken out of it to be changed).
    props: &dyn Env,
) -> Result<(), Error> {
    let what = "enrich target";
    let (id, kind, parent) = {
        let nodes = ex.nodes(d, props).map_err(expr_error)?;
        let n = nodes.first().ok_or_else(|| {
            Error::new(
                ErrorKind::Mediation,
                "enrich: the target XPath selects nothing in the message",
            )
        })?;
        (n.id(), n.kind(), n.parent().map(|p| p.id()))
    };
    let first_is_text = matches!(
        source.nodes().next().map(|n| n.kind()),
        Some(NodeKind::Text | NodeKind::CData)
    );
    let r = match kind {
        NodeKind::Element => insert_into_element(d, id, source, action),
        NodeKind::Text | NodeKind::CData => match parent {
            Some(p) if first_is_text => {
                let t = source.last_text().unwrap_or_default();
                d.set_text(p, &t)
            }
            Some(p) => {
                let first = source.elements().next();
                match first {
                    Some(f) => {
                        let one = Fragment::from_nodes(&[f]);
                        d.remove(id)
                            .and(one.and_then(|one| d.insert(p, &one, Placement::LastChild)))
                    }
                    None => Ok(()),
                }
            }
            None => Ok(()),
        },
        NodeKind::Attribute => {
            let t = source
                .nodes()
                .next()
                .map(|n| n.text_content())
                .unwrap_or_default();
            d.set_text(id, &t)
        }
        _ => {
            return Err(Error::new(
                ErrorKind::Mediation,
                "enrich: invalid target object (not an element, text or attribute)",
            ))
        }
    };
    r.map_err(|e| xml_error(what, e))
}

/// Synapse's `insertElement`: replace (elements take the target's place; text only sets its
/// text), child, or sibling (after it). Only elements are added as children or siblings.
fn insert_into_element(
    d: &mut Document,
    target: sluice_xml::NodeId,
    source: &Fragment,
    action: EnrichAction,
) -> Result<(), sluice_xml::XmlError> {
    let has_elements = source.elements().next().is_some();
    match action {
        EnrichAction::Replace if has_elements => {
            let is_root = d.root_element().is_some_and(|r| r.id() == target);
            if is_root {
                d.replace_payload(source)
            } else {
                d.insert(target, source, Placement::Before)?;
                d.remove(target)
            }
        }
        EnrichAction::Replace => match source.last_text() {
            Some(t) => d.set_text(target, &t),
            None => Ok(()),
        },
        EnrichAction::Child => d.insert(target, source, Placement::LastChild),
        EnrichAction::Sibling => d.insert(target, source, Placement::After),
    }
}

/// `validate`: `Some((message, detail))` when the source element is not valid.
fn validate(
    v: &ValidatePlan,
    msg: &Message,
    doc: &DocCache,
) -> Result<Option<(String, String)>, Error> {
    let what = format!("validate against {}", v.key);
    let view = View { msg, doc };
    let d = view.document().map_err(expr_error)?;
    let node = match &v.source {
        // Synapse evaluates the source with the Envelope as context node.
        Some(e) => match d.root_element() {
            Some(root) => e
                .nodes_at(root, &view)
                .map_err(expr_error)?
                .into_iter()
                .next(),
            None => None,
        },
        None => payload_node(d),
    };
    let node = node.filter(|n| n.is_element()).ok_or_else(|| {
        Error::new(
            ErrorKind::Mediation,
            format!("{what}: the source selects no element in the message"),
        )
    })?;
    match v.schema.validate_element(node) {
        Ok(Ok(())) => Ok(None),
        Ok(Err(invalid)) => Ok(Some((
            invalid.messages[0].trim().to_owned(),
            invalid.messages.join("\n"),
        ))),
        Err(e) => Err(xml_error(&what, e)),
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
    d.insert(header, &frag, Placement::LastChild)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A `call` in a named sequence, inside a switch case, with another call after it: each
    /// continuation runs the rest of the sequence, then of the case, then of the in-sequence, in that
    /// order, and says what of the response it reads (nothing until a step over the body comes).
    #[test]
    fn calls_resume_through_sequences_and_branches_in_order() {
        let text = r#"<definitions xmlns="http://ws.apache.org/ns/synapse">
  <endpoint name="E"><address uri="http://127.0.0.1:9/x"/></endpoint>
  <sequence name="S">
    <property name="t" expression="concat(get-property('t'), 's1,')"/>
    <call><endpoint key="E"/></call>
    <property name="t" expression="concat(get-property('t'), 's2,')"/>
  </sequence>
  <proxy name="P"><target><inSequence>
    <switch source="get-property('k')">
      <case regex="a">
        <sequence key="S"/>
        <property name="t" expression="concat(get-property('t'), 'case,')"/>
        <call><endpoint key="E"/></call>
        <property name="t" expression="concat(get-property('t'), 'case2,')"/>
      </case>
    </switch>
    <property name="t" expression="concat(get-property('t'), 'end,')"/>
    <filter xpath="//qty = 3"><then><property name="t" expression="concat(get-property('t'), 'three')"/></then></filter>
  </inSequence></target></proxy>
  <proxy name="Q"><target><inSequence>
    <sequence key="S"/>
    <filter xpath="//qty = 3"><then><drop/></then></filter>
  </inSequence></target></proxy>
</definitions>"#;
        let (cfg, mut diags) = sluice_config::load_str("t.xml", text);
        let plan = crate::compile(&cfg, &crate::CompileOptions::default(), &mut diags);
        assert!(!diags.has_errors(), "{diags:?}");
        let p = &plan.proxies["P"];
        // A call inside a branch does not stop the count: when the case is not taken, the filter
        // reads the request.
        assert_eq!(p.in_seq.body_need, BodyNeed::Full);
        // A sequence that calls at its top level stops it: the steps after it read the response.
        assert_eq!(plan.proxies["Q"].in_seq.body_need, BodyNeed::None);
        let mut msg = Message::request(
            "P".into(),
            http::Method::POST,
            "/services/P".into(),
            http::HeaderMap::new(),
        );
        msg.props.set("k", "a".into());
        let t = |m: &Message| m.props.get("t").unwrap_or_default().to_owned();
        let Ok(Flow::Call(Some(_), k1)) = run(&p.in_seq.steps, &mut msg) else {
            panic!("the first call")
        };
        assert_eq!(t(&msg), "s1,");
        assert_eq!(k1.body_need(false), BodyNeed::None, "up to the second call");
        let Ok(Flow::Call(Some(_), k2)) = resume(k1, &mut msg) else {
            panic!("the second call")
        };
        assert_eq!(t(&msg), "s1,s2,case,");
        assert_eq!(
            k2.body_need(false),
            BodyNeed::Full,
            "the filter reads the response"
        );
        msg.body = Body::Bytes(bytes::Bytes::from_static(b"<r><qty>3</qty></r>"));
        assert!(matches!(resume(k2, &mut msg), Ok(Flow::Continue)));
        assert_eq!(t(&msg), "s1,s2,case,case2,end,three");
    }

    const REVERSE: &str = r#"<xsl:stylesheet version="1.0" xmlns:m0="http://services.samples/xsd" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
  <xsl:output indent="no" method="xml"/>
  <xsl:template match="@* | node()"><xsl:copy><xsl:apply-templates select="@* | node()"/></xsl:copy></xsl:template>
  <xsl:template match="m0:buyStocks"><m0:skcotSyub><xsl:for-each select="order"><redro xmlns=""><lobmys><xsl:value-of select="symbol"/></lobmys></redro></xsl:for-each></m0:skcotSyub></xsl:template>
</xsl:stylesheet>"#;

    fn xslt_plan(streaming: bool, fast: bool) -> XsltPlan {
        let bytes = REVERSE.as_bytes();
        XsltPlan {
            sheet: std::sync::Arc::new(crate::plan::Sheet {
                xslt: sluice_xml::Stylesheet::compile(bytes, None).unwrap(),
                stream: streaming.then(|| sluice_stx::StreamSheet::compile(bytes).unwrap()),
            }),
            key: "reverse".into(),
            source: None,
            params: Vec::new(),
            fast,
        }
    }

    fn canonical(body: &Body) -> Vec<u8> {
        let Body::Bytes(b) = body else {
            panic!("no body")
        };
        let d = sluice_xml::Document::parse(b).unwrap();
        sluice_xml::canonicalize(&d).unwrap()
    }

    #[test]
    fn xslt_streams_when_it_can_and_agrees_with_libxslt() {
        let envelope = "<s:Envelope xmlns:s=\"http://schemas.xmlsoap.org/soap/envelope/\"><s:Header><h>1</h></s:Header>\
            <s:Body><m:buyStocks xmlns:m=\"http://services.samples/xsd\"><order><symbol>IBM</symbol></order>\
            <order><symbol>SUN</symbol></order></m:buyStocks></s:Body></s:Envelope>";
        for fast in [false, true] {
            let mut bodies = Vec::new();
            for streaming in [true, false] {
                let mut msg = Message::request(
                    "p".into(),
                    http::Method::POST,
                    "/".into(),
                    http::HeaderMap::new(),
                );
                msg.body = Body::Bytes(bytes::Bytes::from(envelope));
                let mut doc = DocCache::new();
                xslt(&xslt_plan(streaming, fast), &mut msg, &mut doc).unwrap();
                // The streaming path builds no tree; libxslt's leaves its result tree for later XPath.
                assert_eq!(doc.get().is_none(), streaming || fast, "fast {fast}");
                bodies.push(canonical(&msg.body));
            }
            let text = String::from_utf8_lossy(&bodies[0]).into_owned();
            assert!(
                text.contains("<redro><lobmys>SUN</lobmys></redro>"),
                "{text}"
            );
            assert_eq!(text, String::from_utf8_lossy(&bodies[1]), "fastXSLT {fast}");
        }
        // Outside what the streaming path reads (an entity it leaves to libxml2): libxslt answers,
        // with libxml2's error.
        let mut msg = Message::request(
            "p".into(),
            http::Method::POST,
            "/".into(),
            http::HeaderMap::new(),
        );
        msg.body = Body::Bytes(bytes::Bytes::from_static(b"<a>&bad;</a>"));
        let e = xslt(&xslt_plan(true, false), &mut msg, &mut DocCache::new()).unwrap_err();
        assert_eq!(e.kind, ErrorKind::BadRequest, "{}", e.reason());
    }

    /// A JSON `messageType` needs an XML body read (to convert it) and a JSON one not (it goes out
    /// as it came): a JSON pass-through that sets it streams.
    #[test]
    fn a_json_message_type_reads_xml_bodies_only() {
        let text = r#"<definitions xmlns="http://ws.apache.org/ns/synapse">
  <proxy name="P"><target><inSequence>
    <property name="messageType" value="application/json" scope="axis2"/>
    <filter source="$trp:x" regex="y"><then><log level="full"/></then></filter>
    <respond/>
  </inSequence></target></proxy>
  <proxy name="Q"><target><inSequence>
    <property name="messageType" value="application/json" scope="axis2"/>
    <respond/>
  </inSequence><outSequence>
    <property name="messageType" expression="$trp:want" scope="axis2"/>
    <send/>
  </outSequence></target></proxy>
</definitions>"#;
        let (cfg, mut diags) = sluice_config::load_str("t.xml", text);
        let plan = crate::compile(&cfg, &crate::CompileOptions::default(), &mut diags);
        assert!(!diags.has_errors(), "{diags:?}");
        let (mut xml, mut json) = (http::HeaderMap::new(), http::HeaderMap::new());
        xml.insert(http::header::CONTENT_TYPE, "text/xml".parse().unwrap());
        json.insert(
            http::header::CONTENT_TYPE,
            "application/json".parse().unwrap(),
        );
        // A full log reads any body.
        assert_eq!(plan.proxies["P"].request_body_need(&xml), BodyNeed::Full);
        assert_eq!(plan.proxies["P"].request_body_need(&json), BodyNeed::Full);
        let q = &plan.proxies["Q"];
        assert_eq!(q.request_body_need(&xml), BodyNeed::Full);
        assert_eq!(q.request_body_need(&json), BodyNeed::None);
        // A messageType known only at run time may be JSON too.
        assert_eq!(q.response_body_need(&xml), BodyNeed::Full);
        assert_eq!(q.response_body_need(&json), BodyNeed::None);
    }

    #[test]
    fn text_goes_into_json_formats_as_wso2_escapes_it() {
        assert_eq!(
            escape_json("a\\b \"q\" \n\r\t\u{8}\u{c}\u{1}"),
            "a\\\\b \\\"q\\\" \\n\\r\\t\\b\\f\u{1}"
        );
        // Static values: XML-escaped first (WSO2 does it for JSON formats too); JSON kept.
        assert_eq!(
            json_literal_arg("a&b \"c\"", false),
            "a&amp;b &quot;c&quot;"
        );
        assert_eq!(json_literal_arg("{\"a\":1}", false), "{&quot;a&quot;:1}");
        assert_eq!(json_literal_arg("[1,2]", false), "[1,2]");
        assert_eq!(json_literal_arg("[1,2]", true), "[1,2]");
        assert_eq!(json_text_arg("[\"x\"]".to_owned(), true), "[\\\"x\\\"]");
    }

    #[test]
    fn payload_arguments_are_escaped_unless_xml() {
        assert_eq!(
            prepare_payload_arg("a<b & 'c' \"d\"".into()),
            "a&lt;b &amp; &apos;c&apos; &quot;d&quot;"
        );
        assert_eq!(prepare_payload_arg("<x>1</x>".into()), "<x>1</x>");
        assert_eq!(prepare_payload_arg("<x>".into()), "&lt;x&gt;");
        assert_eq!(prepare_payload_arg("<a/>".into()), "<a/>");
    }

    #[test]
    fn om_values_must_hold_an_element() {
        assert_eq!(om_value(" <a><b/></a> ").unwrap(), "<a><b/></a>");
        assert!(om_value("text").is_err());
        assert!(om_value("<a>").is_err());
    }

    #[test]
    fn xml_properties_are_flagged_until_set_as_strings() {
        let mut p = crate::message::Props::default();
        p.set_xml("x", "<a/>".into());
        assert!(p.is_xml("x"));
        p.set("x", "s".into());
        assert!(!p.is_xml("x"));
        p.set_xml("y", "<b/>".into());
        p.remove("y");
        assert!(!p.is_xml("y") && p.get("y").is_none());
    }

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
