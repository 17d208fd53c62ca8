//! The core mediators: log, property, header, a sequence by name and call-template (drop, loopback and
//! respond have nothing to parse).

use super::super::elements;
use super::FileParser;
use crate::diag::Severity;
use crate::model::*;
use roxmltree::Node;

impl FileParser<'_, '_> {
    pub(super) fn log(&mut self, n: Node) -> Option<Log> {
        let levels = [
            ("simple", LogLevel::Simple),
            ("headers", LogLevel::Headers),
            ("full", LogLevel::Full),
            ("custom", LogLevel::Custom),
        ];
        // As Synapse 3.0.1's LogMediatorFactory: a level it does not know (`none` included) leaves
        // the default, simple. WSO2 MI refuses one since 2018; said in the warning.
        let level = match n.attribute("level") {
            None => LogLevel::Simple,
            Some(l) => match levels.iter().find(|(word, _)| *word == l) {
                Some(&(_, level)) => level,
                None => {
                    self.report(
                        Severity::Warning,
                        n,
                        format!("log level '{l}' is not simple, headers, full or custom: logged at the simple level, as Synapse does (WSO2 MI refuses it)"),
                    );
                    LogLevel::Simple
                }
            },
        };
        let categories = [
            ("TRACE", LogCategory::Trace),
            ("DEBUG", LogCategory::Debug),
            ("INFO", LogCategory::Info),
            ("WARN", LogCategory::Warn),
            ("ERROR", LogCategory::Error),
            ("FATAL", LogCategory::Fatal),
        ];
        // Both Synapse and MI read the category trimmed, in any case.
        let category = n
            .attribute("category")
            .map(|c| c.trim().to_ascii_uppercase());
        let category = self
            .one_of(
                n,
                "log category",
                category.as_deref().unwrap_or("INFO"),
                &categories,
            )
            .unwrap_or(LogCategory::Info);
        let separator = n.attribute("separator").unwrap_or(", ").to_owned();
        let mut properties = Vec::new();
        let mut message = None;
        for c in elements(n) {
            match c.tag_name().name() {
                "property" => properties.extend(self.named_value(c, "log property")),
                // MI 4.4's message template.
                "message" => message = Some(self.message_template(c)?),
                _ => self.unknown_child(c, "log"),
            }
        }
        Some(Log {
            level,
            category,
            separator,
            properties,
            message,
        })
    }

    /// The text of `n` as MI 4.4's templates read it: literal text and `${...}` expressions (a
    /// brace inside a quoted string does not end one).
    fn message_template(&mut self, n: Node) -> Option<Vec<ValueSrc>> {
        let text: String = n.children().filter_map(|c| c.text()).collect();
        let mut parts = Vec::new();
        let mut rest = text.as_str();
        while let Some(at) = rest.find("${") {
            let Some(len) = expression_len(&rest[at..]) else {
                self.report(Severity::Error, n, "a ${ in the message is not closed by }");
                return None;
            };
            if at > 0 {
                parts.push(ValueSrc::Literal(rest[..at].to_owned()));
            }
            let e = ExprSrc {
                text: rest[at..at + len].to_owned(),
                ns: self.namespaces(n),
                loc: self.loc(n),
            };
            parts.push(ValueSrc::Expr(e));
            rest = &rest[at + len..];
        }
        if !rest.is_empty() {
            parts.push(ValueSrc::Literal(rest.to_owned()));
        }
        Some(parts)
    }

    /// MI 4.4's `<variable>`. A literal value that does not fit its type is refused here, as MI
    /// refuses to deploy it.
    pub(super) fn variable(&mut self, n: Node) -> Option<Variable> {
        let name = self.required_attr(n, "name")?;
        let types = [
            ("STRING", VariableType::String),
            ("BOOLEAN", VariableType::Boolean),
            ("INTEGER", VariableType::Integer),
            ("INT", VariableType::Integer),
            ("SHORT", VariableType::Integer),
            ("BYTE", VariableType::Integer),
            ("LONG", VariableType::Long),
            ("DOUBLE", VariableType::Double),
            ("FLOAT", VariableType::Double),
            ("JSON", VariableType::Json),
            ("XML", VariableType::Xml),
            ("OM", VariableType::Xml),
        ];
        let ty = self.one_of(
            n,
            "variable type",
            n.attribute("type").unwrap_or("STRING"),
            &types,
        )?;
        if n.attribute("action") == Some("remove") {
            return Some(Variable { name, set: None });
        }
        let Some(value) = self.value_or_expr(n) else {
            self.report(
                Severity::Error,
                n,
                "variable needs 'value' or 'expression' (or action=\"remove\")",
            );
            return None;
        };
        if let ValueSrc::Literal(v) = &value {
            if let Err(why) = literal_fits(v, ty) {
                self.report(Severity::Error, n, format!("variable '{name}': {why}"));
                return None;
            }
        }
        Some(Variable {
            name,
            set: Some((value, ty)),
        })
    }

