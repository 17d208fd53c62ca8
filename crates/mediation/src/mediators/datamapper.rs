//! MI's `<datamapper>`, on its XSLT path: the form of the mapping WSO2's tooling writes beside the
//! JavaScript one, which MI runs instead when `xsltStyleSheet` is given, `inputType` and
//! `outputType` are both `XML`, and the stylesheet says it can (`xmlns:notXSLTCompatible="false"`
//! on its root, with `xmlns:firstElementOfTheInput`).
//!
//! | MI | Sluice |
//! |---|---|
//! | The stylesheet runs on the whole envelope when `firstElementOfTheInput` is `soapenv:Envelope`, else on the Body's first child, which the result replaces | the same, as `fastXSLT` and `xslt` run them |
//! | `runTimeProperties` (`name,SCOPE,...`) are parameters `SCOPE_name` | the same |
//! | Saxon (XSLT 2.0) | libxslt (XSLT 1.0, the stylesheet read forwards-compatibly: WSO2's generated ones use XPath 1.0 but for an unused `xsl:function`) |
//! | `messageType` becomes `application/xml`, so the message leaves as plain XML (the Body's first element) | the message is made plain XML at once |
//! | The JavaScript mapping (`.dmc`), its schemas | not supported yet: reported at load |

use crate::format::Format;
use crate::mediators::prelude::*;

#[derive(Debug)]
pub struct DatamapperPlan {
    /// The stylesheet's step (`fastXSLT` or `xslt`).
    xslt: Box<Step>,
}

/// What a WSO2 data-mapper stylesheet says of itself on its root (namespace declarations that
/// are metadata): `(notXSLTCompatible, firstElementOfTheInput, runTimeProperties)`.
fn metadata(text: &str) -> (Option<&str>, Option<&str>, Option<&str>) {
    let start = text.find("<xsl:stylesheet").map_or("", |at| {
        let tag = &text[at..];
        &tag[..tag.find('>').unwrap_or(tag.len())]
    });
    let value = |name: &str| {
        let at = start.find(&format!("xmlns:{name}="))? + name.len() + 7;
        let quote = start[at..].chars().next()?;
        let rest = &start[at + 1..];
        Some(&rest[..rest.find(quote)?])
    };
    (
        value("notXSLTCompatible"),
        value("firstElementOfTheInput"),
        value("runTimeProperties"),
    )
}

/// `runTimeProperties` (`name1,SCOPE1,name2,SCOPE2`) as stylesheet parameters `SCOPE_name`.
fn parameters(list: &str, loc: &Location) -> Vec<(String, cfg::ValueSrc)> {
    let words: Vec<&str> = list.split(',').map(str::trim).collect();
    (words.chunks(2))
        .filter_map(|pair| match pair {
            [name, scope] => {
                let read = match scope.to_ascii_uppercase().as_str() {
                    "DEFAULT" | "SYNAPSE" => format!("get-property('{name}')"),
                    "TRANSPORT" => format!("get-property('transport', '{name}')"),
                    "AXIS2" => format!("get-property('axis2', '{name}')"),
                    "AXIS2CLIENT" => format!("get-property('axis2-client', '{name}')"),
                    "OPERATION" => format!("get-property('operation', '{name}')"),
                    "FUNC" => format!("$func:{name}"),
                    _ => "''".to_owned(),
                };
                let src = cfg::ExprSrc {
                    text: read,
                    ns: Arc::default(),
                    loc: loc.clone(),
                };
                Some((format!("{scope}_{name}"), cfg::ValueSrc::Expr(src)))
            }
            _ => None,
        })
        .collect()
}

pub(crate) fn compile(c: &mut Compiler, d: &cfg::Datamapper, m: &cfg::Mediator) -> Option<Step> {
    let el = m.element.as_str();
    let xml = |t: &Option<String>| t.as_deref() == Some("XML");
    let unsupported = |c: &mut Compiler, why: &str| {
        let why = format!(
            "the datamapper's JavaScript mapping ({}) is not supported yet: {why}",
            d.config
        );
        c.report(Severity::Unsupported, &m.loc, el, why);
        None
    };
    let Some(key) = d
        .xslt
        .as_ref()
        .filter(|_| xml(&d.input_type) && xml(&d.output_type))
    else {
        return unsupported(
            c,
            "only its XSLT form runs (xsltStyleSheet, with inputType and outputType XML)",
        );
    };
    let (text, _) = c.keyed_text(key, &m.loc, el)?;
    let (compatible, first, properties) = metadata(&text);
    let Some(first) = first.filter(|_| compatible == Some("false")) else {
        return unsupported(c, "its stylesheet does not say it can run instead (notXSLTCompatible, firstElementOfTheInput)");
    };
    let x = cfg::Xslt {
        key: key.clone(),
        dynamic_key: None,
        source: None,
        params: parameters(properties.unwrap_or(""), &m.loc),
        fast: first == "soapenv:Envelope",
    };
    let xslt = Box::new(crate::mediators::xslt::compile(c, &x, m)?);
    Some(Step::Datamapper(DatamapperPlan { xslt }))
}

impl Mediator for DatamapperPlan {
    fn heavy(&self) -> bool {
        self.xslt.mediator().heavy()
    }

    fn run(&self, cx: &mut Cx<'_>) -> Result<Option<Flow>, Error> {
        self.xslt.run(cx)?;
        // MI's messageType application/xml: the Body's first element leaves, as plain XML.
        Format::Pox.apply(cx.msg)?;
        *cx.doc = DocCache::new();
        for k in ["messageType", "ContentType"] {
            cx.msg.axis2.set(k, "application/xml".to_owned());
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::metadata;

    #[test]
    fn a_stylesheet_says_what_it_is_on_its_root() {
        let text = r#"<?xml version="1.0"?><xsl:stylesheet xmlns:xsl="http://www.w3.org/1999/XSL/Transform" xmlns:firstElementOfTheInput="soapenv:Envelope" xmlns:notXSLTCompatible="false" xmlns:runTimeProperties='a,DEFAULT' version="2.0"><xsl:template match="/"/></xsl:stylesheet>"#;
        assert_eq!(
            metadata(text),
            (Some("false"), Some("soapenv:Envelope"), Some("a,DEFAULT"))
        );
        assert_eq!(
            metadata("<xsl:stylesheet version='1.0'>"),
            (None, None, None)
        );
    }
}
