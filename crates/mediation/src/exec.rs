//! The sequence executor. It is synchronous: it runs mediators until one decides where the message goes,
//! and returns that decision to the transport, which does the I/O. Nothing here awaits.

use crate::budget;
use crate::error::{Error, ErrorKind};
pub use crate::mediators::aggregate::complete_gather;
use crate::mediators::need_until_call;
use crate::message::{Body, Message};
use crate::plan::{EndpointPlan, SeqPlan, Steps, Value};
use sluice_expr::{BodyNeed, Env, Expr, ExprError, ExprErrorKind, PropScope};
use sluice_xml::{Document, Fragment};
use std::borrow::Cow;
use std::cell::{OnceCell, RefCell};
use std::sync::Arc;

/// Where mediation goes on after a `call`: the rest of each step list the call was inside, the
/// innermost first (a branch, then the list holding the filter, then the sequence that referred to
/// that one...).
#[derive(Debug, Clone, Default)]
pub struct Continuation {
    pub(crate) frames: Vec<(Steps, usize)>,
}

impl Continuation {
    /// Whether what is left holds a [`crate::mediators::Mediator::heavy`] step.
    pub fn heavy(&self) -> bool {
        self.frames
            .iter()
            .any(|(steps, from)| crate::mediators::heavy(&steps[*from..]))
    }

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
    /// `enqueue`: the message runs through the sequence when the priority executor has room.
    Enqueue(Arc<crate::mediators::enqueue::Enqueued>),
    /// `call`: to this endpoint (None: the message's `To`, else the proxy's target), then the
    /// continuation runs on the response.
    Call(Option<Arc<EndpointPlan>>, Continuation),
    /// `clone` or `iterate` with `continueParent`: the copies go to their targets while the
    /// original goes on with the continuation.
    ForkThen(Box<Flow>, Continuation),
    /// MI 4.4's `foreach` and `scatter-gather`: the branches run to their ends, are gathered into
    /// the message, which then goes on with the continuation ([`crate::branches`]).
    Branches(Box<crate::branches::Branches>, Continuation),
}

/// The message as expressions see it: its properties, and the body parsed as XML on the first XPath
/// that needs it, or as JSON on the first JsonPath (at most once per run; a mediator that replaces
/// the body drops the parse).
pub(crate) struct View<'a> {
    pub(crate) msg: &'a Message,
    pub(crate) doc: &'a DocCache,
}

