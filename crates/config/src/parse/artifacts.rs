//! Top-level artifacts: `<definitions>`, proxies, APIs and their resources, targets, named sequences,
//! local entries and (sequence) templates.

use super::{child, elements, is_synapse, loose_bool, Expect, FileParser};
use crate::diag::Severity;
use crate::model::*;
use roxmltree::Node;

/// Top-level artifacts Synapse defines that Sluice does not serve yet.
const KNOWN_UNSUPPORTED_ARTIFACTS: &[&str] = &[
    "inboundEndpoint",
    "taskManager",
    "task",
    "eventSource",
    "executor",
];

impl Expect {
    /// Whether a file expected to hold `self` may have `root` as its root element.
    fn admits(self, root: &str) -> bool {
        matches!(
            (self, root),
            (Expect::Any, _)
                | (Expect::Proxy, "proxy")
                | (Expect::Endpoint, "endpoint")
                | (Expect::Sequence, "sequence")
                | (Expect::LocalEntry, "localEntry")
                | (Expect::Api, "api")
                | (Expect::Template, "template")
                | (Expect::MessageStore, "messageStore")
                | (Expect::MessageProcessor, "messageProcessor")
        )
    }
}

/// The words of a list written with spaces or commas between them.
fn words(list: &str) -> impl Iterator<Item = &str> {
    list.split([' ', ',']).filter(|s| !s.is_empty())
}

impl FileParser<'_, '_> {
    pub(super) fn top_level(&mut self, root: Node, expect: Expect, cfg: &mut Config) {
        let name = root.tag_name().name();
        // MI's local entry deployer reads the key and the content whatever the root's namespace
        // (its tests deploy `<localEntry key>` files without one).
        if name == "localEntry" && root.tag_name().namespace().is_none() && expect != Expect::Proxy
        {
            self.report(
                Severity::Warning,
                root,
                "<localEntry> is not in the Synapse namespace; read as MI reads it",
            );
            self.failed = false;
            cfg.local_entries.extend(self.local_entry(root));
            return;
        }
        if !is_synapse(root) {
            if expect == Expect::Any {
                self.report(Severity::Note, root, "not a Synapse artifact (root element is not in the Synapse namespace); skipped");
            } else {
                self.check_synapse_ns(root);
            }
            return;
        }
        if !expect.admits(name) {
            self.report(
                Severity::Error,
                root,
                format!("artifact.xml declares {expect:?}, but the file holds <{name}>"),
            );
            return;
        }
        // Each artifact is judged on its own: a problem in one keeps only that one from deploying.
        self.failed = false;
        match name {
            "definitions" => self.definitions(root, cfg),
            "proxy" => cfg.proxies.extend(self.proxy(root)),
            "api" => cfg.apis.extend(self.api(root)),
            "sequence" => cfg.sequences.extend(self.sequence_artifact(root)),
            "endpoint" => cfg.endpoints.extend(self.endpoint_artifact(root)),
            "localEntry" => cfg.local_entries.extend(self.local_entry(root)),
            "template" => self.template_artifact(root, cfg),
            "registry" => self.registry(root, cfg),
            "import" => self.import(root, cfg),
            "priorityExecutor" => cfg.executors.extend(self.priority_executor(root)),
            "messageStore" => cfg.stores.extend(self.message_store(root)),
            "messageProcessor" => cfg.processors.extend(self.message_processor(root)),
            // The configuration's own description (Synapse keeps it as such).
            "description" if expect == Expect::Any => {}
            other if KNOWN_UNSUPPORTED_ARTIFACTS.contains(&other) => {
                if other == "registry" {
                    cfg.key_sources.push((other.to_owned(), self.loc(root)));
                }
                self.artifact = root.attribute("name").map(|n| format!("{other} {n}"));
                self.report(
                    Severity::Unsupported,
                    root,
                    format!("<{other}> artifacts are not supported yet; not deployed"),
                );
            }
            other => self.report(
                Severity::Error,
                root,
                format!("unknown top-level element <{other}>"),
            ),
        }
    }

