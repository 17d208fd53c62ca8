//! MI 4.4's branching mediators: `<foreach collection>`. Both attribute sets MI 4.4 has had are
//! read: the early one (`result-target`, `result-type`) and the later one (`update-original`,
//! `target-variable`, `result-content-type`, `result-enclosing-element`).

use super::super::{child, elements};
use super::FileParser;
use crate::diag::Severity;
use crate::model::{BranchOutput, ForeachCollection};
use roxmltree::Node;

impl FileParser<'_, '_> {
    pub(super) fn foreach_collection(&mut self, n: Node) -> Option<ForeachCollection> {
        let collection = self.required_expr(n, "collection")?;
        // As MI: only the exact "false" turns these off.
        let parallel = n.attribute("parallel-execution") != Some("false");
        let counter = n.attribute("counter-variable").map(str::to_owned);
        if counter.is_some() && parallel {
            let why =
                "the 'counter-variable' attribute is not allowed when parallel-execution is true";
            self.report(Severity::Error, n, why);
            return None;
        }
        let without_aggregation = n
            .attribute("continue-without-aggregation")
            .is_some_and(|v| v.eq_ignore_ascii_case("true"));
        let output = if without_aggregation {
            BranchOutput::Original
        } else {
            self.branch_output(n)?
        };
        for c in elements(n) {
            if c.tag_name().name() != "sequence" {
                self.unknown_child(c, "foreach");
            }
        }
        let Some(s) = child(n, "sequence") else {
            self.report(
                Severity::Error,
                n,
                "a foreach with a collection needs a <sequence>",
            );
            return None;
        };
        Some(ForeachCollection {
            collection,
            parallel,
            counter,
            output,
            without_aggregation,
            sequence: self.sequence(s),
        })
    }

    /// Where a foreach puts its results: in place, or a variable (`result-target` with
    /// `result-type`; or `update-original="false"` with `target-variable`,
    /// `result-content-type` and, for XML, `result-enclosing-element`).
    fn branch_output(&mut self, n: Node) -> Option<BranchOutput> {
        let (name, kind, enclosing) = match n.attribute("result-target") {
            Some(t) if !t.trim().is_empty() => {
                let kind = self.required_attr_named(n, "result-type", "result-target")?;
                (t.to_owned(), kind, Some(t.to_owned()))
            }
            _ if n.attribute("update-original") == Some("false") => {
                let name = self.required_attr_named(n, "target-variable", "update-original")?;
                let kind = self.required_attr_named(n, "result-content-type", "update-original")?;
                let enclosing = n.attribute("result-enclosing-element").map(str::to_owned);
                (name, kind, enclosing)
            }
            _ => return Some(BranchOutput::Original),
        };
        let xml = match kind.as_str() {
            "JSON" => false,
            "XML" => true,
            other => {
                let why = format!("the result type '{other}' is neither JSON nor XML");
                self.report(Severity::Error, n, why);
                return None;
            }
        };
        let enclosing = match enclosing {
            Some(e) => e,
            None if !xml => String::new(),
            None => {
                let why = "an XML result needs 'result-enclosing-element'";
                self.report(Severity::Error, n, why);
                return None;
            }
        };
        Some(BranchOutput::Variable {
            name,
            xml,
            enclosing,
        })
    }

    /// Attribute `attr`, which `because` makes required.
    fn required_attr_named(&mut self, n: Node, attr: &str, because: &str) -> Option<String> {
        match n.attribute(attr) {
            Some(v) if !v.trim().is_empty() => Some(v.to_owned()),
            _ => {
                let why = format!("the '{attr}' attribute is required with '{because}'");
                self.report(Severity::Error, n, why);
                None
            }
        }
    }
}
