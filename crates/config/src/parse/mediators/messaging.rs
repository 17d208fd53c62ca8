//! Mediators that send, or split and join, messages: call's source and target, clone, iterate, aggregate
//! and foreach.

use super::super::{child, elements, text_of};
use super::FileParser;
use crate::diag::Severity;
use crate::model::*;
use roxmltree::Node;

impl FileParser<'_, '_> {
    /// A `call`'s `<source>` and `<target>`, as MI reads them: `Some(None)` when it has neither.
    pub(super) fn call_io(&mut self, n: Node) -> Option<Option<Box<CallIo>>> {
        let (s, t) = (child(n, "source"), child(n, "target"));
        if s.is_none() && t.is_none() {
            return Some(None);
        }
        let mut io = CallIo {
            source: None,
            content_type: None,
            target: None,
        };
        if let Some(s) = s {
            io.content_type = s
                .attribute("contentType")
                .filter(|v| !v.trim().is_empty())
                .map(|v| v.trim().to_owned());
            let text = text_of(s);
            let kind = match s.attribute("type").unwrap_or("custom") {
                "body" => Some(EnrichSourceKind::Body),
                "custom" if text.is_empty() => {
                    self.report(
                        Severity::Error,
                        s,
                        "a custom source needs an expression as its text",
                    );
                    return None;
                }
                "custom" => Some(EnrichSourceKind::Custom(ExprSrc {
                    text,
                    ns: self.namespaces(s),
                    loc: self.loc(s),
                })),
                "property" if text.is_empty() => {
                    self.report(
                        Severity::Error,
                        s,
                        "a property source needs the property's name as its text",
                    );
                    return None;
                }
                "property" => Some(EnrichSourceKind::Property(text)),
                "inline" => match elements(s).next() {
                    Some(e) => Some(EnrichSourceKind::InlineXml(self.serialize_element(e))),
                    None if !text.is_empty() => Some(EnrichSourceKind::InlineText(text)),
                    None => {
                        self.report(Severity::Error, s, "an inline source needs XML or text");
                        return None;
                    }
                },
                other => {
                    self.report(
                        Severity::Error,
                        s,
                        format!("call source type must be custom, inline, property or body, not '{other}'"),
                    );
                    return None;
                }
            };
            io.source = kind.map(|kind| EnrichSource {
                kind,
                clone: true,
                loc: self.loc(s),
            });
        }
        if let Some(t) = t {
            match t.attribute("type") {
                Some("property") => {
                    let name = text_of(t);
                    if name.is_empty() {
                        self.report(
                            Severity::Error,
                            t,
                            "a property target needs the property's name as its text",
                        );
                        return None;
                    }
                    io.target = Some(name);
                }
                Some("body") => {}
                Some("variable") => {
                    self.report(
                        Severity::Unsupported,
                        t,
                        "a variable target (MI 4.4 variables) is not supported yet",
                    );
                    return None;
                }
                other => {
                    self.report(
                        Severity::Error,
                        t,
                        format!(
                            "call target type must be property or body, not {}",
                            other.map_or("missing".to_owned(), |o| format!("'{o}'"))
                        ),
                    );
                    return None;
                }
            }
        }
        Some(Some(Box::new(io)))
    }

    pub(super) fn foreach(&mut self, n: Node) -> Option<Foreach> {
        if n.attribute("collection")
            .is_some_and(|c| !c.trim().is_empty())
        {
            self.report(
                Severity::Unsupported,
                n,
                "the second foreach form (collection, MI 4.4) is not supported yet",
            );
            return None;
        }
        let expression = self.required_attr(n, "expression")?;
        let expression = self.expr(n, "expression", &expression);
        let inline = child(n, "sequence");
        let sequence = match (n.attribute("sequence"), inline) {
            (Some(k), _) => SequenceRef::Key {
                key: k.to_owned(),
                loc: self.attr_loc(n, "sequence"),
            },
            (None, Some(s)) => SequenceRef::Inline(self.sequence(s)),
            (None, None) => {
                self.report(
                    Severity::Error,
                    n,
                    "a foreach needs a 'sequence' key or an inline <sequence>",
                );
                return None;
            }
        };
        Some(Foreach {
            id: n.attribute("id").map(str::to_owned),
            expression,
            sequence,
            // As Java's Boolean.parseBoolean.
            continue_on_failure: n
                .attribute("continueLoopOnFailure")
                .is_some_and(|v| v.eq_ignore_ascii_case("true")),
        })
    }

    pub(super) fn iterate(&mut self, n: Node) -> Option<IterateMediator> {
        self.refuse_true(
            n,
            "iterate",
            &["sequential", "continueParent", "preservePayload"],
        )?;
        // attachPath matters only with preservePayload (refused above): ignored, as in Synapse.
        let expression = self.required_attr(n, "expression")?;
        let expression = self.expr(n, "expression", &expression);
        let c = self.clone_mediator(n)?;
        let mut targets = c.targets.into_iter();
        let (Some(target), None) = (targets.next(), targets.next()) else {
            self.report(Severity::Error, n, "an iterate has exactly one <target>");
            return None;
        };
        Some(IterateMediator {
            id: c.id,
            expression,
            target,
        })
    }

