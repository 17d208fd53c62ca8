//! `<enrich>`: a source (a custom XPath, the envelope, the body, a property, inline content) put
//! into a target (replacing it, or as a child or sibling), as Synapse's enrich mediator does.

use crate::mediators::prelude::*;
use sluice_config::EnrichAction;
use sluice_xml::{Document, Fragment, NodeKind, Placement};

#[derive(Debug)]
pub enum EnrichSourcePlan {
    Custom(Expr),
    Envelope,
    Body,
    Property(String),
    /// Inline or local-entry content: XML (checked well-formed at load) or text.
    Xml(String),
    Text(String),
}

impl EnrichSourcePlan {
    /// What reading the source takes of the body.
    pub(crate) fn body_need(&self) -> BodyNeed {
        match self {
            EnrichSourcePlan::Custom(x) => x.body_need(),
            EnrichSourcePlan::Envelope | EnrichSourcePlan::Body => BodyNeed::Full,
            _ => BodyNeed::None,
        }
    }

    /// [`body_exprs_all`] for the source: `f` holds for its expression if it reads the body;
    /// `false` for a source that is the whole body.
    pub(crate) fn body_exprs_all(&self, f: &mut dyn FnMut(&Expr) -> bool) -> bool {
        match self {
            EnrichSourcePlan::Custom(x) => x.body_need() == BodyNeed::None || f(x),
            EnrichSourcePlan::Envelope | EnrichSourcePlan::Body => false,
            _ => true,
        }
    }
}

#[derive(Debug)]
pub enum EnrichTargetPlan {
    Custom(Expr),
    Envelope,
    Body,
    Property(String),
    /// MI's `type="key"`: in each object `parent` selects, the member `key` renamed to the
    /// source's text.
    Key {
        parent: sluice_expr::JsonPath,
        key: String,
    },
}

#[derive(Debug)]
pub struct EnrichPlan {
    pub source: EnrichSourcePlan,
    pub target: EnrichTargetPlan,
    pub action: cfg::EnrichAction,
    /// `action="remove"`: the paths (the source's `json-eval(A,B,...)`) removed from the JSON
    /// body or property target, as MI's enrich does.
    pub remove: Vec<sluice_expr::JsonPath>,
}

pub(crate) fn compile(c: &mut Compiler, e: &cfg::Enrich, el: &str) -> Option<Step> {
    let mut remove = Vec::new();
    let source = match (&e.source.kind, e.target.action) {
        (cfg::EnrichSourceKind::Custom(x), cfg::EnrichAction::Remove) => {
            remove = removed_paths(c, x, el)?;
            EnrichSourcePlan::Text(String::new())
        }
        _ => c.enrich_source(&e.source, el)?,
    };
    let target = match &e.target.kind {
        cfg::EnrichTargetKind::Custom(x) => EnrichTargetPlan::Custom(c.expr(x, el)?),
        cfg::EnrichTargetKind::Envelope => EnrichTargetPlan::Envelope,
        cfg::EnrichTargetKind::Body => EnrichTargetPlan::Body,
        cfg::EnrichTargetKind::Property(p) => EnrichTargetPlan::Property(p.clone()),
        cfg::EnrichTargetKind::Key(x) => key_target(c, x, el)?,
    };
    Some(Step::Enrich(EnrichPlan {
        source,
        target,
        action: e.target.action,
        remove,
    }))
}

/// The text inside `json-eval(...)`, reported when `x` is not one.
fn json_eval_text<'x>(
    c: &mut Compiler,
    x: &'x cfg::ExprSrc,
    el: &str,
    what: &str,
) -> Option<&'x str> {
    let inner = (x.text.trim().strip_prefix("json-eval(")).and_then(|t| t.strip_suffix(')'));
    if inner.is_none() {
        let why = format!("{what} needs a json-eval(...) path, not '{}'", x.text);
        c.report(Severity::Unsupported, &x.loc, el, why);
    }
    inner
}

/// `json-eval(A,B,...)`: the paths `action="remove"` removes (split at each comma, as MI does).
fn removed_paths(
    c: &mut Compiler,
    x: &cfg::ExprSrc,
    el: &str,
) -> Option<Vec<sluice_expr::JsonPath>> {
    let inner = json_eval_text(c, x, el, "action=\"remove\"")?;
    let mut paths = Vec::new();
    for t in inner.split(',').map(str::trim) {
        match sluice_expr::JsonPath::compile(t) {
            Ok(p) => paths.push(p),
            Err(err) => {
                c.report(
                    Severity::Error,
                    &x.loc,
                    el,
                    format!("JsonPath '{t}': {err}"),
                );
                return None;
            }
        }
    }
    Some(paths)
}

