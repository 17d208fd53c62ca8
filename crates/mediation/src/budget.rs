//! The process-wide budget of memory that messages hold: bodies read into memory (counted by the
//! transport as it gathers them) and the trees mediators parse them into (counted here, from an
//! estimate made before parsing). Past the cap a request is answered 503 with `Retry-After`; a
//! tree that alone would pass it is refused (413), never an out-of-memory kill.
//!
//! A parsed tree takes many times its text: libxml2 gives every element and text node about 120
//! bytes, serde_json every value 72 and an array of them room to double. One 20 MB body of
//! `[1,1,...]` read by a JsonPath took 1.35 GB before this budget, and a 60 MB body of `<a/>`
//! parsed by libxml2 2 GB. The estimates are linear scans that count what costs a node (`<` in
//! XML; values in JSON, outside strings), done only for bodies of [`ESTIMATED_FROM`] bytes or more.

use crate::error::{Error, ErrorKind};
use sluice_expr::{ExprError, ExprErrorKind};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

/// Bytes of memory messages hold across the process, against a cap.
#[derive(Debug)]
pub struct BodyBudget {
    used: AtomicUsize,
    cap: usize,
}

/// The cap of the budget a process starts with (`transport.http.max_buffered_bytes`).
pub const DEFAULT_CAP: usize = 1024 * 1024 * 1024;

impl BodyBudget {
    pub fn new(cap: usize) -> Arc<Self> {
        Arc::new(BodyBudget {
            used: AtomicUsize::new(0),
            cap,
        })
    }

    pub fn cap(&self) -> usize {
        self.cap
    }

    /// Bytes held now.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    /// Grows `held` to `n` bytes, if the cap allows.
    pub fn grow(self: &Arc<Self>, held: &mut Option<Held>, n: usize) -> Result<(), Error> {
        let now = held.as_ref().map_or(0, |h| h.n);
        if n <= now {
            return Ok(());
        }
        let more = n - now;
        let before = self.used.fetch_add(more, Ordering::Relaxed);
        if before + more > self.cap {
            self.used.fetch_sub(more, Ordering::Relaxed);
            return Err(Error::new(
                ErrorKind::Overloaded,
                format!(
                    "messages in memory would pass the limit of {} bytes for the whole process",
                    self.cap
                ),
            ));
        }
        match held {
            Some(h) => h.n = n,
            None => {
                *held = Some(Held {
                    budget: self.clone(),
                    n,
                })
            }
        }
        Ok(())
    }
}

/// Bytes counted against a [`BodyBudget`], given back when dropped.
#[derive(Debug)]
pub struct Held {
    budget: Arc<BodyBudget>,
    n: usize,
}

impl Held {
    /// The bytes this holds.
    pub fn bytes(&self) -> usize {
        self.n
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.budget.used.fetch_sub(self.n, Ordering::Relaxed);
    }
}

static PROCESS: OnceLock<Arc<BodyBudget>> = OnceLock::new();

/// Makes `b` the budget parsed trees count against (the one bodies count against, so that both
/// share one cap). The first call decides; without one, trees count against a budget of
/// [`DEFAULT_CAP`] of their own.
pub fn install(b: Arc<BodyBudget>) {
    let _ = PROCESS.set(b);
}

/// The budget parsed trees count against.
pub fn process() -> &'static Arc<BodyBudget> {
    PROCESS.get_or_init(|| BodyBudget::new(DEFAULT_CAP))
}

/// Texts shorter than this are parsed without an estimate: their trees are a few MiB at most, and
/// as many at once as messages are being mediated.
pub const ESTIMATED_FROM: usize = 64 * 1024;

/// Bytes libxml2 takes for a node (an element, a text, a comment), counted once per `<` (an
/// element's start and end tags stand for it and its text).
const XML_NODE: usize = 120;

/// Bytes serde_json takes for a value (`size_of::<Value>()` with `preserve_order`, and as much
/// again for the array or map that grows by doubling around it) plus a member's key and hash.
const JSON_VALUE: usize = 2 * 72 + 32;

/// What libxml2's tree of `xml` takes, about: its nodes and a copy of its text.
pub fn xml_estimate(xml: &[u8]) -> usize {
    memchr::memchr_iter(b'<', xml).count() * XML_NODE + xml.len()
}

