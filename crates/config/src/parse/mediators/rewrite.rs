//! `<rewrite>`, Synapse's URL rewrite mediator: its model and its parser. Its conditions are
//! Synapse's evaluator language (`and`, `or`, `not`, `equal`, `match`), read by local name as
//! Synapse reads them.

use super::super::elements;
use super::FileParser;
use crate::diag::{Location, Severity};
use crate::model::ValueSrc;
use roxmltree::Node;

/// `<rewrite [inProperty] [outProperty]>`: rules applied in order to a URI (the `To` address, or
/// the property `in_property` names); the result is the new `To` (or goes into `out_property`).
#[derive(Clone, Debug)]
pub struct Rewrite {
    pub in_property: Option<String>,
    pub out_property: Option<String>,
    pub rules: Vec<RewriteRule>,
}

/// `<rewriterule>`: its actions run, in order, when its condition holds (or it has none).
#[derive(Clone, Debug)]
pub struct RewriteRule {
    pub condition: Option<Condition>,
    pub actions: Vec<RewriteAction>,
}

/// `<action type fragment value|xpath regex>`.
#[derive(Clone, Debug)]
pub struct RewriteAction {
    pub loc: Location,
    pub kind: RewriteKind,
    pub fragment: UriPart,
    /// `value`, or `xpath` (which wins when both are there); `None` only for `remove`.
    pub value: Option<ValueSrc>,
    /// `replace`'s pattern.
    pub regex: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RewriteKind {
    Set,
    Append,
    Prepend,
    Replace,
    Remove,
}

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

const PARTS: [(&str, UriPart); 8] = [
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
    pub(super) fn rewrite(&mut self, n: Node) -> Option<Rewrite> {
        let mut rules = Vec::new();
        let mut ok = true;
        for c in elements(n) {
            match c.tag_name().name() {
                "rewriterule" => match self.rewrite_rule(c) {
                    Some(r) => rules.push(r),
                    None => ok = false,
                },
                "description" => {}
                _ => self.unknown_child(c, "rewrite"),
            }
        }
        ok.then(|| Rewrite {
            in_property: n.attribute("inProperty").map(str::to_owned),
            out_property: n.attribute("outProperty").map(str::to_owned),
            rules,
        })
    }

    fn rewrite_rule(&mut self, n: Node) -> Option<RewriteRule> {
        let mut condition = None;
        let mut actions = Vec::new();
        let mut ok = true;
        for c in elements(n) {
            match c.tag_name().name() {
                // Synapse takes the first element inside the first <condition>.
                "condition" if condition.is_none() => {
                    if let Some(e) = elements(c).next() {
                        condition = self.condition(e);
                        ok &= condition.is_some();
                    }
                }
                "condition" => {}
                "action" => match self.rewrite_action(c) {
                    Some(a) => actions.push(a),
                    None => ok = false,
                },
                _ => self.unknown_child(c, "rewriterule"),
            }
        }
        ok.then_some(RewriteRule { condition, actions })
    }

    fn rewrite_action(&mut self, n: Node) -> Option<RewriteAction> {
        let kinds = [
            ("set", RewriteKind::Set),
            ("append", RewriteKind::Append),
            ("prepend", RewriteKind::Prepend),
            ("replace", RewriteKind::Replace),
            ("remove", RewriteKind::Remove),
        ];
        let kind = self.attr_one_of(n, "type", "set", "the rewrite action type", &kinds)?;
        let fragment = self.attr_one_of(n, "fragment", "full", "the URL fragment", &PARTS)?;
        let value = match (n.attribute("xpath"), n.attribute("value")) {
            (Some(x), _) => Some(ValueSrc::Expr(self.expr(n, "xpath", x))),
            (None, Some(v)) => Some(ValueSrc::Literal(v.to_owned())),
            (None, None) if kind == RewriteKind::Remove => None,
            (None, None) => {
                self.report(
                    Severity::Error,
                    n,
                    "a rewrite action needs 'value' or 'xpath'",
                );
                return None;
            }
        };
        let regex = n.attribute("regex").map(str::to_owned);
        if kind == RewriteKind::Replace && regex.is_none() {
            self.report(Severity::Error, n, "a replace action needs 'regex'");
            return None;
        }
        Some(RewriteAction {
            loc: self.loc(n),
            kind,
            fragment,
            value,
            regex,
        })
    }

    /// An evaluator element, by its local name (Synapse ignores the namespace).
    fn condition(&mut self, n: Node) -> Option<Condition> {
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

#[cfg(test)]
mod tests {
    use crate::model::*;
    use crate::parse::tests::parse;

    fn rewrite_of(xml: &str) -> (Option<Rewrite>, Vec<String>) {
        let text = format!(
            "<sequence xmlns=\"http://ws.apache.org/ns/synapse\" name=\"s\">{xml}</sequence>"
        );
        let (cfg, diags) = parse(&text);
        let r = cfg.sequences.first().and_then(|s| {
            s.sequence.mediators.iter().find_map(|m| match &m.kind {
                MediatorKind::Rewrite(r) => Some(r.clone()),
                _ => None,
            })
        });
        (r, diags.items.iter().map(|d| d.to_string()).collect())
    }

    #[test]
    fn rules_actions_and_conditions_parse_as_synapse_reads_them() {
        let (r, d) = rewrite_of(
            r#"<rewrite inProperty="i"><rewriterule><condition><and><equal type="url" source="host" value="localhost"/><not><match source="x-a" regex="b.*"/></not></and></condition><action fragment="port" value="9002"/><action type="remove" fragment="query"/><action xpath="get-property('p')" value="ignored"/></rewriterule></rewrite>"#,
        );
        assert!(d.is_empty(), "{d:?}");
        let r = r.unwrap();
        assert_eq!(r.in_property.as_deref(), Some("i"));
        let rule = &r.rules[0];
        assert!(matches!(rule.condition, Some(Condition::And(ref l)) if l.len() == 2));
        assert_eq!(rule.actions[0].fragment, UriPart::Port);
        assert_eq!(rule.actions[1].kind, RewriteKind::Remove);
        assert!(rule.actions[1].value.is_none());
        assert_eq!(rule.actions[2].fragment, UriPart::Full);
        assert!(
            matches!(rule.actions[2].value, Some(ValueSrc::Expr(_))),
            "xpath wins"
        );
    }

    #[test]
    fn what_synapse_refuses_is_reported() {
        for (xml, msg) in [
            (
                r#"<rewrite><rewriterule><action fragment="path"/></rewriterule></rewrite>"#,
                "'value' or 'xpath'",
            ),
            (
                r#"<rewrite><rewriterule><action type="replace" value="x"/></rewriterule></rewrite>"#,
                "needs 'regex'",
            ),
            (
                r#"<rewrite><rewriterule><action type="swap" value="x"/></rewriterule></rewrite>"#,
                "action type",
            ),
            (
                r#"<rewrite><rewriterule><action fragment="anchor" value="x"/></rewriterule></rewrite>"#,
                "URL fragment",
            ),
            (
                r#"<rewrite><rewriterule><condition><and><equal source="a" value="b"/></and></condition></rewriterule></rewrite>"#,
                "two or more",
            ),
            (
                r#"<rewrite><rewriterule><condition><equal type="url" source="full" value="b"/></condition></rewriterule></rewrite>"#,
                "source",
            ),
            (
                r#"<rewrite><rewriterule><condition><greater source="a" value="b"/></condition></rewriterule></rewrite>"#,
                "unknown condition",
            ),
        ] {
            let (r, d) = rewrite_of(xml);
            assert!(r.is_none(), "{xml}");
            assert!(d.iter().any(|m| m.contains(msg)), "{xml}: {d:?}");
        }
    }
}
