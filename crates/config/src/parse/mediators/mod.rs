//! Mediators: a sequence's list of them, the dispatch from an element's name to its family's parser, and
//! the pieces several mediators share.

use super::{child, elements, is_synapse, FileParser};
use crate::diag::Severity;
use crate::model::*;
use roxmltree::Node;

mod content;
mod core;
mod flow;
mod messaging;

/// Mediators Synapse and WSO2 MI define that Sluice does not run yet: reported as unsupported, not unknown.
const KNOWN_UNSUPPORTED_MEDIATORS: &[&str] = &[
    "callout",
    "cache",
    "throttle",
    "script",
    "class",
    "pojoCommand",
    "spring",
    "rule",
    "event",
    "dblookup",
    "dbreport",
    "xquery",
    "smooks",
    "store",
    "transaction",
    "bean",
    "ejb",
    "datamapper",
    "jsontransform",
    "entitlementService",
    "oauthService",
    "builder",
    "rewrite",
    "conditionalRouter",
    "router",
    "enqueue",
    "bam",
    "publishEvent",
    "variable",
    "scatter-gather",
    "dataServiceCall",
    "ntlm",
    "jsonTransform",
];

impl FileParser<'_, '_> {
    pub(super) fn sequence(&mut self, n: Node) -> Sequence {
        let on_error = n.attribute("onError").map(str::to_owned);
        let mut mediators = Vec::new();
        for c in elements(n) {
            if is_synapse(c) && c.tag_name().name() == "propertyGroup" {
                // MI's group of property mediators: each runs in order, as if written in place.
                for p in elements(c) {
                    match p.tag_name().name() {
                        "property" if is_synapse(p) => mediators.extend(self.mediator(p)),
                        "description" if is_synapse(p) => {}
                        other => self.report(
                            Severity::Error,
                            p,
                            format!("<{other}> in <propertyGroup>: only <property> mediators"),
                        ),
                    }
                }
                continue;
            }
            if let Some(m) = self.mediator(c) {
                mediators.push(m);
            }
        }
        if n.attribute("key").is_some() && n.tag_name().name() != "sequence" {
            self.report(Severity::Error, n, "use the 'inSequence'/'outSequence'/'faultSequence' attribute of <target> to refer to a named sequence");
        }
        Sequence {
            loc: self.loc(n),
            mediators,
            on_error,
        }
    }

