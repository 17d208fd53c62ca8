//! The plan being served, replaced whole by a reload (hot deployment).
//!
//! A [`Deployment`] holds the current plan and a generation number that a reload
//! ([`Deployment::publish`]) moves on. Each worker has a [`WorkerEngine`]: its engine for the
//! current plan, made again by the first request of that worker to see a new generation, with the
//! same back-end connection pool and request counters kept by service name
//! ([`crate::metrics::Metrics::renewed`]). A connection keeps the engine its last request used and
//! reads the generation (one load) before each request, so:
//!
//! - a keep-alive connection moves to the new plan at its next request;
//! - a request in flight finishes on the plan it started with (its engine holds that plan);
//! - nothing on a request's path takes a lock but the one renewal per worker and reload.

use crate::engine::Engine;
use crate::EngineOptions;
use sluice_mediation::plan::Plan;
use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// The plan being served, and how many times it was replaced.
#[derive(Debug)]
pub struct Deployment {
    /// Moved on (under `plan`'s lock) each time a plan is published.
    generation: AtomicU64,
    plan: Mutex<Arc<Plan>>,
    /// Wakes those waiting for the next plan ([`Deployment::next_plan`]).
    published: tokio::sync::Notify,
}

impl Deployment {
    pub fn new(plan: Arc<Plan>) -> Arc<Deployment> {
        Arc::new(Deployment {
            generation: AtomicU64::new(0),
            plan: Mutex::new(plan),
            published: tokio::sync::Notify::new(),
        })
    }

    /// The plan being served.
    pub fn current(&self) -> Arc<Plan> {
        self.snapshot().1
    }

    /// The plan being served and its generation, read together.
    fn snapshot(&self) -> (u64, Arc<Plan>) {
        let plan = self.plan.lock().unwrap_or_else(PoisonError::into_inner);
        (self.generation.load(Ordering::Relaxed), plan.clone())
    }

    /// Returns once a plan after generation `seen` is published.
    pub async fn next_plan(&self, seen: u64) {
        loop {
            let published = self.published.notified();
            tokio::pin!(published);
            published.as_mut().enable();
            if self.generation.load(Ordering::Acquire) != seen {
                return;
            }
            published.await;
        }
    }

    /// Serves `plan` from now on: each connection's next request runs on it. A message store
    /// the new plan has under the same name takes the old one's messages, and a message
    /// processor keeps its state (active or not), as in MI.
    pub fn publish(&self, plan: Arc<Plan>) {
        let mut current = self.plan.lock().unwrap_or_else(PoisonError::into_inner);
        for (name, store) in plan.stores.iter() {
            if let Some(old) = current.stores.get(name) {
                store.take_over(old);
            }
        }
        for p in &plan.processors {
            if let Some(old) = current.processors.iter().find(|o| o.name == p.name) {
                p.set_active(old.is_active());
            }
        }
        *current = plan;
        self.generation.fetch_add(1, Ordering::Release);
        self.published.notify_waiters();
    }
}

/// A worker's engine for the deployment's current plan.
pub struct WorkerEngine {
    deployment: Arc<Deployment>,
    /// The engine and the generation of its plan.
    engine: Mutex<(u64, Arc<Engine>)>,
}

impl WorkerEngine {
    /// Made on the worker's runtime (its request counters report that runtime's tasks).
    pub fn new(deployment: Arc<Deployment>, opts: EngineOptions) -> Arc<WorkerEngine> {
        let (generation, plan) = deployment.snapshot();
        Arc::new(WorkerEngine {
            deployment,
            engine: Mutex::new((generation, Engine::new(plan, opts))),
        })
    }

    /// The engine for the current plan (made now if the plan changed since the last call).
    pub fn current(&self) -> (u64, Arc<Engine>) {
        let (generation, plan) = self.deployment.snapshot();
        let mut held = self.engine.lock().unwrap_or_else(PoisonError::into_inner);
        if held.0 != generation {
            *held = (generation, held.1.renewed(plan));
        }
        held.clone()
    }
}

/// A connection's engine: the one its last request used, renewed when the deployment moved on.
pub(crate) struct ConnEngine {
    worker: Arc<WorkerEngine>,
    held: RefCell<(u64, Arc<Engine>)>,
}

impl ConnEngine {
    pub(crate) fn new(worker: &Arc<WorkerEngine>) -> ConnEngine {
        ConnEngine {
            worker: worker.clone(),
            held: RefCell::new(worker.current()),
        }
    }

    /// The engine for the next request.
    #[inline]
    pub(crate) fn get(&self) -> Arc<Engine> {
        let generation = self.worker.deployment.generation.load(Ordering::Acquire);
        let mut held = self.held.borrow_mut();
        if held.0 != generation {
            *held = self.worker.current();
        }
        held.1.clone()
    }
}
