//! Mediators that change the message's content: xslt, payloadFactory, enrich, validate and makefault.

use super::super::{child, elements, text_of};
use super::FileParser;
use crate::diag::Severity;
use crate::model::*;
use roxmltree::Node;

impl FileParser<'_, '_> {
    pub(super) fn xslt(&mut self, n: Node, fast: bool) -> Option<Xslt> {
        let key = self.required_attr(n, "key")?;
        let dynamic_key = key
            .strip_prefix('{')
            .and_then(|k| k.strip_suffix('}'))
            .map(|k| self.expr(n, "key", k));
        if fast && n.attribute("source").is_some() {
            self.report(
                Severity::Error,
                n,
                "fastXSLT transforms the whole message; it takes no 'source'",
            );
            return None;
        }
        let source = self.expr_attr(n, "source");
        let mut params = Vec::new();
        for c in elements(n) {
            match c.tag_name().name() {
                "property" => params.extend(self.named_value(c, "stylesheet parameter")),
                "feature" | "attribute" => {
                    self.report(
                        Severity::Warning,
                        c,
                        "XSLT processor features and attributes are ignored (libxslt)",
                    );
                }
                "resource" => {
                    self.report(
                        Severity::Unsupported,
                        c,
                        "xsl:import/include resources mapped by <resource> are not supported yet",
                    );
                    return None;
                }
                _ => self.unknown_child(c, n.tag_name().name()),
            }
        }
        Some(Xslt {
            key,
            dynamic_key,
            source,
            params,
            fast,
        })
    }

    pub(super) fn payload_factory(&mut self, n: Node) -> Option<PayloadFactory> {
        let medias = [
            ("xml", PayloadMedia::Xml),
            ("json", PayloadMedia::Json),
            ("text", PayloadMedia::Text),
        ];
        let media =
            self.attr_one_of(n, "media-type", "xml", "payloadFactory media-type", &medias)?;
        if let Some(t) = n.attribute("template-type") {
            if t != "default" {
                self.report(
                    Severity::Unsupported,
                    n,
                    format!("payloadFactory template-type=\"{t}\" is not supported yet"),
                );
                return None;
            }
        }
        let mut format = None;
        let mut args = Vec::new();
        for c in elements(n) {
            match c.tag_name().name() {
                "format" => format = Some((self.payload_format(c, media)?, self.loc(c))),
                "args" => args.extend(self.payload_args(c)?),
                _ => self.unknown_child(c, "payloadFactory"),
            }
        }
        let (format, format_loc) = self.needed(format, n, "payloadFactory needs a <format>")?;
        Some(PayloadFactory {
            media,
            format,
            format_loc,
            args,
        })
    }

    /// A payloadFactory's `<format>`: a `key`, or the template written inside.
    fn payload_format(&mut self, c: Node, media: PayloadMedia) -> Option<PayloadFormat> {
        if let Some(k) = c.attribute("key") {
            return Some(PayloadFormat::Key(k.to_owned()));
        }
        if media != PayloadMedia::Xml {
            // A JSON or text format is the element's text.
            let text: String = c
                .children()
                .filter(|t| t.is_text())
                .filter_map(|t| t.text())
                .collect();
            return Some(PayloadFormat::Inline(text.trim().to_owned()));
        }
        if let Some(e) = elements(c).next() {
            return Some(PayloadFormat::Inline(self.serialize_element(e)));
        }
        self.report(
            Severity::Error,
            c,
            "an xml payloadFactory format needs an element or a 'key'",
        );
        None
    }

    /// A payloadFactory's `<args>`; `None` when one of them is wrong (reported).
    fn payload_args(&mut self, c: Node) -> Option<Vec<PayloadArgSrc>> {
        let mut args = Vec::new();
        for a in elements(c) {
            if a.tag_name().name() != "arg" {
                self.unknown_child(a, "args");
                continue;
            }
            args.push(self.payload_arg(a)?);
        }
        Some(args)
    }

    fn payload_arg(&mut self, a: Node) -> Option<PayloadArgSrc> {
        let evaluators = [("xml", false), ("json", true)];
        let json_path =
            self.attr_one_of(a, "evaluator", "xml", "argument evaluator", &evaluators)?;
        let literal = self.true_or_false(a, "literal", false)?;
        let Some(value) = self.value_or_expr(a) else {
            self.report(
                Severity::Error,
                a,
                "an argument needs 'value' or 'expression'",
            );
            return None;
        };
        Some(PayloadArgSrc {
            value,
            json_path,
            literal,
        })
    }

