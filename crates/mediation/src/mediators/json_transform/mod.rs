//! MI's `<jsontransform>`: the payload written as JSON with the `synapse.commons.json.*` settings
//! its `<property>`s give (WSO2's XML-to-JSON writer, [`crate::json::Opts`]), then, with a
//! `schema`, checked and typed by it ([`coerce`]: MI's JSON schema processor). The message is
//! JSON afterwards. A schema that is missing, empty or not JSON fails each message with MI's words
//! (a warning at load), as MI finds out only when a message comes.

pub mod coerce;

use crate::json::Opts;
use crate::mediators::prelude::*;

#[derive(Debug)]
pub struct JsonTransformPlan {
    /// The settings, when `<property>`s give any.
    opts: Option<Opts>,
    schema: Option<Schema>,
}

#[derive(Debug)]
enum Schema {
    Text(String),
    /// What each message fails with.
    Broken(String),
}

pub(crate) fn compile(c: &mut Compiler, t: &cfg::JsonTransform, m: &cfg::Mediator) -> Option<Step> {
    let el = m.element.as_str();
    let opts = if t.properties.is_empty() {
        None
    } else {
        Some(settings(c, &t.properties, el)?)
    };
    let schema = match &t.schema {
        None => None,
        Some((key, loc)) if key.starts_with('{') => {
            let why = "a jsontransform schema named per message is not supported yet";
            c.report(Severity::Unsupported, loc, el, why);
            return None;
        }
        Some((key, loc)) => Some(match c.keyed(key) {
            Ok((text, _)) => {
                let text = text.to_owned();
                let checked = serde_json::from_str::<serde_json::Value>(&text);
                if text.trim().is_empty() || checked.is_err() {
                    let why =
                        format!("the JSON schema '{key}' is empty or not JSON: each message fails");
                    c.report(Severity::Warning, loc, el, why);
                }
                Schema::Text(text)
            }
            Err(_) => {
                let why = format!("no schema '{key}': each message fails, as in MI");
                c.report(Severity::Warning, loc, el, why);
                Schema::Broken(format!(
                    "Schema does not exist in the specified location : {key}"
                ))
            }
        }),
    };
    Some(Step::JsonTransform(JsonTransformPlan { opts, schema }))
}

/// The writer settings the `<property>`s give; one Sluice does not apply is unsupported.
fn settings(c: &mut Compiler, props: &[(String, String, Location)], el: &str) -> Option<Opts> {
    let mut o = Opts::default();
    let truth = |v: &str| v.trim().eq_ignore_ascii_case("true");
    for (name, value, loc) in props {
        let key = name.strip_prefix("synapse.commons.").unwrap_or(name);
        match key {
            "json.output.autoPrimitive" => o.auto_primitive = truth(value),
            "json.output.disableAutoPrimitive.regex" => match regex::Regex::new(value) {
                Ok(r) => o.keep_string = Some(r),
                Err(e) => {
                    c.report(Severity::Error, loc, el, format!("{name}: {e}"));
                    return None;
                }
            },
            "enableXmlNullForEmptyElement" => o.empty_null = truth(value),
            "enableXmlNilReadWrite" => o.nil = truth(value),
            "json.buildValidNCNames" => o.valid_ncnames = truth(value),
            // MI's defaults: nothing to change.
            "json.output.jsonoutAutoArray" | "json.output.jsonoutMultiplePI" if truth(value) => {}
            _ => {
                let why = format!("the jsontransform property '{name}' is not supported yet");
                c.report(Severity::Unsupported, loc, el, why);
                return None;
            }
        }
    }
    Some(o)
}

impl Mediator for JsonTransformPlan {
    fn run(&self, cx: &mut Cx<'_>) -> Result<Option<Flow>, Error> {
        let failed =
            |why: String| Error::new(ErrorKind::Mediation, format!("jsontransform: {why}"));
        if let Some(o) = &self.opts {
            let text = {
                let view = View {
                    msg: cx.msg,
                    doc: cx.doc,
                };
                let d = view.document().map_err(expr_error)?;
                match payload_node(d) {
                    Some(p) => crate::json::xml_to_json_with(p, o).map_err(failed)?,
                    None => "{}".to_owned(),
                }
            };
            set_json(cx, text);
        }
        if let Some(schema) = &self.schema {
            let schema = match schema {
                Schema::Text(t) => t,
                Schema::Broken(why) => return Err(failed(why.clone())),
            };
            let input = {
                let view = View {
                    msg: cx.msg,
                    doc: cx.doc,
                };
                match view.raw_json() {
                    Some(raw) => String::from_utf8_lossy(raw).into_owned(),
                    None => {
                        let d = view.document().map_err(expr_error)?;
                        match payload_node(d) {
                            Some(p) => crate::json::xml_to_json(p).map_err(failed)?,
                            None => String::new(),
                        }
                    }
                }
            };
            let out = coerce::parse_json(&input, schema).map_err(failed)?;
            set_json(cx, if out.is_empty() { "{}".to_owned() } else { out });
        }
        Ok(None)
    }
}

/// The message's payload is now `text`, as JSON.
fn set_json(cx: &mut Cx<'_>, text: String) {
    cx.msg.body = Body::Bytes(text.into());
    cx.msg.headers.remove(http::header::CONTENT_LENGTH);
    cx.msg.headers.insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    *cx.doc = DocCache::new();
}