/// `type="key" xpath="json-eval($.a.b)"`: the objects at `$.a`, the member `b`.
fn key_target(c: &mut Compiler, x: &cfg::ExprSrc, el: &str) -> Option<EnrichTargetPlan> {
    let inner = json_eval_text(c, x, el, "type=\"key\"")?;
    let Some((parent, key)) = inner.rsplit_once('.').filter(|(_, k)| !k.is_empty()) else {
        let why = format!("type=\"key\": '{inner}' does not end in a member name");
        c.report(Severity::Error, &x.loc, el, why);
        return None;
    };
    match sluice_expr::JsonPath::compile(parent) {
        Ok(parent) => Some(EnrichTargetPlan::Key {
            parent,
            key: key.to_owned(),
        }),
        Err(err) => {
            c.report(
                Severity::Error,
                &x.loc,
                el,
                format!("JsonPath '{parent}': {err}"),
            );
            None
        }
    }
}

impl Compiler<'_> {
    /// An enrich (or `call`) source: inline XML checked well-formed, a key's content read.
    pub(crate) fn enrich_source(
        &mut self,
        src: &cfg::EnrichSource,
        el: &str,
    ) -> Option<EnrichSourcePlan> {
        let check_xml = |c: &mut Self, text: &str, l: &Location| -> Option<()> {
            match sluice_xml::Fragment::parse(text) {
                Ok(_) => Some(()),
                Err(err) => {
                    c.report(
                        Severity::Error,
                        l,
                        el,
                        format!("inline content is not well-formed XML: {err}"),
                    );
                    None
                }
            }
        };
        Some(match &src.kind {
            cfg::EnrichSourceKind::Custom(x) => EnrichSourcePlan::Custom(self.expr(x, el)?),
            cfg::EnrichSourceKind::Envelope => EnrichSourcePlan::Envelope,
            cfg::EnrichSourceKind::Body => EnrichSourcePlan::Body,
            cfg::EnrichSourceKind::Property(p) => EnrichSourcePlan::Property(p.clone()),
            cfg::EnrichSourceKind::InlineXml(t) => {
                check_xml(self, t, &src.loc)?;
                EnrichSourcePlan::Xml(t.clone())
            }
            cfg::EnrichSourceKind::InlineText(t) => EnrichSourcePlan::Text(t.clone()),
            cfg::EnrichSourceKind::InlineKey(k) => {
                match self.local_entries.get(k.as_str()).map(|l| l.value.clone()) {
                    Some(cfg::LocalEntryValue::Xml { text, .. }) => {
                        check_xml(self, &text, &src.loc)?;
                        EnrichSourcePlan::Xml(text)
                    }
                    Some(cfg::LocalEntryValue::Text(t)) => EnrichSourcePlan::Text(t),
                    _ => {
                        // A registry resource is a file: its XML declaration is not content.
                        let (text, _) = self.keyed_text(k, &src.loc, el)?;
                        let text = crate::compile::without_xml_declaration(&text).to_owned();
                        check_xml(self, &text, &src.loc)?;
                        EnrichSourcePlan::Xml(text)
                    }
                }
            }
        })
    }
}

impl Mediator for EnrichPlan {
    fn reads(&self, _json: bool) -> Reads {
        let source = self.source.body_need();
        let target = match &self.target {
            EnrichTargetPlan::Property(_) => BodyNeed::None,
            _ => BodyNeed::Full,
        };
        Reads::of(source.max(target))
    }

    fn by_head(&self, f: &mut dyn FnMut(&Expr) -> bool) -> ByHead {
        (self.source.body_exprs_all(f) && matches!(self.target, EnrichTargetPlan::Property(_)))
            .into()
    }

    fn run(&self, cx: &mut Cx<'_>) -> Result<Option<Flow>, Error> {
        match &self.target {
            _ if self.action == EnrichAction::Remove => remove_json(self, cx)?,
            EnrichTargetPlan::Property(name) if self.action == EnrichAction::Child => {
                child_of_property(self, name, cx)?
            }
            EnrichTargetPlan::Key { parent, key } => rename_key(self, parent, key, cx)?,
            _ => enrich(self, cx.msg, cx.doc)?,
        }
        Ok(None)
    }
}