    /// `None` (reported as unsupported) when one of `attrs` is "true" on `n`.
    fn refuse_true(&mut self, n: Node, what: &str, attrs: &[&str]) -> Option<()> {
        match attrs
            .iter()
            .find(|a| n.attribute(**a).is_some_and(|v| v == "true"))
        {
            Some(a) => {
                self.report(
                    Severity::Unsupported,
                    n,
                    format!("{what} with {a}=\"true\" is not supported yet"),
                );
                None
            }
            None => Some(()),
        }
    }

    pub(super) fn clone_mediator(&mut self, n: Node) -> Option<CloneMediator> {
        self.refuse_true(n, "clone", &["sequential", "continueParent"])?;
        let mut targets = Vec::new();
        for c in elements(n) {
            if c.tag_name().name() != "target" {
                self.report(
                    Severity::Error,
                    c,
                    format!("<{}> in <clone>: only <target>", c.tag_name().name()),
                );
                continue;
            }
            let mut t = CloneTarget {
                loc: self.loc(c),
                to: c.attribute("to").map(str::to_owned),
                soap_action: c.attribute("soapAction").map(str::to_owned),
                sequence: c.attribute("sequence").map(|k| SequenceRef::Key {
                    key: k.to_owned(),
                    loc: self.attr_loc(c, "sequence"),
                }),
                endpoint: c.attribute("endpoint").map(|k| EndpointRef::Key {
                    key: k.to_owned(),
                    loc: self.attr_loc(c, "endpoint"),
                }),
            };
            for g in elements(c) {
                match g.tag_name().name() {
                    "sequence" => t.sequence = Some(SequenceRef::Inline(self.sequence(g))),
                    "endpoint" => t.endpoint = Some(self.endpoint_ref(g)?),
                    other => self.report(
                        Severity::Error,
                        g,
                        format!("<{other}> in a clone <target>: a sequence or an endpoint"),
                    ),
                }
            }
            if t.sequence.is_none() && t.endpoint.is_none() && t.to.is_none() {
                self.report(
                    Severity::Error,
                    c,
                    "a clone target needs a sequence, an endpoint or a 'to' address",
                );
                continue;
            }
            targets.push(t);
        }
        if targets.is_empty() {
            self.report(Severity::Error, n, "a clone needs at least one <target>");
            return None;
        }
        Some(CloneMediator {
            id: n.attribute("id").map(str::to_owned),
            targets,
        })
    }

    pub(super) fn aggregate(&mut self, n: Node) -> Option<Aggregate> {
        if child(n, "correlateOn").is_some() {
            self.report(
                Severity::Unsupported,
                n,
                "aggregate with <correlateOn> is not supported yet",
            );
            return None;
        }
        let (mut max, mut min, mut timeout_secs) = (None, None, None);
        if let Some(cc) = child(n, "completeCondition") {
            if let Some(t) = cc.attribute("timeout") {
                match t.trim().parse::<f64>() {
                    Ok(v) if v >= 0.0 => timeout_secs = Some(v),
                    _ => self.report(
                        Severity::Error,
                        cc,
                        format!("timeout must be a number of seconds, not '{t}'"),
                    ),
                }
            }
            if let Some(mc) = child(cc, "messageCount") {
                for (a, slot) in [("max", &mut max), ("min", &mut min)] {
                    if let Some(v) = mc.attribute(a) {
                        // A plain number; an {expression} is not supported yet.
                        match v.trim().parse::<i64>() {
                            Ok(v) => *slot = Some(v),
                            Err(_) => {
                                self.report(
                                    Severity::Unsupported,
                                    mc,
                                    format!("messageCount {a}='{v}': only a number is supported"),
                                );
                                return None;
                            }
                        }
                    }
                }
            }
        }
        let Some(oc) = child(n, "onComplete") else {
            self.report(Severity::Error, n, "an aggregate needs <onComplete>");
            return None;
        };
        let expression = self.required_attr(oc, "expression")?;
        if oc.attribute("sequence").is_some() {
            self.report(
                Severity::Unsupported,
                oc,
                "onComplete sequence='...' is not supported yet; put its mediators inside",
            );
            return None;
        }
        if oc
            .attribute("aggregateElementType")
            .is_some_and(|t| t != "root")
        {
            self.report(
                Severity::Unsupported,
                oc,
                "aggregateElementType other than 'root' is not supported yet",
            );
            return None;
        }
        Some(Aggregate {
            id: n.attribute("id").map(str::to_owned),
            max,
            min,
            timeout_secs,
            expression: self.expr(oc, "expression", &expression),
            enclosing: oc.attribute("enclosingElementProperty").map(str::to_owned),
            on_complete: self.sequence(oc),
        })
    }
}
