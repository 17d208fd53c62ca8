//! `<validate>`: the source element (default: the Body's first child) against an XML Schema (several
//! `<schema>`s compile as one, with the documents their imports name mapped by `<resource>`), or,
//! as MI does when the schema is JSON, the JSON payload (or what a `json-eval` source selects)
//! against a JSON Schema (the draft its `$schema` names; references to other documents are not
//! fetched); on failure `ERROR_MESSAGE` and `ERROR_DETAIL` are set and `<on-fail>` runs.

use crate::compile::normalize_registry_key;
use crate::mediators::prelude::*;
use std::collections::HashMap;

#[derive(Debug)]
pub struct ValidatePlan {
    pub schema: SchemaPlan,
    pub key: String,
    /// `<schema key="{expression}"/>`: the key each message gives, among the schemas the
    /// configuration holds (every one compiled at load); `schema` is then unused.
    pub by_key: Option<(Expr, Arc<HashMap<String, SchemaPlan>>)>,
    /// An XPath evaluated with the SOAP Envelope as context node, or (JSON Schema) a JsonPath;
    /// `None`: the first element of the Body, or the whole JSON payload.
    pub source: Option<Expr>,
    pub on_fail: Steps,
}

#[derive(Debug, Clone)]
pub enum SchemaPlan {
    Xml(Arc<sluice_xml::Schema>),
    Json(Arc<jsonschema::Validator>),
}

