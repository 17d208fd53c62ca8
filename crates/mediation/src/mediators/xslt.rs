//! `<xslt>` (the result replaces the source node) and `<fastXSLT>` (the whole envelope in, the
//! output bytes out). A stylesheet in the streaming subset runs without a tree (`sluice-stx`).

use crate::compile::normalize_registry_key;
use crate::mediators::prelude::*;
use std::collections::HashMap;

/// Every stylesheet of the configuration, by (normalised) key.
pub type SheetsByKey = HashMap<String, Arc<Sheet>>;

/// A stylesheet compiled once: by libxslt, and for the streaming fast path when it is in that subset.
#[derive(Debug)]
pub struct Sheet {
    pub xslt: sluice_xml::Stylesheet,
    pub stream: Option<sluice_stx::StreamSheet>,
    /// `xsl:output indent="yes"`: an `xslt` result is indented as Synapse's (Java's serializer,
    /// four spaces a level) before it replaces the source node.
    pub indent: bool,
}

/// Whether a stylesheet's `xsl:output` asks for indentation (the last one that says, as
/// XSLT merges them).
fn output_indents(bytes: &[u8]) -> bool {
    const XSL: &str = "http://www.w3.org/1999/XSL/Transform";
    let Ok(d) = sluice_xml::Document::parse(bytes) else {
        return false;
    };
    d.root_element().is_some_and(|r| {
        r.child_elements()
            .filter(|o| o.namespace_uri() == Some(XSL) && o.name() == "output")
            .filter_map(|o| o.attribute("indent"))
            .last()
            .is_some_and(|v| v.trim() == "yes")
    })
}

#[derive(Debug)]
pub struct XsltPlan {
    pub sheet: Arc<Sheet>,
    pub key: String,
    /// `key="{expression}"`: the key each message gives, among the stylesheets the configuration
    /// holds (every one compiled at load); `sheet` is then unused.
    pub by_key: Option<(Expr, Arc<SheetsByKey>)>,
    /// Node transformed (`None`: the first child of the SOAP Body, or the root of a plain XML message).
    pub source: Option<Expr>,
    pub params: Vec<(String, Value)>,
    pub fast: bool,
}

pub(crate) fn compile(c: &mut Compiler, x: &cfg::Xslt, m: &cfg::Mediator) -> Option<Step> {
    let el = m.element.as_str();
    let (sheet, by_key) = match &x.dynamic_key {
        None => (c.stylesheet(&x.key, &m.loc, el), None),
        Some(k) => {
            let sheets = c.all_stylesheets(&m.loc, el);
            let any = sheets.values().next().cloned();
            if any.is_none() {
                let why = "a stylesheet key computed per message, and the configuration holds no stylesheet";
                c.report(Severity::Error, &m.loc, el, why);
            }
            (any, Some((c.expr(k, el)?, Arc::new(sheets))))
        }
    };
    let source = match &x.source {
        Some(e) => Some(c.expr(e, el)?),
        None => None,
    };
    let mut params = Vec::new();
    for (n, v) in &x.params {
        params.push((n.clone(), c.value(v, el)?));
    }
    Some(Step::Xslt(XsltPlan {
        sheet: sheet?,
        key: x.key.clone(),
        by_key,
        source,
        params,
        fast: x.fast,
    }))
}