    /// An `<import name package>` of a Synapse template library: its templates are read from the
    /// library when the configuration is loaded ([`crate::library`]).
    fn import(&mut self, n: Node, cfg: &mut Config) {
        let (Some(name), Some(package)) = (
            self.required_attr(n, "name"),
            self.required_attr(n, "package"),
        ) else {
            return;
        };
        if n.attribute("status") == Some("disabled") {
            return;
        }
        cfg.imports.push(Import {
            name,
            package,
            loc: self.loc(n),
        });
    }

    /// A `<registry>`: read when its root is a folder (`file:`), or when it is MI's own (its
    /// folder, `<MI_HOME>/registry` unless `RegRoot` says otherwise); any other is reported and
    /// Synapse's lookups in it are unsupported.
    fn registry(&mut self, n: Node, cfg: &mut Config) {
        let parameter = |name: &str| {
            elements(n)
                .find(|p| p.tag_name().name() == "parameter" && p.attribute("name") == Some(name))
                .map(|p| p.text().unwrap_or("").trim().to_owned())
        };
        if MI_REGISTRIES.contains(&n.attribute("provider").unwrap_or("")) {
            let root = parameter("RegRoot").unwrap_or_else(|| "file:registry".to_owned());
            if root.starts_with("file:") {
                let loc = self.loc(n);
                cfg.mi_registries.push(RegistryRoot { root, loc });
                return;
            }
        }
        match parameter("root") {
            Some(r) if r.starts_with("file:") => cfg.registries.push(RegistryRoot {
                root: r,
                loc: self.loc(n),
            }),
            other => {
                cfg.key_sources.push(("registry".to_owned(), self.loc(n)));
                let why = match other {
                    Some(r) => format!("a <registry> whose root is '{r}' is not read (only file: roots: Sluice uses no network at load)"),
                    None => "a <registry> without a 'root' parameter is not supported".to_owned(),
                };
                self.report(Severity::Unsupported, n, why);
            }
        }
    }

    fn definitions(&mut self, n: Node, cfg: &mut Config) {
        for c in elements(n) {
            if c.tag_name().name() == "definitions" {
                self.report(Severity::Error, c, "nested <definitions>");
                continue;
            }
            self.top_level(c, Expect::Any, cfg);
        }
    }

    fn proxy(&mut self, n: Node) -> Option<Proxy> {
        let name = self.required_attr(n, "name")?;
        self.artifact = Some(format!("proxy {name}"));
        let start_on_load = self.true_or_false(n, "startOnLoad", true).unwrap_or(true);
        let transports = n
            .attribute("transports")
            .map(|t| words(t).map(str::to_owned).collect())
            .unwrap_or_else(|| vec!["http".to_owned(), "https".to_owned()]);
        let mut target = Target::default();
        let mut publish_wsdl = None;
        let mut security = None;
        for c in elements(n) {
            if !self.check_synapse_ns(c) {
                continue;
            }
            match c.tag_name().name() {
                "target" => target = self.target(c),
                "publishWSDL" => publish_wsdl = self.publish_wsdl(c),
                "enableSec" => {
                    let s = security.get_or_insert_with(|| ProxySecurity {
                        enabled: None,
                        policies: Vec::new(),
                    });
                    s.enabled = Some(self.loc(c));
                }
                "policy" => {
                    let key = c.attribute("key").unwrap_or_default().to_owned();
                    let s = security.get_or_insert_with(|| ProxySecurity {
                        enabled: None,
                        policies: Vec::new(),
                    });
                    s.policies.push(PolicyRef {
                        key,
                        flow: c.attribute("type").map(str::to_owned),
                        loc: self.loc(c),
                    });
                }
                "description" | "parameter" => {}
                "enableAddressing" | "enableRM" => {
                    self.report(
                        Severity::Warning,
                        c,
                        "WS-Addressing / WS-RM engagement is ignored",
                    );
                }
                _ => self.unknown_child(c, "proxy"),
            }
        }
        Some(Proxy {
            name,
            loc: self.loc(n),
            start_on_load,
            transports,
            target,
            publish_wsdl,
            security,
            rejected: self.failed,
        })
    }

