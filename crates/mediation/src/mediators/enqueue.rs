//! `<enqueue executor priority sequence>` and the `<priorityExecutor>` it names: the message runs
//! through `sequence` when the executor has room for it, higher priorities first, as Synapse's
//! PriorityExecutor runs its workers (sample 650).
//!
//! | Synapse | Sluice |
//! |---|---|
//! | A thread pool: `core` threads, more up to `max` while a queue is full, then `RejectedExecutionException` | Runs of the sequence: `core` at once, then the message waits in its priority's queue; a full queue lets runs up to `max` start; past that the message fails (`Overloaded`, the fault sequence runs) |
//! | The queues taken by priority-based round robin: in each cycle up to `priority` messages from each queue, highest priority first, empty queues skipped | the same order ([`Queues::next`]) |
//! | A thread is held while the sequence mediates, not while a `send` waits for the back-end | a place is held while the sequence runs; what it decides (a send, a call) is carried out after |
//! | The mediators after `enqueue` run at once on the same message, beside the worker | the sequence ends at `enqueue` (two runs on one message race in Synapse; no sample has mediators after it) |
//! | A priority with no queue throws `NullPointerException` once `core` threads are busy | refused at load |
//!
//! A client that goes away while its message waits gives its place in the queue up.

use crate::mediators::prelude::*;
use std::collections::VecDeque;
use std::sync::Mutex;
use tokio::sync::oneshot;

/// One `<priorityExecutor>`, shared by every `enqueue` naming it.
#[derive(Debug)]
pub struct Executor {
    name: String,
    core: usize,
    max: usize,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    /// Runs going on (places taken).
    running: usize,
    queues: Queues,
}

/// The waiting messages, a queue per priority (highest first), and where the round robin is.
#[derive(Debug)]
struct Queues {
    each: Vec<Waiting>,
    current: usize,
    taken: i64,
}

#[derive(Debug)]
struct Waiting {
    priority: i64,
    size: Option<usize>,
    waiters: VecDeque<oneshot::Sender<Place>>,
}

impl Queues {
    /// The queue the next place goes to, as Synapse's priority-based round robin picks it: the
    /// current one until it has had `priority` places or is empty, then the next one with
    /// someone waiting (a waiter that went away counts until it is reached).
    fn next(&mut self) -> Option<usize> {
        let n = self.each.len();
        let cur = &self.each[self.current];
        if self.taken >= cur.priority || cur.waiters.is_empty() {
            self.taken = 0;
            let next = (1..=n)
                .map(|k| (self.current + k) % n)
                .find(|&q| !self.each[q].waiters.is_empty());
            match next {
                Some(q) => self.current = q,
                None => {
                    self.current = 0;
                    return None;
                }
            }
        }
        self.taken += 1;
        Some(self.current)
    }
}

/// A place in an executor: the run it allows goes on while this lives.
#[derive(Debug)]
pub struct Place {
    executor: Arc<Executor>,
    /// Whether dropping it gives the place back (not when it could not be handed over).
    held: bool,
}

impl Drop for Place {
    fn drop(&mut self) {
        if self.held {
            self.executor.release();
        }
    }
}

impl Executor {
    pub(crate) fn new(e: &cfg::PriorityExecutor) -> Arc<Executor> {
        let each = (e.queues.iter())
            .map(|q| Waiting {
                priority: q.priority,
                size: q.size,
                waiters: VecDeque::new(),
            })
            .collect();
        Arc::new(Executor {
            name: e.name.clone(),
            core: e.core,
            max: e.max,
            state: Mutex::new(State {
                running: 0,
                queues: Queues {
                    each,
                    current: 0,
                    taken: 0,
                },
            }),
        })
    }

    /// The queue of `priority`, if the executor has one.
    pub(crate) fn queue_of(&self, priority: i64) -> Option<usize> {
        let st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        st.queues.each.iter().position(|q| q.priority == priority)
    }