    pub(super) fn property(&mut self, n: Node) -> Option<Property> {
        let name = self.required_attr(n, "name")?;
        let scope = self.scope(n)?;
        let mut ty = match n.attribute("type").unwrap_or("STRING") {
            "STRING" => PropertyType::String,
            "INTEGER" => PropertyType::Integer,
            "BOOLEAN" => PropertyType::Boolean,
            "LONG" => PropertyType::Long,
            "DOUBLE" => PropertyType::Double,
            "FLOAT" => PropertyType::Float,
            "SHORT" => PropertyType::Short,
            "OM" => PropertyType::Om,
            "JSON" => PropertyType::Json,
            other => {
                self.report(
                    Severity::Error,
                    n,
                    format!("unknown property type '{other}'"),
                );
                return None;
            }
        };
        let action = self.action(n, |p| {
            let Some(c) = elements(n).next() else {
                p.report(
                    Severity::Error,
                    n,
                    "property needs 'value' or 'expression' (or action=\"remove\")",
                );
                return None;
            };
            // An inline XML value: the property holds that element (type OM).
            ty = PropertyType::Om;
            Some(ValueSrc::Literal(p.serialize_element(c)))
        })?;
        if n.attribute("pattern").is_some() {
            self.report(
                Severity::Unsupported,
                n,
                "property 'pattern'/'group' are not supported yet",
            );
            return None;
        }
        let dynamic_name = name
            .strip_prefix('{')
            .and_then(|x| x.strip_suffix('}'))
            .map(|x| self.expr(n, "name", x));
        Some(Property {
            name,
            dynamic_name,
            scope,
            ty,
            action,
        })
    }

    pub(super) fn header(&mut self, n: Node) -> Option<Header> {
        // As Synapse's HeaderMediatorFactory: no name is needed when the header is inline XML.
        if n.attribute("name").is_none() && elements(n).next().is_some() {
            return self.inline_header(n);
        }
        let name = self.required_attr(n, "name")?;
        let scopes = [
            ("default", HeaderScope::Default),
            ("transport", HeaderScope::Transport),
        ];
        let scope = self.attr_one_of(n, "scope", "default", "header scope", &scopes)?;
        let namespace = match name.split_once(':') {
            Some((prefix, _)) if scope == HeaderScope::Default => match n
                .lookup_namespace_uri(Some(prefix))
            {
                Some(uri) => Some(uri.to_owned()),
                None => {
                    self.report(
                        Severity::Error,
                        n,
                        format!("namespace prefix '{prefix}' of header '{name}' is not declared"),
                    );
                    return None;
                }
            },
            _ => None,
        };
        let action = self.action(n, |p| {
            if elements(n).next().is_some() {
                p.report(
                    Severity::Unsupported,
                    n,
                    "inline XML SOAP headers are not supported yet",
                );
            } else {
                p.report(
                    Severity::Error,
                    n,
                    "header needs 'value' or 'expression' (or action=\"remove\")",
                );
            }
            None
        })?;
        Some(Header {
            name,
            inline: None,
            namespace,
            scope,
            action,
        })
    }

    /// `<header>` holding XML elements and no name: the elements are added to the SOAP Header
    /// (Synapse 3.0.1 appends them; removing by inline XML is MI's).
    fn inline_header(&mut self, n: Node) -> Option<Header> {
        if n.attribute("action") == Some("remove") {
            self.report(
                Severity::Unsupported,
                n,
                "removing SOAP headers given as inline XML is not supported yet",
            );
            return None;
        }
        if n.attribute("scope").is_some_and(|s| s != "default") {
            self.report(
                Severity::Error,
                n,
                "a header given as inline XML is a SOAP header: scope must be default",
            );
            return None;
        }
        let inline: String = elements(n).map(|e| self.serialize_element(e)).collect();
        Some(Header {
            name: String::new(),
            inline: Some(inline),
            namespace: None,
            scope: HeaderScope::Default,
            action: Action::Set(ValueSrc::Literal(String::new())),
        })
    }

    /// `<sequence key>`: the named sequence runs here; `{expression}`, the one it names.
    pub(super) fn sequence_ref(&mut self, n: Node) -> Option<MediatorKind> {
        let key = self.required_attr(n, "key")?;
        let dynamic = key
            .strip_prefix('{')
            .and_then(|k| k.strip_suffix('}'))
            .map(|inner| self.expr(n, "key", inner.trim()));
        Some(MediatorKind::SequenceRef { key, dynamic })
    }

