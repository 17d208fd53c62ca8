//! `<foreach>`: each node the expression selects, in turn the payload of the message, through the
//! sequence; the results replace them.
//!
//! Over JSON (a `json-eval` expression to an array), as WSO2 MI: each element in turn is the whole
//! JSON payload through the sequence, and the array of what the sequence leaves replaces it.

use crate::mediators::prelude::*;
use sluice_xml::{Fragment, Placement};

/// `<foreach>`, as Synapse's first form runs it: the selected nodes are taken out of the message
/// (their parent is the first one's), each becomes in turn the payload of the message for the
/// sequence, and the payload it leaves is added to that parent's end. `FOREACH_COUNTER` (with the
/// `id_` prefix) counts them; `FOREACH_ORIGINAL_MESSAGE` holds the envelope from before.
#[derive(Debug)]
pub struct ForeachPlan {
    /// `id_`, or empty.
    pub prefix: String,
    pub expression: Expr,
    pub sequence: Arc<SeqPlan>,
    pub continue_on_failure: bool,
}

pub(crate) fn compile(c: &mut Compiler, f: &cfg::Foreach, m: &cfg::Mediator) -> Option<Step> {
    let el = m.element.as_str();
    let expression = match c.expr(&f.expression, el) {
        Some(e) if e.reads_json() && !matches!(e, Expr::Json(_)) => {
            let why = "foreach over JSON through an XPath that calls json-eval() is not supported (write the expression as json-eval(PATH))";
            c.report(Severity::Unsupported, &m.loc, el, why);
            None
        }
        other => other,
    };
    let sequence = c.sequence_ref(&f.sequence, "foreach");
    let sequence = sequence?;
    if let Some(what) = leaves_message(&sequence.steps) {
        c.report(
            Severity::Error,
            &m.loc,
            el,
            format!("a foreach sequence may not {what}: it runs on each part in place"),
        );
        return None;
    }
    Some(Step::Foreach(Arc::new(ForeachPlan {
        prefix: f.id.as_ref().map(|i| format!("{i}_")).unwrap_or_default(),
        expression: expression?,
        sequence,
        continue_on_failure: f.continue_on_failure,
    })))
}

impl Mediator for Arc<ForeachPlan> {
    fn leaves(&self) -> Option<&'static str> {
        leaves_message(&self.sequence.steps)
    }

    fn heavy(&self) -> bool {
        self.sequence.heavy
    }

    fn run(&self, cx: &mut Cx<'_>) -> Result<Option<Flow>, Error> {
        match &self.expression {
            Expr::Json(p) => foreach_json(self, p, cx.msg, cx.doc)?,
            _ => foreach(self, cx.msg, cx.doc)?,
        }
        Ok(None)
    }
}

/// A `<foreach>` over a JSON array (see the module docs).
fn foreach_json(
    f: &ForeachPlan,
    path: &sluice_expr::JsonPath,
    msg: &mut Message,
    doc: &mut DocCache,
) -> Result<(), Error> {
    let failed = |why: String| Error::new(ErrorKind::Mediation, format!("foreach: {why}"));
    let mut root = View { msg, doc }
        .json()
        .map_err(expr_error)?
        .cloned()
        .ok_or_else(|| failed("the message has no JSON payload".into()))?;
    let (found, definite) = path.evaluate(&root);
    let items = match found.first().map(|v| v.as_ref()) {
        Some(serde_json::Value::Array(a)) if definite => a.clone(),
        _ => {
            return Err(failed(format!(
                "the JSON at {} is not an array",
                path.as_str()
            )))
        }
    };
    if items.is_empty() {
        return Ok(());
    }
    within_parts_cap("foreach", items.len())?;
    let counter = format!("{}FOREACH_COUNTER", f.prefix);
    msg.props.set(&counter, "0".to_owned());
    let mut results = Vec::with_capacity(items.len());
    for (k, item) in items.iter().enumerate() {
        msg.body = Body::Bytes(item.to_string().into());
        msg.headers.remove(http::header::CONTENT_LENGTH);
        let mut sub = DocCache::new();
        let stop = match run_steps(&f.sequence.steps, 0, msg, &mut sub) {
            Ok(Flow::Continue) => false,
            Ok(Flow::Drop) => true,
            Ok(_) => return Err(failed("the sequence took the message elsewhere".into())),
            Err(e) if f.continue_on_failure => {
                tracing::warn!(proxy = %msg.service, "foreach: part {k} failed, going on: {}", e.reason());
                continue;
            }
            Err(e) => return Err(e),
        };
        // What the element became: the payload as JSON (text that is not JSON as a string).
        let left = match &msg.body {
            Body::Bytes(b) => serde_json::from_slice(b).unwrap_or_else(|_| {
                serde_json::Value::String(String::from_utf8_lossy(b).into_owned())
            }),
            _ => serde_json::Value::Null,
        };
        results.push(left);
        msg.props.set(&counter, (k + 1).to_string());
        if stop && !f.continue_on_failure {
            break;
        }
    }
    if !path.set(&mut root, serde_json::Value::Array(results)) {
        return Err(failed(format!(
            "cannot put the results at {}",
            path.as_str()
        )));
    }
    msg.body = Body::Bytes(root.to_string().into());
    msg.headers.remove(http::header::CONTENT_LENGTH);
    *doc = DocCache::new();
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