    fn api(&mut self, n: Node) -> Option<Api> {
        let name = self.required_attr(n, "name")?;
        self.artifact = Some(format!("api {name}"));
        let context = self.required_attr(n, "context")?;
        if !context.starts_with('/') {
            self.report(
                Severity::Error,
                n,
                format!("the context '{context}' must start with '/'"),
            );
        }
        let context = self.versioned_context(n, context);
        let host = n.attribute("hostname").map(str::to_owned);
        let port = match n.attribute("port").map(|p| p.trim().parse::<u16>()) {
            None => None,
            Some(Ok(p)) => Some(p),
            Some(Err(_)) => {
                self.report(Severity::Error, n, "the API's port is not a port number");
                None
            }
        };
        let mut resources = Vec::new();
        let mut any = false;
        for c in elements(n) {
            if !self.check_synapse_ns(c) {
                continue;
            }
            match c.tag_name().name() {
                "resource" => {
                    any = true;
                    resources.extend(self.resource(c));
                }
                "description" => {}
                "handlers" => self.report(
                    Severity::Unsupported,
                    c,
                    "API handlers are not supported yet",
                ),
                _ => self.unknown_child(c, "api"),
            }
        }
        if !any {
            self.report(Severity::Error, n, "an API needs at least one <resource>");
        }
        Some(Api {
            name,
            loc: self.loc(n),
            context,
            resources,
            host,
            port,
            rejected: self.failed,
        })
    }

    /// The API's context with its version in it, as its `version-type` says.
    fn versioned_context(&mut self, n: Node, context: String) -> String {
        let version = n.attribute("version").unwrap_or_default();
        // Synapse matches a version only with a version-type of context or url.
        match (n.attribute("version-type"), version) {
            (_, "") | (None | Some("none"), _) => context,
            (Some("context"), v) if context.contains("{version}") => {
                context.replace("{version}", v)
            }
            // As MI's ContextVersionStrategy: it puts the version where `{version}` stands, and
            // with none there the context is kept as written and matched as it is. (Apache Synapse
            // 3.0.1 has no context versioning at all.)
            (Some("context"), _) => {
                self.report(
                    Severity::Note,
                    n,
                    "version-type=\"context\" without '{version}' in the context: the version is not in the path, and requests match the context alone (as WSO2 MI)",
                );
                context
            }
            (Some("url"), v) => format!("{}/{v}", context.trim_end_matches('/')),
            (Some(other), _) => {
                self.report(
                    Severity::Error,
                    n,
                    format!("unknown version-type '{other}' (context, url or none)"),
                );
                context
            }
        }
    }

    fn resource(&mut self, n: Node) -> Option<ApiResource> {
        let methods = n
            .attribute("methods")
            .map(|m| words(m).map(str::to_ascii_uppercase).collect())
            .unwrap_or_default();
        let pattern = match (n.attribute("uri-template"), n.attribute("url-mapping")) {
            (Some(_), Some(_)) => {
                self.report(
                    Severity::Error,
                    n,
                    "a resource takes a uri-template or a url-mapping, not both",
                );
                return None;
            }
            (Some(t), None) => ResourcePattern::UriTemplate(t.to_owned()),
            (None, Some(m)) => ResourcePattern::UrlMapping(m.to_owned()),
            (None, None) => ResourcePattern::Any,
        };
        for a in ["content-type", "user-agent"] {
            if n.attribute(a).is_some() {
                self.report(
                    Severity::Unsupported,
                    n,
                    format!("a resource filtered on '{a}' is not supported yet"),
                );
            }
        }
        let mut t = Target::default();
        self.sequences_of(n, &mut t, "resource");
        if t.endpoint.is_some() {
            self.report(Severity::Error, n, "a resource has no endpoint");
        }
        Some(ApiResource {
            loc: self.loc(n),
            methods,
            pattern,
            in_sequence: t.in_sequence,
            out_sequence: t.out_sequence,
            fault_sequence: t.fault_sequence,
        })
    }

    fn target(&mut self, n: Node) -> Target {
        let mut t = Target::default();
        self.sequences_of(n, &mut t, "target");
        t
    }

