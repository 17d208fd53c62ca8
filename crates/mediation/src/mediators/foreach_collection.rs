//! MI 4.4's `<foreach collection>`: each element of the collection, as the payload of a copy of
//! the message, through the sequence (a `call` in it is made, the rest runs on the response);
//! when every copy has ended, what each ended with replaces its element where the collection was,
//! or goes into a variable, and the message goes on. Copies run at once unless
//! `parallel-execution="false"`; results keep the collection's order either way.
//!
//! | Collection | Each copy's payload | In place (the default) |
//! |---|---|---|
//! | `${payload...}`, `json-eval(...)`: a JSON array | the element, as JSON | the array at that place in the payload |
//! | `${vars.x}`: a JSON array | the element, as JSON | the variable |
//! | `${xpath('...')}`, an XPath: nodes of the body | the node, alone in the SOAP Body | nodes out, results added at the end of the first one's parent |
//!
//! A JSON copy's result is its payload as JSON (`null` when it is not JSON); an XML copy's, its
//! Body's first element. A variable output is a JSON array, or an element of the given name
//! holding them (as text, as MI holds an XML variable).
//!
//! Where MI differs: a copy that fails, or one that responds, drops or sends, leaves MI's foreach
//! waiting for ever (it has no timeout); in Sluice the foreach fails with that error (the fault
//! sequence runs). `continue-without-aggregation` copies run before the message goes on rather
//! than beside it; what they end with is dropped, as in MI.

use crate::branches::{Branches, Gather};
use crate::mediators::prelude::*;
use serde_json::Value as Json;
use sluice_expr::synexpr::{Place, Seg, VarXml};
use sluice_xml::{Fragment, Placement};

#[derive(Debug)]
pub struct ForeachCollectionPlan {
    collection: Expr,
    /// The collection as written, for errors.
    text: String,
    json: bool,
    parallel: bool,
    counter: Option<String>,
    output: cfg::BranchOutput,
    without_aggregation: bool,
    sequence: Arc<SeqPlan>,
}

pub(crate) fn compile(
    c: &mut Compiler,
    f: &cfg::ForeachCollection,
    m: &cfg::Mediator,
) -> Option<Step> {
    let el = m.element.as_str();
    let collection = c.expr(&f.collection, el)?;
    let (json, in_place) = match &collection {
        Expr::Json(p) => (true, p.is_definite()),
        Expr::Synapse(s) => match s.place() {
            Some(Place::Payload(_)) => (true, true),
            Some(Place::Var(_, segs)) => (true, segs.is_empty()),
            Some(Place::XPath(_) | Place::XPathVar(..)) => (false, true),
            None => (true, false),
        },
        _ => (false, true),
    };
    let keeps_place = matches!(f.output, cfg::BranchOutput::Original) && !f.without_aggregation;
    if keeps_place && !in_place {
        let why = "a foreach whose results replace the collection needs it to be one place: ${payload...}, a whole ${vars.x}, a definite json-eval() or an XPath (or give result-target)";
        c.report(Severity::Unsupported, &m.loc, el, why);
        return None;
    }
    let sequence = c.sequence_ref(&cfg::SequenceRef::Inline(f.sequence.clone()), "foreach")?;
    if let Some(what) = leaves_message(&sequence.steps).filter(|w| *w != "call") {
        let why =
            format!("a foreach sequence may end or call, not {what}: each copy's end is gathered");
        c.report(Severity::Error, &m.loc, el, why);
        return None;
    }
    Some(Step::ForeachCollection(Arc::new(ForeachCollectionPlan {
        collection,
        text: f.collection.text.clone(),
        json,
        parallel: f.parallel,
        counter: f.counter.clone(),
        output: f.output.clone(),
        without_aggregation: f.without_aggregation,
        sequence,
    })))
}

impl Mediator for Arc<ForeachCollectionPlan> {
    fn heavy(&self) -> bool {
        self.sequence.heavy
    }

    fn calls(&self) -> bool {
        true
    }

