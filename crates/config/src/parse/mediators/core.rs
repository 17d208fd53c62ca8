//! The core mediators: log, property and header.

use super::super::elements;
use super::FileParser;
use crate::diag::Severity;
use crate::model::*;
use roxmltree::Node;

impl FileParser<'_, '_> {
    pub(super) fn log(&mut self, n: Node) -> Option<Log> {
        let level = match n.attribute("level").unwrap_or("simple") {
            "simple" => LogLevel::Simple,
            "headers" => LogLevel::Headers,
            "full" => LogLevel::Full,
            "custom" => LogLevel::Custom,
            other => {
                self.report(
                    Severity::Error,
                    n,
                    format!("log level must be simple, headers, full or custom, not '{other}'"),
                );
                return None;
            }
        };
        let category = match n.attribute("category").unwrap_or("INFO") {
            "TRACE" => LogCategory::Trace,
            "DEBUG" => LogCategory::Debug,
            "INFO" => LogCategory::Info,
            "WARN" => LogCategory::Warn,
            "ERROR" => LogCategory::Error,
            "FATAL" => LogCategory::Fatal,
            other => {
                self.report(Severity::Error, n, format!("log category must be TRACE, DEBUG, INFO, WARN, ERROR or FATAL, not '{other}'"));
                LogCategory::Info
            }
        };
        let separator = n.attribute("separator").unwrap_or(", ").to_owned();
        let mut properties = Vec::new();
        for c in elements(n) {
            match c.tag_name().name() {
                "property" => properties.extend(self.named_value(c, "log property")),
                "description" => {}
                other => self.report(
                    Severity::Error,
                    c,
                    format!("unknown element <{other}> in <log>"),
                ),
            }
        }
        Some(Log {
            level,
            category,
            separator,
            properties,
        })
    }

    pub(super) fn property(&mut self, n: Node) -> Option<Property> {
        let name = self.required_attr(n, "name")?;
        let scope = self.scope(n)?;
        let ty = match n.attribute("type").unwrap_or("STRING") {
            "STRING" => PropertyType::String,
            "INTEGER" => PropertyType::Integer,
            "BOOLEAN" => PropertyType::Boolean,
            "LONG" => PropertyType::Long,
            "DOUBLE" => PropertyType::Double,
            "FLOAT" => PropertyType::Float,
            "SHORT" => PropertyType::Short,
            "OM" => PropertyType::Om,
            other => {
                self.report(
                    Severity::Error,
                    n,
                    format!("unknown property type '{other}'"),
                );
                return None;
            }
        };
        let mut ty = ty;
        let action = match n.attribute("action").unwrap_or("set") {
            "set" => match self.value_or_expr(n) {
                Some(v) => Action::Set(v),
                None => {
                    if let Some(c) = elements(n).next() {
                        // An inline XML value: the property holds that element (type OM).
                        ty = PropertyType::Om;
                        Action::Set(ValueSrc::Literal(self.serialize_element(c)))
                    } else {
                        self.report(
                            Severity::Error,
                            n,
                            "property needs 'value' or 'expression' (or action=\"remove\")",
                        );
                        return None;
                    }
                }
            },
            "remove" => Action::Remove,
            other => {
                self.report(
                    Severity::Error,
                    n,
                    format!("action must be set or remove, not '{other}'"),
                );
                return None;
            }
        };
        if n.attribute("pattern").is_some() {
            self.report(
                Severity::Unsupported,
                n,
                "property 'pattern'/'group' are not supported yet",
            );
            return None;
        }
        Some(Property {
            name,
            scope,
            ty,
            action,
        })
    }

    pub(super) fn header(&mut self, n: Node) -> Option<Header> {
        let name = self.required_attr(n, "name")?;
        let scope = match n.attribute("scope").unwrap_or("default") {
            "default" => HeaderScope::Default,
            "transport" => HeaderScope::Transport,
            other => {
                self.report(
                    Severity::Error,
                    n,
                    format!("header scope must be default or transport, not '{other}'"),
                );
                return None;
            }
        };
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
        let action = match n.attribute("action").unwrap_or("set") {
            "set" => match self.value_or_expr(n) {
                Some(v) => Action::Set(v),
                None => {
                    if elements(n).next().is_some() {
                        self.report(
                            Severity::Unsupported,
                            n,
                            "inline XML SOAP headers are not supported yet",
                        );
                    } else {
                        self.report(
                            Severity::Error,
                            n,
                            "header needs 'value' or 'expression' (or action=\"remove\")",
                        );
                    }
                    return None;
                }
            },
            "remove" => Action::Remove,
            other => {
                self.report(
                    Severity::Error,
                    n,
                    format!("action must be set or remove, not '{other}'"),
                );
                return None;
            }
        };
        Some(Header {
            name,
            namespace,
            scope,
            action,
        })
    }
}
