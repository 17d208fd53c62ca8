//! `<property>`: sets or removes a message property (default and operation scope) or an axis2
//! one (`HTTP_SC` sets the status; `messageType` and `ContentType` may make the message leave
//! as JSON; `DISABLE_CHUNKING` and `FORCE_HTTP_1.0` have the body read, to leave with its length). The transport scope sets HTTP headers: it compiles to a [`HeaderPlan`](crate::mediators::header::HeaderPlan) step.

use crate::mediators::header::transport_header;
use crate::mediators::prelude::*;
use sluice_config::{PropertyType, Scope};
use sluice_xml::Fragment;

#[derive(Debug)]
pub enum PropertyPlan {
    Set {
        scope: Scope,
        name: String,
        ty: PropertyType,
        value: Value,
    },
    Remove {
        scope: Scope,
        name: String,
    },
    /// MI's `name="{expression}"`: the property the message names, set or removed as `then`
    /// says (its own name unused).
    Named {
        name: Expr,
        then: Box<PropertyPlan>,
    },
}

pub(crate) fn compile(c: &mut Compiler, p: &cfg::Property, m: &cfg::Mediator) -> Option<Step> {
    let el = m.element.as_str();
    if p.scope == Scope::Transport {
        if p.dynamic_name.is_some() {
            let why =
                "a transport property whose name is computed per message is not supported yet";
            c.report(Severity::Unsupported, &m.loc, el, why);
            return None;
        }
        return transport_header(c, &p.name, &p.action, m).map(Step::Header);
    }
    let plan = match &p.action {
        cfg::Action::Remove => PropertyPlan::Remove {
            scope: p.scope,
            name: p.name.clone(),
        },
        cfg::Action::Set(v) => {
            let value = c.value(v, el)?;
            if let Value::Literal(s) = &value {
                if let Err(e) = literal_ok(p, s) {
                    c.report(Severity::Error, &m.loc, el, e);
                    return None;
                }
            }
            PropertyPlan::Set {
                scope: p.scope,
                name: p.name.clone(),
                ty: p.ty,
                value,
            }
        }
    };
    Some(Step::Property(match &p.dynamic_name {
        None => plan,
        Some(n) => PropertyPlan::Named {
            name: c.expr(n, el)?,
            then: Box::new(plan),
        },
    }))
}

/// A literal value checked at load as it would fail when it runs.
fn literal_ok(p: &cfg::Property, s: &str) -> Result<(), String> {
    if p.ty == PropertyType::Om {
        om_value(s).map_err(|e| format!("property {}: {e}", p.name))?;
    }
    typed(p.ty, s).map_err(|e| format!("property {}: {e}", p.name))?;
    if p.name == "HTTP_SC" && s.parse::<http::StatusCode>().is_err() {
        return Err(format!("HTTP_SC '{s}' is not an HTTP status code"));
    }
    Ok(())
}

impl PropertyPlan {
    /// Whether the step may make the message leave as JSON: it sets `messageType` or
    /// `ContentType` (axis2 scopes) to a JSON type, or to a value computed at run time. An XML
    /// body must then be read to be converted ([`crate::json`]).
    fn makes_json(&self) -> bool {
        let PropertyPlan::Set {
            scope: Scope::Axis2 | Scope::Axis2Client,
            name,
            value,
            ..
        } = self
        else {
            return false;
        };
        (name == "messageType" || name == "ContentType")
            && match value {
                Value::Literal(v) => crate::json::is_json_type(v),
                Value::Expr(_) => true,
            }
    }
}

impl PropertyPlan {
    /// Whether the step may ask for a request that leaves with a `Content-Length` (axis2
    /// `DISABLE_CHUNKING` or `FORCE_HTTP_1.0`): the body is then read, so that its length is known.
    fn wants_length(&self) -> bool {
        matches!(self, PropertyPlan::Set {
            scope: Scope::Axis2 | Scope::Axis2Client,
            name,
            value,
            ..
        } if (name == "DISABLE_CHUNKING" || name == "FORCE_HTTP_1.0")
            && !matches!(value, Value::Literal(v) if !v.eq_ignore_ascii_case("true")))
    }
}