    /// The in-, out- and fault sequences (and endpoint) of a `<target>` or `<resource>`, given as
    /// attributes naming sequences or as child elements.
    fn sequences_of(&mut self, n: Node, t: &mut Target, what: &str) {
        for (attr, slot) in [
            ("inSequence", &mut t.in_sequence),
            ("outSequence", &mut t.out_sequence),
            ("faultSequence", &mut t.fault_sequence),
        ] {
            if let Some(r) = self.sequence_key(n, attr) {
                *slot = Some(r);
            }
        }
        if let Some(r) = self.endpoint_key(n, "endpoint") {
            t.endpoint = Some(r);
        }
        for c in elements(n) {
            if !self.check_synapse_ns(c) {
                continue;
            }
            let name = c.tag_name().name();
            let slot = match name {
                "inSequence" => &mut t.in_sequence,
                "outSequence" => &mut t.out_sequence,
                "faultSequence" => &mut t.fault_sequence,
                "endpoint" => {
                    t.endpoint = self.endpoint_ref(c);
                    continue;
                }
                _ => {
                    self.unknown_child(c, what);
                    continue;
                }
            };
            if slot.is_some() {
                // Synapse's factory reads the first and passes over the others.
                let why = format!("<{name}> given twice (attribute and element?): the first is used, as Synapse uses it");
                self.report(Severity::Warning, c, why);
                continue;
            }
            *slot = Some(SequenceRef::Inline(self.sequence(c)));
        }
    }

    fn publish_wsdl(&mut self, n: Node) -> Option<PublishWsdl> {
        let loc = self.loc(n);
        let source = if let Some(k) = n.attribute("key") {
            WsdlSource::Key(k.to_owned())
        } else if let Some(u) = n.attribute("uri") {
            WsdlSource::Uri(u.to_owned())
        } else if let Some(c) = elements(n).next() {
            WsdlSource::Inline(self.serialize_element(c))
        } else {
            self.report(
                Severity::Error,
                n,
                "publishWSDL needs 'key', 'uri' or an inline WSDL",
            );
            return None;
        };
        Some(PublishWsdl { loc, source })
    }

    fn sequence_artifact(&mut self, n: Node) -> Option<NamedSequence> {
        let name = self.required_attr(n, "name")?;
        self.artifact = Some(format!("sequence {name}"));
        let sequence = self.sequence(n);
        Some(NamedSequence {
            name,
            sequence,
            rejected: self.failed,
        })
    }

    fn local_entry(&mut self, n: Node) -> Option<LocalEntry> {
        let key = self.required_attr(n, "key")?;
        self.artifact = Some(format!("local entry {key}"));
        let loc = self.loc(n);
        let mut artifact = None;
        // A `<description>` is the entry's description, not its value (Synapse's EntryFactory
        // takes it out first): MI's tooling writes one after the text.
        let value_element =
            elements(n).find(|c| !(is_synapse(*c) && c.tag_name().name() == "description"));
        let value = if let Some(src) = n.attribute("src") {
            LocalEntryValue::Src(src.to_owned())
        } else if let Some(c) = value_element {
            artifact = self.entry_artifact(c, &key);
            LocalEntryValue::Xml {
                root: c.tag_name().name().to_owned(),
                text: self.serialize_element(c),
            }
        } else {
            let text: String = (n.children().filter(|c| c.is_text()))
                .filter_map(|c| c.text())
                .collect();
            LocalEntryValue::Text(text.trim().to_owned())
        };
        Some(LocalEntry {
            key,
            loc,
            value,
            artifact,
        })
    }

