//! Message stores: the `<messageStore>` and `<messageProcessor>` artifacts and the `<store>` mediator
//! that puts a copy of the message into a store, as Synapse and MI read them (samples 700 to 705).
//!
//! | Class | Read as |
//! |---|---|
//! | none, `...store.impl.memory.InMemoryStore`, `...store.InMemoryMessageStore` | the in-memory store |
//! | JMS, RabbitMQ, JDBC, resequence or any other store class | unsupported (kept, so that what names it stays out) |
//! | `...processor.impl.forwarder.ScheduledMessageForwardingProcessor` and Synapse's `...processors.forward.` one | forwarding |
//! | `...processor.impl.sampler.SamplingProcessor` and Synapse's `...processors.sampler.` one | sampling |
//! | the failover forwarding processor, any other class | unsupported |
//!
//! A forwarding processor reads MI's parameter names; Apache Synapse's (`max.deliver.attempts`,
//! `max.deliver.drop`, `retry.interval`), which MI ignores, are read where MI's are not given, so
//! that Synapse's sample 705 runs as its guide says.

use super::super::{elements, text_of};
use super::FileParser;
use crate::diag::Severity;
use crate::model::{Forwarding, MessageProcessor, MessageStore, ProcessorKind, Store, ValueSrc};
use roxmltree::Node;

const IN_MEMORY: &[&str] = &[
    "org.apache.synapse.message.store.impl.memory.InMemoryStore",
    "org.apache.synapse.message.store.InMemoryMessageStore",
];
const FORWARDING: &str =
    "org.apache.synapse.message.processor.impl.forwarder.ScheduledMessageForwardingProcessor";
const FORWARDING_OLD: &str =
    "org.apache.synapse.message.processors.forward.ScheduledMessageForwardingProcessor";
const SAMPLING: &[&str] = &[
    "org.apache.synapse.message.processor.impl.sampler.SamplingProcessor",
    "org.apache.synapse.message.processors.sampler.SamplingProcessor",
];

/// What a store class Sluice does not run is, for the report.
fn store_kind(class: &str) -> String {
    let kind = [
        ("jms", "JMS"),
        ("JMS", "JMS"),
        ("rabbitmq", "RabbitMQ"),
        ("resequencer", "resequencing"),
        ("jdbc", "JDBC"),
    ]
    .iter()
    .find(|(part, _)| class.contains(part))
    .map(|(_, kind)| *kind);
    match kind {
        Some(k) => format!("{k} message stores ({class}) are not supported yet; only the in-memory store"),
        None => format!("the message store class {class} is Java code Sluice cannot run; only the in-memory store"),
    }
}

