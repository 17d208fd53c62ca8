//! Endpoint suspension, as Synapse does it: an address endpoint that fails is marked (a timeout-type
//! error with retries left) or suspended for a while, during which sends to it fail at once with
//! `ERROR_CODE` 303001 and go to the fault sequence. A response of any status makes it active again.
//!
//! The rules, from `<suspendOnFailure>` and `<markForSuspension>`:
//! - An error code is of the timeout type if it is in `markForSuspension/errorCodes`, or, when that
//!   list is empty, if it is 101504 (timeout) or 101505 (connection closed). The endpoint is then
//!   marked: `retriesBeforeSuspension` such errors are allowed (each makes it wait `retryDelay`
//!   before the next send), and the one after them suspends it. The count comes back only when the
//!   endpoint is active again.
//! - Otherwise it suspends the endpoint if it is in `suspendOnFailure/errorCodes`, or if that list is
//!   empty. A code in neither list changes nothing (WSO2's `-1` in both lists turns suspension off).
//! - The first suspension lasts `initialDuration`, each further one without a success in between the
//!   last times `progressionFactor`, at most `maximumDuration`; a negative duration means 30 s.
//! - When the time is up, sends go through again (all of them, not one probe); the first response
//!   makes the endpoint active, the next failure suspends it for the next, longer duration.
//!
//! An active endpoint costs one atomic load per send and nothing on success; the lock is taken only
//! on failures and while the endpoint is not active.

use sluice_config as cfg;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Synapse's suspension when the configuration gives none (or a negative one): 30 s.
pub const DEFAULT_SUSPEND: Duration = Duration::from_secs(30);
/// Error codes of the timeout type when `markForSuspension` lists none: timeout, connection closed.
const DEFAULT_TIMEOUT_CODES: [i64; 2] = [101504, 101505];

/// An endpoint's suspension settings, read once at load.
#[derive(Clone, Debug, PartialEq)]
pub struct SuspendPolicy {
    /// Codes that suspend at once; empty: every code not of the timeout type.
    suspend_codes: Vec<i64>,
    /// Codes of the timeout type; empty: [`DEFAULT_TIMEOUT_CODES`].
    timeout_codes: Vec<i64>,
    /// Negative: [`DEFAULT_SUSPEND`].
    initial_ms: i64,
    factor: f64,
    maximum_ms: i64,
    retries: i64,
    retry_delay: Duration,
}

impl SuspendPolicy {
    pub fn new(s: &cfg::SuspendOnFailure, m: &cfg::MarkForSuspension) -> Self {
        SuspendPolicy {
            suspend_codes: s.error_codes.clone(),
            timeout_codes: m.error_codes.clone(),
            initial_ms: s.initial_duration_ms.unwrap_or(-1),
            factor: s.progression_factor.unwrap_or(1.0),
            maximum_ms: s.maximum_duration_ms.unwrap_or(i64::MAX),
            retries: m.retries_before_suspension.unwrap_or(0),
            retry_delay: Duration::from_millis(m.retry_delay_ms.unwrap_or(0).max(0) as u64),
        }
    }

    /// A policy that never changes the endpoint's state (for endpoints made per message).
    pub fn never() -> Self {
        SuspendPolicy {
            suspend_codes: vec![-1],
            timeout_codes: vec![-1],
            ..SuspendPolicy::new(&Default::default(), &Default::default())
        }
    }

    fn is_timeout(&self, code: i64) -> bool {
        if self.timeout_codes.is_empty() {
            DEFAULT_TIMEOUT_CODES.contains(&code)
        } else {
            self.timeout_codes.contains(&code)
        }
    }

    fn is_suspending(&self, code: i64) -> bool {
        self.suspend_codes.is_empty() || self.suspend_codes.contains(&code)
    }

    /// The next suspension after one of `last` (None: the first).
    fn next_duration(&self, last: Option<Duration>) -> Duration {
        let ms = match last {
            None => self.initial_ms,
            Some(d) => (d.as_millis() as f64 * self.factor) as i64,
        };
        // As Synapse: a negative maximum is not replaced by the default (it suspends for no time).
        if ms > self.maximum_ms {
            Duration::from_millis(self.maximum_ms.max(0) as u64)
        } else if ms < 0 {
            DEFAULT_SUSPEND
        } else {
            Duration::from_millis(ms as u64)
        }
    }
}

/// What a send to the endpoint may do now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Readiness {
    Ready,
    /// Suspended (or marked and waiting its retry delay) for this much longer.
    Suspended(Duration),
}

/// What a failure did to the endpoint, for the log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    None,
    /// Marked, with this many more timeout-type errors allowed before suspension.
    Marked(i64),
    Suspended(Duration),
}

#[derive(Debug)]
struct State {
    /// Timeout-type errors still allowed; back to the policy's `retries` when active.
    retries_left: i64,
    /// Marked or suspended: no send before this.
    not_before: Option<Instant>,
    /// The last suspension's length since the endpoint was last active.
    last: Option<Duration>,
    suspended: bool,
}

