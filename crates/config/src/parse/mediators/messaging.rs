//! Mediators that send, or split and join, messages: send, call (with its source and target), clone,
//! iterate, aggregate and foreach.

use super::super::{child, elements, loose_bool, text_of};
use super::FileParser;
use crate::diag::Severity;
use crate::model::*;
use roxmltree::Node;

impl FileParser<'_, '_> {
    pub(super) fn send(&mut self, n: Node) -> Option<MediatorKind> {
        let endpoint = self.child_endpoint(n)?;
        if n.attribute("buildmessage").is_some() {
            self.report(Severity::Warning, n, "'buildmessage' is ignored");
        }
        let receive = self.sequence_key(n, "receive");
        Some(MediatorKind::Send { endpoint, receive })
    }

    pub(super) fn call(&mut self, n: Node) -> Option<MediatorKind> {
        let endpoint = self.child_endpoint(n)?;
        let io = self.call_io(n)?;
        // Checked only: the model has no `blocking`, both values make the same call.
        let _ = self.true_or_false(n, "blocking", false);
        Some(MediatorKind::Call { endpoint, io })
    }

    /// A send's or call's `<endpoint>`: `Some(None)` when it has none, `None` when it is not valid.
    fn child_endpoint(&mut self, n: Node) -> Option<Option<EndpointRef>> {
        match child(n, "endpoint") {
            Some(e) => Some(Some(self.endpoint_ref(e)?)),
            None => Some(None),
        }
    }

    /// A `call`'s `<source>` and `<target>`, as MI reads them: `Some(None)` when it has neither.
    fn call_io(&mut self, n: Node) -> Option<Option<Box<CallIo>>> {
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
            io.source = Some(EnrichSource {
                kind: self.call_source(s)?,
                clone: true,
                loc: self.loc(s),
            });
        }
        if let Some(t) = t {
            io.target = self.call_target(t)?;
        }
        Some(Some(Box::new(io)))
    }

    /// A call's `<source type>`: what of the message (or else) it sends.
    fn call_source(&mut self, s: Node) -> Option<EnrichSourceKind> {
        let text = text_of(s);
        Some(match s.attribute("type").unwrap_or("custom") {
            "body" => EnrichSourceKind::Body,
            "custom" if text.is_empty() => {
                self.report(
                    Severity::Error,
                    s,
                    "a custom source needs an expression as its text",
                );
                return None;
            }
            "custom" => EnrichSourceKind::Custom(ExprSrc {
                text,
                ns: self.namespaces(s),
                loc: self.loc(s),
            }),
            "property" if text.is_empty() => {
                self.report(
                    Severity::Error,
                    s,
                    "a property source needs the property's name as its text",
                );
                return None;
            }
            "property" => EnrichSourceKind::Property(text),
            "inline" => self.inline_source(s, false)?,
            other => {
                self.report(
                    Severity::Error,
                    s,
                    format!(
                        "call source type must be custom, inline, property or body, not '{other}'"
                    ),
                );
                return None;
            }
        })
    }

    /// A call's `<target type>`: the property the response goes to, or `None` for the body.
    fn call_target(&mut self, t: Node) -> Option<Option<String>> {
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
                Some(Some(name))
            }
            Some("body") => Some(None),
            Some("variable") => {
                self.report(
                    Severity::Unsupported,
                    t,
                    "a variable target (MI 4.4 variables) is not supported yet",
                );
                None
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
                None
            }
        }
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
        let expression = self.required_expr(n, "expression")?;
        let sequence = match (self.sequence_key(n, "sequence"), child(n, "sequence")) {
            (Some(key), _) => key,
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
            continue_on_failure: loose_bool(n, "continueLoopOnFailure", false),
        })
    }

    pub(super) fn iterate(&mut self, n: Node) -> Option<IterateMediator> {
        self.refuse_true(
            n,
            "iterate",
            &["sequential", "continueParent", "preservePayload"],
        )?;
        // attachPath matters only with preservePayload (refused above): ignored, as in Synapse.
        let expression = self.required_expr(n, "expression")?;
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
            targets.extend(self.clone_target(c)?);
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

    /// A clone's (or iterate's) `<target>`: `Some(None)` when it has nowhere to go (reported, and left
    /// out), `None` when its endpoint is not valid.
    pub(super) fn clone_target(&mut self, c: Node) -> Option<Option<CloneTarget>> {
        let mut t = CloneTarget {
            loc: self.loc(c),
            to: c.attribute("to").map(str::to_owned),
            soap_action: c.attribute("soapAction").map(str::to_owned),
            sequence: self.sequence_key(c, "sequence"),
            endpoint: self.endpoint_key(c, "endpoint"),
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
            return Some(None);
        }
        Some(Some(t))
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
        let oc = self.needed(child(n, "onComplete"), n, "an aggregate needs <onComplete>")?;
        // As Synapse's AggregateMediator: without an expression, each message's first Body child.
        let expression = self.expr_attr(oc, "expression").unwrap_or_else(|| ExprSrc {
            text: "/s11:Envelope/s11:Body/*[1] | /s12:Envelope/s12:Body/*[1]".to_owned(),
            ns: std::sync::Arc::new(vec![
                (
                    "s11".to_owned(),
                    "http://schemas.xmlsoap.org/soap/envelope/".to_owned(),
                ),
                (
                    "s12".to_owned(),
                    "http://www.w3.org/2003/05/soap-envelope".to_owned(),
                ),
            ]),
            loc: self.loc(oc),
        });
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
            expression,
            enclosing: oc.attribute("enclosingElementProperty").map(str::to_owned),
            on_complete: self.sequence(oc),
        })
    }
}