pub(crate) fn compile(c: &mut Compiler, v: &cfg::Validate, el: &str) -> Option<Step> {
    let (key, loc) = &v.schemas[0];
    let mut by_key = None;
    let schema = if let Some(k) = &v.dynamic_key {
        let schemas = c.all_schemas();
        let any = schemas.values().next().cloned();
        if any.is_none() {
            let why = "a schema key computed per message, and the configuration holds no schema";
            c.report(Severity::Error, loc, el, why);
        }
        by_key = Some((c.expr(k, el)?, Arc::new(schemas)));
        any
    } else if v.schemas.len() == 1 && v.resources.is_empty() {
        c.schema(key, loc, el)
    } else {
        c.schema_set(v, el)
    };
    let json = matches!(schema, Some(SchemaPlan::Json(_)));
    let source = match &v.source {
        Some(e) => {
            let x = c.expr(e, el)?;
            // With a key per message, the schema (and so the source's kind) is known per message.
            let fits = match &x {
                Expr::XPath(_) => !json || by_key.is_some(),
                Expr::Json(_) => json || by_key.is_some(),
                _ => false,
            };
            if !fits {
                let why = if json {
                    "the source of a validate against a JSON Schema must be a json-eval() path"
                } else {
                    "the validate source must be an XPath"
                };
                c.report(Severity::Error, &e.loc, el, why);
                return None;
            }
            Some(x)
        }
        None => None,
    };
    let on_fail = c.steps(&v.on_fail.mediators);
    let key = v
        .schemas
        .iter()
        .map(|(k, _)| k.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    Some(Step::Validate(ValidatePlan {
        schema: schema?,
        key,
        by_key,
        source,
        on_fail,
    }))
}

impl Compiler<'_> {
    /// Every schema the configuration holds (local entries whose root is `xs:schema`, registry
    /// resources that are XML Schemas), compiled, by key as keys name them: for a schema key
    /// computed per message.
    fn all_schemas(&mut self) -> HashMap<String, SchemaPlan> {
        let keys = self.keys_of_documents("http://www.w3.org/2001/XMLSchema", &["schema"]);
        let mut out = HashMap::new();
        for k in keys {
            if let Some(s) = self.quiet_schema(&k) {
                out.insert(normalize_registry_key(&k), s);
            }
        }
        out
    }

    /// The schema for a key, compiled once, with nothing reported: one that does not compile is
    /// left out of a per-message choice (as MI fails only the message that names it).
    fn quiet_schema(&mut self, key: &str) -> Option<SchemaPlan> {
        if let Some(cached) = self.schema_cache.get(key) {
            return cached.clone();
        }
        let text = self.keyed(key).ok()?.0.to_owned();
        let compiled = if text.trim_start().starts_with('{') {
            let v = serde_json::from_str::<serde_json::Value>(&text).ok()?;
            SchemaPlan::Json(Arc::new(jsonschema::validator_for(&v).ok()?))
        } else {
            SchemaPlan::Xml(Arc::new(sluice_xml::Schema::compile(text.as_bytes()).ok()?))
        };
        self.schema_cache
            .insert(key.to_owned(), Some(compiled.clone()));
        Some(compiled)
    }

    /// Several XML Schemas, and the documents their imports and includes name, compiled as one
    /// (`sluice_xml::Schema::compile_set`): Synapse's validate with several `<schema>`s or
    /// `<resource>`s. Compiled once for each such set.
    fn schema_set(&mut self, v: &cfg::Validate, el: &str) -> Option<SchemaPlan> {
        let keys: Vec<&str> = v.schemas.iter().map(|s| s.0.as_str()).collect();
        let resources: Vec<String> = v
            .resources
            .iter()
            .map(|r| format!("{}={}", r.0, r.1))
            .collect();
        // A NUL no key holds keeps a set apart from a single key in the one cache.
        let set = format!("\0{} with {}", keys.join(", "), resources.join(", "));
        self.cached_schema(set, |c| c.compile_set(v, el))
    }

    fn compile_set(&mut self, v: &cfg::Validate, el: &str) -> Option<SchemaPlan> {
        let mut texts = Vec::new();
        for (key, loc) in &v.schemas {
            let (text, _) = self.keyed_text(key, loc, el)?;
            if text.trim_start().starts_with('{') {
                let why = "validating against a JSON Schema together with other schemas is not supported (MI takes one)";
                self.report(Severity::Unsupported, loc, el, why);
                return None;
            }
            texts.push(text);
        }
        let mut resources = Vec::new();
        for (location, key, loc) in &v.resources {
            let (text, _) = self.keyed_text(key, loc, el)?;
            resources.push((location.as_str(), text));
        }
        let xsds: Vec<&[u8]> = texts.iter().map(|t| t.as_bytes()).collect();
        let resources: Vec<(&str, &[u8])> =
            resources.iter().map(|(l, t)| (*l, t.as_bytes())).collect();
        match sluice_xml::Schema::compile_set(&xsds, &resources) {
            Ok(s) => Some(SchemaPlan::Xml(Arc::new(s))),
            Err(e) => {
                let keys: Vec<&str> = v.schemas.iter().map(|s| s.0.as_str()).collect();
                let why = format!("the schemas {} do not compile: {e}", keys.join(", "));
                self.report(Severity::Error, &v.schemas[0].1, el, why);
                None
            }
        }
    }

    /// The schema for a key (local entry or registry resource), compiled once: a JSON Schema
    /// when its text is a JSON object, else an XML Schema.
    pub(crate) fn schema(&mut self, key: &str, loc: &Location, el: &str) -> Option<SchemaPlan> {
        self.cached_schema(key.to_owned(), |c| c.compile_schema(key, loc, el))
    }

    /// What `make` compiles for `key`, made once and kept (a failure too: it fails the plan each
    /// time it is asked for).
    fn cached_schema(
        &mut self,
        key: String,
        make: impl FnOnce(&mut Self) -> Option<SchemaPlan>,
    ) -> Option<SchemaPlan> {
        if let Some(cached) = self.schema_cache.get(&key) {
            if cached.is_none() {
                self.failed = true;
            }
            return cached.clone();
        }
        let compiled = make(self);
        self.schema_cache.insert(key, compiled.clone());
        compiled
    }

    fn compile_schema(&mut self, key: &str, loc: &Location, el: &str) -> Option<SchemaPlan> {
        match self.keyed_text(key, loc, el) {
            None => None,
            Some((text, origin)) if text.trim_start().starts_with('{') => {
                let compiled = serde_json::from_str::<serde_json::Value>(&text)
                    .map_err(|e| e.to_string())
                    .and_then(|v| jsonschema::validator_for(&v).map_err(|e| e.to_string()));
                match compiled {
                    Ok(s) => Some(SchemaPlan::Json(Arc::new(s))),
                    Err(e) => {
                        let why = format!("JSON Schema {origin} does not compile: {e}");
                        self.report(Severity::Error, loc, el, why);
                        None
                    }
                }
            }
            Some((text, origin)) => match sluice_xml::Schema::compile(text.as_bytes()) {
                Ok(s) => Some(SchemaPlan::Xml(Arc::new(s))),
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
        }
    }
}

impl Mediator for ValidatePlan {
    fn heavy(&self) -> bool {
        heavy(&self.on_fail)
    }

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
    let view = View { msg, doc };
    let (schema, key) = match &v.by_key {
        None => (&v.schema, Cow::Borrowed(v.key.as_str())),
        Some((k, schemas)) => {
            let key = eval_expr(k, msg, doc)?;
            match schemas.get(&normalize_registry_key(key.trim())) {
                Some(s) => (s, Cow::Owned(key)),
                None => {
                    return Err(Error::new(
                        ErrorKind::Mediation,
                        format!("validate: no schema has the key '{key}' the message gives"),
                    ))
                }
            }
        }
    };
    let what = format!("validate against {key}");
    let schema = match schema {
        SchemaPlan::Json(s) => return validate_json(s, v, &view, &what),
        SchemaPlan::Xml(s) => s,
    };
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
    match schema.validate_element(node) {
        Ok(Ok(())) => Ok(None),
        Ok(Err(invalid)) => Ok(Some((
            invalid.messages[0].trim().to_owned(),
            invalid.messages.join("\n"),
        ))),
        Err(e) => Err(xml_error(&what, e)),
    }
}

/// A JSON Schema's verdict on the JSON payload, or on what the source path selects.
fn validate_json(
    s: &jsonschema::Validator,
    v: &ValidatePlan,
    view: &View<'_>,
    what: &str,
) -> Result<Option<(String, String)>, Error> {
    let not_json = || {
        Error::new(
            ErrorKind::Mediation,
            format!("{what}: the message has no JSON payload"),
        )
    };
    let instance = match &v.source {
        Some(x) => {
            let (found, _) = x.json_values(view).map_err(expr_error)?;
            let first = found.first().ok_or_else(|| {
                Error::new(
                    ErrorKind::Mediation,
                    format!("{what}: the source selects nothing in the message"),
                )
            })?;
            first.as_ref().clone()
        }
        None => view
            .json()
            .map_err(expr_error)?
            .cloned()
            .ok_or_else(not_json)?,
    };
    let errors: Vec<String> = s
        .iter_errors(&instance)
        .map(|e| format!("{} (at {})", e, e.instance_path()))
        .collect();
    Ok(errors
        .first()
        .map(|first| (first.clone(), errors.join("\n"))))
}
