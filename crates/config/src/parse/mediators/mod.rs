//! Mediators: a sequence's list of them, the dispatch from an element's name to its family's parser, and
//! the pieces several mediators share.

use super::{elements, is_synapse, text_of, FileParser};
use crate::diag::Severity;
use crate::model::*;
use roxmltree::Node;

mod branches;
pub(crate) mod conditional_router;
mod content;
mod core;
mod datamapper;
mod enqueue;
pub(crate) mod evaluator;
mod flow;
mod messaging;
pub(crate) mod rewrite;
mod script;
mod store;
mod throttle;

/// Mediators Synapse and WSO2 MI define that Sluice does not run yet: reported as unsupported, not unknown.
const KNOWN_UNSUPPORTED_MEDIATORS: &[&str] = &[
    "class",
    "pojoCommand",
    "spring",
    "rule",
    "event",
    "dblookup",
    "dbreport",
    "xquery",
    "smooks",
    "transaction",
    "bean",
    "ejb",
    "entitlementService",
    "oauthService",
    "builder",
    "router",
    "bam",
    "publishEvent",
    "dataServiceCall",
    "ntlm",
    "jsonTransform",
    "eventPublisher",
    "sampler",
    "annotatedCommand",
];

impl FileParser<'_, '_> {
    /// The mediators of a `<sequence>`, `<inSequence>`, `<then>` or any element that holds them, in
    /// order.
    pub(super) fn sequence(&mut self, n: Node) -> Sequence {
        let on_error = n.attribute("onError").map(str::to_owned);
        let mut mediators = Vec::new();
        for c in elements(n) {
            if is_synapse(c) && c.tag_name().name() == "propertyGroup" {
                self.property_group(c, &mut mediators);
            } else {
                mediators.extend(self.mediator(c));
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

    /// MI's group of property mediators: each runs in order, as if written in place.
    fn property_group(&mut self, n: Node, mediators: &mut Vec<Mediator>) {
        for p in elements(n) {
            match p.tag_name().name() {
                "property" if is_synapse(p) => mediators.extend(self.mediator(p)),
                "description" if is_synapse(p) => {}
                _ => self.unknown_child(p, "propertyGroup"),
            }
        }
    }

    /// One mediator, parsed by the parser its element's name picks: adding a mediator adds one line here.
    fn mediator(&mut self, n: Node) -> Option<Mediator> {
        if !is_synapse(n) {
            self.check_synapse_ns(n);
            return None;
        }
        let element = n.tag_name().name();
        let kind = match element {
            "description" => return None,
            // core.rs
            "log" => MediatorKind::Log(self.log(n)?),
            "property" => MediatorKind::Property(self.property(n)?),
            "variable" => MediatorKind::Variable(self.variable(n)?),
            "header" => MediatorKind::Header(self.header(n)?),
            "drop" => MediatorKind::Drop,
            "loopback" => MediatorKind::Loopback,
            "respond" => MediatorKind::Respond,
            "sequence" => self.sequence_ref(n)?,
            "call-template" => self.call_template(n)?,
            // flow.rs
            "filter" => MediatorKind::Filter(self.filter(n)?),
            "switch" => MediatorKind::Switch(self.switch(n)?),
            "in" | "out" => self.direction(n, element == "out"),
            // content.rs
            "xslt" | "fastXSLT" => MediatorKind::Xslt(self.xslt(n, element == "fastXSLT")?),
            "payloadFactory" => MediatorKind::PayloadFactory(self.payload_factory(n)?),
            "enrich" => MediatorKind::Enrich(self.enrich(n)?),
            "validate" => MediatorKind::Validate(self.validate(n)?),
            "makefault" => MediatorKind::MakeFault(self.makefault(n)?),
            // messaging.rs
            "send" => self.send(n)?,
            "call" => self.call(n)?,
            "callout" => MediatorKind::Callout(self.callout(n)?),
            "cache" => MediatorKind::Cache(self.cache(n)?),
            // throttle.rs
            "throttle" => MediatorKind::Throttle(self.throttle(n)?),
            "clone" => MediatorKind::Clone(self.clone_mediator(n)?),
            "iterate" => MediatorKind::Iterate(self.iterate(n)?),
            // branches.rs: MI 4.4's second form
            "foreach"
                if n.attribute("collection")
                    .is_some_and(|c| !c.trim().is_empty()) =>
            {
                MediatorKind::ForeachCollection(self.foreach_collection(n)?)
            }
            "foreach" => MediatorKind::Foreach(self.foreach(n)?),
            "scatter-gather" => MediatorKind::ScatterGather(self.scatter_gather(n)?),
            "jsontransform" => MediatorKind::JsonTransform(self.json_transform(n)?),
            "aggregate" => MediatorKind::Aggregate(self.aggregate(n)?),
            // rewrite.rs
            "rewrite" => MediatorKind::Rewrite(self.rewrite(n)?),
            // conditional_router.rs
            "conditionalRouter" => MediatorKind::ConditionalRouter(self.conditional_router(n)?),
            // enqueue.rs
            "enqueue" => MediatorKind::Enqueue(self.enqueue(n)?),
            // script.rs
            "script" => MediatorKind::Script(self.script(n)?),
            // store.rs
            "store" => MediatorKind::Store(self.store(n)?),
            // datamapper.rs
            "datamapper" => MediatorKind::Datamapper(self.datamapper(n)?),
            other => return self.not_run(n, other),
        };
        Some(Mediator {
            element: element.to_owned(),
            loc: self.loc(n),
            kind,
        })
    }

    /// An element in a sequence that is no mediator Sluice runs: unsupported when Synapse or MI
    /// defines it, else unknown.
    fn not_run(&mut self, n: Node, element: &str) -> Option<Mediator> {
        if KNOWN_UNSUPPORTED_MEDIATORS.contains(&element) {
            self.report(
                Severity::Unsupported,
                n,
                format!("the <{element}> mediator is not supported yet"),
            );
        } else {
            self.report(Severity::Error, n, format!("unknown mediator <{element}>"));
        }
        None
    }

    /// The `scope` attribute of a property.
    pub(in crate::parse) fn scope(&mut self, n: Node) -> Option<Scope> {
        let scopes = [
            ("default", Scope::Default),
            ("transport", Scope::Transport),
            ("axis2", Scope::Axis2),
            ("axis2-client", Scope::Axis2Client),
            ("operation", Scope::Operation),
        ];
        self.attr_one_of(n, "scope", "default", "scope", &scopes)
    }

    /// The `action` attribute of a property or header: `remove`, or `set` (the default) with the value
    /// `value` or `expression` gives; without either, the value `otherwise` finds (it reports what is
    /// missing).
    fn action(
        &mut self,
        n: Node,
        otherwise: impl FnOnce(&mut Self) -> Option<ValueSrc>,
    ) -> Option<Action> {
        let set = self.attr_one_of(
            n,
            "action",
            "set",
            "action",
            &[("set", true), ("remove", false)],
        )?;
        if !set {
            return Some(Action::Remove);
        }
        match self.value_or_expr(n) {
            Some(v) => Some(Action::Set(v)),
            None => otherwise(self).map(Action::Set),
        }
    }

    /// An inline source (enrich's or call's): its first element as XML, else its `key` (`keyed`, for
    /// enrich), else its text.
    fn inline_source(&mut self, s: Node, keyed: bool) -> Option<EnrichSourceKind> {
        if let Some(e) = elements(s).next() {
            return Some(EnrichSourceKind::InlineXml(self.serialize_element(e)));
        }
        if let Some(k) = s.attribute("key").filter(|_| keyed) {
            return Some(EnrichSourceKind::InlineKey(k.to_owned()));
        }
        let text = text_of(s);
        if text.is_empty() {
            let needs = if keyed {
                "XML, text or a 'key'"
            } else {
                "XML or text"
            };
            self.report(
                Severity::Error,
                s,
                format!("an inline source needs {needs}"),
            );
            return None;
        }
        Some(EnrichSourceKind::InlineText(text))
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
        // MI's PropertyGroupMediatorFactory reads its <property> children only.
        assert!(d.items[0].message.contains("ignored"), "{:?}", d.items);
        assert_eq!(d.items[0].severity, crate::diag::Severity::Warning);
        assert_eq!(d.items[0].location.line, 8);
    }

    #[test]
    fn iterate_options_read_as_synapse_reads_them() {
        let iterate = |attrs: &str| {
            parse(&format!(
                r#"<sequence name="S" {NS}><iterate expression="//a" {attrs}><target><sequence><drop/></sequence></target></iterate></sequence>"#
            ))
        };
        let (cfg, d) = iterate(r#"preservePayload="TRUE" attachPath="//p" sequential="true""#);
        assert!(d.items.is_empty(), "{:?}", d.items);
        let crate::model::MediatorKind::Iterate(it) = &cfg.sequences[0].sequence.mediators[0].kind
        else {
            panic!()
        };
        assert!(it.preserve_payload && it.sequential);
        assert_eq!(
            it.attach_path.as_ref().map(|p| p.text.as_str()),
            Some("//p")
        );
        // Synapse: an attachPath without preservePayload is a configuration error.
        let (_, d) = iterate(r#"attachPath="//p""#);
        assert!(d.has_errors());
        assert!(
            d.items[0].message.contains("cannot have an attachPath"),
            "{:?}",
            d.items
        );
        // continueParent in any case, as Synapse's Boolean.valueOf.
        let (cfg, d) = iterate(r#"continueParent="True""#);
        assert!(d.items.is_empty(), "{:?}", d.items);
        let crate::model::MediatorKind::Iterate(it) = &cfg.sequences[0].sequence.mediators[0].kind
        else {
            panic!()
        };
        assert!(it.continue_parent);
    }

    #[test]
    fn callouts_read_as_synapse_reads_them() {
        let callout = |inner: &str| {
            parse(&format!(
                r#"<sequence name="S" {NS}><callout serviceURL="http://h/s" action="urn:a">{inner}</callout></sequence>"#
            ))
        };
        let (cfg, d) =
            callout(r#"<source xpath="//a"/><target key="k"/><configuration axis2xml="x"/>"#);
        assert_eq!(d.items.len(), 1, "{:?}", d.items);
        assert!(d.items[0].message.contains("<configuration> is ignored"));
        let crate::model::MediatorKind::Callout(c) = &cfg.sequences[0].sequence.mediators[0].kind
        else {
            panic!()
        };
        assert!(
            matches!(&c.endpoint, Some(crate::model::EndpointRef::Inline(e))
            if matches!(&e.kind, crate::model::EndpointKind::Address(a) if a.uri == "http://h/s"))
        );
        assert_eq!(c.action.as_deref(), Some("urn:a"));
        assert!(matches!(&c.source, Some(crate::model::CalloutPart::XPath(x)) if x.text == "//a"));
        assert!(matches!(&c.target, Some(crate::model::CalloutPart::Key(k)) if k == "k"));
        let (_, d) = callout(r#"<source/>"#);
        assert!(d.has_errors(), "{:?}", d.items);
        // <enableSec> secures the serviceURL endpoint; with no key it is an error.
        let (cfg, d) = callout(r#"<enableSec outboundPolicy="o" inboundPolicy="i"/>"#);
        assert!(d.items.is_empty(), "{:?}", d.items);
        let crate::model::MediatorKind::Callout(c) = &cfg.sequences[0].sequence.mediators[0].kind
        else {
            panic!()
        };
        assert!(
            matches!(&c.endpoint, Some(crate::model::EndpointRef::Inline(e))
            if matches!(&e.kind, crate::model::EndpointKind::Address(a)
                if a.security.as_ref().is_some_and(|s| s.outbound.as_deref() == Some("o")
                    && s.inbound.as_deref() == Some("i"))))
        );
        let (_, d) = callout(r#"<enableSec/>"#);
        assert!(d.has_errors(), "{:?}", d.items);
    }
}
