//! Synapse's evaluator language, the conditions of `<rewrite>` rules and `<conditionalRouter>`
//! routes: `and`, `or`, `not`, `equal` and `match` over a header, a query parameter, a property or
//! the URL. Elements are read by local name, as Synapse reads them.

use super::super::elements;
use super::FileParser;
use crate::diag::{Location, Severity};
use roxmltree::Node;

/// A part of a URI, as `fragment` and a `url` condition's `source` name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UriPart {
    Protocol,
    User,
    Host,
    Port,
    Path,
    Query,
    Ref,
    /// The whole URI (an action's default).
    Full,
}

/// An evaluator: a condition on the message.
#[derive(Clone, Debug)]
pub enum Condition {
    And(Vec<Condition>),
    Or(Vec<Condition>),
    Not(Box<Condition>),
    /// `<equal type source value>`: the source's text equals `value`, ignoring case.
    Equal {
        source: ConditionSource,
        value: String,
    },
    /// `<match type source regex>`: the whole of the source's text matches.
    Match {
        source: ConditionSource,
        regex: String,
        loc: Location,
    },
}

/// Where `equal` and `match` read their text (`type`, then `source`).
#[derive(Clone, Debug)]
pub enum ConditionSource {
    /// `header` (also without a `type`): an HTTP header of the request.
    Header(String),
    /// `param`: a query parameter of the URL being rewritten.
    Param(String),
    /// `property`: a message property.
    Property(String),
    /// `url`: the URL, or one part of it.
    Url(Option<UriPart>),
}

pub(super) const PARTS: [(&str, UriPart); 8] = [
    ("protocol", UriPart::Protocol),
    ("user", UriPart::User),
    ("host", UriPart::Host),
    ("port", UriPart::Port),
    ("path", UriPart::Path),
    ("query", UriPart::Query),
    ("ref", UriPart::Ref),
    ("full", UriPart::Full),
];

impl FileParser<'_, '_> {
    /// An evaluator element, by its local name (Synapse ignores the namespace).
    pub(super) fn condition(&mut self, n: Node) -> Option<Condition> {
        let name = n.tag_name().name();
        match name {
            "and" | "or" => {
                let mut list = Vec::new();
                for c in elements(n) {
                    list.push(self.condition(c)?);
                }
                if list.len() < 2 {
                    self.report(
                        Severity::Error,
                        n,
                        format!("<{name}> needs two or more conditions"),
                    );
                    return None;
                }
                Some(if name == "and" {
                    Condition::And(list)
                } else {
                    Condition::Or(list)
                })
            }
            "not" => match elements(n).next() {
                Some(c) => Some(Condition::Not(Box::new(self.condition(c)?))),
                None => {
                    self.report(Severity::Error, n, "<not> needs a condition");
                    None
                }
            },
            "equal" => {
                let source = self.condition_source(n)?;
                let value = self.required_attr(n, "value")?;
                Some(Condition::Equal { source, value })
            }
            "match" => {
                let source = self.condition_source(n)?;
                let regex = self.required_attr(n, "regex")?;
                Some(Condition::Match {
                    source,
                    regex,
                    loc: self.attr_loc(n, "regex"),
                })
            }
            other => {
                self.report(
                    Severity::Error,
                    n,
                    format!("unknown condition <{other}>: and, or, not, equal or match"),
                );
                None
            }
        }
    }

    fn condition_source(&mut self, n: Node) -> Option<ConditionSource> {
        let ty = n.attribute("type").unwrap_or("header");
        if ty == "url" {
            let part = match n.attribute("source") {
                None => None,
                Some(s) => Some(self.one_of(n, "a url condition's source", s, &PARTS[..7])?),
            };
            return Some(ConditionSource::Url(part));
        }
        type Make = fn(String) -> ConditionSource;
        let kinds: [(&str, Make); 3] = [
            ("header", ConditionSource::Header),
            ("param", ConditionSource::Param),
            ("property", ConditionSource::Property),
        ];
        if ty == "soap" {
            self.report(
                Severity::Unsupported,
                n,
                "conditions of type soap are not supported yet",
            );
            return None;
        }
        let make = self.one_of(n, "a condition's type", ty, &kinds)?;
        Some(make(self.required_attr(n, "source")?))
    }
}
