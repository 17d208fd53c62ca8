//! `<aggregate>`: gathers the responses of the copies a clone or iterate made; the one that
//! completes it goes on as the merged message (made from the first one gathered) through
//! `onComplete`. As Synapse merges: the first keeps its envelope, and what the expression selects
//! in the others goes beside what it selects there; with MI's `enclosingElementProperty`, all of
//! it goes into that element, which is the Body's content.
//!
//! With a `json-eval` expression, as WSO2 MI: each response's value at the path (nothing: `null`;
//! several: an array of them) goes into a JSON array, which is the merged message's payload, or,
//! with `enclosingElementProperty`, `{"NAME": [...]}` where NAME is the local name of the element
//! the property holds.

use crate::exec::leaving;
use crate::mediators::prelude::*;

/// `<aggregate>`: how many responses complete it (`max`; none or -1: as many as the clone made),
/// what of each is gathered (`expression`, as XML), the element they are gathered in (the XML of
/// the property `enclosing`, else the Body itself), and what runs on the merged message.
#[derive(Debug)]
pub struct AggregatePlan {
    /// `<correlateOn>`: a message is gathered when it selects something (or is true); one it
    /// makes false goes on past the aggregate; one that selects nothing fails, as in Synapse.
    pub correlate: Option<Expr>,
    /// `completeCondition timeout`: from the first message gathered, the aggregate completes with
    /// what it has (copies not ended by then are dropped).
    pub timeout: Option<std::time::Duration>,
    pub max: Option<Value>,
    /// `messageCount min`: it completes at min or max, whichever comes first (each a number, or
    /// an expression read on the message gathered; -1 or nothing: every copy).
    pub min: Option<Value>,
    pub expression: Expr,
    pub enclosing: Option<String>,
    pub on_complete: Steps,
}

pub(crate) fn compile(c: &mut Compiler, a: &cfg::Aggregate, m: &cfg::Mediator) -> Option<Step> {
    let el = m.element.as_str();
    let correlate = match &a.correlate {
        Some(e) => Some(c.expr(e, el)?),
        None => None,
    };
    let expression = c.expr(&a.expression, el);
    if expression
        .as_ref()
        .is_some_and(|e| e.reads_json() && !matches!(e, Expr::Json(_)))
    {
        c.report(
            Severity::Unsupported,
            &m.loc,
            el,
            "aggregating JSON through an XPath that calls json-eval() is not supported (write the expression as json-eval(PATH))",
        );
        return None;
    }
    // `sequence="KEY"`: that sequence, as a `<sequence key>` inside would run it.
    let on_complete = match &a.on_complete_key {
        Some(key) => c.steps(&[cfg::Mediator {
            element: "onComplete".to_owned(),
            loc: m.loc.clone(),
            kind: cfg::MediatorKind::SequenceRef {
                key: key.clone(),
                dynamic: None,
            },
        }]),
        None => c.steps(&a.on_complete.mediators),
    };
    let count = |c: &mut Compiler, v: &Option<cfg::ValueSrc>| match v {
        Some(v) => c.value(v, el).map(Some),
        None => Some(None),
    };
    let timeout = a.timeout_secs.filter(|t| *t > 0.0);
    Some(Step::Aggregate(Arc::new(AggregatePlan {
        correlate,
        timeout: timeout.map(std::time::Duration::from_secs_f64),
        max: count(c, &a.max)?,
        min: count(c, &a.min)?,
        expression: expression?,
        enclosing: a.enclosing.clone(),
        on_complete,
    })))
}

impl Mediator for Arc<AggregatePlan> {
    fn heavy(&self) -> bool {
        heavy(&self.on_complete)
    }

    fn reads(&self, _json: bool) -> Reads {
        // The aggregate reads each response whole.
        Reads::WHOLE
    }

    fn run(&self, cx: &mut Cx<'_>) -> Result<Option<Flow>, Error> {
        gather(self, cx)
    }
}

/// This copy's part into the gather; the copy that completes it goes on as the merged message.
fn gather(a: &Arc<AggregatePlan>, cx: &mut Cx<'_>) -> Result<Option<Flow>, Error> {
    // Not a copy a clone or iterate made: nothing to aggregate (Synapse logs it and goes on
    // without onComplete).
    let Some(g) = cx.msg.gather.clone() else {
        return Ok(None);
    };
    let view = View {
        msg: cx.msg,
        doc: cx.doc,
    };
    if let Some(c) = &a.correlate {
        if !correlates(c, &view)? {
            return Ok(None);
        }
    }
    let part = match &a.expression {
        Expr::Json(_) => json_part(&a.expression, &view)?,
        e => e
            .eval_nodes_xml(&view)
            .map(Cow::into_owned)
            .map_err(expr_error)?,
    };
    let (parts, first) = {
        let mut st = g.state.lock().unwrap_or_else(|p| p.into_inner());
        if st.done {
            return Ok(Some(Flow::Absorbed));
        }
        st.parts.push(part);
        // The first message gathered is what the merged one is made from (Synapse).
        if st.first.is_none() {
            st.first = Some(Box::new(cx.msg.clone()));
            st.first_at = Some(std::time::Instant::now());
        }
        // Complete at min or max, whichever comes first, else at every copy.
        let want = [&a.min, &a.max]
            .into_iter()
            .flatten()
            .filter_map(|v| count_of(v, cx.msg, cx.doc))
            .min()
            .unwrap_or(g.copies)
            .min(g.copies);
        if st.parts.len() < want {
            st.plan = Some(a.clone());
            return Ok(Some(Flow::Absorbed));
        }
        st.done = true;
        (std::mem::take(&mut st.parts), st.first.take())
    };
    if let Some(first) = first {
        *cx.msg = *first;
    }
    let flow = completed(a, &parts, cx.msg, cx.doc)?;
    Ok(cx.nested(flow))
}

