//! `<iterate>`: a message for each element the expression selects, through the target; mediation
//! of the original ends. The transport sends them (one after another with `sequential`).
//!
//! As in Synapse, the selected elements are first taken out of a copy of the message. Each part
//! then goes alone into the Body of a copy (its SOAP header kept), or with `preservePayload` into
//! a copy of the whole message, as the last child of the first node `attachPath` selects (default
//! `.`, the envelope; relative paths start at the envelope).
//!
//! Over JSON (a `json-eval` expression), as WSO2 MI: the array the path points to (or, for a path
//! that selects several values, those values) gives one message per element, the element its
//! whole JSON payload. With `preservePayload`, each is the whole payload instead, the element put
//! where the `json-eval` `attachPath` points (the array emptied first, unless the attach path is
//! the expression itself). Without an `attachPath` that is `$`, MI's default: the element replaces
//! the whole payload.

use crate::mediators::clone::CloneTargetPlan;
use crate::mediators::prelude::*;
use sluice_xml::{Document, Fragment, Placement};

/// `<iterate>`: what it splits on, and where each part goes.
#[derive(Debug)]
pub struct IteratePlan {
    pub expression: Expr,
    pub target: CloneTargetPlan,
    /// With `preservePayload`: where each part goes (`None`: the envelope).
    pub attach: Option<Attach>,
    pub sequential: bool,
    /// The original goes on after the iterate (`continueParent`).
    pub continue_parent: bool,
}

/// `preservePayload="true"`: the parts go back into the whole message, under `path`'s first node.
#[derive(Debug)]
pub struct Attach {
    /// The path and its text (for the error when it selects nothing).
    pub path: Option<(Expr, String)>,
}

/// The JsonPath of a `json-eval` expression, `None` for any other.
fn json_path(e: &Expr) -> Option<&sluice_expr::JsonPath> {
    match e {
        Expr::Json(p) => Some(p),
        _ => None,
    }
}

pub(crate) fn compile(
    c: &mut Compiler,
    it: &cfg::IterateMediator,
    m: &cfg::Mediator,
) -> Option<Step> {
    let expression = c.expr(&it.expression, &m.element);
    let json = expression.as_ref().is_some_and(|e| json_path(e).is_some());
    if expression.as_ref().is_some_and(|e| e.reads_json() && !json) {
        let why = "iterating over JSON through an XPath that calls json-eval() is not supported (write the expression as json-eval(PATH))";
        c.report(Severity::Unsupported, &m.loc, &m.element, why);
        return None;
    }
    let target = c.clone_target(&it.target);
    let attach = match (&it.attach_path, it.preserve_payload) {
        (_, false) => None,
        // MI's default over JSON is the root: each part is its item alone.
        (None, true) if json => Some(Attach {
            path: Some((Expr::json("$").expect("a fixed JsonPath"), "$".to_owned())),
        }),
        (None, true) => Some(Attach { path: None }),
        // "." is the envelope itself.
        (Some(p), true) if p.text.trim() == "." && !json => Some(Attach { path: None }),
        (Some(p), true) => {
            let path = if json {
                let e = c.expr(p, &m.element)?;
                if json_path(&e).is_none_or(|j| !j.is_definite()) {
                    let why = "the attachPath of an iterate over JSON must be a json-eval path to one place";
                    c.report(Severity::Error, &m.loc, &m.element, why);
                    return None;
                }
                e
            } else {
                c.xml_parts(p, &m.loc, &m.element, "attaching to")?
            };
            Some(Attach {
                path: Some((path, p.text.clone())),
            })
        }
    };
    Some(Step::Iterate(Arc::new(IteratePlan {
        expression: expression?,
        target: target?,
        attach,
        sequential: it.sequential,
        continue_parent: it.continue_parent,
    })))
}

impl Mediator for Arc<IteratePlan> {
    fn heavy(&self) -> bool {
        self.target.sequence.as_ref().is_some_and(|s| s.heavy)
    }

    fn ends_sequence(&self) -> bool {
        !self.continue_parent
    }

    #[inline]
    fn run(&self, cx: &mut Cx<'_>) -> Result<Option<Flow>, Error> {
        let env = View {
            msg: cx.msg,
            doc: cx.doc,
        };
        let bodies = match json_path(&self.expression) {
            Some(p) => self.split_json(p, &env)?,
            None => {
                let doc = env.document().map_err(expr_error)?;
                self.split(doc, &env)?
            }
        };
        let fork = Flow::Iterate(self.clone(), bodies);
        if self.continue_parent {
            return Ok(Some(Flow::ForkThen(Box::new(fork), cx.after_this())));
        }
        Ok(Some(fork))
    }
}

fn failed(why: impl std::fmt::Display) -> Error {
    Error::new(ErrorKind::Mediation, format!("iterate: {why}"))
}