    pub(super) fn enrich(&mut self, n: Node) -> Option<Enrich> {
        let (Some(s), Some(t)) = (child(n, "source"), child(n, "target")) else {
            self.report(Severity::Error, n, "enrich needs a <source> and a <target>");
            return None;
        };
        let clone = self.true_or_false(s, "clone", true)?;
        let source = EnrichSource {
            kind: self.enrich_source(s)?,
            clone,
            loc: self.loc(s),
        };
        let target = self.enrich_target(t)?;
        self.enrich_runs(&source, s, &target, t)?;
        Some(Enrich { source, target })
    }

    /// `type="custom"`'s `xpath`.
    fn custom_xpath(&mut self, e: Node) -> Option<ExprSrc> {
        let x = self.expr_attr(e, "xpath");
        if x.is_none() {
            self.report(Severity::Error, e, "type=\"custom\" needs an 'xpath'");
        }
        x
    }

    fn enrich_source(&mut self, s: Node) -> Option<EnrichSourceKind> {
        Some(match s.attribute("type").unwrap_or("custom") {
            "custom" => EnrichSourceKind::Custom(self.custom_xpath(s)?),
            "envelope" => EnrichSourceKind::Envelope,
            "body" => EnrichSourceKind::Body,
            "property" => EnrichSourceKind::Property(self.required_attr(s, "property")?),
            "inline" => self.inline_source(s, true)?,
            other => {
                self.report(
                    Severity::Unsupported,
                    s,
                    format!("enrich source type '{other}' is not supported"),
                );
                return None;
            }
        })
    }

    fn enrich_target(&mut self, t: Node) -> Option<EnrichTarget> {
        let action = match t.attribute("action").unwrap_or("replace") {
            "replace" => EnrichAction::Replace,
            "child" => EnrichAction::Child,
            "sibling" => EnrichAction::Sibling,
            "remove" => EnrichAction::Remove,
            other => {
                self.report(
                    Severity::Unsupported,
                    t,
                    format!("enrich target action '{other}' is not supported"),
                );
                return None;
            }
        };
        let kind = match t.attribute("type").unwrap_or("custom") {
            "custom" => EnrichTargetKind::Custom(self.custom_xpath(t)?),
            "envelope" => EnrichTargetKind::Envelope,
            "body" => EnrichTargetKind::Body,
            "property" => EnrichTargetKind::Property(self.required_attr(t, "property")?),
            "key" => EnrichTargetKind::Key(self.custom_xpath(t)?),
            other => {
                self.report(
                    Severity::Unsupported,
                    t,
                    format!("enrich target type '{other}' is not supported"),
                );
                return None;
            }
        };
        Some(EnrichTarget {
            kind,
            action,
            loc: self.loc(t),
        })
    }

    /// `None` for the combinations of source (`s`) and target (`t`) Sluice does not run: reported
    /// here, with the position, instead of failing every message.
    fn enrich_runs(
        &mut self,
        source: &EnrichSource,
        s: Node,
        target: &EnrichTarget,
        t: Node,
    ) -> Option<()> {
        let msg_source = matches!(
            source.kind,
            EnrichSourceKind::Custom(_) | EnrichSourceKind::Body | EnrichSourceKind::Envelope
        );
        let msg_target = matches!(
            target.kind,
            EnrichTargetKind::Custom(_) | EnrichTargetKind::Body
        );
        if !source.clone && msg_source && msg_target {
            self.report(
                Severity::Unsupported,
                s,
                "clone=\"false\" (moving nodes inside the message) is not supported yet",
            );
            return None;
        }
        if target.action == EnrichAction::Remove {
            let ok = matches!(source.kind, EnrichSourceKind::Custom(_))
                && matches!(
                    target.kind,
                    EnrichTargetKind::Body | EnrichTargetKind::Property(_)
                );
            if !ok {
                let why = "action=\"remove\" takes the paths to remove from the source's xpath, and a body or property target";
                self.report(Severity::Error, t, why);
                return None;
            }
            return Some(());
        }
        if matches!(target.kind, EnrichTargetKind::Property(_))
            && target.action == EnrichAction::Sibling
        {
            self.report(
                Severity::Unsupported,
                t,
                "a property target with action sibling is not supported yet",
            );
            return None;
        }
        if matches!(target.kind, EnrichTargetKind::Envelope)
            && matches!(
                source.kind,
                EnrichSourceKind::Body | EnrichSourceKind::InlineText(_)
            )
        {
            self.report(
                Severity::Unsupported,
                t,
                "an envelope target needs a SOAP envelope as source (envelope, inline, property or custom)",
            );
            return None;
        }
        Some(())
    }