    /// A place for a message of the queue `queue`: at once while fewer than `core` runs go on,
    /// else when its turn comes; at once again, up to `max`, when that queue is full. An error
    /// when even that is full.
    pub async fn enter(self: &Arc<Self>, queue: usize) -> Result<Place, Error> {
        let wait = {
            let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
            let q = &mut st.queues.each[queue];
            let mut room = q.size.is_none_or(|s| q.waiters.len() < s);
            if !room {
                // Those that went away make room (a look at most `size` long, when full).
                q.waiters.retain(|w| !w.is_closed());
                room = q.size.is_none_or(|s| q.waiters.len() < s);
            }
            if st.running < self.core {
                st.running += 1;
                None
            } else if room {
                let (tx, rx) = oneshot::channel();
                st.queues.each[queue].waiters.push_back(tx);
                Some(rx)
            } else if st.running < self.max {
                st.running += 1;
                None
            } else {
                let p = st.queues.each[queue].priority;
                return Err(Error::new(
                    ErrorKind::Overloaded,
                    format!(
                        "priority executor '{}': the queue of priority {p} is full and {} runs are going",
                        self.name, self.max
                    ),
                ));
            }
        };
        match wait {
            None => Ok(Place {
                executor: self.clone(),
                held: true,
            }),
            Some(rx) => rx.await.map_err(|_| {
                Error::new(
                    ErrorKind::Internal,
                    format!(
                        "priority executor '{}' dropped a waiting message",
                        self.name
                    ),
                )
            }),
        }
    }

    /// A run ended: its place goes to the next waiting message, else it is free.
    fn release(self: &Arc<Self>) {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        while let Some(q) = st.queues.next() {
            let Some(tx) = st.queues.each[q].waiters.pop_front() else {
                continue;
            };
            let place = Place {
                executor: self.clone(),
                held: true,
            };
            match tx.send(place) {
                Ok(()) => return,
                // Gone since: not handed over, not given back.
                Err(mut p) => p.held = false,
            }
        }
        st.running -= 1;
    }
}

/// What an `enqueue` hands the engine: the executor, the queue of its priority, the sequence.
#[derive(Debug)]
pub struct Enqueued {
    pub executor: Arc<Executor>,
    pub queue: usize,
    pub seq: Arc<SeqPlan>,
}

#[derive(Debug)]
pub struct EnqueuePlan(Arc<Enqueued>);

pub(crate) fn compile(c: &mut Compiler, e: &cfg::Enqueue, m: &cfg::Mediator) -> Option<Step> {
    let el = m.element.as_str();
    let Some(executor) = c.executors.get(e.executor.as_str()).cloned() else {
        c.report(
            Severity::Error,
            &m.loc,
            el,
            format!("executor cannot be found for the name : {}", e.executor),
        );
        return None;
    };
    let Some(queue) = executor.queue_of(e.priority) else {
        c.report(
            Severity::Error,
            &m.loc,
            el,
            format!(
                "priority {} has no queue in priority executor '{}'",
                e.priority, e.executor
            ),
        );
        return None;
    };
    let seq = c.named_sequence(&e.sequence, Some(&m.loc))?;
    Some(Step::Enqueue(EnqueuePlan(Arc::new(Enqueued {
        executor,
        queue,
        seq,
    }))))
}

impl Mediator for EnqueuePlan {
    /// What the sequence reads: it runs on this message.
    fn reads(&self, json: bool) -> Reads {
        Reads {
            need: self.0.seq.need(json),
            then_response: calls(&self.0.seq.steps),
        }
    }

