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

    /// `<cache>`, in MI 4.x's form (`timeout`, `collector`, `maxMessageSize`, `<onCacheHit>`,
    /// `<protocol type="http">`, `<implementation maxSize>`) and the older one (`id`, `scope`,
    /// `hashGenerator`: read, the hash is Sluice's own).
    pub(super) fn cache(&mut self, n: Node) -> Option<Cache> {
        let number = |p: &mut Self, node: Node, attr: &str| -> Option<Option<u64>> {
            match node.attribute(attr).map(str::trim) {
                None => Some(None),
                Some(v) => match v.parse::<u64>() {
                    Ok(x) => Some(Some(x)),
                    Err(_) => {
                        p.report(
                            Severity::Error,
                            node,
                            format!("cache {attr} '{v}' is not a whole number"),
                        );
                        None
                    }
                },
            }
        };
        let timeout_secs = number(self, n, "timeout")?.unwrap_or(5000);
        let max_message_size = number(self, n, "maxMessageSize")?
            .filter(|&m| m > 0)
            .map(|m| usize::try_from(m).unwrap_or(usize::MAX));
        let max_size = match child(n, "implementation") {
            Some(i) => number(self, i, "maxSize")?.unwrap_or(1000),
            None => 1000,
        };
        let on_hit = child(n, "onCacheHit").map(|h| match self.sequence_key(h, "sequence") {
            Some(r) => r,
            None => SequenceRef::Inline(self.sequence(h)),
        });
        let list = |node: Option<Node>| -> Vec<String> {
            node.and_then(|x| x.text())
                .map(|t| {
                    t.split(',')
                        .map(|v| v.trim().to_owned())
                        .filter(|v| !v.is_empty())
                        .collect()
                })
                .unwrap_or_default()
        };
        let protocol = child(n, "protocol");
        let flag = |p: Option<Node>, name: &str| {
            p.and_then(|p| child(p, name))
                .and_then(|c| c.text())
                .is_some_and(|t| t.trim().eq_ignore_ascii_case("true"))
        };
        let methods = protocol
            .and_then(|p| child(p, "methods"))
            .map(|m| list(Some(m)))
            .filter(|m| !m.iter().any(|x| x == "*"));
        let response_codes = protocol
            .and_then(|p| child(p, "responseCodes"))
            .and_then(|c| c.text())
            .map(|t| t.trim().to_owned())
            .filter(|t| !t.is_empty());
        Some(Cache {
            collector: loose_bool(n, "collector", false),
            timeout_secs,
            max_message_size,
            max_size: usize::try_from(max_size).unwrap_or(usize::MAX).max(1),
            on_hit,
            methods,
            response_codes,
            headers_exclude: list(protocol.and_then(|p| child(p, "headersToExcludeInHash"))),
            headers_include: list(protocol.and_then(|p| child(p, "headersToIncludeInHash"))),
            cache_control: flag(protocol, "enableCacheControl"),
            age_header: flag(protocol, "includeAgeHeader"),
            loc: self.loc(n),
        })
    }

    /// `<callout>`, as Synapse 3.0.1's CalloutMediatorFactory reads it. Its `<configuration>`
    /// (an Axis2 client's) is passed over with a warning; `passHeaders` with a source is not
    /// supported.
    pub(super) fn callout(&mut self, n: Node) -> Option<Callout> {
        // `<enableSec>` secures the endpoint the callout makes itself (Synapse's CalloutMediator).
        let security = match child(n, "enableSec") {
            Some(c)
                if ["policy", "inboundPolicy", "outboundPolicy"]
                    .iter()
                    .all(|a| c.attribute(*a).is_none_or(|k| k.trim().is_empty())) =>
            {
                self.report(
                    Severity::Error,
                    c,
                    "a callout's <enableSec> needs a policy key (policy, or inboundPolicy and outboundPolicy)",
                );
                return None;
            }
            Some(c) => Some((c, self.endpoint_security(c))),
            None => None,
        };
        let endpoint = match (n.attribute("serviceURL"), child(n, "endpoint")) {
            (_, Some(e)) => {
                if let Some((c, _)) = security {
                    self.report(
                        Severity::Warning,
                        c,
                        "a callout's <enableSec> is ignored with an <endpoint> child (as in Synapse): that endpoint's own <enableSec> counts",
                    );
                }
                Some(self.endpoint_ref(e)?)
            }
            (Some(url), None) => {
                let mut address =
                    AddressEndpoint::plain(url.trim().to_owned(), self.attr_loc(n, "serviceURL"));
                address.security = security.and_then(|(_, s)| s);
                Some(EndpointRef::Inline(Box::new(Endpoint {
                    name: None,
                    loc: self.attr_loc(n, "serviceURL"),
                    kind: EndpointKind::Address(Box::new(address)),
                    properties: Vec::new(),
                })))
            }
            (None, None) => {
                if let Some((c, _)) = security {
                    self.report(
                        Severity::Unsupported,
                        c,
                        "a callout's <enableSec> towards the message's To address is not supported yet",
                    );
                    return None;
                }
                None
            }
        };
        if let Some(c) = child(n, "configuration") {
            self.report(
                Severity::Warning,
                c,
                "a callout's Axis2 client <configuration> is ignored",
            );
        }
        let source = self.callout_part(n, "source")?;
        if source.is_some()
            && n.attribute("passHeaders")
                .is_some_and(|v| v.eq_ignore_ascii_case("true"))
        {
            self.report(
                Severity::Unsupported,
                n,
                "callout with passHeaders=\"true\" and a <source> is not supported yet",
            );
            return None;
        }
        Some(Callout {
            endpoint,
            action: n.attribute("action").map(str::to_owned),
            source,
            target: self.callout_part(n, "target")?,
        })
    }

    /// A callout's `<source>` or `<target>`: `xpath` or `key`, one of them required (as Synapse).
    fn callout_part(&mut self, n: Node, name: &str) -> Option<Option<CalloutPart>> {
        let Some(c) = child(n, name) else {
            return Some(None);
        };
        if let Some(x) = self.expr_attr(c, "xpath") {
            return Some(Some(CalloutPart::XPath(x)));
        }
        if let Some(k) = c.attribute("key") {
            return Some(Some(CalloutPart::Key(k.to_owned())));
        }
        // MI: `type="envelope"`, the whole message (what no <source> means too).
        if name == "source" && c.attribute("type") == Some("envelope") {
            return Some(None);
        }
        self.report(
            Severity::Error,
            c,
            format!("a callout <{name}> needs an 'xpath' or 'key' attribute"),
        );
        None
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
        let preserve_payload = loose_bool(n, "preservePayload", false);
        let attach_path = self.expr_attr(n, "attachPath");
        if attach_path.is_some() && !preserve_payload {
            // Synapse refuses it too.
            self.report(
                Severity::Error,
                n,
                "an iterate that does not preserve the payload cannot have an attachPath",
            );
            return None;
        }
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
            preserve_payload,
            attach_path,
            sequential: c.sequential,
            continue_parent: c.continue_parent,
        })
    }

    pub(super) fn clone_mediator(&mut self, n: Node) -> Option<CloneMediator> {
        let mut targets = Vec::new();
        for c in elements(n) {
            if c.tag_name().name() != "target" {
                // Synapse's CloneMediatorFactory reads only its targets.
                self.unknown_child(c, "clone");
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
            // Synapse takes exactly "true" here, and any case of it for continueParent.
            sequential: n.attribute("sequential") == Some("true"),
            continue_parent: loose_bool(n, "continueParent", false),
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
                // Synapse's TargetFactory reads only these.
                _ => self.unknown_child(g, "target"),
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
        let correlate = match child(n, "correlateOn") {
            Some(c) => Some(self.required_expr(c, "expression")?),
            None => None,
        };
        let (mut max, mut min, mut timeout_secs) = (None, None, None);
        if let Some(cc) = child(n, "completeCondition") {
            if let Some(t) = cc.attribute("timeout") {
                // Whole seconds: Synapse and MI read it with Long.parseLong, and do not deploy
                // the artifact otherwise.
                match t.trim().parse::<u32>() {
                    Ok(v) => timeout_secs = Some(f64::from(v)),
                    _ => self.report(
                        Severity::Error,
                        cc,
                        format!("timeout must be a whole number of seconds, not '{t}'"),
                    ),
                }
            }
            if let Some(mc) = child(cc, "messageCount") {
                for (a, slot) in [("max", &mut max), ("min", &mut min)] {
                    let Some(v) = mc.attribute(a) else { continue };
                    // A number, or an {expression} giving one per message (MI).
                    let v = v.trim();
                    *slot = Some(
                        match v.strip_prefix('{').and_then(|e| e.strip_suffix('}')) {
                            Some(e) => ValueSrc::Expr(self.expr(mc, a, e.trim())),
                            None if v.parse::<i64>().is_ok() => ValueSrc::Literal(v.to_owned()),
                            None => {
                                let why = format!("messageCount {a} must be a number or an {{expression}}, not '{v}'");
                                self.report(Severity::Error, mc, why);
                                return None;
                            }
                        },
                    );
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
            correlate,
            on_complete_key: oc.attribute("sequence").map(str::to_owned),
            max,
            min,
            timeout_secs,
            expression,
            enclosing: oc.attribute("enclosingElementProperty").map(str::to_owned),
            on_complete: self.sequence(oc),
        })
    }
}