/// What serde_json's value of `json` takes, about: each value (counted by the `[`, `{` and `,`
/// outside strings) and a copy of the text.
pub fn json_estimate(json: &[u8]) -> usize {
    let mut values = 1;
    let mut i = 0;
    while i < json.len() {
        match json[i] {
            b'[' | b'{' | b',' => values += 1,
            b'"' => {
                // To the closing quote: a backslash escapes the byte after it.
                i += 1;
                loop {
                    match json.get(i..).and_then(|r| memchr::memchr2(b'"', b'\\', r)) {
                        Some(k) if json[i + k] == b'\\' => i += k + 2,
                        Some(k) => {
                            i += k;
                            break;
                        }
                        None => {
                            i = json.len();
                            break;
                        }
                    }
                }
            }
            _ => {}
        }
        i += 1;
    }
    values * JSON_VALUE + json.len()
}

/// Counts a tree of `estimate` bytes in `held` (growing it), for a text of `len` bytes.
pub fn hold_tree(held: &mut Option<Held>, len: usize, estimate: usize) -> Result<(), ExprError> {
    if len < ESTIMATED_FROM {
        return Ok(());
    }
    let b = process();
    if estimate > b.cap() {
        return Err(ExprError {
            kind: ExprErrorKind::TooLarge,
            message: format!(
                "the message of {len} bytes would take about {estimate} bytes parsed, more than the {} bytes all messages in memory may hold",
                b.cap()
            ),
        });
    }
    let now = held.as_ref().map_or(0, Held::bytes);
    b.grow(held, now + estimate).map_err(|e| ExprError {
        kind: ExprErrorKind::Overloaded,
        message: e.reason(),
    })
}

/// What a tree of the XML `text`, made and dropped within one step (a format conversion), holds
/// while it lives.
pub(crate) fn xml_guard(text: &[u8]) -> Result<Option<Held>, Error> {
    let mut held = None;
    hold_tree(&mut held, text.len(), xml_estimate(text)).map_err(crate::exec::expr_error)?;
    Ok(held)
}

/// [`xml_guard`] for a JSON `text`.
pub(crate) fn json_guard(text: &[u8]) -> Result<Option<Held>, Error> {
    let mut held = None;
    hold_tree(&mut held, text.len(), json_estimate(text)).map_err(crate::exec::expr_error)?;
    Ok(held)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimates_count_nodes_and_values_and_skip_strings() {
        assert!(std::mem::size_of::<serde_json::Value>() <= 72);
        assert_eq!(xml_estimate(b"<a><b/>x</a>"), 3 * XML_NODE + 12);
        assert_eq!(json_estimate(b"[1,2,3]"), 4 * JSON_VALUE + 7);
        // Commas, brackets and escaped quotes inside strings are no values.
        let s = br#"{"k":"a,[{\",\\","l":[]}"#;
        assert_eq!(json_estimate(s), 4 * JSON_VALUE + s.len());
        // An unterminated string ends the scan.
        assert_eq!(json_estimate(br#"["a,b,\"#), 2 * JSON_VALUE + 7);
    }

    #[test]
    fn trees_hold_the_budget_until_dropped_and_one_past_the_cap_is_too_large() {
        let b = process();
        let before = b.used();
        let mut held = None;
        hold_tree(&mut held, 10, 1 << 30).unwrap();
        assert!(held.is_none(), "small texts are not counted");
        hold_tree(&mut held, 1 << 20, 5 << 20).unwrap();
        hold_tree(&mut held, 1 << 20, 5 << 20).unwrap();
        assert_eq!(held.as_ref().map(Held::bytes), Some(10 << 20));
        assert!(b.used() >= before + (10 << 20));
        let e = hold_tree(&mut held, 1 << 20, b.cap() + 1).unwrap_err();
        assert_eq!(e.kind, ExprErrorKind::TooLarge);
        drop(held);
        assert!(b.used() < before + (10 << 20));
    }

    #[test]
    fn a_full_budget_refuses_growth_and_takes_nothing() {
        let b = BodyBudget::new(1000);
        let mut h = None;
        b.grow(&mut h, 600).unwrap();
        let e = b.grow(&mut h, 1200).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Overloaded);
        assert_eq!(b.used(), 600);
        drop(h);
        assert_eq!(b.used(), 0);
    }
}