    fn leaves(&self) -> Option<&'static str> {
        leaves_message(&self.0.seq.steps)
    }

    fn heavy(&self) -> bool {
        self.0.seq.heavy
    }

    fn ends_sequence(&self) -> bool {
        true
    }

    fn run(&self, _cx: &mut Cx<'_>) -> Result<Option<Flow>, Error> {
        Ok(Some(Flow::Enqueue(self.0.clone())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn executor(core: usize, max: usize, queues: &[(i64, Option<usize>)]) -> Arc<Executor> {
        Executor::new(&cfg::PriorityExecutor {
            name: "exec".into(),
            queues: queues
                .iter()
                .map(|&(priority, size)| cfg::ExecutorQueue { priority, size })
                .collect(),
            core,
            max,
            loc: Location::file_only(&Arc::from("test.xml")),
        })
    }

    /// A future's value when it is ready at once.
    fn now<F: std::future::Future>(f: F) -> Option<F::Output> {
        let mut f = std::pin::pin!(f);
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        match f.as_mut().poll(&mut cx) {
            std::task::Poll::Ready(v) => Some(v),
            std::task::Poll::Pending => None,
        }
    }

    /// The diagnostics of compiling `main` holding `enqueue`, beside an executor `e` with a queue
    /// of priority 1 and a sequence `q`.
    fn compiled(enqueue: &str) -> sluice_config::Diagnostics {
        let xml = format!(
            r#"<definitions xmlns="http://ws.apache.org/ns/synapse">
  <priorityExecutor name="e"><queues><queue size="1" priority="1"/></queues></priorityExecutor>
  <sequence name="q"><drop/></sequence>
  <sequence name="main">{enqueue}</sequence>
</definitions>"#
        );
        let (cfg, mut diags) = sluice_config::load_str("t.xml", &xml);
        let _ = crate::compile(&cfg, &crate::CompileOptions::default(), &mut diags);
        diags
    }

    #[test]
    fn an_enqueue_names_an_executor_and_one_of_its_priorities() {
        let ok = compiled(r#"<enqueue executor="e" priority="1" sequence="q"/>"#);
        assert!(!ok.has_errors(), "{:?}", ok.items);
        for (enqueue, why) in [
            (
                r#"<enqueue executor="x" priority="1" sequence="q"/>"#,
                "executor cannot be found for the name : x",
            ),
            (
                r#"<enqueue executor="e" priority="2" sequence="q"/>"#,
                "priority 2 has no queue in priority executor 'e'",
            ),
        ] {
            let d = compiled(enqueue);
            assert!(
                d.items.iter().any(|i| i.message.contains(why)),
                "{enqueue}: {:?}",
                d.items
            );
        }
    }

    #[test]
    fn places_go_by_priority_round_robin() {
        // Priorities 3 and 1: once core is busy, waiting messages leave 3 then 1, 3 then 1...
        let ex = executor(1, 1, &[(3, Some(10)), (1, Some(10))]);
        let first = now(ex.enter(0)).unwrap().unwrap();
        let mut waiting: Vec<(char, oneshot::Receiver<Place>)> = Vec::new();
        for (tag, q) in [
            ('l', 1),
            ('l', 1),
            ('l', 1),
            ('l', 1),
            ('h', 0),
            ('h', 0),
            ('h', 0),
            ('h', 0),
        ] {
            let (tx, rx) = oneshot::channel();
            ex.state.lock().unwrap().queues.each[q]
                .waiters
                .push_back(tx);
            waiting.push((tag, rx));
        }
        let mut order = String::new();
        let mut held = first;
        for _ in 0..8 {
            // The place goes to the next waiter, which keeps it.
            drop(held);
            let mut got = None;
            for (k, (_, rx)) in waiting.iter_mut().enumerate() {
                if let Ok(p) = rx.try_recv() {
                    got = Some((k, p));
                    break;
                }
            }
            let (k, p) = got.expect("a waiter got the place");
            order.push(waiting.remove(k).0);
            held = p;
        }
        drop(held);
        assert_eq!(ex.state.lock().unwrap().running, 0);
        assert_eq!(order, "hhhlhlll");
    }

    #[test]
    fn full_queues_let_runs_up_to_max_then_refuse() {
        let ex = executor(1, 2, &[(1, Some(1))]);
        let a = now(ex.enter(0)).unwrap().unwrap();
        // Core busy: the next waits in the queue (size 1)...
        let mut waiting = Box::pin(ex.enter(0));
        assert!(now(waiting.as_mut()).is_none());
        // ...the queue full: one more run starts, up to max...
        let b = now(ex.enter(0)).unwrap().unwrap();
        // ...then refused.
        let e = now(ex.enter(0)).unwrap().unwrap_err();
        assert_eq!(e.kind, ErrorKind::Overloaded);
        drop(a);
        let c = now(waiting.as_mut()).unwrap().unwrap();
        drop((b, c));
        assert_eq!(ex.state.lock().unwrap().running, 0);
    }

    #[test]
    fn a_waiter_that_went_away_gives_its_place_up() {
        let ex = executor(1, 1, &[(1, None)]);
        let a = now(ex.enter(0)).unwrap().unwrap();
        let mut gone = Box::pin(ex.enter(0));
        assert!(now(gone.as_mut()).is_none());
        let mut stays = Box::pin(ex.enter(0));
        assert!(now(stays.as_mut()).is_none());
        drop(gone);
        drop(a);
        let b = now(stays.as_mut()).unwrap().unwrap();
        drop(b);
        assert_eq!(ex.state.lock().unwrap().running, 0);
    }
}