    /// The Synapse `<sequence>` or `<endpoint>` a local entry with `key` holds, read as one.
    pub(super) fn entry_artifact(&mut self, c: Node, key: &str) -> Option<EntryArtifact> {
        if !is_synapse(c) {
            return None;
        }
        match c.tag_name().name() {
            "sequence" => {
                let sequence = self.sequence(c);
                Some(EntryArtifact::Sequence(NamedSequence {
                    name: key.to_owned(),
                    sequence,
                    rejected: self.failed,
                }))
            }
            "endpoint" => {
                let e = self.endpoint(c).filter(|_| !self.failed);
                Some(EntryArtifact::Endpoint(Endpoint {
                    name: Some(key.to_owned()),
                    ..e.unwrap_or_else(|| Endpoint {
                        name: None,
                        loc: self.loc(c),
                        kind: EndpointKind::Rejected,
                        properties: Vec::new(),
                    })
                }))
            }
            _ => None,
        }
    }

    /// A `<template>`: an endpoint template when it holds an `<endpoint>`, else a sequence template.
    fn template_artifact(&mut self, n: Node, cfg: &mut Config) {
        let Some(name) = self.required_attr(n, "name") else {
            return;
        };
        self.artifact = Some(format!("template {name}"));
        if child(n, "endpoint").is_some() {
            cfg.endpoint_templates
                .extend(self.endpoint_template(n, name));
        } else {
            cfg.templates.extend(self.template(n, name));
        }
    }

    /// A `<template>`'s parameters and its `<sequence>`.
    fn template(&mut self, n: Node, name: String) -> Option<Template> {
        let mut params = Vec::new();
        let mut sequence = None;
        for c in elements(n) {
            match c.tag_name().name() {
                "parameter" => {
                    let Some(p) = self.required_attr(c, "name") else {
                        continue;
                    };
                    params.push(TemplateParam {
                        name: p,
                        // WSO2's `defaultValue`; Apache Synapse's `default`.
                        default: c
                            .attribute("defaultValue")
                            .or(c.attribute("default"))
                            .map(str::to_owned),
                        mandatory: loose_bool(c, "isMandatory", false),
                    });
                }
                "sequence" if sequence.is_none() => sequence = Some(self.sequence(c)),
                _ => self.unknown_child(c, "template"),
            }
        }
        let sequence = self.needed(sequence, n, "a template needs a <sequence>")?;
        Some(Template {
            name,
            loc: self.loc(n),
            params,
            sequence,
            rejected: self.failed,
        })
    }
}

/// The registry providers of WSO2 MI (4.x, and the Carbon-based ESB's name for it) that read MI's
/// file registry.
const MI_REGISTRIES: [&str; 2] = [
    "org.wso2.micro.integrator.registry.MicroIntegratorRegistry",
    "org.wso2.carbon.mediation.registry.WSO2Registry",
];

#[cfg(test)]
mod tests {
    use crate::model::*;
    use crate::parse::tests::{parse, NS};

    #[test]
    fn proxy_with_inline_sequences_and_keyed_endpoint() {
        let (cfg, d) = parse(&format!(
            r#"<proxy name="P" transports="http" startOnLoad="false" {NS}>
  <target endpoint="E" faultSequence="F">
    <inSequence><log level="custom"><property name="a" expression="$trp:x"/></log></inSequence>
    <outSequence><send/></outSequence>
  </target>
</proxy>"#
        ));
        assert!(d.items.is_empty(), "{:?}", d.items);
        let p = &cfg.proxies[0];
        assert!(!p.start_on_load && !p.rejected);
        assert_eq!(p.transports, vec!["http"]);
        assert!(matches!(&p.target.endpoint, Some(EndpointRef::Key { key, .. }) if key == "E"));
        assert!(
            matches!(&p.target.fault_sequence, Some(SequenceRef::Key { key, .. }) if key == "F")
        );
        let Some(SequenceRef::Inline(seq)) = &p.target.in_sequence else {
            panic!()
        };
        let MediatorKind::Log(l) = &seq.mediators[0].kind else {
            panic!()
        };
        assert_eq!(l.level, LogLevel::Custom);
        assert_eq!(seq.mediators[0].loc.line, 3);
    }