impl Env for View<'_> {
    fn property(&self, scope: PropScope, name: &str) -> Option<Cow<'_, str>> {
        self.msg.property(scope, name)
    }
    fn url_param(&self, name: &str) -> Option<Cow<'_, str>> {
        self.msg.url_param(name)
    }
    fn variable(&self, name: &str) -> Option<serde_json::Value> {
        self.msg.vars.get(name).cloned()
    }
    fn document(&self) -> Result<&sluice_xml::Document, ExprError> {
        self.doc.tree(self.msg).as_ref().map_err(Clone::clone)
    }
    fn refused(&self, error: sluice_xml::XmlError) -> ExprError {
        let e = not_acceptable(&error);
        // Later expressions answer the same without parsing.
        let _ = self.doc.xml.set(Err(e.clone()));
        e
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
    fn unparsed_json(&self) -> Result<Option<sluice_expr::UnparsedJson<'_>>, ExprError> {
        if self.doc.json.get().is_some() {
            return Ok(None);
        }
        match self.raw_json() {
            Some(b) if !b.trim_ascii().is_empty() => {
                // As much as the tree would hold, while the path reads (what it keeps is less).
                let mut held = None;
                budget::hold_tree(&mut held, b.len(), budget::json_estimate(b))?;
                Ok(Some((b, Box::new(held))))
            }
            _ => Ok(None),
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
pub(crate) fn parse_json(
    msg: &Message,
    doc: &DocCache,
) -> Result<Option<serde_json::Value>, ExprError> {
    let tree = match &msg.body {
        Body::Bytes(b) if crate::json::looks_like_xml(b) => Some(doc.tree(msg)),
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
        let estimate = budget::json_estimate(text.as_bytes());
        budget::hold_tree(&mut doc.held.borrow_mut(), text.len(), estimate)?;
        return serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| bad(e.to_string()));
    }
    match &msg.body {
        Body::Bytes(b) if b.trim_ascii().is_empty() => Ok(None),
        Body::Bytes(b) => {
            budget::hold_tree(
                &mut doc.held.borrow_mut(),
                b.len(),
                budget::json_estimate(b),
            )?;
            serde_json::from_slice(b).map(Some).map_err(|e| ExprError {
                kind: ExprErrorKind::BadMessage,
                message: format!("the message body is not JSON: {e}"),
            })
        }
        Body::Empty => Ok(None),
        Body::Head(_) | Body::Stream => Err(ExprError {
            kind: ExprErrorKind::Invalid,
            message: "internal: the body was not read whole for an expression that needs it"
                .to_owned(),
        }),
    }
}

/// The body as a tree, its estimated size counted in `held` (the parsed JSON a JSON message
/// goes through only while it is made).
/// A message body the XML parse refused.
fn not_acceptable(e: &sluice_xml::XmlError) -> ExprError {
    ExprError {
        kind: ExprErrorKind::BadMessage,
        message: format!("the message is not acceptable XML: {e}"),
    }
}

fn parse_body(
    msg: &Message,
    held: &mut Option<budget::Held>,
) -> Result<sluice_xml::Document, ExprError> {
    let bad = |m: String| ExprError {
        kind: ExprErrorKind::BadMessage,
        message: m,
    };
    match &msg.body {
        // A JSON message is read as WSO2 reads one: its JSON-to-XML form in a SOAP Body, under a
        // `jsonObject` (`jsonArray` for an array). Written back out as JSON it is the same message.
        Body::Bytes(b) if crate::json::is_json_headers(&msg.headers) && !crate::json::looks_like_xml(b) => {
            let mut value_held = None;
            budget::hold_tree(&mut value_held, b.len(), budget::json_estimate(b))?;
            let v: serde_json::Value = serde_json::from_slice(b)
                .map_err(|e| bad(format!("the message body is not JSON: {e}")))?;
            let xml = crate::json::json_to_xml_marked(&v).map_err(bad)?;
            let root = if v.is_array() { "jsonArray" } else { "jsonObject" };
            let envelope = format!(
                "<soapenv:Envelope xmlns:soapenv=\"{}\"><soapenv:Body><{root}>{xml}</{root}></soapenv:Body></soapenv:Envelope>",
                crate::fault::SOAP11_ENV
            );
            drop(v);
            let e = envelope.as_bytes();
            budget::hold_tree(held, e.len(), budget::xml_estimate(e))?;
            drop(value_held);
            sluice_xml::parse_untrusted(e, &sluice_xml::Limits::default())
                .map_err(|e| bad(format!("the JSON message as XML: {e}")))
        }
        Body::Bytes(b) => {
            budget::hold_tree(held, b.len(), budget::xml_estimate(b))?;
            sluice_xml::parse_untrusted(b, &sluice_xml::Limits::default())
                .map_err(|e| not_acceptable(&e))
        }
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
pub(crate) struct DocCache {
    xml: OnceCell<Result<sluice_xml::Document, ExprError>>,
    json: OnceCell<Result<Option<serde_json::Value>, ExprError>>,
    /// What the trees parsed for this run hold of the process's budget ([`budget`]).
    held: RefCell<Option<budget::Held>>,
}

impl DocCache {
    pub(crate) fn new() -> Self {
        Self::default()
    }
    pub(crate) fn get(&self) -> Option<&Result<sluice_xml::Document, ExprError>> {
        self.xml.get()
    }
    /// The body's tree, parsed the first time.
    pub(crate) fn tree(&self, msg: &Message) -> &Result<sluice_xml::Document, ExprError> {
        self.xml
            .get_or_init(|| parse_body(msg, &mut self.held.borrow_mut()))
    }
    /// The body's tree as the cached one would be, not kept (to be changed).
    pub(crate) fn parse(&self, msg: &Message) -> Result<sluice_xml::Document, ExprError> {
        parse_body(msg, &mut self.held.borrow_mut())
    }
    /// The tree, for a mediator that will change the body (the JSON parse goes with it).
    pub(crate) fn take(&mut self) -> Option<Result<sluice_xml::Document, ExprError>> {
        self.json.take();
        self.xml.take()
    }
}

impl From<Result<sluice_xml::Document, ExprError>> for DocCache {
    fn from(r: Result<sluice_xml::Document, ExprError>) -> Self {
        DocCache {
            xml: OnceCell::from(r),
            ..DocCache::default()
        }
    }
}

pub(crate) fn expr_error(e: ExprError) -> Error {
    let kind = match e.kind {
        ExprErrorKind::BadMessage => ErrorKind::BadRequest,
        ExprErrorKind::TooLarge => ErrorKind::PayloadTooLarge,
        ExprErrorKind::Overloaded => ErrorKind::Overloaded,
        ExprErrorKind::Invalid | ExprErrorKind::Unsupported => ErrorKind::Mediation,
    };
    Error::new(kind, e.message)
}

pub(crate) fn eval_value(v: &Value, msg: &Message, doc: &DocCache) -> Result<String, Error> {
    match v {
        Value::Literal(s) => Ok(s.clone()),
        Value::Expr(e) => e
            .eval_string(&View { msg, doc })
            .map(Cow::into_owned)
            .map_err(expr_error),
    }
}

pub(crate) fn eval_expr(e: &Expr, msg: &Message, doc: &DocCache) -> Result<String, Error> {
    e.eval_string(&View { msg, doc })
        .map(Cow::into_owned)
        .map_err(expr_error)
}

/// Runs steps in order until one of them decides the flow. libxml2 values made here never leave it.
pub fn run(steps: &Steps, msg: &mut Message) -> Result<Flow, Error> {
    crate::rest::enter(msg);
    let mut doc = DocCache::new();
    let flow = run_steps(steps, 0, msg, &mut doc)?;
    leaving(flow, msg, &doc)
}

/// Runs a sequence on a message; when a mediator in it fails, its `onError` sequence, if it has
/// one ([`on_error`]).
pub fn run_seq(seq: &SeqPlan, msg: &mut Message) -> Result<Flow, Error> {
    crate::rest::enter(msg);
    let mut doc = DocCache::new();
    let flow = match run_steps(&seq.steps, 0, msg, &mut doc) {
        Ok(f) => f,
        Err(e) => match seq.on_error.get() {
            Some(h) if e.kind != ErrorKind::Stopped => {
                doc = DocCache::new();
                on_error(e, msg, |msg| run_steps(&h.steps, 0, msg, &mut doc))?
            }
            _ => return Err(e),
        },
    };
    keep_handler(seq, &flow, msg);
    leaving(flow, msg, &doc)
}

/// A sequence with an `onError` that sends the message on: its handler is the one a failure of
/// that send runs (the innermost, as Synapse's fault handler stack has it).
pub(crate) fn keep_handler(seq: &SeqPlan, flow: &Flow, msg: &mut Message) {
    if let (Some(h), Flow::Send(_) | Flow::Call(..)) = (seq.on_error.get(), flow) {
        if msg.fault_handler.is_none() && !msg.is_response() {
            msg.fault_handler = Some(h.clone());
        }
    }
}

/// Synapse's error handler: `ERROR_CODE`, `ERROR_MESSAGE` and `ERROR_DETAIL` set, then `handler`
/// (the `onError` sequence) runs. What it decides is the flow; when it decides nothing, the error
/// stands, handled (the proxy's fault sequence does not run again; the client gets Sluice's fault,
/// where Synapse would leave it waiting).
fn on_error(
    e: Error,
    msg: &mut Message,
    handler: impl FnOnce(&mut Message) -> Result<Flow, Error>,
) -> Result<Flow, Error> {
    set_error_props(msg, &e);
    match handler(msg)? {
        Flow::Continue => Err(e.handled()),
        f => Ok(f),
    }
}

/// The properties a fault sequence reads: `ERROR_CODE`, `ERROR_MESSAGE` (Synapse's words where
/// it has fixed ones, [`ErrorKind::synapse_message`]), `ERROR_DETAIL` (Sluice's reason).
pub fn set_error_props(msg: &mut Message, e: &Error) {
    msg.props
        .set("ERROR_CODE", e.kind.synapse_code().to_string());
    let text = e
        .kind
        .synapse_message()
        .map_or_else(|| e.reason(), str::to_owned);
    msg.props.set("ERROR_MESSAGE", text);
    msg.props.set("ERROR_DETAIL", e.reason());
}

/// The message as it leaves a run (to a back-end, to the client, or on to the engine's default):
/// what goes out as JSON when the flow made it JSON (`messageType`) and the body is XML
/// ([`Message::json_out`]).
pub(crate) fn leaving(flow: Flow, msg: &mut Message, doc: &DocCache) -> Result<Flow, Error> {
    crate::rest::leave_run(msg);
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
    crate::rest::enter(msg);
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

/// The most messages one `iterate` makes (each goes to its target at once).
const MAX_ITERATIONS: usize = 4096;

/// A SOAP envelope (1.2 for a SOAP 1.2 message, 1.1 for SOAP 1.1) whose Body holds `payload`;
/// for a plain XML message the payload itself, as Synapse's POX formatter writes it.
pub(crate) fn envelope_with(payload: &str, soap: sluice_config::FaultVersion) -> bytes::Bytes {
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
pub(crate) fn within_parts_cap(what: &str, n: usize) -> Result<(), Error> {
    if n > MAX_ITERATIONS {
        return Err(Error::new(
            ErrorKind::Mediation,
            format!("{what}: the expression selects {n} elements, more than {MAX_ITERATIONS}"),
        ));
    }
    Ok(())
}

/// Fails when the plan did not have the body read for a step that needs all of it.
pub(crate) fn unread_body(msg: &Message, what: &str) -> Result<(), Error> {
    if matches!(msg.body, Body::Stream | Body::Head(_)) {
        return Err(Error::new(
            ErrorKind::Mediation,
            format!("call: {what} was not read"),
        ));
    }
    Ok(())
}

/// `flow` from a nested list (a branch or a sequence) run by step `i` of `steps`: a `call` in it
/// goes on after that step once the nested list's rest is done.
pub(crate) fn nested(flow: Flow, steps: &Steps, i: usize) -> Option<Flow> {
    match flow {
        Flow::Continue => None,
        Flow::Call(ep, mut k) => {
            k.frames.push((steps.clone(), i + 1));
            Some(Flow::Call(ep, k))
        }
        Flow::ForkThen(fork, mut k) => {
            k.frames.push((steps.clone(), i + 1));
            Some(Flow::ForkThen(fork, k))
        }
        Flow::Branches(b, mut k) => {
            k.frames.push((steps.clone(), i + 1));
            Some(Flow::Branches(b, k))
        }
        f => Some(f),
    }
}

/// A step's view of the run: the message, its parse, and where the step sits (for a branch's or
/// a call's continuation).
pub(crate) struct Cx<'a> {
    pub(crate) msg: &'a mut Message,
    pub(crate) doc: &'a mut DocCache,
    steps: &'a Steps,
    i: usize,
}

impl Cx<'_> {
    /// Runs a nested list (a branch, a sequence) to its end: the flow it decides, with a `call`
    /// in it going on after this step once the nested list's rest is done.
    #[inline]
    pub(crate) fn branch(&mut self, steps: &Steps) -> Result<Option<Flow>, Error> {
        let flow = run_steps(steps, 0, self.msg, self.doc)?;
        Ok(self.nested(flow))
    }

    /// [`Cx::branch`] for a flow a nested run already decided.
    pub(crate) fn nested(&self, flow: Flow) -> Option<Flow> {
        nested(flow, self.steps, self.i)
    }

    /// A continuation that goes on after this step.
    pub(crate) fn after_this(&self) -> Continuation {
        Continuation {
            frames: vec![(self.steps.clone(), self.i + 1)],
        }
    }

    /// Adds the rest of this list, after this step, to a continuation made inside it.
    pub(crate) fn continue_after_this(&self, k: &mut Continuation) {
        k.push_frame(self.steps.clone(), self.i + 1);
    }
}

impl Continuation {
    /// A continuation that runs `steps` from their start (a `send receive`'s sequence).
    pub fn from_steps(steps: Steps) -> Continuation {
        Continuation {
            frames: vec![(steps, 0)],
        }
    }

    /// Adds a list to go on with, from its step `at`, after the frames already in it.
    pub(crate) fn push_frame(&mut self, steps: Steps, at: usize) {
        self.frames.push((steps, at));
    }
}

pub(crate) fn run_steps(
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
        let mut cx = Cx {
            msg: &mut *msg,
            doc: &mut *doc,
            steps,
            i,
        };
        if let Some(flow) = step.run(&mut cx)? {
            return Ok(flow);
        }
    }
    Ok(Flow::Continue)
}

pub(crate) fn xml_error(what: &str, e: sluice_xml::XmlError) -> Error {
    Error::new(ErrorKind::Mediation, format!("{what}: {e}"))
}

/// The parsed body, taken out of the cache to be changed (put it back with `put_doc`).
pub(crate) fn take_doc(msg: &Message, doc: &mut DocCache) -> Result<Document, Error> {
    match doc.take() {
        Some(d) => d,
        None => doc.parse(msg),
    }
    .map_err(expr_error)
}

/// A tree as a message body is written: no XML declaration, no indentation.
pub(crate) fn message_bytes(d: &Document, what: &str) -> Result<Vec<u8>, Error> {
    d.to_bytes_with(sluice_xml::SerializeOptions {
        xml_declaration: false,
        indent: false,
    })
    .map_err(|e| xml_error(what, e))
}

/// Makes a changed tree the message: serialised into the body, and kept for later XPath.
pub(crate) fn put_doc(
    msg: &mut Message,
    doc: &mut DocCache,
    d: Document,
    what: &str,
) -> Result<(), Error> {
    msg.body = Body::Bytes(message_bytes(&d, what)?.into());
    msg.headers.remove(http::header::CONTENT_LENGTH);
    // The tree changed in place still holds what its parse counted.
    let held = doc.held.take();
    *doc = DocCache::from(Ok(d));
    *doc.held.get_mut() = held;
    Ok(())
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

/// A body a mediator made whole, of type `media` (`application/json`, `text/plain`): the message
/// is of that type from here (Content-Type, and `messageType` / `ContentType` as WSO2 sets them).
pub(crate) fn made_body(msg: &mut Message, media: &'static str, body: bytes::Bytes) {
    msg.body = Body::Bytes(body);
    msg.headers.insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static(media),
    );
    msg.headers.remove(http::header::CONTENT_LENGTH);
    msg.axis2.set("messageType", media.to_owned());
    msg.axis2.set("ContentType", media.to_owned());
    msg.json_out = None;
}

/// A JSON message given an XML payload becomes plain XML (WSO2 sets `application/xml` for a
/// message that was neither SOAP nor XML).
pub(crate) fn json_becomes_xml(msg: &mut Message) {
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
pub(crate) fn new_message_doc(msg: &mut Message, frag: &Fragment) -> Result<Document, Error> {
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
        let request = |h: &http::HeaderMap| {
            Message::request("P".into(), http::Method::POST, "/".into(), h.clone())
        };
        // A full log reads any body.
        let p = &plan.proxies["P"];
        assert_eq!(p.request_body_need(&request(&xml)), BodyNeed::Full);
        assert_eq!(p.request_body_need(&request(&json)), BodyNeed::Full);
        let q = &plan.proxies["Q"];
        assert_eq!(q.request_body_need(&request(&xml)), BodyNeed::Full);
        assert_eq!(q.request_body_need(&request(&json)), BodyNeed::None);
        // A messageType known only at run time may be JSON too.
        assert_eq!(q.response_body_need(&xml), BodyNeed::Full);
        assert_eq!(q.response_body_need(&json), BodyNeed::None);
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
