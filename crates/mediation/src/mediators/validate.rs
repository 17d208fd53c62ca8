//! `<validate>`: the source element (default: the Body's first child) against an XML Schema; on
//! failure `ERROR_MESSAGE` and `ERROR_DETAIL` are set and `<on-fail>` runs.

use crate::mediators::prelude::*;

#[derive(Debug)]
pub struct ValidatePlan {
    pub schema: Arc<sluice_xml::Schema>,
    pub key: String,
    /// Evaluated with the SOAP Envelope as context node; `None`: the first element of the Body.
    pub source: Option<Expr>,
    pub on_fail: Steps,
}

pub(crate) fn compile(c: &mut Compiler, v: &cfg::Validate, el: &str) -> Option<Step> {
    let (key, loc) = &v.schemas[0];
    if v.schemas.len() > 1 {
        c.report(
            Severity::Unsupported,
            &v.schemas[1].1,
            el,
            "validating against several schemas at once is not supported yet (one <schema> per validate)",
        );
    }
    let schema = c.schema(key, loc, el);
    let source = match &v.source {
        Some(e) => {
            let x = c.expr(e, el)?;
            if !matches!(x, Expr::XPath(_)) {
                c.report(
                    Severity::Error,
                    &e.loc,
                    el,
                    "the validate source must be an XPath",
                );
                return None;
            }
            Some(x)
        }
        None => None,
    };
    let on_fail = c.steps(&v.on_fail.mediators);
    Some(Step::Validate(ValidatePlan {
        schema: schema?,
        key: key.clone(),
        source,
        on_fail,
    }))
}

impl Compiler<'_> {
    /// The XML Schema for a key (local entry or registry resource), compiled once.
    pub(crate) fn schema(
        &mut self,
        key: &str,
        loc: &Location,
        el: &str,
    ) -> Option<Arc<sluice_xml::Schema>> {
        if let Some(cached) = self.schema_cache.get(key) {
            if cached.is_none() {
                self.failed = true;
            }
            return cached.clone();
        }
        let compiled = match self.keyed_text(key, loc, el) {
            None => None,
            Some((text, origin)) => match sluice_xml::Schema::compile(text.as_bytes()) {
                Ok(s) => Some(Arc::new(s)),
                Err(e) => {
                    self.report(
                        Severity::Error,
                        loc,
                        el,
                        format!("schema {origin} does not compile: {e}"),
                    );
                    None
                }
            },
        };
        self.schema_cache.insert(key.to_owned(), compiled.clone());
        compiled
    }
}

impl Mediator for ValidatePlan {
    fn run(&self, cx: &mut Cx<'_>) -> Result<Option<Flow>, Error> {
        let Some(reason) = validate(self, cx.msg, cx.doc)? else {
            return Ok(None);
        };
        cx.msg.props.set("ERROR_MESSAGE", reason.0);
        cx.msg.props.set("ERROR_DETAIL", reason.1);
        cx.branch(&self.on_fail)
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