/// The live state of one endpoint definition, shared by every message sent to it.
#[derive(Debug)]
pub struct EndpointHealth {
    policy: SuspendPolicy,
    /// No failure since the last success: the fast path.
    active: AtomicBool,
    state: Mutex<State>,
    /// How many times it was suspended (for the metrics page).
    suspensions: AtomicU64,
    /// Switched off by the management API (MI's deactivate): no send until switched on.
    off: AtomicBool,
}

impl EndpointHealth {
    pub fn new(policy: SuspendPolicy) -> Self {
        let retries = policy.retries;
        EndpointHealth {
            policy,
            active: AtomicBool::new(true),
            suspensions: AtomicU64::new(0),
            off: AtomicBool::new(false),
            state: Mutex::new(State {
                retries_left: retries,
                not_before: None,
                last: None,
                suspended: false,
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic elsewhere cannot leave State inconsistent (every update is a few assignments).
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn readiness(&self, now: Instant) -> Readiness {
        if self.active.load(Ordering::Acquire) {
            return Readiness::Ready;
        }
        if self.is_off() {
            return Readiness::Suspended(Duration::MAX);
        }
        match self.lock().not_before {
            Some(t) if t > now => Readiness::Suspended(t - now),
            _ => Readiness::Ready,
        }
    }

    /// No failure since the last success (neither marked nor suspended), and not switched off.
    pub fn is_active(&self) -> bool {
        self.active.load(Ordering::Acquire)
    }

    /// Switched off (MI's deactivate): every send fails as to a suspended endpoint until
    /// [`EndpointHealth::switch_on`]. The fast path's flag is cleared, so a send looks.
    pub fn switch_off(&self) {
        self.off.store(true, Ordering::Release);
        self.active.store(false, Ordering::Release);
    }

    /// Back in service, as after a success.
    pub fn switch_on(&self) {
        self.off.store(false, Ordering::Release);
        self.on_success();
    }

    /// Switched off by the management API.
    pub fn is_off(&self) -> bool {
        self.off.load(Ordering::Acquire)
    }

    /// How many times a failure suspended it.
    pub fn suspensions(&self) -> u64 {
        self.suspensions.load(Ordering::Relaxed)
    }

    /// Whether the endpoint is suspended (not merely marked); for messages.
    pub fn is_suspended(&self) -> bool {
        !self.active.load(Ordering::Acquire) && self.lock().suspended
    }

    /// A response came back (any status). Returns whether the endpoint was not active before.
    pub fn on_success(&self) -> bool {
        if self.active.load(Ordering::Acquire) || self.is_off() {
            return false;
        }
        let mut s = self.lock();
        s.retries_left = self.policy.retries;
        s.not_before = None;
        s.last = None;
        s.suspended = false;
        self.active.store(true, Ordering::Release);
        true
    }

    /// A send failed with this Synapse error code.
    pub fn on_fault(&self, code: i64, now: Instant) -> Change {
        let timeout = self.policy.is_timeout(code);
        if !timeout && !self.policy.is_suspending(code) {
            return Change::None;
        }
        let mut s = self.lock();
        let change = if timeout && s.retries_left > 0 {
            s.retries_left -= 1;
            s.not_before = Some(now + self.policy.retry_delay);
            s.suspended = false;
            Change::Marked(s.retries_left)
        } else {
            let d = self.policy.next_duration(s.last);
            s.last = Some(d);
            s.not_before = Some(now + d);
            s.suspended = true;
            self.suspensions.fetch_add(1, Ordering::Relaxed);
            Change::Suspended(d)
        };
        self.active.store(false, Ordering::Release);
        change
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(suspend: &str, mark: &str) -> SuspendPolicy {
        // "codes;initial;factor;max" and "codes;retries;delay", empty fields unset.
        let codes = |t: &str| -> Vec<i64> {
            t.split(',')
                .filter(|c| !c.is_empty())
                .map(|c| c.parse().unwrap())
                .collect()
        };
        let s: Vec<&str> = suspend.split(';').collect();
        let m: Vec<&str> = mark.split(';').collect();
        let num = |v: &[&str], k: usize| {
            v.get(k)
                .filter(|t| !t.is_empty())
                .map(|t| t.parse().unwrap())
        };
        SuspendPolicy::new(
            &cfg::SuspendOnFailure {
                error_codes: codes(s[0]),
                initial_duration_ms: num(&s, 1),
                progression_factor: s
                    .get(2)
                    .filter(|t| !t.is_empty())
                    .map(|t| t.parse().unwrap()),
                maximum_duration_ms: num(&s, 3),
            },
            &cfg::MarkForSuspension {
                error_codes: codes(m[0]),
                retries_before_suspension: num(&m, 1),
                retry_delay_ms: num(&m, 2),
            },
        )
    }

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn by_default_any_error_suspends_for_thirty_seconds() {
        let h = EndpointHealth::new(policy("", ""));
        let t0 = Instant::now();
        assert_eq!(h.readiness(t0), Readiness::Ready);
        assert_eq!(h.on_fault(101503, t0), Change::Suspended(DEFAULT_SUSPEND));
        assert!(h.is_suspended());
        assert_eq!(
            h.readiness(t0 + MS),
            Readiness::Suspended(DEFAULT_SUSPEND - MS)
        );
        // When the time is up sends go through, and the state stays until a response.
        assert_eq!(h.readiness(t0 + DEFAULT_SUSPEND), Readiness::Ready);
        assert!(h.is_suspended());
        // Timeouts and closed connections are of the timeout type, with no retries by default.
        assert_eq!(h.on_fault(101504, t0), Change::Suspended(DEFAULT_SUSPEND));
        assert!(h.on_success());
        assert!(!h.is_suspended() && !h.on_success());
        assert_eq!(h.readiness(t0 + MS), Readiness::Ready);
    }

    #[test]
    fn minus_one_in_both_lists_turns_suspension_off() {
        let h = EndpointHealth::new(policy("-1;;1.0", "-1"));
        for code in [101503, 101504, 101505, 101508] {
            assert_eq!(h.on_fault(code, Instant::now()), Change::None);
        }
        assert_eq!(h.readiness(Instant::now()), Readiness::Ready);
        let h = EndpointHealth::new(SuspendPolicy::never());
        assert_eq!(h.on_fault(101503, Instant::now()), Change::None);
    }

    #[test]
    fn listed_codes_suspend_and_others_change_nothing() {
        let h = EndpointHealth::new(policy("101503;1000", "-1"));
        let t0 = Instant::now();
        assert_eq!(h.on_fault(101508, t0), Change::None);
        assert_eq!(h.readiness(t0), Readiness::Ready);
        assert_eq!(h.on_fault(101503, t0), Change::Suspended(1000 * MS));
        assert_eq!(h.readiness(t0 + 999 * MS), Readiness::Suspended(MS));
        assert_eq!(h.readiness(t0 + 1000 * MS), Readiness::Ready);
    }

    #[test]
    fn timeout_type_errors_mark_then_suspend() {
        // Two retries, 100 ms apart: the third timeout in a row suspends.
        let h = EndpointHealth::new(policy(";500", "101504;2;100"));
        let t0 = Instant::now();
        assert_eq!(h.on_fault(101504, t0), Change::Marked(1));
        assert!(!h.is_suspended());
        assert_eq!(h.readiness(t0 + 50 * MS), Readiness::Suspended(50 * MS));
        assert_eq!(h.readiness(t0 + 100 * MS), Readiness::Ready);
        assert_eq!(h.on_fault(101504, t0 + 100 * MS), Change::Marked(0));
        assert_eq!(
            h.on_fault(101504, t0 + 200 * MS),
            Change::Suspended(500 * MS)
        );
        // A suspending code while marked suspends at once. The retries come back only when active:
        // a timeout after that suspension uses the one left, then suspends.
        h.on_success();
        assert_eq!(h.on_fault(101504, t0), Change::Marked(1));
        assert_eq!(h.on_fault(101503, t0), Change::Suspended(500 * MS));
        assert_eq!(h.on_fault(101504, t0), Change::Marked(0));
        assert!(!h.is_suspended());
        assert_eq!(h.on_fault(101504, t0), Change::Suspended(500 * MS));
    }

    #[test]
    fn suspensions_grow_by_the_factor_up_to_the_maximum() {
        let h = EndpointHealth::new(policy(";1000;2;3000", ""));
        let t0 = Instant::now();
        let d: Vec<Change> = (0..4).map(|_| h.on_fault(101503, t0)).collect();
        assert_eq!(
            d,
            [1000, 2000, 3000, 3000].map(|ms| Change::Suspended(ms * MS))
        );
        h.on_success();
        assert_eq!(h.on_fault(101503, t0), Change::Suspended(1000 * MS));
    }

    #[test]
    fn negative_durations_mean_thirty_seconds() {
        // WSO2 tooling's defaults: initial -1, factor -1, maximum 0.
        let h = EndpointHealth::new(policy(";-1;-1;0", ""));
        let t0 = Instant::now();
        assert_eq!(h.on_fault(101503, t0), Change::Suspended(DEFAULT_SUSPEND));
        assert_eq!(h.on_fault(101503, t0), Change::Suspended(DEFAULT_SUSPEND));
        // A zero duration suspends for no time at all.
        let h = EndpointHealth::new(policy(";0", ""));
        assert_eq!(h.on_fault(101503, t0), Change::Suspended(Duration::ZERO));
        assert_eq!(h.readiness(t0), Readiness::Ready);
    }
}