    fn mediator(&mut self, n: Node) -> Option<Mediator> {
        let element = n.tag_name().name().to_owned();
        if !is_synapse(n) {
            self.check_synapse_ns(n);
            return None;
        }
        let kind = match element.as_str() {
            "description" => return None,
            "send" => {
                let endpoint = match child(n, "endpoint") {
                    Some(e) => Some(self.endpoint_ref(e)?),
                    None => None,
                };
                if n.attribute("receive").is_some() || n.attribute("buildmessage").is_some() {
                    self.report(
                        Severity::Warning,
                        n,
                        "'receive' and 'buildmessage' are ignored",
                    );
                }
                MediatorKind::Send { endpoint }
            }
            "call" => {
                let endpoint = match child(n, "endpoint") {
                    Some(e) => Some(self.endpoint_ref(e)?),
                    None => None,
                };
                let io = self.call_io(n)?;
                match n.attribute("blocking") {
                    None | Some("true" | "false") => {}
                    Some(v) => self.report(
                        Severity::Error,
                        n,
                        format!("blocking must be true or false, not '{v}'"),
                    ),
                }
                MediatorKind::Call { endpoint, io }
            }
            "respond" => MediatorKind::Respond,
            "clone" => MediatorKind::Clone(self.clone_mediator(n)?),
            "iterate" => MediatorKind::Iterate(self.iterate(n)?),
            "foreach" => MediatorKind::Foreach(self.foreach(n)?),
            "aggregate" => MediatorKind::Aggregate(self.aggregate(n)?),
            "call-template" => {
                let target = self.required_attr(n, "target")?;
                let mut params = Vec::new();
                for c in elements(n) {
                    if c.tag_name().name() != "with-param" {
                        self.report(
                            Severity::Error,
                            c,
                            format!(
                                "<{}> in <call-template>: only <with-param>",
                                c.tag_name().name()
                            ),
                        );
                        continue;
                    }
                    let Some(name) = self.required_attr(c, "name") else {
                        continue;
                    };
                    let Some(value) = self.required_attr(c, "value") else {
                        continue;
                    };
                    // `{...}`: an expression (XPath, or json-eval), as Synapse reads it; `{{...}}`
                    // is one passed on unevaluated, which Sluice does not do yet.
                    if value.starts_with("{{") && value.ends_with("}}") {
                        self.report(
                            Severity::Unsupported,
                            c,
                            "a with-param value in double braces (an expression the template evaluates) is not supported yet",
                        );
                        return None;
                    }
                    let v = match value.strip_prefix('{').and_then(|v| v.strip_suffix('}')) {
                        Some(e) => ValueSrc::Expr(self.expr(c, "value", e.trim())),
                        None => ValueSrc::Literal(value),
                    };
                    params.push((name, v));
                }
                MediatorKind::CallTemplate { target, params }
            }
            "loopback" => MediatorKind::Loopback,
            "drop" => MediatorKind::Drop,
            "log" => MediatorKind::Log(self.log(n)?),
            "property" => MediatorKind::Property(self.property(n)?),
            "header" => MediatorKind::Header(self.header(n)?),
            "filter" => MediatorKind::Filter(self.filter(n)?),
            "in" | "out" => MediatorKind::Direction {
                response: element == "out",
                body: self.sequence(n),
            },
            "switch" => MediatorKind::Switch(self.switch(n)?),
            "sequence" => {
                let key = self.required_attr(n, "key")?;
                MediatorKind::SequenceRef { key }
            }
            "makefault" => MediatorKind::MakeFault(self.makefault(n)?),
            "xslt" | "fastXSLT" => MediatorKind::Xslt(self.xslt(n, element == "fastXSLT")?),
            "payloadFactory" => MediatorKind::PayloadFactory(self.payload_factory(n)?),
            "enrich" => MediatorKind::Enrich(self.enrich(n)?),
            "validate" => MediatorKind::Validate(self.validate(n)?),
            other if KNOWN_UNSUPPORTED_MEDIATORS.contains(&other) => {
                self.report(
                    Severity::Unsupported,
                    n,
                    format!("the <{other}> mediator is not supported yet"),
                );
                return None;
            }
            other => {
                self.report(Severity::Error, n, format!("unknown mediator <{other}>"));
                return None;
            }
        };
        Some(Mediator {
            element,
            loc: self.loc(n),
            kind,
        })
    }

    fn scope(&mut self, n: Node) -> Option<Scope> {
        Some(match n.attribute("scope").unwrap_or("default") {
            "default" => Scope::Default,
            "transport" => Scope::Transport,
            "axis2" => Scope::Axis2,
            "axis2-client" => Scope::Axis2Client,
            "operation" => Scope::Operation,
            other => {
                self.report(Severity::Error, n, format!("scope must be default, transport, axis2, axis2-client or operation, not '{other}'"));
                return None;
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::parse::tests::{parse, NS};

    #[test]
    fn property_groups_run_their_properties_in_place() {
        let (cfg, d) = parse(&format!(
            r#"<sequence name="S" {NS}>
  <log/>
  <propertyGroup description="d">
    <description>two</description>
    <property name="a" value="1"/>
    <property name="b" value="2"/>
  </propertyGroup>
  <propertyGroup><log/></propertyGroup>
</sequence>"#
        ));
        let kinds: Vec<&str> = cfg.sequences[0]
            .sequence
            .mediators
            .iter()
            .map(|m| m.element.as_str())
            .collect();
        assert_eq!(kinds, ["log", "property", "property"]);
        assert_eq!(cfg.sequences[0].sequence.mediators[2].loc.line, 6);
        assert_eq!(d.items.len(), 1, "{:?}", d.items);
        assert!(d.items[0].message.contains("only <property>"));
        assert_eq!(d.items[0].location.line, 8);
    }
}
