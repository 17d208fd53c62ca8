//! `<throttle>`: limits a service by its policy (WSO2's throttle assertions, read by
//! [`sluice_config::throttle`]) and runs `onAccept` or `onReject`, as Synapse's ThrottleMediator.
//!
//! - **Concurrency** (`MaximumConcurrentAccess`): shared by every throttle with the same `id`. A
//!   request let through holds one place; it is given back when its response passes a throttle
//!   with that `id` (the out-sequence's `<throttle id="A"/>`, as in Synapse), or else when the
//!   request is over. (Synapse keeps a place taken by a request that never gets a response, and
//!   one taken by a refused request: after enough of them nobody is let through. Sluice does not.)
//! - **Rate** (`MaximumCount` per `UnitTime` for the caller's rule, by the client's IP address):
//!   counted per rule of the mediator's policy, as WSO2's throttle counts per configuration key.
//!   Past the count the rule's callers are refused until its unit of time ends, or for its
//!   `ProhibitTimePeriod`. `IsAllow false` / `Deny` refuses always.
//! - Accepted: `onAccept` runs (a key or the mediators inside); when it ends without deciding,
//!   the mediators after the throttle go on. Refused: `onReject` likewise; without one the
//!   message is dropped, as in Synapse (Sluice answers a dropped request 202).

use crate::mediators::prelude::*;
use sluice_config::throttle::{Access, ThrottlePolicy};
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The concurrency of one throttle `id`, shared by every throttle mediator naming it.
#[derive(Debug, Default)]
pub struct Concurrency {
    /// 0: no limit set (yet).
    limit: AtomicU32,
    in_use: AtomicU32,
}

impl Concurrency {
    fn try_take(self: &Arc<Self>) -> Option<Permit> {
        let limit = self.limit.load(Ordering::Relaxed);
        if limit == 0 {
            return None;
        }
        self.in_use
            .fetch_update(Ordering::AcqRel, Ordering::Relaxed, |n| {
                (n < limit).then_some(n + 1)
            })
            .ok()
            .map(|_| Permit(self.clone()))
    }

    fn limited(&self) -> bool {
        self.limit.load(Ordering::Relaxed) > 0
    }
}

/// A place taken under a throttle `id`; given back when dropped.
#[derive(Debug)]
pub struct Permit(Arc<Concurrency>);

