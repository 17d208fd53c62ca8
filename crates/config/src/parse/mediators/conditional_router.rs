//! `<conditionalRouter>`: routes, each a condition in Synapse's evaluator language
//! ([`super::evaluator`]) and a target (a sequence, an endpoint or a `to` address) the message
//! goes to when it holds. Its model and its parser.

use super::super::elements;
use super::evaluator::Condition;
use super::FileParser;
use crate::diag::{Location, Severity};
use crate::model::CloneTarget;
use roxmltree::Node;

/// `<conditionalRouter continueAfter>`: the routes in order; after them the sequence goes on only
/// with `continue_after` (default false).
#[derive(Clone, Debug)]
pub struct ConditionalRouter {
    pub continue_after: bool,
    pub routes: Vec<ConditionalRoute>,
}

/// `<conditionalRoute breakRoute>`: when `condition` holds, the
/// message goes through `target`; then, with `break_route` (default true), no later route is
/// tried.
#[derive(Clone, Debug)]
pub struct ConditionalRoute {
    pub loc: Location,
    pub break_route: bool,
    pub condition: Condition,
    pub target: CloneTarget,
}

impl FileParser<'_, '_> {
    pub(super) fn conditional_router(&mut self, n: Node) -> Option<ConditionalRouter> {
        let continue_after = self.true_or_false(n, "continueAfter", false)?;
        let mut routes = Vec::new();
        let mut ok = true;
        for c in elements(n) {
            match c.tag_name().name() {
                "conditionalRoute" => match self.conditional_route(c) {
                    Some(r) => routes.push(r),
                    None => ok = false,
                },
                _ => self.unknown_child(c, "conditionalRouter"),
            }
        }
        ok.then_some(ConditionalRouter {
            continue_after,
            routes,
        })
    }

    fn conditional_route(&mut self, n: Node) -> Option<ConditionalRoute> {
        let break_route = self.true_or_false(n, "breakRoute", true)?;
        let condition = elements(n).find(|c| c.tag_name().name() == "condition");
        let Some(first) = condition.and_then(|c| elements(c).next()) else {
            self.report(
                Severity::Error,
                n,
                "a conditional route needs a <condition>",
            );
            return None;
        };
        let condition = self.condition(first)?;
        let t = self.needed(
            elements(n).find(|c| c.tag_name().name() == "target"),
            n,
            "a conditional route needs a <target>",
        )?;
        let target = self.clone_target(t)??;
        Some(ConditionalRoute {
            loc: self.loc(n),
            break_route,
            condition,
            target,
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::model::*;
    use crate::parse::tests::mediator_of;

    fn router_of(xml: &str) -> (Option<ConditionalRouter>, Vec<String>) {
        mediator_of(xml, |m| match m {
            MediatorKind::ConditionalRouter(r) => Some(r.clone()),
            _ => None,
        })
    }

    #[test]
    fn routes_parse_with_synapse_defaults() {
        let (r, d) = router_of(
            r#"<conditionalRouter><conditionalRoute><condition><match xmlns="" type="header" source="foo" regex="bar.*"/></condition><target sequence="a"/></conditionalRoute><conditionalRoute breakRoute="false"><condition><equal source="x" value="1"/></condition><target><sequence><drop/></sequence></target></conditionalRoute></conditionalRouter>"#,
        );
        assert!(d.is_empty(), "{d:?}");
        let r = r.unwrap();
        assert!(!r.continue_after);
        assert_eq!(r.routes.len(), 2);
        assert!(r.routes[0].break_route);
        assert!(!r.routes[1].break_route);
        assert!(matches!(r.routes[0].condition, Condition::Match { .. }));
    }

    /// Synapse and MI read `conditionalRoute` alone: a `<route>` is an unknown child, left out.
    #[test]
    fn a_route_element_is_not_a_conditional_route() {
        let (r, d) = router_of(
            r#"<conditionalRouter><route><condition><equal source="x" value="1"/></condition><target sequence="a"/></route></conditionalRouter>"#,
        );
        assert!(r.unwrap().routes.is_empty());
        assert!(d.iter().any(|m| m.contains("route")), "{d:?}");
    }

    #[test]
    fn a_route_needs_a_condition_and_a_target() {
        for (xml, msg) in [
            (
                r#"<conditionalRouter><conditionalRoute><target sequence="a"/></conditionalRoute></conditionalRouter>"#,
                "needs a <condition>",
            ),
            (
                r#"<conditionalRouter><conditionalRoute><condition><equal source="x" value="1"/></condition></conditionalRoute></conditionalRouter>"#,
                "needs a <target>",
            ),
            (
                r#"<conditionalRouter continueAfter="yes"/>"#,
                "continueAfter",
            ),
        ] {
            let (r, d) = router_of(xml);
            assert!(r.is_none(), "{xml}");
            assert!(d.iter().any(|m| m.contains(msg)), "{xml}: {d:?}");
        }
    }
}