impl FileParser<'_, '_> {
    /// `<store messageStore sequence>`: a name in braces is an XPath naming the store per message.
    pub(super) fn store(&mut self, n: Node) -> Option<Store> {
        let Some(name) = n.attribute("messageStore").filter(|s| !s.trim().is_empty()) else {
            self.report(
                Severity::Error,
                n,
                "Message Store mediator must have a Message store defined",
            );
            return None;
        };
        let store = match name.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
            Some(xpath) => ValueSrc::Expr(self.expr(n, "messageStore", xpath)),
            None => ValueSrc::Literal(name.to_owned()),
        };
        let sequence = n
            .attribute("sequence")
            .filter(|s| !s.trim().is_empty())
            .map(str::to_owned);
        Some(Store { store, sequence })
    }

    /// `<messageStore name class>`: the in-memory store, or another kind kept as unsupported.
    pub(in crate::parse) fn message_store(&mut self, n: Node) -> Option<MessageStore> {
        let name = self.required_attr(n, "name")?;
        self.artifact = Some(format!("messageStore {name}"));
        let unsupported = match n.attribute("class").map(str::trim) {
            None | Some("") => None,
            Some(c) if IN_MEMORY.contains(&c) => None,
            Some(c) => Some(store_kind(c)),
        };
        if let Some(why) = &unsupported {
            self.report(Severity::Unsupported, n, why.clone());
        }
        for c in elements(n) {
            match c.tag_name().name() {
                "parameter" if c.attribute("name").is_none() => {
                    self.report(
                        Severity::Error,
                        c,
                        "Invalid MessageStore parameter - Parameter must have a name",
                    );
                    return None;
                }
                "parameter" => {}
                _ => self.unknown_child(c, "messageStore"),
            }
        }
        Some(MessageStore {
            name,
            unsupported,
            loc: self.loc(n),
        })
    }

    /// `<messageProcessor name class messageStore targetEndpoint>` with its `<parameter>`s.
    pub(in crate::parse) fn message_processor(&mut self, n: Node) -> Option<MessageProcessor> {
        let name = self.required_attr(n, "name");
        if let Some(name) = &name {
            self.artifact = Some(format!("messageProcessor {name}"));
        }
        let class = self.required_attr(n, "class");
        let store = self.required_attr(n, "messageStore");
        let (name, class, store) = (name?, class?, store?);
        let mut params = Vec::new();
        for c in elements(n) {
            match (c.tag_name().name(), c.attribute("name")) {
                ("parameter", Some(p)) => params.push((p.to_owned(), text_of(c))),
                ("parameter", None) => {
                    self.report(
                        Severity::Error,
                        c,
                        "Invalid MessageStore parameter - Parameter must have a name",
                    );
                    return None;
                }
                _ => self.unknown_child(c, "messageProcessor"),
            }
        }
        let p = Params { n, params };
        let interval_ms = match p.get("interval") {
            Some(v) => self.millis(n, "interval", v)?,
            None => 1000,
        };
        if let Some(v) = p.get("member.count") {
            if self.millis(n, "member.count", v)? > 1 {
                self.report(Severity::Unsupported, n, "member.count above 1: several consumers of one in-memory store send some messages twice and lose others in MI; Sluice runs one");
                return None;
            }
        }
        if p.get("cronExpression").is_some() {
            self.report(
                Severity::Unsupported,
                n,
                "cronExpression is not supported yet; give an interval",
            );
            return None;
        }
        let active = p
            .get("is.active")
            .is_none_or(|v| v.eq_ignore_ascii_case("true"));
        let class = class.trim();
        let kind = if class == FORWARDING || class == FORWARDING_OLD {
            let target = n
                .attribute("targetEndpoint")
                .filter(|t| !t.trim().is_empty());
            if target.is_some() && class == FORWARDING_OLD {
                self.report(Severity::Warning, n, "targetEndpoint is ignored with this (Synapse 2) class name, as MI ignores it; the target.endpoint parameter or each message's target.endpoint property is used");
            }
            let target = target.filter(|_| class == FORWARDING).map(str::to_owned);
            ProcessorKind::Forwarding(self.forwarding(&p, target)?)
        } else if SAMPLING.contains(&class) {
            let concurrency = match p.get("concurrency").map(|c| c.trim().parse::<usize>()) {
                None => 1,
                Some(Ok(c)) if c > 0 => c,
                Some(_) => {
                    self.report(
                        Severity::Warning,
                        n,
                        "Invalid value for concurrency switching back to default value (1)",
                    );
                    1
                }
            };
            ProcessorKind::Sampling {
                sequence: p.get("sequence").map(str::to_owned),
                concurrency,
            }
        } else {
            let why = if class.contains("Failover") {
                "the failover message forwarding processor is not supported yet".to_owned()
            } else if class.contains("Resequenc") {
                "Apache Synapse's resequencing message processor is not supported yet".to_owned()
            } else {
                format!("the message processor class {class} is Java code Sluice cannot run")
            };
            self.report(Severity::Unsupported, n, why);
            return None;
        };
        Some(MessageProcessor {
            name,
            store,
            kind,
            interval_ms,
            active,
            loc: self.loc(n),
        })
    }

    /// A forwarding processor's parameters (MI's names, else Apache Synapse's).
    fn forwarding(&mut self, p: &Params, target: Option<String>) -> Option<Forwarding> {
        let n = p.n;
        let attempts = p
            .get("max.delivery.attempts")
            .or(p.get("max.deliver.attempts"));
        let max_attempts = match attempts {
            Some(v) => match v.trim().parse::<i64>() {
                Ok(a) => a,
                Err(_) => {
                    self.report(Severity::Error, n, format!("max.delivery.attempts must be a whole number, not '{v}' (MI fails every run of the processor on it)"));
                    return None;
                }
            },
            None => 4,
        };
        let retry = p.get("client.retry.interval").or(p.get("retry.interval"));
        let retry_interval_ms = match retry {
            Some(v) => self.millis(n, "client.retry.interval", v)?,
            None => 1000,
        };
        let drop_after = match (p.get("max.delivery.drop"), p.get("max.deliver.drop")) {
            (Some(v), _) => v == "Enabled",
            (None, Some(v)) => v.trim().eq_ignore_ascii_case("true"),
            (None, None) => false,
        };
        let mut non_retry = Vec::new();
        for code in p.get("non.retry.status.codes").unwrap_or("").split(',') {
            match code.trim() {
                "" => {}
                c => match c.parse::<u16>() {
                    Ok(s) => non_retry.push(s),
                    Err(_) => {
                        self.report(
                            Severity::Error,
                            n,
                            format!("non.retry.status.codes: '{c}' is no HTTP status"),
                        );
                        return None;
                    }
                },
            }
        }
        let named = |k: &str| {
            p.get(k)
                .filter(|v| !v.trim().is_empty())
                .map(|v| v.trim().to_owned())
        };
        Some(Forwarding {
            endpoint: target.or_else(|| named("target.endpoint")),
            max_attempts,
            retry_interval_ms,
            drop_after,
            non_retry,
            reply_sequence: named("message.processor.reply.sequence"),
            fault_sequence: named("message.processor.fault.sequence"),
            deactivate_sequence: named("message.processor.deactivate.sequence"),
            fail_store: named("message.processor.failMessagesStore"),
        })
    }

    /// A parameter as a whole number of milliseconds (or a count), reported when it is not one.
    fn millis(&mut self, n: Node, what: &str, v: &str) -> Option<u64> {
        match v.trim().parse::<i32>() {
            Ok(x) => Some(u64::try_from(x).unwrap_or(0)),
            Err(_) => {
                self.report(
                    Severity::Error,
                    n,
                    format!("{what} must be a whole number, not '{v}'"),
                );
                None
            }
        }
    }
}