/// A `messageCount` bound's value for this message, as Synapse reads it (a double, its whole
/// part); none when it is not above 0 or not a number.
fn count_of(v: &Value, msg: &Message, doc: &DocCache) -> Option<usize> {
    let text = eval_value(v, msg, doc).ok()?;
    let n: f64 = text.trim().parse().ok()?;
    (n >= 1.0).then_some(n as usize)
}

/// Whether `<correlateOn>` takes this message: `false` when its expression is false (the
/// message goes on past the aggregate); an error when it selects nothing (Synapse's "Failed to
/// evaluate correlate expression").
fn correlates(c: &Expr, view: &View<'_>) -> Result<bool, Error> {
    let failed = || {
        Error::new(
            ErrorKind::Mediation,
            "aggregate: the correlateOn expression selects nothing in the message",
        )
    };
    if let Expr::Json(_) = c {
        let (found, _) = c.json_values(view).map_err(expr_error)?;
        return match found.as_slice() {
            [] => Err(failed()),
            [one] if one.as_ref() == &serde_json::Value::Bool(false) => Ok(false),
            _ => Ok(true),
        };
    }
    let d = view.document().map_err(expr_error)?;
    match c.nodes(d, view) {
        Ok(nodes) if nodes.is_empty() => Err(failed()),
        Ok(_) => Ok(true),
        // Not a node-set: its boolean value decides.
        Err(_) => c.eval_bool(view).map_err(expr_error),
    }
}

/// One response's value at a JSON path, as JSON text: nothing is `null`, several an array.
fn json_part(e: &Expr, env: &dyn Env) -> Result<String, Error> {
    let (found, _) = e.json_values(env).map_err(expr_error)?;
    Ok(match found.as_slice() {
        [] => "null".to_owned(),
        [one] => one.to_string(),
        many => {
            serde_json::Value::Array(many.iter().map(|v| v.as_ref().clone()).collect()).to_string()
        }
    })
}

/// The JSON message an aggregate over JSON completes with (see the module docs).
fn aggregated_json(
    a: &crate::plan::AggregatePlan,
    parts: &[String],
    msg: &mut Message,
) -> Result<(), Error> {
    let array = format!("[{}]", parts.join(","));
    let payload = match a.enclosing.as_deref() {
        None => array,
        Some(p) => {
            let wrapper = msg.props.get(p).ok_or_else(|| {
                Error::new(
                    ErrorKind::Mediation,
                    format!("aggregate: the enclosing element property '{p}' is not set"),
                )
            })?;
            let name = sluice_xml::Document::parse(wrapper.trim().as_bytes())
                .ok()
                .and_then(|d| d.root_element().map(|r| r.name().to_owned()))
                .ok_or_else(|| {
                    Error::new(
                        ErrorKind::Mediation,
                        format!("aggregate: the enclosing element property is not an element: {wrapper}"),
                    )
                })?;
            format!("{{{}:{array}}}", serde_json::Value::String(name))
        }
    };
    crate::exec::made_body(msg, "application/json", payload.into());
    Ok(())
}

/// The message an aggregate completes with: `parts` inside the element the `enclosing` property
/// holds, as the SOAP Body's content in the message's SOAP version (WSO2 MI's); without one,
/// Synapse's [`merged_into_first`].
fn aggregated(
    a: &crate::plan::AggregatePlan,
    parts: &[String],
    msg: &mut Message,
) -> Result<(), Error> {
    if matches!(a.expression, Expr::Json(_)) {
        return aggregated_json(a, parts, msg);
    }
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
        None => return merged_into_first(a, parts, msg),
        Some(wrapper) => {
            let w = wrapper.trim();
            let bad = || {
                Error::new(
                    ErrorKind::Mediation,
                    format!("aggregate: the enclosing element property is not an element: {w}"),
                )
            };
            let inner: String = parts.concat();
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

/// Synapse's merge (EIPUtils.enrichEnvelope): the first message gathered keeps its envelope, and
/// the elements the expression selected in each later one are added, in the order they came, as
/// last children of the parent of the first element it selects there (the Body when that is not
/// an element). When it selects nothing in the first message, that message goes on unchanged.
fn merged_into_first(
    a: &crate::plan::AggregatePlan,
    parts: &[String],
    msg: &mut Message,
) -> Result<(), Error> {
    let what = "aggregate";
    let mut d = DocCache::new().parse(msg).map_err(expr_error)?;
    let at = {
        let nodes = a.expression.nodes(&d, &*msg).map_err(expr_error)?;
        let Some(first) = nodes.first() else {
            return Ok(());
        };
        match first.parent() {
            Some(p) if p.is_element() => p.id(),
            _ => match d.soap_body() {
                Some(b) => b.id(),
                None => return Ok(()),
            },
        }
    };
    for part in parts.iter().skip(1) {
        let f = sluice_xml::Fragment::parse(part).map_err(|e| xml_error(what, e))?;
        d.insert(at, &f, sluice_xml::Placement::LastChild)
            .map_err(|e| xml_error(what, e))?;
    }
    msg.body = Body::Bytes(message_bytes(&d, what)?.into());
    msg.headers.remove(http::header::CONTENT_LENGTH);
    msg.json_out = None;
    Ok(())
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
