//! Runs the deployment's message processors ([`sluice_mediation::processors`]) on a thread of
//! their own: one single-threaded runtime, an engine as a worker's (its own back-end connections),
//! and a task per processor.
//!
//! - A forwarding processor runs every `interval` (one message a run, its tries included).
//! - A sampling processor runs every `interval`, at least a second, as MI's scheduler allows.
//! - A processor starts at once, as MI's do; a deactivated one runs and takes nothing.
//! - A reload stops the old plan's tasks (a message being forwarded stays in its store) and
//!   starts the new plan's. [`crate::deploy::Deployment::publish`] hands a store's messages and a
//!   processor's state over to the new plan's store and processor of the same name.

use crate::deploy::{Deployment, WorkerEngine};
use crate::EngineOptions;
use sluice_mediation::processors::{Kind, ProcessorPlan};
use std::sync::Arc;
use std::time::Duration;

/// Starts the thread; it ends once `stop` says true.
pub fn spawn(
    deployment: Arc<Deployment>,
    opts: EngineOptions,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    // Made here, not on the thread: its descriptors exist once Sluice says it listens.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    std::thread::Builder::new()
        .name("sluice-processors".to_owned())
        .spawn(move || {
            rt.block_on(async move {
                let worker = WorkerEngine::new(deployment.clone(), opts);
                loop {
                    let (generation, engine) = worker.current();
                    let tasks: Vec<_> = (engine.plan().processors.iter())
                        .map(|p| tokio::spawn(run(engine.clone(), p.clone())))
                        .collect();
                    let stopped = tokio::select! {
                        _ = stop.wait_for(|s| *s) => true,
                        _ = deployment.next_plan(generation) => false,
                    };
                    for t in tasks {
                        t.abort();
                    }
                    if stopped {
                        return;
                    }
                }
            });
            rt.shutdown_background();
        })
}

/// `p`'s runs, one `period` after the last ended, until aborted.
async fn run(engine: Arc<crate::engine::Engine>, p: Arc<ProcessorPlan>) {
    let period = match p.kind {
        Kind::Forwarding(_) => p.interval.max(Duration::from_millis(1)),
        Kind::Sampling { .. } => p.interval.max(Duration::from_secs(1)),
    };
    loop {
        engine.run_processor(&p).await;
        tokio::time::sleep(period).await;
    }
}
