//! `<variable>` (MI 4.4): sets or removes a variable of the message, which `${vars.NAME}` reads.
//! A variable holds a JSON value: text, a number, a boolean, JSON, or XML as its text.
//!
//! | `type` | From a `value` (converted at load) | From an `expression` |
//! |---|---|---|
//! | `STRING` (default) | the text | the string value |
//! | `BOOLEAN` | true for `true`, `1`, `yes`, `on` (any case), else false | a boolean, else the message fails |
//! | `INTEGER`, `LONG` | the number (refused at load when it is none) | a number (its whole part), else the message fails |
//! | `DOUBLE` | the number (refused at load when it is none) | a number, else the message fails |
//! | `JSON` | the JSON, or the text as a JSON string when it is not JSON | the value as it is |
//! | `XML` | the element (refused at load when not well-formed) | the text, which must be one element |
//!
//! An expression that is not `${...}` (plain XPath, `get-property`) gives text, converted as a
//! `value` would be.

use crate::mediators::prelude::*;
use serde_json::Value as Json;
use sluice_config::VariableType;

#[derive(Debug)]
pub struct VariablePlan {
    name: String,
    what: What,
}

#[derive(Debug)]
enum What {
    Remove,
    /// A value known at load.
    Fixed(Json),
    Computed(Expr, VariableType),
}

pub(crate) fn compile(c: &mut Compiler, v: &cfg::Variable, m: &cfg::Mediator) -> Option<Step> {
    let el = m.element.as_str();
    let what = match &v.set {
        None => What::Remove,
        Some((cfg::ValueSrc::Literal(s), ty)) => match from_text(s, *ty) {
            Ok(j) => What::Fixed(j),
            Err(e) => {
                c.report(
                    Severity::Error,
                    &m.loc,
                    el,
                    format!("variable {}: {e}", v.name),
                );
                return None;
            }
        },
        Some((cfg::ValueSrc::Expr(e), ty)) => What::Computed(c.expr(e, el)?, *ty),
    };
    Some(Step::Variable(VariablePlan {
        name: v.name.clone(),
        what,
    }))
}

/// Text as a value of `ty`, as MI converts a `value`.
fn from_text(s: &str, ty: VariableType) -> Result<Json, String> {
    let not = || format!("'{s}' is not a value of type {ty:?}");
    Ok(match ty {
        VariableType::String => Json::String(s.to_owned()),
        VariableType::Boolean => Json::Bool(matches!(
            s.trim().to_ascii_lowercase().as_str(),
            "true" | "1" | "yes" | "on"
        )),
        VariableType::Integer | VariableType::Long => {
            Json::from(s.trim().parse::<i64>().map_err(|_| not())?)
        }
        VariableType::Double => serde_json::Number::from_f64(s.trim().parse().map_err(|_| not())?)
            .map_or(Json::Null, Json::Number),
        VariableType::Json => {
            serde_json::from_str(s).unwrap_or_else(|_| Json::String(s.to_owned()))
        }
        VariableType::Xml => {
            sluice_xml::Document::parse(s.as_bytes()).map_err(|e| format!("{}: {e}", not()))?;
            Json::String(s.trim().to_owned())
        }
    })
}

/// An expression's value as `ty` (MI checks a `${...}` result's type rather than converting it).
fn from_value(v: Json, ty: VariableType, synapse: bool) -> Result<Json, String> {
    if !synapse {
        let text = match v {
            Json::String(s) => s,
            other => other.to_string(),
        };
        return from_text(&text, ty);
    }
    let mismatch = || format!("the value does not match the type {ty:?}");
    Ok(match (ty, v) {
        (VariableType::String, Json::String(s)) => Json::String(s),
        (VariableType::String, Json::Null) => Json::Null,
        (VariableType::String, other) => Json::String(other.to_string()),
        (VariableType::Boolean, b @ Json::Bool(_)) => b,
        (VariableType::Integer | VariableType::Long, Json::Number(n)) => {
            Json::from(n.as_f64().ok_or_else(mismatch)?.trunc() as i64)
        }
        (VariableType::Double, n @ Json::Number(_)) => n,
        (VariableType::Json, v) => v,
        (VariableType::Xml, Json::String(s)) => from_text(&s, ty)?,
        _ => return Err(mismatch()),
    })
}

impl Mediator for VariablePlan {
    fn reads(&self, _json: bool) -> Reads {
        match &self.what {
            What::Computed(e, _) => Reads::of(e.body_need()),
            _ => Reads::NOTHING,
        }
    }

    fn by_head(&self, f: &mut dyn FnMut(&Expr) -> bool) -> ByHead {
        match &self.what {
            What::Computed(e, _) => (e.body_need() == BodyNeed::None || f(e)).into(),
            _ => ByHead::Yes,
        }
    }

    fn run(&self, cx: &mut Cx<'_>) -> Result<Option<Flow>, Error> {
        match &self.what {
            What::Remove => cx.msg.vars.remove(&self.name),
            What::Fixed(v) => cx.msg.vars.set(&self.name, v.clone()),
            What::Computed(e, ty) => {
                let v = e
                    .eval_value(&View {
                        msg: cx.msg,
                        doc: cx.doc,
                    })
                    .map_err(crate::exec::expr_error)?;
                let synapse = matches!(e, Expr::Synapse(_));
                let v = from_value(v, *ty, synapse).map_err(|m| {
                    Error::new(ErrorKind::Mediation, format!("variable {}: {m}", self.name))
                })?;
                cx.msg.vars.set(&self.name, v);
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_convert_as_mi_converts_them() {
        use VariableType as T;
        assert_eq!(
            from_text("412337890", T::Integer),
            Ok(Json::from(412337890))
        );
        assert_eq!(from_text("Yes", T::Boolean), Ok(Json::Bool(true)));
        assert_eq!(from_text("nope", T::Boolean), Ok(Json::Bool(false)));
        assert_eq!(from_text("156312.98", T::Double), Ok(Json::from(156312.98)));
        assert!(from_text("12a", T::Long).is_err());
        assert_eq!(
            from_text(r#"{"a":[1]}"#, T::Json),
            Ok(serde_json::json!({"a": [1]}))
        );
        assert_eq!(from_text("123\\n456", T::Json), Ok(Json::from("123\\n456")));
        assert!(from_text("<a>", T::Xml).is_err());
        // A ${...} result is checked, not converted.
        assert_eq!(
            from_value(Json::from(3.7), T::Integer, true),
            Ok(Json::from(3))
        );
        assert!(from_value(Json::from("3"), T::Integer, true).is_err());
        assert_eq!(
            from_value(Json::from("3"), T::Integer, false),
            Ok(Json::from(3))
        );
        assert_eq!(
            from_value(Json::from(5), T::String, true),
            Ok(Json::from("5"))
        );
    }
}