pub(crate) fn enrich_source(
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

/// `action="remove"`: the paths' values out of the JSON body or property.
fn remove_json(e: &EnrichPlan, cx: &mut Cx<'_>) -> Result<(), Error> {
    let failed = |why: String| Error::new(ErrorKind::Mediation, format!("enrich remove: {why}"));
    let text = match &e.target {
        EnrichTargetPlan::Property(name) => cx
            .msg
            .property(sluice_expr::PropScope::Default, name)
            .map(Cow::into_owned)
            .ok_or_else(|| failed(format!("no property {name}")))?,
        _ => match &cx.msg.body {
            Body::Bytes(b) if !crate::json::looks_like_xml(b) => {
                String::from_utf8_lossy(b).into_owned()
            }
            _ => return Err(failed("the message has no JSON payload".into())),
        },
    };
    let mut root: serde_json::Value =
        serde_json::from_str(&text).map_err(|err| failed(format!("not JSON: {err}")))?;
    let mut gone = false;
    for p in &e.remove {
        if p.as_str() == "$" {
            gone = true;
        } else {
            p.delete(&mut root);
        }
    }
    let out = if gone {
        String::new()
    } else {
        root.to_string()
    };
    match &e.target {
        EnrichTargetPlan::Property(name) => cx.msg.props.set(name, out),
        _ => {
            cx.msg.body = Body::Bytes(out.into());
            cx.msg.headers.remove(http::header::CONTENT_LENGTH);
            *cx.doc = DocCache::new();
        }
    }
    Ok(())
}

/// A property target with `action="child"`, as MI's JSON enrich: the source added to the JSON
/// array the property holds (or its members to the object it holds).
fn child_of_property(e: &EnrichPlan, name: &str, cx: &mut Cx<'_>) -> Result<(), Error> {
    let failed = |why: String| Error::new(ErrorKind::Mediation, format!("enrich: {why}"));
    let held = cx
        .msg
        .property(sluice_expr::PropScope::Default, name)
        .map(Cow::into_owned);
    // A property holding XML: the source becomes its root element's last child.
    if let Some(xml) = held.as_deref().filter(|t| t.trim_start().starts_with('<')) {
        let what = "enrich";
        let mut d = Document::parse(xml.as_bytes()).map_err(|err| xml_error(what, err))?;
        let source = enrich_source(&e.source, cx.msg, cx.doc)?;
        let root = d
            .root_element()
            .map(|r| r.id())
            .ok_or_else(|| failed(format!("the property {name} holds no element")))?;
        d.insert(root, &source, Placement::LastChild)
            .map_err(|err| xml_error(what, err))?;
        let out = message_bytes(&d, what)?;
        let text = String::from_utf8_lossy(&out).trim_end().to_owned();
        cx.msg.props.set_xml(name, text);
        return Ok(());
    }
    let mut into: serde_json::Value = held
        .as_deref()
        .and_then(|t| serde_json::from_str(t).ok())
        .filter(|v: &serde_json::Value| v.is_array() || v.is_object())
        .ok_or_else(|| {
            failed(format!(
                "the property {name} holds no JSON array or object to add a child to"
            ))
        })?;
    let json_of = |t: &str| {
        serde_json::from_str(t).unwrap_or_else(|_| serde_json::Value::String(t.to_owned()))
    };
    let source = match &e.source {
        EnrichSourcePlan::Body => {
            let view = View { msg: cx.msg, doc: cx.doc };
            view.json().map_err(expr_error)?.cloned().ok_or_else(|| failed("the message has no JSON payload".into()))?
        }
        EnrichSourcePlan::Property(p) => json_of(&cx.msg.property(sluice_expr::PropScope::Default, p).unwrap_or_default()),
        EnrichSourcePlan::Text(t) => json_of(t),
        EnrichSourcePlan::Custom(x @ Expr::Json(_)) => {
            let view = View { msg: cx.msg, doc: cx.doc };
            let (found, _) = x.json_values(&view).map_err(expr_error)?;
            found.first().map(|v| v.as_ref().clone()).unwrap_or(serde_json::Value::Null)
        }
        _ => return Err(failed("a JSON property's child must come from the body, a property, inline text or a json-eval path".into())),
    };
    match (&mut into, source) {
        (serde_json::Value::Array(a), v) => a.push(v),
        (serde_json::Value::Object(o), serde_json::Value::Object(add)) => o.extend(add),
        _ => {
            return Err(failed(format!(
                "only an object's members can be added to the object in {name}"
            )))
        }
    }
    cx.msg.props.set(name, into.to_string());
    Ok(())
}

/// `type="key"`: the member renamed in the JSON body, to the source's text.
fn rename_key(
    e: &EnrichPlan,
    parent: &sluice_expr::JsonPath,
    key: &str,
    cx: &mut Cx<'_>,
) -> Result<(), Error> {
    let failed = |why: String| Error::new(ErrorKind::Mediation, format!("enrich key: {why}"));
    let to = match &e.source {
        EnrichSourcePlan::Text(t) => t.trim().to_owned(),
        EnrichSourcePlan::Property(name) => cx
            .msg
            .property(sluice_expr::PropScope::Default, name)
            .map(Cow::into_owned)
            .unwrap_or_default(),
        EnrichSourcePlan::Custom(x) => eval_expr(x, cx.msg, cx.doc)?,
        _ => return Err(failed("the new key name must be a string".into())),
    };
    let view = View {
        msg: cx.msg,
        doc: cx.doc,
    };
    let mut root = view
        .json()
        .map_err(expr_error)?
        .cloned()
        .ok_or_else(|| failed("the message has no JSON payload".into()))?;
    parent.rename_key(&mut root, key, &to);
    cx.msg.body = Body::Bytes(root.to_string().into());
    cx.msg.headers.remove(http::header::CONTENT_LENGTH);
    *cx.doc = DocCache::new();
    Ok(())
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
        // Run by rename_key, never here.
        EnrichTargetPlan::Key { .. } => Ok(()),
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
        // Run by remove_json, never here.
        EnrichAction::Remove => Ok(()),
    }
}
