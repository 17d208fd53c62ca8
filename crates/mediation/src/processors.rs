//! Message processors (`<messageProcessor>`), compiled: what each takes from its store and what it
//! does with it. The transport runs them (`sluice_transport::processors`).
//!
//! | Kind | Each run |
//! |---|---|
//! | forwarding | the oldest message, left in the store until it is delivered, to the endpoint (the processor's, else the message's `target.endpoint` property), tried up to `max.delivery.attempts` times with `client.retry.interval` between; then dropped (`max.delivery.drop=Enabled`), moved to `message.processor.failMessagesStore`, or the processor deactivates |
//! | sampling | up to `concurrency` messages, taken out first, each through `sequence` |
//!
//! A forwarding processor runs once every `interval` (one message a run, its tries included); an
//! `interval` under a second runs messages one after the other, `interval` apart, as MI's loop
//! does. A sampling processor runs once every `interval`, at least a second.

use crate::compile::Compiler;
use crate::endpoints::EndpointPlan;
use crate::mediators::store::MessageStore;
use crate::plan::{ProxyPlan, SeqPlan};
use sluice_config::{self as cfg, Severity};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[derive(Debug)]
pub struct ProcessorPlan {
    pub name: String,
    pub store: Arc<MessageStore>,
    pub interval: Duration,
    /// Deactivated processors take nothing; the management API and failures set it.
    active: AtomicBool,
    pub kind: Kind,
    /// The service the processor's messages run under: a send in its sequences goes out from it,
    /// and their errors end in its (Synapse's default) fault handling.
    pub service: Arc<ProxyPlan>,
}

#[derive(Debug)]
pub enum Kind {
    Forwarding(Forwarding),
    Sampling {
        sequence: Option<Arc<SeqPlan>>,
        concurrency: usize,
    },
}

#[derive(Debug)]
pub struct Forwarding {
    /// `None`: each message's `target.endpoint` property names its endpoint.
    pub endpoint: Option<Arc<EndpointPlan>>,
    /// Tries of one message; 0 or less: no limit.
    pub max_attempts: i64,
    pub retry_interval: Duration,
    pub drop_after: bool,
    pub non_retry: Vec<u16>,
    pub reply: Option<Arc<SeqPlan>>,
    pub fault: Option<Arc<SeqPlan>>,
    pub deactivate: Option<Arc<SeqPlan>>,
    pub fail_store: Option<Arc<MessageStore>>,
}

impl ProcessorPlan {
    pub fn is_active(&self) -> bool {
        self.active.load(Ordering::Relaxed)
    }

    pub fn set_active(&self, on: bool) {
        self.active.store(on, Ordering::Relaxed);
    }

    /// MI's type name (the management API's `type`).
    pub fn type_name(&self) -> &'static str {
        match self.kind {
            Kind::Forwarding(_) => "Scheduled-message-forwarding-processor",
            Kind::Sampling { .. } => "Sampling-processor",
        }
    }
}

impl Compiler<'_> {
    /// The `<messageProcessor>`s that deploy, one a store: two on one in-memory store send some
    /// messages twice and lose others in MI (each peeks the same head, each acknowledgement
    /// removes the next), so the second is refused.
    pub(crate) fn processors(&mut self, all: &[cfg::MessageProcessor]) -> Vec<Arc<ProcessorPlan>> {
        let mut consumers: HashMap<&str, &str> = HashMap::new();
        let mut out = Vec::new();
        for p in all {
            if let Some(first) = consumers.get(p.store.as_str()) {
                let why = format!("message store '{}' is already taken by message processor '{first}': two processors on one in-memory store send some messages twice and lose others in MI; Sluice runs one", p.store);
                self.report(Severity::Unsupported, &p.loc, "messageProcessor", why);
                continue;
            }
            if let Some(plan) = self.processor(p) {
                consumers.insert(&p.store, &p.name);
                out.push(Arc::new(plan));
            }
        }
        out
    }

    /// A `<messageProcessor>`, when its store and what it names deployed.
    pub(crate) fn processor(&mut self, p: &cfg::MessageProcessor) -> Option<ProcessorPlan> {
        let artifact = format!("messageProcessor {}", p.name);
        match self.nested(artifact, |c| c.processor_inner(p)) {
            (Some(plan), false) => Some(plan),
            _ => None,
        }
    }

    fn processor_inner(&mut self, p: &cfg::MessageProcessor) -> Option<ProcessorPlan> {
        let store = match self.stores.get(p.store.as_str()) {
            Some(Some(s)) => s.clone(),
            Some(None) => {
                let why = format!(
                    "depends on message store '{}', which is not deployed",
                    p.store
                );
                self.report(Severity::Unsupported, &p.loc, "messageProcessor", why);
                return None;
            }
            None => {
                let why = format!(
                    "no message store '{}': the processor has nothing to take, and is not deployed",
                    p.store
                );
                self.report(Severity::Warning, &p.loc, "messageProcessor", why);
                return None;
            }
        };
        let kind = match &p.kind {
            cfg::ProcessorKind::Sampling {
                sequence,
                concurrency,
            } => Kind::Sampling {
                sequence: match sequence {
                    Some(s) => Some(self.named_sequence(s, Some(&p.loc))?),
                    None => None,
                },
                concurrency: *concurrency,
            },
            cfg::ProcessorKind::Forwarding(f) => Kind::Forwarding(self.forwarding(f, &p.loc)?),
        };
        let name = format!("messageProcessor {}", p.name).into();
        let service = self.service(name, &p.loc, [&None, &None, &None])?;
        Some(ProcessorPlan {
            name: p.name.clone(),
            store,
            interval: Duration::from_millis(p.interval_ms),
            active: p.active.into(),
            kind,
            service: Arc::new(service),
        })
    }

    fn forwarding(&mut self, f: &cfg::Forwarding, loc: &cfg::Location) -> Option<Forwarding> {
        let endpoint = match &f.endpoint {
            Some(e) => Some(self.named_endpoint(e, Some(loc))?),
            None => None,
        };
        let seq = |c: &mut Self, s: &Option<String>| match s {
            Some(s) => c.named_sequence(s, Some(loc)).map(Some),
            None => Some(None),
        };
        let fail_store = match &f.fail_store {
            Some(s) => match self.stores.get(s.as_str()) {
                Some(Some(store)) => Some(store.clone()),
                _ => {
                    let why = format!(
                        "message.processor.failMessagesStore: no in-memory message store '{s}'"
                    );
                    self.report(Severity::Unsupported, loc, "messageProcessor", why);
                    return None;
                }
            },
            None => None,
        };
        Some(Forwarding {
            endpoint,
            max_attempts: f.max_attempts,
            retry_interval: Duration::from_millis(f.retry_interval_ms),
            drop_after: f.drop_after,
            non_retry: f.non_retry.clone(),
            reply: seq(self, &f.reply_sequence)?,
            fault: seq(self, &f.fault_sequence)?,
            deactivate: seq(self, &f.deactivate_sequence)?,
            fail_store,
        })
    }
}
