//! Priority-based mediation: the `<priorityExecutor>` artifact and the `<enqueue>` mediator that
//! hands a message to one, as Synapse reads them (sample 650).

use super::super::{child, elements};
use super::FileParser;
use crate::diag::Severity;
use crate::model::{Enqueue, ExecutorQueue, PriorityExecutor};
use roxmltree::Node;

/// Synapse's defaults for `<threads>` (`core`, `max`).
const CORE: usize = 20;
const MAX: usize = 100;

impl FileParser<'_, '_> {
    /// `<enqueue executor priority sequence>`.
    pub(super) fn enqueue(&mut self, n: Node) -> Option<Enqueue> {
        let sequence = self.required_attr(n, "sequence");
        let executor = self.required_attr(n, "executor");
        let priority = match n.attribute("priority").filter(|p| !p.trim().is_empty()) {
            Some(_) => self.whole_number(n, "priority")?,
            None => 1,
        };
        Some(Enqueue {
            executor: executor?,
            priority,
            sequence: sequence?,
        })
    }

    /// `<priorityExecutor name>`: `<queues isFixedSize nextQueue>` of `<queue priority size>`, and
    /// `<threads core max keep-alive>`.
    pub(in crate::parse) fn priority_executor(&mut self, n: Node) -> Option<PriorityExecutor> {
        let name = self.required_attr(n, "name")?;
        self.artifact = Some(format!("priorityExecutor {name}"));
        if n.attribute("beforeExecuteHandler").is_some() {
            self.report(
                Severity::Unsupported,
                n,
                "beforeExecuteHandler names a Java class; Sluice runs none",
            );
            return None;
        }
        let Some(queues) = child(n, "queues") else {
            self.report(Severity::Error, n, "Queues configuration is mandatory");
            return None;
        };
        if queues.attribute("nextQueue").is_some() {
            self.report(
                Severity::Unsupported,
                queues,
                "nextQueue names a Java class; Sluice takes the queues in Synapse's default order (priority-based round robin)",
            );
            return None;
        }
        let mut fixed = self.true_or_false(queues, "isFixedSize", true)?;
        let mut list = Vec::new();
        for q in elements(queues) {
            if q.tag_name().name() != "queue" {
                self.unknown_child(q, "queues");
                continue;
            }
            if q.attribute("priority").is_none() {
                self.report(Severity::Error, q, "Priority must be specified");
                return None;
            }
            let priority = self.whole_number(q, "priority")?;
            // As Synapse: a queue with a size makes this and the later ones fixed.
            let size = match q.attribute("size") {
                Some(_) => {
                    fixed = true;
                    Some(self.whole_number(q, "size")?)
                }
                None if fixed => {
                    self.report(Severity::Error, q, "Queues should have a size");
                    return None;
                }
                None => None,
            };
            if list.iter().any(|x: &ExecutorQueue| x.priority == priority) {
                self.report(
                    Severity::Error,
                    q,
                    format!("two queues of priority {priority}"),
                );
                return None;
            }
            list.push(ExecutorQueue {
                priority,
                size: size.map(|s: i64| s.max(0) as usize),
            });
        }
        if list.is_empty() {
            self.report(
                Severity::Error,
                queues,
                "a priority executor needs a <queue>",
            );
            return None;
        }
        list.sort_by_key(|q| std::cmp::Reverse(q.priority));
        let (mut core, mut max) = (CORE, MAX);
        if let Some(t) = child(n, "threads") {
            if t.attribute("core").is_some() {
                core = self.whole_number(t, "core")?.max(0) as usize;
            }
            if t.attribute("max").is_some() {
                max = self.whole_number(t, "max")?.max(0) as usize;
            }
        }
        for c in elements(n) {
            if !matches!(c.tag_name().name(), "queues" | "threads") {
                self.unknown_child(c, "priorityExecutor");
            }
        }
        Some(PriorityExecutor {
            name,
            queues: list,
            core,
            max: max.max(core).max(1),
            loc: self.loc(n),
        })
    }

