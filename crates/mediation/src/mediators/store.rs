//! `<store messageStore sequence>` and the in-memory message stores it puts messages in; the
//! message processors ([`crate::processors`]) take them out.
//!
//! | Synapse / MI | Sluice |
//! |---|---|
//! | The `sequence` runs on the message first; what it decides is ignored, its errors are not | the same; a sequence that sends or calls is refused at load |
//! | A copy of the message is stored (a new message ID), and mediation goes on | the same: the body read whole, the copy stored with its properties, headers, To and action |
//! | A store name in braces is an XPath naming the store per message; a name no store has faults with "Message Store does not exist." | the same |
//! | `RESPONSE_WRITTEN=SKIP` (operation scope): a flow that ends with nothing sent answers 202 only with `FORCE_SC_ACCEPTED`, else the client waits (a processor's `respond` may answer it) | the property is set; a flow that ends with nowhere to send answers 202 (every request gets an answer) |
//! | The in-memory store has no limit but the heap | at most [`MAX_MESSAGES`] messages and [`MAX_BYTES`] of bodies a store; a full store faults as a failed store does ("Failed to store message [id] in store [name].", `HTTP_SC` 500) |

use crate::mediators::prelude::*;
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

/// Messages one store holds at most.
pub const MAX_MESSAGES: usize = 10_000;
/// Body bytes one store holds at most.
pub const MAX_BYTES: usize = 256 * 1024 * 1024;

/// One in-memory `<messageStore>`: its messages, oldest first.
#[derive(Debug)]
pub struct MessageStore {
    pub name: String,
    queue: Mutex<Queue>,
}

#[derive(Default)]
struct Queue {
    messages: VecDeque<Message>,
    bytes: usize,
}

impl std::fmt::Debug for Queue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queue")
            .field("messages", &self.messages.len())
            .field("bytes", &self.bytes)
            .finish()
    }
}

/// The deployed stores by name (a `<store>` with a name in braces looks its store up here).
pub type Stores = Arc<HashMap<String, Arc<MessageStore>>>;

fn body_len(m: &Message) -> usize {
    match &m.body {
        Body::Bytes(b) => b.len(),
        _ => 0,
    }
}

impl MessageStore {
    pub fn new(name: &str) -> Arc<MessageStore> {
        Arc::new(MessageStore {
            name: name.to_owned(),
            queue: Mutex::default(),
        })
    }

    fn queue(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Stores `msg` last; `false` when the store is full.
    pub fn push(&self, msg: Message) -> bool {
        let mut q = self.queue();
        let len = body_len(&msg);
        if q.messages.len() >= MAX_MESSAGES || q.bytes + len > MAX_BYTES {
            return false;
        }
        q.bytes += len;
        q.messages.push_back(msg);
        true
    }

    /// A copy of the oldest message, left in the store.
    pub fn peek(&self) -> Option<Message> {
        self.queue().messages.front().cloned()
    }

    /// Takes the oldest message out.
    pub fn pop(&self) -> Option<Message> {
        let mut q = self.queue();
        let m = q.messages.pop_front()?;
        q.bytes -= body_len(&m);
        Some(m)
    }

    pub fn len(&self) -> usize {
        self.queue().messages.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Takes over `old`'s messages (a reload that kept this store).
    pub fn take_over(&self, old: &MessageStore) {
        let taken = std::mem::take(&mut *old.queue());
        *self.queue() = taken;
    }
}

/// Which store a `<store>` puts the message in.
#[derive(Debug)]
enum Which {
    Named(Option<Arc<MessageStore>>),
    PerMessage(Expr, Stores),
}

#[derive(Debug)]
pub struct StorePlan {
    which: Which,
    sequence: Option<Arc<SeqPlan>>,
}

pub(crate) fn compile(c: &mut Compiler, s: &cfg::Store, m: &cfg::Mediator) -> Option<Step> {
    let el = m.element.as_str();
    let which = match &s.store {
        cfg::ValueSrc::Literal(name) => match c.stores.get(name.as_str()) {
            Some(Some(store)) => Which::Named(Some(store.clone())),
            Some(None) => {
                c.report(
                    Severity::Unsupported,
                    &m.loc,
                    el,
                    format!("depends on message store '{name}', which is not deployed"),
                );
                return None;
            }
            None => {
                c.report(
                    Severity::Warning,
                    &m.loc,
                    el,
                    format!("no message store '{name}': storing a message faults with \"Message Store does not exist.\", as in MI"),
                );
                Which::Named(None)
            }
        },
        cfg::ValueSrc::Expr(e) => Which::PerMessage(c.expr(e, el)?, c.stores_by_name.clone()),
    };
    let sequence = match &s.sequence {
        Some(key) => {
            let seq = c.named_sequence(key, Some(&m.loc))?;
            if let Some(what) = leaves_message(&seq.steps) {
                c.report(
                    Severity::Unsupported,
                    &m.loc,
                    el,
                    format!("the store's sequence '{key}' has a {what}: a message is stored after it, so it may not leave"),
                );
                return None;
            }
            Some(seq)
        }
        None => None,
    };
    Some(Step::Store(StorePlan { which, sequence }))
}

impl Mediator for StorePlan {
    fn heavy(&self) -> bool {
        self.sequence.as_ref().is_some_and(|s| s.heavy)
    }

    fn run(&self, cx: &mut Cx<'_>) -> Result<Option<Flow>, Error> {
        unread_body(cx.msg, "the message to store")?;
        let store = match &self.which {
            Which::Named(store) => store.clone(),
            Which::PerMessage(e, all) => {
                let name = eval_expr(e, cx.msg, cx.doc)?;
                all.get(name.as_str()).cloned()
            }
        };
        let Some(store) = store else {
            return Err(Error::new(
                ErrorKind::Mediation,
                "Message Store does not exist.".to_owned(),
            ));
        };
        if let Some(seq) = &self.sequence {
            // What it decides (a drop) does not stop the store; its errors do.
            cx.branch(&seq.steps)?;
        }
        let mut copy = cx.msg.stored_copy();
        let id = copy.message_id().to_owned();
        if !store.push(copy) {
            crate::mediators::property::set_axis2(cx.msg, "HTTP_SC", "500".to_owned())?;
            cx.msg
                .props
                .set("ERROR_DETAIL", "Failed to store message.".to_owned());
            return Err(Error::new(
                ErrorKind::Overloaded,
                format!("Failed to store message [{id}] in store [{}].", store.name),
            ));
        }
        cx.msg.props.set("RESPONSE_WRITTEN", "SKIP".to_owned());
        Ok(None)
    }
}
