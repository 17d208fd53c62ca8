//! MI 4.4's branching mediators: `<foreach collection>` and `<scatter-gather>`. Both attribute sets
//! MI 4.4 has had are read: the early one (`result-target`, `result-type` / `content-type`,
//! `root-element`) and the later one (`update-original`, `target`, `target-variable`,
//! `result-content-type`, `result-enclosing-element`).

use super::super::{child, elements};
use super::FileParser;
use crate::diag::Severity;
use crate::model::{BranchOutput, ForeachCollection, ScatterGather};
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
        let xml = self.result_is_xml(n, &kind)?;
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

    pub(super) fn scatter_gather(&mut self, n: Node) -> Option<ScatterGather> {
        let parallel = n.attribute("parallel-execution") != Some("false");
        // Early: result-target="body" or a variable's name; later: target="body|variable".
        let variable = match (n.attribute("result-target"), n.attribute("target")) {
            (Some(t), _) if t.eq_ignore_ascii_case("body") => None,
            (Some(t), _) => Some(t.to_owned()),
            (None, Some(t)) if t.eq_ignore_ascii_case("body") => None,
            (None, Some(t)) if t.eq_ignore_ascii_case("variable") => {
                Some(self.required_attr_named(n, "target-variable", "target=\"variable\"")?)
            }
            (None, Some(t)) => {
                let why = format!("the target '{t}' should be either 'body' or 'variable'");
                self.report(Severity::Error, n, why);
                return None;
            }
            (None, None) => {
                self.report(
                    Severity::Error,
                    n,
                    "a scatter-gather needs a 'target' (or 'result-target')",
                );
                return None;
            }
        };
        let kind = match n
            .attribute("result-content-type")
            .or(n.attribute("content-type"))
        {
            Some(k) => k,
            None => {
                self.report(
                    Severity::Error,
                    n,
                    "a scatter-gather needs a 'result-content-type'",
                );
                return None;
            }
        };
        let xml = self.result_is_xml(n, kind)?;
        let enclosing = n
            .attribute("result-enclosing-element")
            .or(n.attribute("root-element"))
            .unwrap_or_default()
            .to_owned();
        if xml && enclosing.is_empty() {
            let why = "an XML result needs 'result-enclosing-element'";
            self.report(Severity::Error, n, why);
            return None;
        }
        let Some(agg) = child(n, "aggregation") else {
            self.report(
                Severity::Error,
                n,
                "a scatter-gather needs an <aggregation>",
            );
            return None;
        };
        let expression = self.required_expr(agg, "expression")?;
        let condition = self.expr_attr(agg, "condition");
        let timeout_ms = match agg.attribute("timeout").map(|t| t.trim().parse::<u64>()) {
            None => 0,
            Some(Ok(t)) => t,
            Some(Err(_)) => {
                self.report(
                    Severity::Error,
                    agg,
                    "the aggregation timeout is not a number of milliseconds",
                );
                return None;
            }
        };
        let max = match agg
            .attribute("max-messages")
            .map(|m| m.trim().parse::<f64>())
        {
            None => None,
            Some(Ok(m)) if m >= 1.0 => Some(m as usize),
            Some(Ok(_)) => None,
            Some(Err(_)) => {
                self.report(Severity::Error, agg, "max-messages is not a number");
                return None;
            }
        };
        let mut sequences = Vec::new();
        for c in elements(n) {
            match c.tag_name().name() {
                "sequence" => sequences.push(self.sequence(c)),
                "aggregation" => {}
                _ => self.unknown_child(c, "scatter-gather"),
            }
        }
        if sequences.is_empty() {
            self.report(
                Severity::Error,
                n,
                "a scatter-gather needs at least one <sequence>",
            );
            return None;
        }
        Some(ScatterGather {
            parallel,
            variable,
            xml,
            enclosing,
            expression,
            condition,
            timeout_ms,
            max,
            sequences,
        })
    }

    /// A result type: `JSON` or `XML` exactly, as MI takes them (whether it is XML).
    fn result_is_xml(&mut self, n: Node, kind: &str) -> Option<bool> {
        match kind {
            "JSON" => Some(false),
            "XML" => Some(true),
            other => {
                let why = format!("the result type '{other}' is neither JSON nor XML");
                self.report(Severity::Error, n, why);
                None
            }
        }
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

#[cfg(test)]
mod tests {
    use crate::model::{BranchOutput, MediatorKind};
    use crate::Severity;

    /// The first mediator of sequence `main` holding `m`, and the errors.
    fn parse(m: &str) -> (Option<MediatorKind>, Vec<String>) {
        let xml = format!(
            r#"<definitions xmlns="http://ws.apache.org/ns/synapse"><sequence name="main">{m}</sequence></definitions>"#
        );
        let (cfg, diags) = crate::load_str("t.xml", &xml);
        let errors = (diags.items.iter())
            .filter(|d| d.severity == Severity::Error)
            .map(|d| d.message.clone())
            .collect();
        let first = cfg
            .sequences
            .first()
            .and_then(|s| s.sequence.mediators.first());
        (first.map(|m| m.kind.clone()), errors)
    }

    #[test]
    fn foreach_reads_both_attribute_sets_and_refuses_what_mi_refuses() {
        let early = r#"<foreach collection="${payload.a}" result-target="r" result-type="XML" parallel-execution="false" counter-variable="i"><sequence/></foreach>"#;
        let Some(MediatorKind::ForeachCollection(f)) = parse(early).0 else {
            panic!("not read")
        };
        assert!(!f.parallel && f.counter.as_deref() == Some("i"));
        assert!(
            matches!(f.output, BranchOutput::Variable { ref name, xml: true, ref enclosing } if name == "r" && enclosing == "r")
        );
        let later = r#"<foreach collection="${payload.a}" update-original="false" target-variable="v" result-content-type="JSON"><sequence/></foreach>"#;
        let Some(MediatorKind::ForeachCollection(f)) = parse(later).0 else {
            panic!("not read")
        };
        assert!(f.parallel && matches!(f.output, BranchOutput::Variable { xml: false, .. }));
        for (bad, why) in [
            (
                r#"<foreach collection="${payload.a}" counter-variable="i"><sequence/></foreach>"#,
                "counter-variable",
            ),
            (
                r#"<foreach collection="${payload.a}" result-target="r"><sequence/></foreach>"#,
                "result-type",
            ),
            (
                r#"<foreach collection="${payload.a}" result-target="r" result-type="TEXT"><sequence/></foreach>"#,
                "neither JSON nor XML",
            ),
            (
                r#"<foreach collection="${payload.a}" update-original="false" target-variable="v" result-content-type="XML"><sequence/></foreach>"#,
                "result-enclosing-element",
            ),
            (r#"<foreach collection="${payload.a}"/>"#, "<sequence>"),
        ] {
            let (_, errors) = parse(bad);
            assert!(errors.iter().any(|e| e.contains(why)), "{bad}: {errors:?}");
        }
    }

    #[test]
    fn scatter_gather_reads_both_attribute_sets_and_refuses_what_mi_refuses() {
        let early = r#"<scatter-gather result-target="out" content-type="XML" root-element="all"><aggregation expression="${payload}" timeout="500" max-messages="2"/><sequence/><sequence/></scatter-gather>"#;
        let Some(MediatorKind::ScatterGather(s)) = parse(early).0 else {
            panic!("not read")
        };
        assert_eq!(s.variable.as_deref(), Some("out"));
        assert!(s.xml && s.enclosing == "all" && s.timeout_ms == 500 && s.max == Some(2));
        assert_eq!(s.sequences.len(), 2);
        let later = r#"<scatter-gather target="Body" result-content-type="JSON"><aggregation expression="${payload}"/><sequence/></scatter-gather>"#;
        let Some(MediatorKind::ScatterGather(s)) = parse(later).0 else {
            panic!("not read")
        };
        assert!(s.variable.is_none() && !s.xml && s.parallel);
        for (bad, why) in [
            (
                r#"<scatter-gather target="x" result-content-type="JSON"><aggregation expression="${payload}"/><sequence/></scatter-gather>"#,
                "either 'body' or 'variable'",
            ),
            (
                r#"<scatter-gather target="variable" result-content-type="JSON"><aggregation expression="${payload}"/><sequence/></scatter-gather>"#,
                "target-variable",
            ),
            (
                r#"<scatter-gather target="body" result-content-type="XML"><aggregation expression="${payload}"/><sequence/></scatter-gather>"#,
                "result-enclosing-element",
            ),
            (
                r#"<scatter-gather target="body" result-content-type="JSON"><sequence/></scatter-gather>"#,
                "<aggregation>",
            ),
            (
                r#"<scatter-gather target="body" result-content-type="JSON"><aggregation expression="${payload}" timeout="soon"/><sequence/></scatter-gather>"#,
                "milliseconds",
            ),
            (
                r#"<scatter-gather target="body" result-content-type="JSON"><aggregation expression="${payload}"/></scatter-gather>"#,
                "at least one",
            ),
        ] {
            let (_, errors) = parse(bad);
            assert!(errors.iter().any(|e| e.contains(why)), "{bad}: {errors:?}");
        }
    }
}