impl Mediator for PropertyPlan {
    fn reads(&self, json: bool) -> Reads {
        match self {
            // Leaving as JSON: an XML body is read to be converted; a JSON one goes as it is.
            p if p.makes_json() && !json => Reads::WHOLE,
            p if p.wants_length() => Reads::WHOLE,
            PropertyPlan::Set { value, .. } => Reads::of(value.body_need()),
            PropertyPlan::Remove { .. } => Reads::NOTHING,
            // The name may be any axis2 control property: read as if it made the message JSON.
            PropertyPlan::Named { name, then } => match **then {
                PropertyPlan::Set {
                    scope: Scope::Axis2 | Scope::Axis2Client,
                    ..
                } => Reads::WHOLE,
                ref t => Reads::of(t.reads(json).need.max(name.body_need())),
            },
        }
    }

    fn by_head(&self, f: &mut dyn FnMut(&Expr) -> bool) -> ByHead {
        match self {
            p if p.makes_json() || p.wants_length() => ByHead::No,
            PropertyPlan::Set { value, .. } => value_by_head(value, f).into(),
            PropertyPlan::Remove { .. } => ByHead::Yes,
            PropertyPlan::Named { name, then } => {
                if name.body_need() == BodyNeed::None || f(name) {
                    then.by_head(f)
                } else {
                    ByHead::No
                }
            }
        }
    }

    #[inline]
    fn run(&self, cx: &mut Cx<'_>) -> Result<Option<Flow>, Error> {
        match self {
            PropertyPlan::Set {
                scope,
                name,
                ty,
                value,
            } => set(cx, *scope, name, *ty, value)?,
            PropertyPlan::Remove { scope, name } => remove(cx, *scope, name),
            PropertyPlan::Named { name, then } => {
                let n = eval_expr(name, cx.msg, cx.doc)?;
                match &**then {
                    PropertyPlan::Set {
                        scope, ty, value, ..
                    } => set(cx, *scope, &n, *ty, value)?,
                    PropertyPlan::Remove { scope, .. } => remove(cx, *scope, &n),
                    PropertyPlan::Named { .. } => {}
                }
            }
        }
        Ok(None)
    }
}

fn remove(cx: &mut Cx<'_>, scope: Scope, name: &str) {
    match scope {
        Scope::Default | Scope::Operation => cx.msg.props.remove(name),
        _ => cx.msg.axis2.remove(name),
    }
}

fn set(
    cx: &mut Cx<'_>,
    scope: Scope,
    name: &str,
    ty: PropertyType,
    value: &Value,
) -> Result<(), Error> {
    let (msg, doc) = (&mut *cx.msg, &*cx.doc);
    if ty == PropertyType::Om {
        // Synapse parses the (XML-aware) string value into an element.
        let v = match value {
            Value::Literal(s) => s.clone(),
            Value::Expr(e) => e
                .eval_xml_aware(&View { msg, doc })
                .map(Cow::into_owned)
                .map_err(expr_error)?,
        };
        let xml = om_value(&v)
            .map_err(|e| Error::new(ErrorKind::Mediation, format!("property {name}: {e}")))?;
        match scope {
            Scope::Axis2 | Scope::Axis2Client => msg.axis2.set_xml(name, xml),
            _ => msg.props.set_xml(name, xml),
        }
        return Ok(());
    }
    let v = eval_value(value, msg, doc)?;
    let v = typed(ty, &v)
        .map_err(|e| Error::new(ErrorKind::Mediation, format!("property {name}: {e}")))?;
    match scope {
        Scope::Default | Scope::Operation => msg.props.set(name, v),
        Scope::Axis2 | Scope::Axis2Client => set_axis2(msg, name, v)?,
        Scope::Transport => {
            unreachable!("transport properties compile to header steps")
        }
    }
    Ok(())
}

/// Sets an axis2-scope property; `HTTP_SC` also sets the status to answer with.
pub(crate) fn set_axis2(msg: &mut Message, name: &str, value: String) -> Result<(), Error> {
    if name == "HTTP_SC" {
        let sc = value.trim().parse::<http::StatusCode>().map_err(|e| {
            Error::new(ErrorKind::Mediation, format!("HTTP_SC '{value}'")).with_source(e)
        })?;
        msg.status = Some(sc);
    }
    msg.axis2.set(name, value);
    Ok(())
}

