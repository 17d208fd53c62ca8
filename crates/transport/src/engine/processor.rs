//! A message processor's run on the engine ([`sluice_mediation::processors`]): a forwarding
//! processor's delivery of the oldest stored message, with its tries, or a sampling processor's
//! messages through its sequence. [`crate::processors`] schedules the runs.
//!
//! A forwarding try is delivered when:
//!
//! | The message | Delivered when |
//! |---|---|
//! | one-way (`OUT_ONLY`) | the back-end answers 2xx or a status in `non.retry.status.codes` |
//! | two-way | the same, and then the reply sequence runs without error; with no reply sequence the processor deactivates, the message kept (MI) |
//!
//! A try that fails for an error (the back-end unreachable, a timeout, an error in the reply
//! sequence) runs the fault sequence with `ERROR_CODE` and `ERROR_MESSAGE` set; a one-way answer
//! with another status is only logged, as in MI. A reply sequence that ends in `drop` or
//! `respond` counts as delivered; MI's code counts it as failed and sends the message again.

use super::*;
use sluice_mediation::processors::{Forwarding, Kind, ProcessorPlan};
use sluice_mediation::SeqPlan;

/// How one forwarding try ended.
enum Try {
    Delivered,
    /// Not delivered; `msg` as the try left it (for the fault and deactivate sequences), and
    /// whether it failed for an error (the fault sequence runs).
    Failed {
        msg: Message,
        error: bool,
    },
    /// The processor cannot go on (no reply sequence for a two-way message).
    Stop(Message, String),
}

impl Engine {
    /// One run of `p`, when it is active.
    pub async fn run_processor(&self, p: &ProcessorPlan) {
        if !p.is_active() {
            return;
        }
        match &p.kind {
            Kind::Forwarding(f) => self.forward_head(p, f).await,
            Kind::Sampling {
                sequence,
                concurrency,
            } => {
                let mut runs = Vec::new();
                for _ in 0..*concurrency {
                    let Some(msg) = p.store.pop() else { break };
                    // No sequence: the message is taken and discarded, as in MI.
                    if let Some(seq) = sequence {
                        runs.push(Box::pin(self.sampled(p, msg, seq)));
                    }
                }
                join_all(runs).await;
            }
        }
    }

    /// A sampled message through `seq`, what it decides carried out; the answer goes nowhere.
    async fn sampled(&self, p: &ProcessorPlan, mut msg: Message, seq: &Arc<SeqPlan>) {
        let service = &p.service;
        let answer = match mediate!(self, msg, Work::Seq(seq)) {
            Ok(Flow::Continue) => return,
            Ok(flow) => {
                Box::pin(self.request_decided(service, msg, None, flow, Depth::Normal)).await
            }
            Err(e) => Box::pin(self.fault_flow(service, msg, e, None)).await,
        };
        let _ = answer.into_body().collect().await;
    }

    /// The store's oldest message to its endpoint, tried as `f` says; it leaves the store once
    /// delivered, dropped or moved.
    async fn forward_head(&self, p: &ProcessorPlan, f: &Forwarding) {
        let Some(head) = p.store.peek() else { return };
        let ep = match &f.endpoint {
            Some(ep) => Some(ep.clone()),
            None => head.props.get("target.endpoint").and_then(|name| {
                self.plan
                    .endpoints
                    .get()
                    .and_then(|all| all.get(name))
                    .cloned()
            }),
        };
        let Some(ep) = ep else {
            let why = "Neither targetEndpoint defined in the MessageProcessor configuration nor Property target.endpoint is found in the message context, or the endpoint does not exist";
            return self.deactivate(p, f, head, why).await;
        };
        let mut attempts = 0i64;
        loop {
            let (msg, error) = match self.forward_try(f, head.clone(), &ep).await {
                Try::Delivered => {
                    p.store.pop();
                    return;
                }
                Try::Stop(msg, why) => return self.deactivate(p, f, msg, &why).await,
                Try::Failed { msg, error } => (msg, error),
            };
            attempts += 1;
            let msg = match (&f.fault, error) {
                (Some(fault), true) => self.side_sequence(p, msg, fault).await,
                _ => msg,
            };
            if f.max_attempts > 0 && attempts >= f.max_attempts {
                if f.drop_after {
                    tracing::warn!(processor = %p.name, "message dropped after {attempts} failed tries");
                    p.store.pop();
                    return;
                }
                if let Some(fail) = &f.fail_store {
                    if p.store.peek().is_some_and(|m| fail.push(m)) {
                        p.store.pop();
                        return;
                    }
                    let why = format!("message store '{}' did not take the message", fail.name);
                    return self.deactivate(p, f, msg, &why).await;
                }
                let why = format!("the message was not delivered in {attempts} tries");
                return self.deactivate(p, f, msg, &why).await;
            }
            tokio::time::sleep(f.retry_interval).await;
            if !p.is_active() {
                return;
            }
        }
    }

    /// One try of `msg` to `ep`.
    async fn forward_try(&self, f: &Forwarding, mut msg: Message, ep: &Arc<EndpointPlan>) -> Try {
        let one_way = msg.props.is_true("OUT_ONLY");
        let (resp, _) = match self.send_routed(&mut msg, None, ep, false).await {
            Ok(r) => r,
            Err(failed) => {
                exec::set_error_props(&mut msg, &failed.error);
                return Try::Failed { msg, error: true };
            }
        };
        let status = resp.status();
        let good = status.is_success() || f.non_retry.contains(&status.as_u16());
        let (parts, body) = resp.into_parts();
        let mut rmsg = msg.into_response(parts.status, parts.headers);
        match self.buffer(Some(Inbound::Backend(body)), "response").await {
            Ok(b) => rmsg.body = read_body(b),
            Err(e) => {
                exec::set_error_props(&mut rmsg, &e);
                return Try::Failed {
                    msg: rmsg,
                    error: true,
                };
            }
        }
        if !good {
            tracing::warn!("message processor: the back-end answered {status}");
            return Try::Failed {
                msg: rmsg,
                error: !one_way,
            };
        }
        if one_way {
            return Try::Delivered;
        }
        let Some(reply) = &f.reply else {
            let why = "Failed to send the out message. Reply sequence does not Exist.".to_owned();
            return Try::Stop(rmsg, why);
        };
        match mediate!(self, rmsg, Work::Seq(reply)) {
            Ok(Flow::Continue | Flow::Drop | Flow::Respond | Flow::Absorbed) => Try::Delivered,
            Ok(_) => {
                tracing::warn!("message processor: a reply sequence may only end, drop or respond here; what it decided is not carried out");
                Try::Delivered
            }
            Err(e) => {
                exec::set_error_props(&mut rmsg, &e);
                Try::Failed {
                    msg: rmsg,
                    error: true,
                }
            }
        }
    }

    /// `seq` (a fault or deactivate sequence) on `msg`; what it decides is not carried out.
    async fn side_sequence(
        &self,
        p: &ProcessorPlan,
        mut msg: Message,
        seq: &Arc<SeqPlan>,
    ) -> Message {
        if let Err(e) = mediate!(self, msg, Work::Seq(seq)) {
            tracing::warn!(processor = %p.name, "sequence failed: {}", e.reason());
        }
        msg
    }

    /// The processor stops taking messages (the message stays in the store); the deactivate
    /// sequence runs on `msg`.
    async fn deactivate(&self, p: &ProcessorPlan, f: &Forwarding, msg: Message, why: &str) {
        p.set_active(false);
        tracing::error!(processor = %p.name, "deactivated: {why}");
        if let Some(seq) = &f.deactivate {
            self.side_sequence(p, msg, seq).await;
        }
    }
}