impl IteratePlan {
    /// The messages the elements of a JSON array make, as bytes (see the module docs).
    fn split_json(
        &self,
        path: &sluice_expr::JsonPath,
        env: &dyn Env,
    ) -> Result<Vec<bytes::Bytes>, Error> {
        let root = env
            .json()
            .map_err(expr_error)?
            .ok_or_else(|| failed("the message has no JSON payload"))?;
        let (found, definite) = path.evaluate(root);
        let items: Vec<serde_json::Value> = if definite {
            match found.first().map(|v| v.as_ref()) {
                Some(serde_json::Value::Array(a)) => a.clone(),
                Some(_) => {
                    return Err(failed(format_args!(
                        "the JSON at {} is not an array that can be iterated",
                        path.as_str()
                    )))
                }
                None => return Err(failed(format_args!("{} selects nothing", path.as_str()))),
            }
        } else {
            found.into_iter().map(Cow::into_owned).collect()
        };
        within_parts_cap("iterate", items.len())?;
        let text = |v: &serde_json::Value| bytes::Bytes::from(v.to_string());
        let Some(Attach {
            path: Some((attach, attach_text)),
        }) = &self.attach
        else {
            return Ok(items.iter().map(text).collect());
        };
        let attach = json_path(attach).ok_or_else(|| failed("the attachPath is not a JsonPath"))?;
        let mut base = root.clone();
        if attach.as_str() != path.as_str() {
            path.set(&mut base, serde_json::Value::Array(Vec::new()));
        }
        items
            .into_iter()
            .map(|item| {
                let mut m = base.clone();
                if attach.set(&mut m, item) {
                    Ok(text(&m))
                } else {
                    Err(failed(format_args!(
                        "the attachPath '{attach_text}' points nowhere in the payload"
                    )))
                }
            })
            .collect()
    }

    /// The messages the parts make, as bytes.
    fn split(&self, doc: &Document, env: &dyn Env) -> Result<Vec<bytes::Bytes>, Error> {
        // A copy with the parts taken out, and the parts, each declaring what it uses.
        let mut rest = doc.duplicate().map_err(|e| xml_error("iterate", e))?;
        let (parts, ids) = {
            let nodes = self.expression.nodes(&rest, env).map_err(expr_error)?;
            if nodes.is_empty() {
                return Err(failed("the expression selects no nodes"));
            }
            // One request must not fan out without bound: each part is a back-end call.
            within_parts_cap("iterate", nodes.len())?;
            let mut parts = Vec::with_capacity(nodes.len());
            for n in &nodes {
                parts.push(Fragment::from_nodes(&[*n]).map_err(|e| xml_error("iterate", e))?);
            }
            (parts, nodes.iter().map(|n| n.id()).collect::<Vec<_>>())
        };
        for id in ids {
            rest.remove(id).map_err(|e| xml_error("iterate", e))?;
        }
        if rest.soap_body().is_none() {
            // Plain XML: each part is a message of its own (what Synapse's POX formatter writes).
            return parts
                .iter()
                .map(|p| p.to_xml_string().map(bytes::Bytes::from))
                .collect::<Result<_, _>>()
                .map_err(|e| xml_error("iterate", e));
        }
        if self.attach.is_none() {
            let children: Vec<_> = rest
                .soap_body()
                .map(|b| b.children().map(|c| c.id()).collect())
                .unwrap_or_default();
            for c in children {
                rest.remove(c).map_err(|e| xml_error("iterate", e))?;
            }
        }
        parts.iter().map(|p| self.one(&rest, p, env)).collect()
    }

    /// One message: a copy of `rest` (a SOAP envelope) with `part` added under the Body or the
    /// attach path's node.
    fn one(&self, rest: &Document, part: &Fragment, env: &dyn Env) -> Result<bytes::Bytes, Error> {
        let mut m = rest.duplicate().map_err(|e| xml_error("iterate", e))?;
        let at = match &self.attach {
            None => m
                .soap_body()
                .map(|b| b.id())
                .ok_or_else(|| failed("the message has no SOAP Body"))?,
            Some(Attach { path: None }) => m
                .root_element()
                .map(|r| r.id())
                .ok_or_else(|| failed("the message has no envelope to attach to"))?,
            Some(Attach {
                path: Some((p, text)),
            }) => {
                let root = m
                    .root_element()
                    .ok_or_else(|| failed("the message has no envelope to attach to"))?;
                let nodes = p.nodes_at(root, env).map_err(expr_error)?;
                match nodes.first() {
                    Some(n) if n.is_element() => n.id(),
                    _ => {
                        return Err(failed(format_args!(
                            "the attachPath '{text}' selects no element"
                        )))
                    }
                }
            }
        };
        m.insert(at, part, Placement::LastChild)
            .map_err(|e| xml_error("iterate", e))?;
        message_bytes(&m, "iterate").map(bytes::Bytes::from)
    }
}