/// Checks and normalises a value for a typed property, as Synapse's PropertyMediator converts it
/// (Java's parsers: `Integer.parseInt` takes no white space, `Double.parseDouble` trims it).
pub fn typed(ty: PropertyType, s: &str) -> Result<String, String> {
    let t = s.trim();
    let ok = match ty {
        PropertyType::String | PropertyType::Om => return Ok(s.to_owned()),
        PropertyType::Integer => s.parse::<i32>().map(|v| v.to_string()).ok(),
        PropertyType::Short => s.parse::<i16>().map(|v| v.to_string()).ok(),
        PropertyType::Long => s.parse::<i64>().map(|v| v.to_string()).ok(),
        // Read back as Java writes the Double or Float Synapse keeps: 3 is 3.0.
        PropertyType::Double => t.parse::<f64>().map(sluice_xml::java_double).ok(),
        PropertyType::Float => t.parse::<f32>().map(sluice_xml::java_float).ok(),
        PropertyType::Boolean => {
            // Axis2's JavaUtils.isTrueExplicitly: "true" or "yes" (any case) or "1"; anything
            // else, white space around included, is false.
            let yes = s == "1" || s.eq_ignore_ascii_case("true") || s.eq_ignore_ascii_case("yes");
            Some(yes.to_string())
        }
        // MI keeps the parsed JSON: its text is the compact form.
        PropertyType::Json => serde_json::from_str::<serde_json::Value>(t)
            .ok()
            .map(|v| v.to_string()),
    };
    ok.ok_or_else(|| format!("'{s}' is not a valid {ty:?}"))
}

/// An OM property value: the text must be XML with an element (Synapse's `stringToOM`). Returns it
/// as stored (trimmed).
pub fn om_value(s: &str) -> Result<String, String> {
    let t = s.trim();
    match Fragment::parse(t) {
        Ok(f) if f.elements().next().is_some() => Ok(t.to_owned()),
        Ok(_) => Err(format!("'{t}' is not an XML element (type OM)")),
        Err(e) => Err(format!("'{t}' is not XML (type OM): {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn om_values_must_hold_an_element() {
        assert_eq!(om_value(" <a><b/></a> ").unwrap(), "<a><b/></a>");
        assert!(om_value("text").is_err());
        assert!(om_value("<a>").is_err());
    }

    #[test]
    fn typed_values() {
        assert_eq!(typed(PropertyType::Integer, "42").unwrap(), "42");
        // Integer.parseInt takes no white space; Double.parseDouble trims it.
        assert!(typed(PropertyType::Integer, " 42 ").is_err());
        assert_eq!(typed(PropertyType::Double, " 2.5 ").unwrap(), "2.5");
        // An XPath number (count() is 3.0) is no Integer, as Java's Integer.parseInt says.
        assert!(typed(PropertyType::Integer, "3.0").is_err());
        assert_eq!(typed(PropertyType::Double, "3").unwrap(), "3.0");
        assert_eq!(typed(PropertyType::Double, "1e7").unwrap(), "1.0E7");
        assert_eq!(typed(PropertyType::Float, "0.1").unwrap(), "0.1");
        assert!(typed(PropertyType::Integer, "x").is_err());
        for (text, java) in [
            ("TRUE", "true"),
            ("yes", "true"),
            ("Yes", "true"),
            ("1", "true"),
            ("0", "false"),
            ("no", "false"),
            (" true", "false"),
            ("on", "false"),
        ] {
            assert_eq!(typed(PropertyType::Boolean, text).unwrap(), java, "{text}");
        }
        assert_eq!(typed(PropertyType::String, " a ").unwrap(), " a ");
        assert_eq!(
            typed(PropertyType::Json, r#" { "a" : [1, true] } "#).unwrap(),
            r#"{"a":[1,true]}"#
        );
        assert!(typed(PropertyType::Json, "{a:1}").is_err());
    }
}