impl Drop for Permit {
    fn drop(&mut self) {
        self.0.in_use.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The places a message holds (none for nearly all: one pointer). A copy of the message (clone,
/// iterate) holds none: the original gives them back.
#[allow(clippy::box_collection)]
#[derive(Debug, Default)]
pub struct Permits(Option<Box<Vec<Permit>>>);

impl Clone for Permits {
    fn clone(&self) -> Self {
        Permits(None)
    }
}

impl Permits {
    fn hold(&mut self, p: Permit) {
        self.0.get_or_insert_with(Default::default).push(p);
    }

    /// Gives back the place held under `c`, if any.
    fn give_back(&mut self, c: &Arc<Concurrency>) {
        if let Some(v) = self.0.as_mut() {
            if let Some(i) = v.iter().position(|p| Arc::ptr_eq(&p.0, c)) {
                v.swap_remove(i);
            }
        }
    }
}

/// Where one rule's count stands.
#[derive(Debug)]
struct Count {
    window_start: Instant,
    count: u64,
    refused_until: Option<Instant>,
}

#[derive(Debug)]
pub struct ThrottlePlan {
    concurrency: Arc<Concurrency>,
    /// The rate rules and their counts (none on the response path, or without a policy).
    rate: Option<(ThrottlePolicy, Mutex<HashMap<usize, Count>>)>,
    on_accept: Option<Arc<SeqPlan>>,
    on_reject: Option<Arc<SeqPlan>>,
}

pub(crate) fn compile(c: &mut Compiler, t: &cfg::Throttle, m: &cfg::Mediator) -> Option<Step> {
    let el = m.element.as_str();
    let policy = match &t.policy {
        None => None,
        Some(src) => {
            let text = match src {
                cfg::ThrottlePolicySrc::Inline(t) => t.clone(),
                cfg::ThrottlePolicySrc::Key(k) => match c.keyed(k) {
                    Ok((text, _)) => text.to_owned(),
                    Err((sev, why)) => {
                        c.report(sev, &t.loc, el, why);
                        return None;
                    }
                },
            };
            match sluice_config::throttle::parse_policy(&text) {
                Ok(p) => Some(p),
                Err(why) => {
                    let sev = if why.contains("only IP") {
                        Severity::Unsupported
                    } else {
                        Severity::Error
                    };
                    c.report(sev, &t.loc, el, format!("throttle policy: {why}"));
                    return None;
                }
            }
        }
    };
    let concurrency = c.throttles.entry(t.id.clone()).or_default().clone();
    if let Some(limit) = policy.as_ref().and_then(|p| p.max_concurrent) {
        concurrency.limit.store(limit, Ordering::Relaxed);
    }
    let on = |c: &mut Compiler, s: &Option<cfg::SequenceRef>, what: &str| match s {
        Some(s) => c.sequence_ref(s, what).map(Some),
        None => Some(None),
    };
    let on_accept = on(c, &t.on_accept, "onAccept")?;
    let on_reject = on(c, &t.on_reject, "onReject")?;
    Some(Step::Throttle(ThrottlePlan {
        concurrency,
        rate: policy
            .filter(|p| !p.callers.is_empty())
            .map(|p| (p, Mutex::new(HashMap::new()))),
        on_accept,
        on_reject,
    }))
}

impl ThrottlePlan {
    /// Whether the caller at `ip` may go on by the rate rules, counting this request.
    fn rate_allows(&self, ip: Option<IpAddr>, now: Instant) -> bool {
        let (Some((policy, counts)), Some(ip)) = (&self.rate, ip) else {
            return true;
        };
        let Some((rule, r)) = policy.rule_for(ip) else {
            return true;
        };
        let (max, unit, prohibit) = match r.access {
            Access::Allow => return true,
            Access::Deny => return false,
            Access::Limit {
                max,
                unit_ms,
                prohibit_ms,
            } => (
                max,
                Duration::from_millis(unit_ms),
                Duration::from_millis(prohibit_ms),
            ),
        };
        let mut counts = counts.lock().unwrap_or_else(|e| e.into_inner());
        let c = counts.entry(rule).or_insert(Count {
            window_start: now,
            count: 0,
            refused_until: None,
        });
        if c.refused_until.is_some_and(|t| now < t) {
            return false;
        }
        if now >= c.window_start + unit {
            *c = Count {
                window_start: now,
                count: 0,
                refused_until: None,
            };
        }
        if c.count < max {
            c.count += 1;
            return true;
        }
        c.refused_until = Some(if prohibit.is_zero() {
            c.window_start + unit
        } else {
            now + prohibit
        });
        false
    }
}

impl Mediator for ThrottlePlan {
    fn heavy(&self) -> bool {
        [&self.on_accept, &self.on_reject]
            .into_iter()
            .flatten()
            .any(|s| s.heavy)
    }

    fn reads(&self, json: bool) -> Reads {
        let n = [&self.on_accept, &self.on_reject]
            .into_iter()
            .flatten()
            .map(|s| need_of(&s.steps, json))
            .max()
            .unwrap_or(BodyNeed::None);
        Reads::of(n)
    }

    fn by_head(&self, f: &mut dyn FnMut(&Expr) -> bool) -> ByHead {
        [&self.on_accept, &self.on_reject]
            .into_iter()
            .flatten()
            .all(|s| body_exprs_all(&s.steps, f))
            .into()
    }

    fn run(&self, cx: &mut Cx<'_>) -> Result<Option<Flow>, Error> {
        if cx.msg.is_response() {
            // The response gives back the place its request took under this id.
            cx.msg.permits.give_back(&self.concurrency);
            return Ok(None);
        }
        let mut accepted = true;
        if self.concurrency.limited() {
            match self.concurrency.try_take() {
                Some(p) => cx.msg.permits.hold(p),
                None => accepted = false,
            }
        }
        if accepted && !self.rate_allows(cx.msg.remote, Instant::now()) {
            // Refused by rate: the place taken for it goes back at once.
            cx.msg.permits.give_back(&self.concurrency);
            accepted = false;
        }
        let branch = if accepted {
            &self.on_accept
        } else {
            &self.on_reject
        };
        match branch {
            Some(seq) => cx.branch(&seq.steps),
            None if accepted => Ok(None),
            // Refused with no onReject: Synapse stops the message.
            None => Ok(Some(Flow::Drop)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_config::throttle::{Caller, CallerRule};

    fn plan(access: Access) -> ThrottlePlan {
        ThrottlePlan {
            concurrency: Arc::default(),
            rate: Some((
                ThrottlePolicy {
                    max_concurrent: None,
                    callers: vec![CallerRule {
                        who: Caller::Other,
                        access,
                    }],
                },
                Mutex::new(HashMap::new()),
            )),
            on_accept: None,
            on_reject: None,
        }
    }

    #[test]
    fn the_count_resets_with_the_unit_and_refusal_lasts_the_prohibit_period() {
        let ip = Some("10.0.0.1".parse().unwrap());
        let t0 = Instant::now();
        let s = Duration::from_secs;
        let p = plan(Access::Limit {
            max: 2,
            unit_ms: 10_000,
            prohibit_ms: 0,
        });
        assert!(p.rate_allows(ip, t0) && p.rate_allows(ip, t0 + s(1)));
        // Past the count: refused to the end of the unit, then a new unit.
        assert!(!p.rate_allows(ip, t0 + s(2)));
        assert!(!p.rate_allows(ip, t0 + s(9)));
        assert!(p.rate_allows(ip, t0 + s(10)));
        let p = plan(Access::Limit {
            max: 1,
            unit_ms: 10_000,
            prohibit_ms: 30_000,
        });
        assert!(p.rate_allows(ip, t0));
        assert!(!p.rate_allows(ip, t0 + s(1)));
        // The prohibit period outlasts the unit.
        assert!(!p.rate_allows(ip, t0 + s(20)));
        assert!(p.rate_allows(ip, t0 + s(31)));
        // Without the caller's address there is nothing to count by.
        assert!(plan(Access::Deny).rate_allows(None, t0));
        assert!(!plan(Access::Deny).rate_allows(ip, t0));
    }

    #[test]
    fn a_place_is_given_back_once_whether_by_the_response_or_the_end() {
        let c = Arc::new(Concurrency::default());
        c.limit.store(1, Ordering::Relaxed);
        let mut held = Permits::default();
        held.hold(c.try_take().unwrap());
        assert!(c.try_take().is_none(), "the one place is taken");
        // A copy (clone, iterate) holds nothing.
        drop(held.clone());
        assert!(c.try_take().is_none());
        held.give_back(&c);
        held.give_back(&c);
        let again = c.try_take().expect("given back by the response");
        let mut m = Permits::default();
        m.hold(again);
        drop(m);
        assert!(
            c.try_take().is_some(),
            "given back when the request is over"
        );
    }
}
