//! MI 4.4's `<scatter-gather>`: a copy of the message through each `<sequence>` (a `call` in
//! them is made by the transport), at once unless `parallel-execution="false"`; the aggregation
//! expression's value on each copy's end (those whose `condition` holds, at most `max-messages`)
//! is gathered into a JSON array or an XML element, which becomes the body or a variable.
//!
//! | Target | The message after it |
//! |---|---|
//! | body | the last gathered copy, its body the result, `Content-Type` `application/json` or `application/xml` |
//! | variable | the message as it came, the variable set to the result (XML as text, as MI holds it) |
//!
//! Where MI differs: MI gathers in the order the copies end and waits for the `timeout` (or for
//! ever without one) when a copy fails or its condition does not hold; Sluice gathers in the
//! sequences' order as soon as every copy has ended, leaves out a failed copy (logged), and fails
//! only when every copy failed. A copy still running at the `timeout` is left out the same way.

use crate::branches::{Branches, Gather};
use crate::mediators::prelude::*;
use serde_json::Value as Json;

#[derive(Debug)]
pub struct ScatterGatherPlan {
    sequences: Vec<Arc<SeqPlan>>,
    parallel: bool,
    variable: Option<String>,
    xml: bool,
    enclosing: String,
    expression: Expr,
    condition: Option<Expr>,
    timeout: Option<std::time::Duration>,
    max: Option<usize>,
}

pub(crate) fn compile(c: &mut Compiler, s: &cfg::ScatterGather, m: &cfg::Mediator) -> Option<Step> {
    let el = m.element.as_str();
    let mut sequences = Vec::with_capacity(s.sequences.len());
    for seq in &s.sequences {
        let plan = c.sequence_ref(&cfg::SequenceRef::Inline(seq.clone()), "scatter-gather")?;
        if let Some(what) = leaves_message(&plan.steps).filter(|w| *w != "call") {
            let why = format!("a scatter-gather sequence may end or call, not {what}: each copy's end is gathered");
            c.report(Severity::Error, &m.loc, el, why);
            return None;
        }
        sequences.push(plan);
    }
    let expression = c.expr(&s.expression, el)?;
    let condition = match &s.condition {
        Some(e) => Some(c.expr(e, el)?),
        None => None,
    };
    Some(Step::ScatterGather(Arc::new(ScatterGatherPlan {
        sequences,
        parallel: s.parallel,
        variable: s.variable.clone(),
        xml: s.xml,
        enclosing: s.enclosing.clone(),
        expression,
        condition,
        timeout: (s.timeout_ms > 0).then(|| std::time::Duration::from_millis(s.timeout_ms)),
        max: s.max,
    })))
}

impl Mediator for Arc<ScatterGatherPlan> {
    fn heavy(&self) -> bool {
        self.sequences.iter().any(|s| s.heavy)
    }

    fn calls(&self) -> bool {
        true
    }

    fn run(&self, cx: &mut Cx<'_>) -> Result<Option<Flow>, Error> {
        let runs = (self.sequences.iter())
            .map(|s| (cx.msg.clone(), s.steps.clone()))
            .collect();
        let b = Branches {
            runs,
            parallel: self.parallel,
            deadline: self.timeout,
            gather: Arc::new(Gathered(self.clone())),
        };
        Ok(Some(Flow::Branches(Box::new(b), cx.after_this())))
    }
}

/// Takes a scatter-gather's copies' ends into the message.
#[derive(Debug)]
struct Gathered(Arc<ScatterGatherPlan>);

impl Gather for Gathered {
    fn gather(&self, msg: &mut Message, ends: Vec<Result<Message, Error>>) -> Result<(), Error> {
        let p = &*self.0;
        let mut values = Vec::new();
        let mut last = None;
        let mut first_error = None;
        for end in ends {
            let m = match end {
                Ok(m) => m,
                Err(e) => {
                    tracing::warn!(proxy = %msg.service, "scatter-gather: a copy failed and is left out: {}", e.reason());
                    first_error.get_or_insert(e);
                    continue;
                }
            };
            if p.max.is_some_and(|max| values.len() >= max) {
                break;
            }
            let doc = DocCache::new();
            if let Some(c) = &p.condition {
                let yes = eval_expr(c, &m, &doc)?;
                if !yes.eq_ignore_ascii_case("true") {
                    continue;
                }
            }
            let view = View { msg: &m, doc: &doc };
            values.push(if p.xml {
                Json::String(eval_expr(&p.expression, &m, &doc)?)
            } else {
                value_of(&p.expression, &view)?
            });
            last = Some(m);
        }
        if let (None, Some(e)) = (&last, first_error) {
            return Err(e);
        }
        let result = if p.xml {
            let mut out = format!("<{}>", p.enclosing);
            for v in &values {
                if let Json::String(s) = v {
                    out.push_str(s);
                }
            }
            out.push_str(&format!("</{}>", p.enclosing));
            // As MI's AXIOMUtil.stringToOM: the result must be XML.
            sluice_xml::Fragment::parse(&out).map_err(|e| xml_error("scatter-gather", e))?;
            out
        } else {
            Json::Array(values).to_string()
        };
        match &p.variable {
            Some(name) => {
                let v = if p.xml {
                    Json::String(result)
                } else {
                    serde_json::from_str(&result).unwrap_or(Json::Null)
                };
                msg.vars.set(name, v);
            }
            None => {
                if let Some(m) = last {
                    *msg = m;
                }
                msg.body = Body::Bytes(result.into());
                msg.headers.remove(http::header::CONTENT_LENGTH);
                let ct = if p.xml {
                    "application/xml"
                } else {
                    "application/json"
                };
                msg.headers.insert(
                    http::header::CONTENT_TYPE,
                    http::HeaderValue::from_static(ct),
                );
                msg.axis2.remove("NO_ENTITY_BODY");
            }
        }
        Ok(())
    }
}

/// The expression's value on a copy as JSON: a `${...}` one's own, JSON text as JSON, other
/// text as a string.
fn value_of(x: &Expr, view: &View<'_>) -> Result<Json, Error> {
    if let Expr::Synapse(s) = x {
        return s.eval(view).map_err(expr_error);
    }
    let text = eval_expr(x, view.msg, view.doc)?;
    Ok(serde_json::from_str(&text).unwrap_or(Json::String(text)))
}
