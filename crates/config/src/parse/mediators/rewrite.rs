//! `<rewrite>`, Synapse's URL rewrite mediator: its model and its parser. Its conditions are
//! Synapse's evaluator language ([`super::evaluator`]).

use super::super::elements;
use super::evaluator::{Condition, UriPart, PARTS};
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
}

#[cfg(test)]
mod tests {
    use crate::model::*;
    use crate::parse::tests::mediator_of;

    fn rewrite_of(xml: &str) -> (Option<Rewrite>, Vec<String>) {
        mediator_of(xml, |m| match m {
            MediatorKind::Rewrite(r) => Some(r.clone()),
            _ => None,
        })
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