    fn run(&self, cx: &mut Cx<'_>) -> Result<Option<Flow>, Error> {
        let parts: Vec<Body> = if self.json {
            self.json_items(cx)?
                .into_iter()
                .map(|v| Body::Bytes(v.to_string().into()))
                .collect()
        } else {
            let texts = match self.over_variable() {
                Some((x, name)) => {
                    let view = View {
                        msg: cx.msg,
                        doc: cx.doc,
                    };
                    let over = VarXml::parse(&view, name).map_err(expr_error)?;
                    node_texts(x.nodes(over.document(), &over).map_err(expr_error)?)?
                }
                None => {
                    let d = take_doc(cx.msg, cx.doc)?;
                    let texts = node_texts(self.collection_nodes(&d, cx.msg)?);
                    *cx.doc = DocCache::from(Ok(d));
                    texts?
                }
            };
            (texts.iter())
                .map(|xml| Body::Bytes(envelope_with(xml, cx.msg.soap)))
                .collect()
        };
        if parts.is_empty() {
            return Ok(None);
        }
        within_parts_cap("foreach", parts.len())?;
        let mut runs = Vec::with_capacity(parts.len());
        for (i, body) in parts.into_iter().enumerate() {
            let mut copy = cx.msg.clone();
            copy.body = body;
            copy.headers.remove(http::header::CONTENT_LENGTH);
            if let Some(name) = self.counter.as_ref().filter(|_| !self.parallel) {
                copy.vars.set(name, Json::from(i));
            }
            runs.push((copy, self.sequence.steps.clone()));
        }
        let b = Branches {
            runs,
            parallel: self.parallel,
            deadline: None,
            gather: Arc::new(Gathered(self.clone())),
        };
        Ok(Some(Flow::Branches(Box::new(b), cx.after_this())))
    }
}

impl ForeachCollectionPlan {
    /// The JSON collection's elements.
    fn json_items(&self, cx: &mut Cx<'_>) -> Result<Vec<Json>, Error> {
        let view = View {
            msg: cx.msg,
            doc: cx.doc,
        };
        let found = match &self.collection {
            Expr::Json(p) => {
                let root = view.json().map_err(expr_error)?;
                let (found, _) = root.map(|r| p.evaluate(r)).unwrap_or_default();
                found.first().map(|v| v.as_ref().clone())
            }
            Expr::Synapse(s) => Some(s.eval(&view).map_err(expr_error)?),
            _ => None,
        };
        match found {
            Some(Json::Array(a)) => Ok(a),
            _ => Err(Error::new(
                ErrorKind::Mediation,
                format!("foreach: the collection {} is not an array", self.text),
            )),
        }
    }

    /// `xpath('...', 'NAME')`: the XPath and the variable.
    fn over_variable(&self) -> Option<(&Expr, &str)> {
        match &self.collection {
            Expr::Synapse(s) => match s.place() {
                Some(Place::XPathVar(x, name)) => Some((x, name)),
                _ => None,
            },
            _ => None,
        }
    }

    /// The XML collection's nodes in the body's tree `d`.
    fn collection_nodes<'d>(
        &self,
        d: &'d sluice_xml::Document,
        msg: &Message,
    ) -> Result<Vec<sluice_xml::Node<'d>>, Error> {
        let x = match &self.collection {
            Expr::Synapse(s) => match s.place() {
                Some(Place::XPath(x)) => x,
                _ => &self.collection,
            },
            x => x,
        };
        x.nodes(d, msg).map_err(expr_error)
    }
}

/// Each node as XML text.
fn node_texts(nodes: Vec<sluice_xml::Node<'_>>) -> Result<Vec<String>, Error> {
    (nodes.into_iter())
        .map(|n| Fragment::from_nodes(&[n]).and_then(|fr| fr.to_xml_string()))
        .collect::<Result<_, _>>()
        .map_err(|e| xml_error("foreach", e))
}

/// Takes a foreach's copies' ends into the message.
#[derive(Debug)]
struct Gathered(Arc<ForeachCollectionPlan>);

impl Gather for Gathered {
    fn gather(&self, msg: &mut Message, ends: Vec<Result<Message, Error>>) -> Result<(), Error> {
        let f = &*self.0;
        let mut ends = ends.into_iter().collect::<Result<Vec<_>, _>>()?;
        if f.without_aggregation {
            return Ok(());
        }
        match (&f.output, f.json) {
            (cfg::BranchOutput::Original, true) => {
                let results = ends.iter_mut().map(json_payload).collect();
                put_json(f, msg, Json::Array(results))
            }
            (cfg::BranchOutput::Original, false) => put_xml(f, msg, &ends),
            (
                cfg::BranchOutput::Variable {
                    name,
                    xml,
                    enclosing,
                },
                _,
            ) => {
                let v = if *xml {
                    Json::String(enclosed(f, enclosing, &mut ends)?)
                } else if f.json {
                    Json::Array(ends.iter_mut().map(json_payload).collect())
                } else {
                    let texts = ends.iter().map(|m| payload_text(m).map(Json::String));
                    Json::Array(texts.collect::<Result<_, _>>()?)
                };
                msg.vars.set(name, v);
                Ok(())
            }
        }
    }
}

/// A copy's payload as JSON (`null` when it is not JSON).
fn json_payload(m: &mut Message) -> Json {
    let doc = DocCache::new();
    let view = View { msg: m, doc: &doc };
    view.json().ok().flatten().cloned().unwrap_or(Json::Null)
}