    pub(super) fn validate(&mut self, n: Node) -> Option<Validate> {
        let source = self.expr_attr(n, "source");
        let mut schemas = Vec::new();
        let mut resources = Vec::new();
        let mut on_fail = None;
        let mut dynamic_key = None;
        for c in elements(n) {
            match c.tag_name().name() {
                "schema" => {
                    let Some(k) = self.required_attr(c, "key") else {
                        continue;
                    };
                    if let Some(e) = k.strip_prefix('{').and_then(|k| k.strip_suffix('}')) {
                        dynamic_key = Some(self.expr(c, "key", e));
                    }
                    schemas.push((k, self.attr_loc(c, "key")));
                }
                "on-fail" => on_fail = Some(self.sequence(c)),
                "feature" => self.report(
                    Severity::Warning,
                    c,
                    "validator features are ignored (libxml2 XML Schema)",
                ),
                "resource" => {
                    let location = self.required_attr(c, "location");
                    let key = self.required_attr(c, "key");
                    if let (Some(location), Some(key)) = (location, key) {
                        resources.push((location, key, self.attr_loc(c, "key")));
                    }
                }
                _ => self.unknown_child(c, "validate"),
            }
        }
        if schemas.is_empty() {
            self.report(
                Severity::Error,
                n,
                "validate needs at least one <schema key>",
            );
            return None;
        }
        if dynamic_key.is_some() && (schemas.len() > 1 || !resources.is_empty()) {
            self.report(
                Severity::Unsupported,
                n,
                "a schema key computed per message ({...}) together with other schemas or resources is not supported yet",
            );
            return None;
        }
        let on_fail = self.needed(on_fail, n, "validate needs an <on-fail> sequence")?;
        Some(Validate {
            source,
            schemas,
            dynamic_key,
            resources,
            on_fail,
        })
    }

    pub(super) fn makefault(&mut self, n: Node) -> Option<MakeFault> {
        let versions = [
            ("soap11", FaultVersion::Soap11),
            ("soap12", FaultVersion::Soap12),
            ("pox", FaultVersion::Pox),
        ];
        let version = self.attr_one_of(n, "version", "soap11", "version", &versions)?;
        let response = n.attribute("response") == Some("true");
        let mut f = MakeFault {
            version,
            code: None,
            reason: None,
            role: None,
            node: None,
            detail: None,
            response,
        };
        for c in elements(n) {
            match c.tag_name().name() {
                "code" => f.code = self.fault_code(c),
                "reason" => {
                    f.reason = self.value_or_expr(c);
                    if f.reason.is_none() {
                        self.report(Severity::Error, c, "reason needs 'value' or 'expression'");
                    }
                }
                "role" => f.role = Some(text_of(c)),
                "node" => f.node = Some(text_of(c)),
                "detail" => {
                    f.detail = if let Some(v) = self.value_or_expr(c) {
                        Some(FaultDetail::Value(v))
                    } else if elements(c).next().is_some() {
                        Some(FaultDetail::Xml(
                            elements(c).map(|e| self.serialize_element(e)).collect(),
                        ))
                    } else {
                        Some(FaultDetail::Value(ValueSrc::Literal(text_of(c))))
                    }
                }
                _ => self.unknown_child(c, "makefault"),
            }
        }
        if version != FaultVersion::Pox && f.code.is_none() && child(n, "code").is_none() {
            self.report(Severity::Error, n, "a SOAP fault needs a <code>");
        }
        Some(f)
    }