    /// Attribute `attr` of `n` as a whole number (Java's `Integer.parseInt`), reported when it is
    /// not one.
    fn whole_number(&mut self, n: Node, attr: &str) -> Option<i64> {
        let v = n.attribute(attr).unwrap_or("");
        match v.parse::<i32>() {
            Ok(x) => Some(i64::from(x)),
            Err(_) => {
                self.report(
                    Severity::Error,
                    n,
                    format!("'{attr}' must be a whole number, not '{v}'"),
                );
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::diag::Severity;
    use crate::model::MediatorKind;
    use crate::parse::tests::{parse, NS};

    fn executor(inner: &str) -> (crate::model::Config, crate::diag::Diagnostics) {
        parse(&format!(
            r#"<definitions {NS}><priorityExecutor name="e">{inner}</priorityExecutor></definitions>"#
        ))
    }

    #[test]
    fn executors_read_as_synapse_reads_them() {
        let (cfg, d) = executor(
            r#"<queues><queue size="5" priority="1"/><queue size="7" priority="10"/></queues>"#,
        );
        assert!(d.items.is_empty(), "{:?}", d.items);
        let e = &cfg.executors[0];
        // Highest priority first; Synapse's thread defaults.
        let q: Vec<(i64, Option<usize>)> = e.queues.iter().map(|q| (q.priority, q.size)).collect();
        assert_eq!(q, [(10, Some(7)), (1, Some(5))]);
        assert_eq!((e.core, e.max), (20, 100));
        let (cfg, d) = executor(
            r#"<queues isFixedSize="false"><queue priority="2"/></queues><threads core="3" max="8" keep-alive="5"/>"#,
        );
        assert!(d.items.is_empty(), "{:?}", d.items);
        assert_eq!(cfg.executors[0].queues[0].size, None);
        assert_eq!((cfg.executors[0].core, cfg.executors[0].max), (3, 8));
        // What Synapse refuses, Sluice refuses, with its words where it has them.
        for (inner, why) in [
            ("", "Queues configuration is mandatory"),
            (
                r#"<queues><queue priority="1"/></queues>"#,
                "Queues should have a size",
            ),
            (
                r#"<queues><queue size="1"/></queues>"#,
                "Priority must be specified",
            ),
            (
                r#"<queues><queue size="1" priority="x"/></queues>"#,
                "whole number",
            ),
            (
                r#"<queues><queue size="1" priority="1"/><queue size="2" priority="1"/></queues>"#,
                "two queues of priority 1",
            ),
        ] {
            let (cfg, d) = executor(inner);
            assert!(cfg.executors.is_empty(), "{inner}");
            assert!(
                d.items
                    .iter()
                    .any(|i| i.severity == Severity::Error && i.message.contains(why)),
                "{inner}: {:?}",
                d.items
            );
        }
        // A Java class is reported as unsupported, never run.
        let (cfg, d) = executor(
            r#"<queues nextQueue="org.example.Next"><queue size="1" priority="1"/></queues>"#,
        );
        assert!(cfg.executors.is_empty());
        assert_eq!(d.items[0].severity, Severity::Unsupported);
    }

    #[test]
    fn enqueue_needs_a_sequence_and_an_executor() {
        let (cfg, d) = parse(&format!(
            r#"<sequence name="S" {NS}><enqueue executor="e" sequence="q"/></sequence>"#
        ));
        assert!(d.items.is_empty(), "{:?}", d.items);
        let MediatorKind::Enqueue(e) = &cfg.sequences[0].sequence.mediators[0].kind else {
            panic!()
        };
        assert_eq!(
            (e.executor.as_str(), e.priority, e.sequence.as_str()),
            ("e", 1, "q")
        );
        for attrs in [
            r#"executor="e""#,
            r#"sequence="q""#,
            r#"executor="e" sequence="q" priority="high""#,
        ] {
            let (_, d) = parse(&format!(
                r#"<sequence name="S" {NS}><enqueue {attrs}/></sequence>"#
            ));
            assert!(d.has_errors(), "{attrs}");
        }
    }
}