/// A processor's `<parameter name>text</parameter>`s.
struct Params<'a, 'input> {
    n: Node<'a, 'input>,
    params: Vec<(String, String)>,
}

impl Params<'_, '_> {
    /// The parameter's text (the last one given, as a map keeps it).
    fn get(&self, name: &str) -> Option<&str> {
        (self.params.iter().rev())
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

#[cfg(test)]
mod tests {
    use crate::model::*;
    use crate::parse::tests::parse;

    #[test]
    fn stores_and_processors_are_read_as_mi_reads_them() {
        let (cfg, diags) = parse(
            r#"<definitions xmlns="http://ws.apache.org/ns/synapse">
                <messageStore name="m"/>
                <messageStore name="old" class="org.apache.synapse.message.store.InMemoryMessageStore"/>
                <messageStore name="j" class="org.apache.synapse.message.store.impl.jms.JmsStore"/>
                <messageProcessor name="f" messageStore="m" targetEndpoint="ep"
                    class="org.apache.synapse.message.processor.impl.forwarder.ScheduledMessageForwardingProcessor">
                  <parameter name="interval">200</parameter>
                  <parameter name="max.delivery.attempts">2</parameter>
                  <parameter name="max.delivery.drop">Enabled</parameter>
                  <parameter name="non.retry.status.codes">404, 500</parameter>
                </messageProcessor>
                <messageProcessor name="s" messageStore="old"
                    class="org.apache.synapse.message.processors.sampler.SamplingProcessor">
                  <parameter name="sequence">send_seq</parameter>
                  <parameter name="is.active">false</parameter>
                </messageProcessor>
                <messageProcessor name="a" messageStore="m"
                    class="org.apache.synapse.message.processors.forward.ScheduledMessageForwardingProcessor">
                  <parameter name="max.deliver.attempts">3</parameter>
                  <parameter name="max.deliver.drop">true</parameter>
                </messageProcessor>
              </definitions>"#,
        );
        let stores: Vec<_> = cfg
            .stores
            .iter()
            .map(|s| (s.name.as_str(), s.unsupported.is_some()))
            .collect();
        assert_eq!(stores, [("m", false), ("old", false), ("j", true)]);
        assert!(format!("{:?}", diags.items).contains("JMS message stores"));
        let [f, s, a] = &cfg.processors[..] else {
            panic!("{:?}", cfg.processors)
        };
        assert_eq!((f.interval_ms, f.active, s.active), (200, true, false));
        let ProcessorKind::Forwarding(fw) = &f.kind else {
            panic!()
        };
        assert_eq!(fw.endpoint.as_deref(), Some("ep"));
        assert_eq!((fw.max_attempts, fw.drop_after), (2, true));
        assert_eq!(fw.non_retry, [404, 500]);
        let ProcessorKind::Sampling {
            sequence,
            concurrency,
        } = &s.kind
        else {
            panic!()
        };
        assert_eq!((sequence.as_deref(), *concurrency), (Some("send_seq"), 1));
        let ProcessorKind::Forwarding(aw) = &a.kind else {
            panic!()
        };
        assert_eq!(
            (aw.max_attempts, aw.drop_after, aw.endpoint.as_deref()),
            (3, true, None)
        );
    }

    #[test]
    fn what_mi_refuses_at_deploy_is_an_error() {
        for (bad, says) in [
            (
                r#"<messageProcessor name="p" messageStore="m"/>"#,
                "'class'",
            ),
            (
                r#"<messageProcessor name="p" class="x.Y"/>"#,
                "'messageStore'",
            ),
            (
                r#"<messageProcessor name="p" messageStore="m" class="org.apache.synapse.message.processors.sampler.SamplingProcessor"><parameter name="interval">soon</parameter></messageProcessor>"#,
                "interval must be a whole number",
            ),
            (
                r#"<messageProcessor name="p" messageStore="m" class="x.Y"/>"#,
                "Java code",
            ),
            (r#"<store/>"#, "must have a Message store"),
        ] {
            let wrapped = if bad.starts_with("<store") {
                format!(
                    r#"<definitions xmlns="http://ws.apache.org/ns/synapse"><sequence name="s">{bad}</sequence></definitions>"#
                )
            } else {
                format!(
                    r#"<definitions xmlns="http://ws.apache.org/ns/synapse">{bad}</definitions>"#
                )
            };
            let (_, diags) = parse(&wrapped);
            let said = format!("{:?}", diags.items);
            assert!(said.contains(says), "{bad}: {said}");
        }
    }

    #[test]
    fn a_store_name_in_braces_is_an_xpath() {
        let (cfg, _) = parse(
            r#"<definitions xmlns="http://ws.apache.org/ns/synapse"><sequence name="s">
                <store messageStore="{//symbol}" sequence="before"/><store messageStore="plain"/>
              </sequence></definitions>"#,
        );
        let kinds: Vec<_> = cfg.sequences[0]
            .sequence
            .mediators
            .iter()
            .map(|m| &m.kind)
            .collect();
        let [MediatorKind::Store(a), MediatorKind::Store(b)] = &kinds[..] else {
            panic!("{kinds:?}")
        };
        assert!(matches!(&a.store, ValueSrc::Expr(e) if e.text == "//symbol"));
        assert_eq!(a.sequence.as_deref(), Some("before"));
        assert!(matches!(&b.store, ValueSrc::Literal(s) if s == "plain"));
    }
}