    /// `<call-template target>` with its `<with-param name value>`s.
    pub(super) fn call_template(&mut self, n: Node) -> Option<MediatorKind> {
        let target = self.required_attr(n, "target")?;
        let mut params = Vec::new();
        let mut passed = Vec::new();
        for c in elements(n) {
            if c.tag_name().name() != "with-param" {
                self.unknown_child(c, "call-template");
                continue;
            }
            let Some(name) = self.required_attr(c, "name") else {
                continue;
            };
            let Some(value) = self.required_attr(c, "value") else {
                continue;
            };
            // `{...}`: an expression (XPath, or json-eval), as Synapse reads it; `{{...}}`: one
            // passed on unevaluated, with this element's namespaces.
            if let Some(e) = value.strip_prefix("{{").and_then(|v| v.strip_suffix("}}")) {
                if value.len() > 4 {
                    passed.push((name, self.expr(c, "value", e.trim())));
                    continue;
                }
            }
            let v = match value.strip_prefix('{').and_then(|v| v.strip_suffix('}')) {
                Some(e) => ValueSrc::Expr(self.expr(c, "value", e.trim())),
                None => ValueSrc::Literal(value),
            };
            params.push((name, v));
        }
        Some(MediatorKind::CallTemplate {
            target,
            params,
            passed,
        })
    }
}

/// Whether a literal variable value can be held as `ty` (MI converts it when it deploys).
fn literal_fits(v: &str, ty: VariableType) -> Result<(), String> {
    let ok = match ty {
        VariableType::Integer => v.trim().parse::<i32>().is_ok(),
        VariableType::Long => v.trim().parse::<i64>().is_ok(),
        VariableType::Double => v.trim().parse::<f64>().is_ok(),
        VariableType::Xml => roxmltree::Document::parse(v).is_ok(),
        VariableType::String | VariableType::Boolean | VariableType::Json => true,
    };
    if ok {
        Ok(())
    } else {
        Err(format!("'{v}' is not a value of type {ty:?}"))
    }
}

/// The length of the `${...}` at the start of `s`, up to its closing brace outside quotes.
fn expression_len(s: &str) -> Option<usize> {
    let mut quote = None;
    let mut depth = 0usize;
    for (k, c) in s.char_indices().skip(1) {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '{') => depth += 1,
            (None, '}') if depth == 1 => return Some(k + 1),
            (None, '}') => depth -= 1,
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use crate::diag::Severity;
    use crate::model::*;
    use crate::parse::tests::{parse, NS};

    /// Synapse takes a header with no name when it holds inline XML: its elements, serialised
    /// with the namespaces they use. Removing by inline XML is MI's (unsupported); a header with
    /// neither name nor XML is an error.
    #[test]
    fn nameless_headers_with_inline_xml_are_read() {
        let (cfg, d) = parse(&format!(
            r#"<sequence name="S" {NS} xmlns:wsa="http://www.w3.org/2005/08/addressing"><header><wsa:To>x</wsa:To></header><header action="remove"><wsa:To/></header><header value="v"/></sequence>"#
        ));
        let sev: Vec<Severity> = d.items.iter().map(|x| x.severity).collect();
        assert_eq!(
            sev,
            [Severity::Unsupported, Severity::Error],
            "{:?}",
            d.items
        );
        let MediatorKind::Header(h) = &cfg.sequences[0].sequence.mediators[0].kind else {
            panic!()
        };
        assert_eq!(
            h.inline.as_deref(),
            Some(r#"<wsa:To xmlns:wsa="http://www.w3.org/2005/08/addressing">x</wsa:To>"#)
        );
    }

    #[test]
    fn unknown_log_levels_log_simple_and_categories_read_in_any_case() {
        let (cfg, d) = parse(&format!(
            r#"<sequence name="S" {NS}><log level="none" category=" debug "/><log category="Trace"/><log category="loud"/></sequence>"#
        ));
        let sev: Vec<Severity> = d.items.iter().map(|x| x.severity).collect();
        assert_eq!(sev, [Severity::Warning, Severity::Error], "{:?}", d.items);
        assert!(d.items[0].message.contains("'none'"), "{:?}", d.items);
        let logs: Vec<(LogLevel, LogCategory)> = cfg.sequences[0]
            .sequence
            .mediators
            .iter()
            .map(|m| match &m.kind {
                MediatorKind::Log(l) => (l.level, l.category),
                _ => panic!(),
            })
            .collect();
        assert_eq!(
            logs,
            [
                (LogLevel::Simple, LogCategory::Debug),
                (LogLevel::Simple, LogCategory::Trace),
                (LogLevel::Simple, LogCategory::Info),
            ]
        );
    }
}