/// A copy's payload element as XML text ("" when it has none).
fn payload_text(m: &Message) -> Result<String, Error> {
    let doc = DocCache::new();
    let view = View { msg: m, doc: &doc };
    let d = view.document().map_err(expr_error)?;
    match payload_node(d) {
        Some(n) => (Fragment::from_nodes(&[n]).and_then(|fr| fr.to_xml_string()))
            .map_err(|e| xml_error("foreach", e)),
        None => Ok(String::new()),
    }
}

/// The results in an element named `name` (JSON ones as XML, as WSO2 converts them).
fn enclosed(f: &ForeachCollectionPlan, name: &str, ends: &mut [Message]) -> Result<String, Error> {
    let mut out = format!("<{name}>");
    for m in ends.iter_mut() {
        if f.json {
            let v = json_payload(m);
            let xml = crate::json::json_to_xml(&v)
                .map_err(|e| Error::new(ErrorKind::Mediation, format!("foreach: {e}")))?;
            out.push_str(&xml);
        } else {
            out.push_str(&payload_text(m)?);
        }
    }
    out.push_str(&format!("</{name}>"));
    Ok(out)
}

/// The JSON results where the collection was: in the payload, or the variable.
fn put_json(f: &ForeachCollectionPlan, msg: &mut Message, results: Json) -> Result<(), Error> {
    let cannot = || {
        Error::new(
            ErrorKind::Mediation,
            format!("foreach: cannot put the results at {}", f.text),
        )
    };
    if let Expr::Synapse(s) = &f.collection {
        if let Some(Place::Var(name, _)) = s.place() {
            msg.vars.set(name, results);
            return Ok(());
        }
    }
    let doc = DocCache::new();
    let view = View { msg, doc: &doc };
    let mut root = view
        .json()
        .map_err(expr_error)?
        .cloned()
        .ok_or_else(cannot)?;
    let placed = match &f.collection {
        Expr::Json(p) => p.set(&mut root, results),
        Expr::Synapse(s) => match s.place() {
            Some(Place::Payload(segs)) => put_at(&mut root, segs, results),
            _ => false,
        },
        _ => false,
    };
    if !placed {
        return Err(cannot());
    }
    msg.body = Body::Bytes(root.to_string().into());
    msg.headers.remove(http::header::CONTENT_LENGTH);
    Ok(())
}

/// Puts `v` at `segs` in `root`; `false` when a step finds nothing.
fn put_at(root: &mut Json, segs: &[Seg], v: Json) -> bool {
    let mut at = root;
    for s in segs {
        let next = match s {
            Seg::Key(k) => at.get_mut(k.as_str()),
            Seg::Index(i) => at.get_mut(*i),
        };
        match next {
            Some(n) => at = n,
            None => return false,
        }
    }
    *at = v;
    true
}

/// The XML results where the collection was (the body, or the XML variable): its nodes out, the
/// copies' payload elements added at the end of the first one's parent.
fn put_xml(f: &ForeachCollectionPlan, msg: &mut Message, ends: &[Message]) -> Result<(), Error> {
    let what = "foreach";
    if let Some((x, name)) = f.over_variable() {
        let doc = DocCache::new();
        let view = View { msg, doc: &doc };
        let over = VarXml::parse(&view, name).map_err(expr_error)?;
        let at = ids_of(x.nodes(over.document(), &over).map_err(expr_error)?);
        let mut d = over.into_document();
        replace_nodes(&mut d, at, ends)?;
        let text = message_bytes(&d, what)?;
        msg.vars.set(
            name,
            Json::String(String::from_utf8_lossy(&text).into_owned()),
        );
        return Ok(());
    }
    let mut doc = DocCache::new();
    let mut d = take_doc(msg, &mut doc)?;
    let at = ids_of(f.collection_nodes(&d, msg)?);
    replace_nodes(&mut d, at, ends)?;
    put_doc(msg, &mut doc, d, what)
}

/// The nodes' ids, and the first one's parent's.
type At = (Option<sluice_xml::NodeId>, Vec<sluice_xml::NodeId>);

fn ids_of(nodes: Vec<sluice_xml::Node<'_>>) -> At {
    let parent = nodes.first().and_then(|n| n.parent()).map(|p| p.id());
    (parent, nodes.iter().map(|n| n.id()).collect())
}

/// The nodes `at` names out of `d`, the copies' payload elements added at the end of the first
/// one's parent.
fn replace_nodes(d: &mut sluice_xml::Document, at: At, ends: &[Message]) -> Result<(), Error> {
    let what = "foreach";
    let (Some(parent), ids) = at else {
        return Ok(());
    };
    for id in ids {
        let _ = d.remove(id);
    }
    for m in ends {
        let text = payload_text(m)?;
        if text.is_empty() {
            continue;
        }
        let fr = Fragment::parse(&text).map_err(|e| xml_error(what, e))?;
        d.insert(parent, &fr, Placement::LastChild)
            .map_err(|e| xml_error(what, e))?;
    }
    Ok(())
}