impl Compiler<'_> {
    /// Every stylesheet the configuration holds (local entries and registry resources whose root
    /// is `xsl:stylesheet` or `xsl:transform`), compiled, by key as keys name them.
    fn all_stylesheets(&mut self, loc: &Location, el: &str) -> HashMap<String, Arc<Sheet>> {
        let keys = self.keys_of_documents(
            "http://www.w3.org/1999/XSL/Transform",
            &["stylesheet", "transform"],
        );
        let mut out = HashMap::new();
        for k in keys {
            if let Some(s) = self.stylesheet(&k, loc, el) {
                out.insert(normalize_registry_key(&k), s);
            }
        }
        out
    }

    /// The stylesheet for a key: a local entry holding `xsl:stylesheet`, or a registry resource.
    pub(crate) fn stylesheet(&mut self, key: &str, loc: &Location, el: &str) -> Option<Arc<Sheet>> {
        if let Some(cached) = self.xslt_cache.get(key) {
            if cached.is_none() {
                self.failed = true;
            }
            return cached.clone();
        }
        let (bytes, origin): (Vec<u8>, String) = if let Some(le) = self.local_entries.get(key) {
            match &le.value {
                cfg::LocalEntryValue::Xml { text, .. } => (
                    text.clone().into_bytes(),
                    format!("local entry '{key}' ({})", le.loc),
                ),
                other => {
                    let (severity, why) = match other {
                        cfg::LocalEntryValue::Src(u) => (
                            Severity::Unsupported,
                            format!("local entry '{key}' refers to '{u}', which is not fetched (no network at load)"),
                        ),
                        _ => (
                            Severity::Error,
                            format!("local entry '{key}' does not hold an XSLT stylesheet"),
                        ),
                    };
                    self.report(severity, loc, el, why);
                    self.xslt_cache.insert(key.to_owned(), None);
                    return None;
                }
            }
        } else if let Some(r) = self.resources.get(normalize_registry_key(key).as_str()) {
            (
                r.bytes.to_vec(),
                format!("registry resource '{key}' ({})", r.loc),
            )
        } else {
            let (severity, why) = self.no_such_key(key);
            self.report(severity, loc, el, why);
            self.xslt_cache.insert(key.to_owned(), None);
            return None;
        };
        let sheet = match sluice_xml::Stylesheet::compile(&bytes, None) {
            Ok(s) => Some(Arc::new(Sheet {
                xslt: s,
                stream: sluice_stx::StreamSheet::compile(&bytes),
                indent: output_indents(&bytes),
            })),
            Err(e) => {
                self.report(
                    Severity::Error,
                    loc,
                    el,
                    format!("stylesheet {origin} does not compile: {e}"),
                );
                None
            }
        };
        self.xslt_cache.insert(key.to_owned(), sheet.clone());
        sheet
    }
}

impl Mediator for XsltPlan {
    fn run(&self, cx: &mut Cx<'_>) -> Result<Option<Flow>, Error> {
        xslt(self, cx.msg, cx.doc)?;
        Ok(None)
    }
}

/// `xslt`: the source node (default: the first child of the SOAP Body) is transformed and the result
/// replaces it. `fastXSLT`: the whole message is transformed and the output becomes the body as is.
fn xslt(x: &XsltPlan, msg: &mut Message, doc: &mut DocCache) -> Result<(), Error> {
    let Some((k, sheets)) = &x.by_key else {
        return transform(x, &x.sheet, &x.key, msg, doc);
    };
    let key = eval_expr(k, msg, doc)?;
    let sheet = sheets
        .get(&normalize_registry_key(key.trim()))
        .ok_or_else(|| {
            Error::new(
                ErrorKind::Mediation,
                format!("xslt: no stylesheet has the key '{key}' the message gives"),
            )
        })?;
    transform(x, sheet, &key, msg, doc)
}

