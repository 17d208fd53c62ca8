//! Mediators that choose a path: filter, switch, and in/out.

use super::super::{child, elements};
use super::FileParser;
use crate::diag::Severity;
use crate::model::*;
use roxmltree::Node;

impl FileParser<'_, '_> {
    pub(super) fn filter(&mut self, n: Node) -> Option<Filter> {
        let cond = match (
            n.attribute("source"),
            n.attribute("regex"),
            n.attribute("xpath"),
        ) {
            (Some(s), Some(r), None) => FilterCond::Regex {
                source: self.expr(n, "source", s),
                regex: r.to_owned(),
                regex_loc: self.attr_loc(n, "regex"),
            },
            (None, None, Some(x)) => FilterCond::XPath(self.expr(n, "xpath", x)),
            _ => {
                self.report(
                    Severity::Error,
                    n,
                    "filter needs either 'source' and 'regex', or 'xpath'",
                );
                return None;
            }
        };
        let then_el = child(n, "then");
        let else_el = child(n, "else");
        let (then, otherwise) = if then_el.is_some() || else_el.is_some() {
            for c in elements(n) {
                let name = c.tag_name().name();
                // As Synapse's FilterMediatorFactory, which then reads only those two.
                if name != "then" && name != "else" {
                    self.unknown_child(c, "filter");
                }
            }
            let then = match then_el {
                Some(t) => self.sequence(t),
                None => Sequence {
                    loc: self.loc(n),
                    mediators: Vec::new(),
                    on_error: None,
                },
            };
            (then, else_el.map(|e| self.sequence(e)))
        } else {
            (self.sequence(n), None)
        };
        Some(Filter {
            cond,
            then,
            otherwise,
        })
    }

    pub(super) fn switch(&mut self, n: Node) -> Option<Switch> {
        let source = self.expr_attr(n, "source");
        let mut cases = Vec::new();
        let mut default = None;
        for c in elements(n) {
            match c.tag_name().name() {
                "case" => {
                    let Some(regex) = self.required_attr(c, "regex") else {
                        continue;
                    };
                    let loc = self.attr_loc(c, "regex");
                    cases.push(Case {
                        regex,
                        loc,
                        sequence: self.sequence(c),
                    });
                }
                "default" => default = Some(self.sequence(c)),
                _ => self.unknown_child(c, "switch"),
            }
        }
        let source = self.needed(source, n, "missing required attribute 'source'")?;
        Some(Switch {
            source,
            cases,
            default,
        })
    }

    /// `<in>` or `<out>` (`response`): its mediators run only on a request, or only on a response.
    pub(super) fn direction(&mut self, n: Node, response: bool) -> MediatorKind {
        MediatorKind::Direction {
            response,
            body: self.sequence(n),
        }
    }
}