    /// A local entry's `<description>` is not its value (MI's tooling writes one after a JSON
    /// Schema's text): the text, or the XML element beside it, is.
    #[test]
    fn a_local_entrys_description_is_not_its_value() {
        let (cfg, d) = parse(&format!(
            r#"<definitions {NS}><localEntry key="j"><![CDATA[{{"type": "object"}}]]><description/></localEntry>
<localEntry key="x"><description>d</description><a xmlns="">1</a></localEntry></definitions>"#
        ));
        assert!(d.items.is_empty(), "{:?}", d.items);
        let value = |k: &str| &cfg.local_entries.iter().find(|e| e.key == k).unwrap().value;
        assert!(
            matches!(value("j"), LocalEntryValue::Text(t) if t == r#"{"type": "object"}"#),
            "{:?}",
            value("j")
        );
        assert!(
            matches!(value("x"), LocalEntryValue::Xml { root, .. } if root == "a"),
            "{:?}",
            value("x")
        );
    }

    #[test]
    fn apis_resources_and_call_parse_with_their_versions_and_refusals() {
        let (cfg, d) = parse(&format!(
            r#"<definitions {NS}>
  <api name="A" context="/shop/" >
    <resource methods="get POST" uri-template="/items/{{id}}" faultSequence="fault">
      <inSequence><call blocking="true"><endpoint key="E"/></call><respond/></inSequence>
    </resource>
    <resource url-mapping="/x/*" inSequence="In"/>
    <resource><inSequence><call/></inSequence><outSequence><send/></outSequence></resource>
  </api>
  <api name="V1" context="/v/{{version}}/s" version="1.0" version-type="context"><resource/></api>
  <api name="V2" context="/w" version="2" version-type="url"><resource/></api>
  <api name="V3" context="/c/" version="3" version-type="context"><resource/></api>
</definitions>"#
        ));
        // A context version with no `{version}` to put it in: kept as written, as MI keeps it.
        assert_eq!(d.items.len(), 1, "{:?}", d.items);
        assert_eq!(d.items[0].severity, crate::diag::Severity::Note);
        assert_eq!(cfg.apis[3].context, "/c/");
        assert!(!cfg.apis[3].rejected);
        let a = &cfg.apis[0];
        assert_eq!(a.context, "/shop/");
        assert_eq!(a.resources.len(), 3);
        let r = &a.resources[0];
        assert_eq!(r.methods, ["GET", "POST"]);
        assert_eq!(
            r.pattern,
            ResourcePattern::UriTemplate("/items/{id}".into())
        );
        assert!(matches!(&r.fault_sequence, Some(SequenceRef::Key { key, .. }) if key == "fault"));
        let Some(SequenceRef::Inline(seq)) = &r.in_sequence else {
            panic!()
        };
        assert!(matches!(
            &seq.mediators[0].kind,
            MediatorKind::Call {
                endpoint: Some(EndpointRef::Key { key, .. }),
                io: None,
            } if key == "E"
        ));
        assert_eq!(
            a.resources[1].pattern,
            ResourcePattern::UrlMapping("/x/*".into())
        );
        assert!(a.resources[1].methods.is_empty());
        assert!(
            matches!(&a.resources[1].in_sequence, Some(SequenceRef::Key { key, .. }) if key == "In")
        );
        assert_eq!(a.resources[2].pattern, ResourcePattern::Any);
        assert_eq!(cfg.apis[1].context, "/v/1.0/s");
        assert_eq!(cfg.apis[2].context, "/w/2");
        let (cfg, d) = parse(&format!(
            r#"<definitions {NS}>
  <api name="B" context="/b" port="http"><resource uri-template="/a" url-mapping="/b"/></api>
  <api name="C" context="c"><resource><inSequence><call><target type="variable">v</target></call></inSequence></resource></api>
</definitions>"#
        ));
        let msgs: Vec<String> = d.items.iter().map(|x| x.to_string()).collect();
        assert_eq!(msgs.len(), 4, "{msgs:#?}");
        assert!(msgs[0].contains("not a port number"), "{msgs:#?}");
        assert!(msgs[1].contains("not both"), "{msgs:#?}");
        assert!(msgs[2].contains("must start with '/'"), "{msgs:#?}");
        assert!(msgs[3].contains("a variable target"), "{msgs:#?}");
        assert!(cfg.apis.iter().all(|a| a.rejected));
    }
}