/// [`xslt`] with `sheet`, the stylesheet `key` names.
fn transform(
    x: &XsltPlan,
    sheet: &Sheet,
    key: &str,
    msg: &mut Message,
    doc: &mut DocCache,
) -> Result<(), Error> {
    let mut params = Vec::with_capacity(x.params.len());
    for (n, v) in &x.params {
        params.push((n.as_str(), eval_value(v, msg, doc)?));
    }
    let params: Vec<(&str, &str)> = params.iter().map(|(n, v)| (*n, v.as_str())).collect();
    if let Some(out) = xslt_streaming(x, sheet, msg, doc) {
        msg.body = Body::Bytes(out.into());
        msg.headers.remove(http::header::CONTENT_LENGTH);
        *doc = DocCache::new();
        return Ok(());
    }
    let what = format!("xslt {key}");
    let parsed = match doc.take() {
        Some(d) => d,
        None => doc.parse(msg),
    };
    let mut d = parsed.map_err(expr_error)?;
    if x.fast {
        let out = sheet
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
    let mut result = sheet
        .xslt
        .transform(&input, &params)
        .map_err(|e| xml_error(&what, e))?;
    if sheet.indent {
        result.indent("    ").map_err(|e| xml_error(&what, e))?;
    }
    d.replace_node(target, &result)
        .map_err(|e| xml_error(&what, e))?;
    // The tree is the new body: later XPath in this run reads it without parsing again.
    put_doc(msg, doc, d, &what)
}

/// The streaming fast path (`sluice-stx`), when the stylesheet is in its subset, takes no parameters,
/// transforms the default source, and the body is still the bytes received (no tree built yet): the
/// new body, or `None` for libxslt to do it (which also reports any error in the message).
fn xslt_streaming(x: &XsltPlan, sheet: &Sheet, msg: &Message, doc: &DocCache) -> Option<Vec<u8>> {
    // Its spliced result is never indented: an indenting one goes through the tree.
    if sheet.indent && !x.fast {
        return None;
    }
    let sheet = sheet.stream.as_ref()?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Body;

    const REVERSE: &str = r#"<xsl:stylesheet version="1.0" xmlns:m0="http://services.samples/xsd" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
  <xsl:output indent="no" method="xml"/>
  <xsl:template match="@* | node()"><xsl:copy><xsl:apply-templates select="@* | node()"/></xsl:copy></xsl:template>
  <xsl:template match="m0:buyStocks"><m0:skcotSyub><xsl:for-each select="order"><redro xmlns=""><lobmys><xsl:value-of select="symbol"/></lobmys></redro></xsl:for-each></m0:skcotSyub></xsl:template>
</xsl:stylesheet>"#;

    fn xslt_plan(streaming: bool, fast: bool) -> XsltPlan {
        sheet_plan(REVERSE, streaming, fast)
    }

    fn sheet_plan(sheet: &str, streaming: bool, fast: bool) -> XsltPlan {
        let bytes = sheet.as_bytes();
        XsltPlan {
            sheet: std::sync::Arc::new(crate::plan::Sheet {
                xslt: sluice_xml::Stylesheet::compile(bytes, None).unwrap(),
                stream: streaming.then(|| sluice_stx::StreamSheet::compile(bytes).unwrap()),
                indent: output_indents(bytes),
            }),
            key: "reverse".into(),
            by_key: None,
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

    /// As Synapse's samples 8, 16 and 750 answer: `indent="yes"` indents the spliced result four
    /// spaces a level (Java's serializer), on the streaming path's stylesheets too.
    #[test]
    fn an_indenting_stylesheet_indents_its_result() {
        let sheet = REVERSE.replace("indent=\"no\"", "indent=\"yes\"");
        let plan = sheet_plan(&sheet, true, false);
        assert!(plan.sheet.indent && !sheet_plan(REVERSE, true, false).sheet.indent);
        let mut msg = Message::request(
            "p".into(),
            http::Method::POST,
            "/".into(),
            http::HeaderMap::new(),
        );
        msg.body = Body::Bytes(bytes::Bytes::from_static(
            b"<s:Envelope xmlns:s=\"http://schemas.xmlsoap.org/soap/envelope/\"><s:Body><m:buyStocks xmlns:m=\"http://services.samples/xsd\"><order><symbol>IBM</symbol></order></m:buyStocks></s:Body></s:Envelope>",
        ));
        xslt(&plan, &mut msg, &mut DocCache::new()).unwrap();
        let Body::Bytes(b) = &msg.body else { panic!() };
        let text = String::from_utf8_lossy(b);
        assert!(
            text.contains("<s:Body><m0:skcotSyub xmlns:m0=\"http://services.samples/xsd\">\n    <redro xmlns=\"\">\n        <lobmys>IBM</lobmys>\n    </redro>\n</m0:skcotSyub></s:Body>"),
            "{text}"
        );
    }
}