    /// A makefault `<code>`: a QName `value`, else an `expression` (as Synapse's
    /// FaultMediatorFactory, which takes the value first).
    fn fault_code(&mut self, c: Node) -> Option<FaultCode> {
        if let Some(v) = c.attribute("value") {
            let (prefix, local) = match v.split_once(':') {
                Some((p, l)) => (Some(p), l),
                None => (None, v),
            };
            return match c.lookup_namespace_uri(prefix) {
                Some(uri) => Some(FaultCode::QName(
                    uri.to_owned(),
                    local.to_owned(),
                    prefix.unwrap_or_default().to_owned(),
                )),
                None => {
                    self.report(
                        Severity::Error,
                        c,
                        format!("fault code '{v}' uses an undeclared prefix"),
                    );
                    None
                }
            };
        }
        if let Some(e) = self.expr_attr(c, "expression") {
            return Some(FaultCode::Expr(e));
        }
        self.report(Severity::Error, c, "code needs 'value' or 'expression'");
        None
    }
}

impl FileParser<'_, '_> {
    /// MI's `<jsontransform schema>` and its `<property name value>`s (one of them is needed).
    pub(super) fn json_transform(&mut self, n: Node) -> Option<JsonTransform> {
        let schema = n
            .attribute("schema")
            .map(|k| (k.to_owned(), self.attr_loc(n, "schema")));
        let mut properties = Vec::new();
        for c in elements(n) {
            if c.tag_name().name() != "property" {
                self.unknown_child(c, "jsontransform");
                continue;
            }
            let name = self.required_attr(c, "name")?;
            let value = self.required_attr(c, "value")?;
            properties.push((name, value, self.loc(c)));
        }
        if schema.is_none() && properties.is_empty() {
            let why = "jsontransform mediator should contain either a schema or custom properties";
            self.report(Severity::Error, n, why);
            return None;
        }
        Some(JsonTransform { schema, properties })
    }
}

#[cfg(test)]
mod tests {
    use crate::model::*;
    use crate::parse::tests::{parse, NS};

    #[test]
    fn content_mediators_parse_and_unsupported_forms_are_reported() {
        let (cfg, d) = parse(&format!(
            r#"<sequence name="S" {NS} xmlns:m="urn:m">
  <payloadFactory media-type="xml"><format><m:a><m:b>$1</m:b></m:a></format><args><arg value="x"/><arg expression="//m:q" evaluator="xml"/></args></payloadFactory>
  <enrich><source type="body" clone="true"/><target type="property" property="saved"/></enrich>
  <validate source="//m:a"><schema key="xsd"/><on-fail><drop/></on-fail></validate>
  <property name="om" type="OM"><m:x/></property>
</sequence>"#
        ));
        assert!(d.items.is_empty(), "{:?}", d.items);
        let m = &cfg.sequences[0].sequence.mediators;
        let MediatorKind::PayloadFactory(pf) = &m[0].kind else {
            panic!()
        };
        assert!(matches!(&pf.format, PayloadFormat::Inline(t) if t.contains(r#"xmlns:m="urn:m""#)));
        assert_eq!(pf.args.len(), 2);
        assert!(
            matches!(&m[1].kind, MediatorKind::Enrich(e) if matches!(e.source.kind, EnrichSourceKind::Body))
        );
        assert!(matches!(&m[2].kind, MediatorKind::Validate(v) if v.schemas.len() == 1));
        assert!(matches!(&m[3].kind, MediatorKind::Property(p) if p.ty == PropertyType::Om));
        let (_, d) = parse(&format!(
            r#"<sequence name="S" {NS}>
  <payloadFactory media-type="csv"><format>a</format></payloadFactory>
  <enrich><source type="custom" xpath="//a" clone="false"/><target type="body"/></enrich>
  <enrich><source type="body"/><target type="envelope"/></enrich>
  <payloadFactory media-type="json"><format>{{"a": "$1", "b": $2}}</format>
    <args><arg evaluator="json" expression="$.x" literal="true"/><arg value="1"/></args></payloadFactory>
  <payloadFactory><format><a/></format><args><arg evaluator="js" expression="x"/></args></payloadFactory>
</sequence>"#
        ));
        let msgs: Vec<String> = d.items.iter().map(|x| x.to_string()).collect();
        assert_eq!(msgs.len(), 4, "{msgs:#?}");
        assert!(msgs[0].starts_with("t.xml:2:3: error:"), "{msgs:#?}");
        assert!(msgs[1].contains("clone=\"false\""), "{msgs:#?}");
        assert!(msgs[2].contains("envelope target"), "{msgs:#?}");
        assert!(
            msgs[3].contains("evaluator must be xml or json"),
            "{msgs:#?}"
        );
    }
}
