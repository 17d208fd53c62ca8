//! Bodies read into memory: the frames gathered into one buffer, counted against the process-wide
//! budget of bytes messages may hold at once (`sluice_mediation::budget`: a request past it is
//! answered 503 with `Retry-After`, never an out-of-memory kill).

use bytes::{Bytes, BytesMut};
pub use sluice_mediation::budget::{BodyBudget, Held};
use sluice_mediation::Error;
use std::sync::Arc;

/// Bodies smaller than this are not counted against the budget: they cost one frame each, bounded
/// by the connections, and counting them would put a shared counter on every content-routing
/// message.
pub const COUNTED_FROM: usize = 64 * 1024;

/// A body's buffer growing to this size or more gives its old one back to the system at once.
const RELEASE_FROM: usize = 8 * 1024 * 1024;

/// A body's bytes together with what they hold of the budget: the budget gets them back when the
/// last copy of the bytes is gone.
struct Owned {
    bytes: Bytes,
    _held: Held,
}

impl AsRef<[u8]> for Owned {
    fn as_ref(&self) -> &[u8] {
        &self.bytes
    }
}

/// Body frames read so far: kept as the one frame they are while there is one (a small message, the
/// usual case: no copy), joined once a second frame comes, into a buffer of the expected length
/// when the body said it.
#[derive(Default)]
pub struct Gathered {
    first: Bytes,
    joined: Option<BytesMut>,
    /// The length the body announced (0: unknown).
    expect: usize,
    /// The most the body may hold (0: no limit of its own), which its buffer never grows past.
    limit: usize,
    held: Option<Held>,
}

impl Gathered {
    /// Frames of a body expected to be `expect` bytes long (0 if unknown), of at most `limit` bytes.
    pub fn expecting(expect: usize, limit: usize) -> Self {
        Gathered {
            expect,
            limit,
            ..Gathered::default()
        }
    }

    pub fn push(&mut self, data: Bytes) {
        match &mut self.joined {
            Some(j) => {
                // Grown by doubling, but never past the limit: a body refused at 64 MiB must not
                // have taken a 128 MiB buffer on its way there.
                let need = j.len() + data.len();
                if need > j.capacity() && self.limit > 0 {
                    // A buffer of its own size (BytesMut::reserve would double past the limit).
                    let grown = (2 * j.len()).clamp(need, self.limit.max(need));
                    let mut bigger = BytesMut::with_capacity(grown);
                    bigger.extend_from_slice(j);
                    *j = bigger;
                    // The buffer given up goes back to the system now: while a body grows to
                    // tens of MiB, the halves left behind would otherwise add up to its size.
                    if grown >= RELEASE_FROM {
                        sluice_xml::release_free_memory_now();
                    }
                }
                j.extend_from_slice(&data)
            }
            None if self.first.is_empty() => self.first = data,
            None => {
                let len = self.first.len() + data.len();
                let mut j = BytesMut::with_capacity(len.max(self.expect));
                j.extend_from_slice(&self.first);
                j.extend_from_slice(&data);
                self.first = Bytes::new();
                self.joined = Some(j);
            }
        }
    }

    /// Counts what the gathered bytes hold of memory against `budget`, once they are many.
    pub fn count(&mut self, budget: &Arc<BodyBudget>) -> Result<(), Error> {
        let holds = match &self.joined {
            Some(j) => j.capacity(),
            None => self.first.len(),
        };
        if holds < COUNTED_FROM {
            return Ok(());
        }
        budget.grow(&mut self.held, holds)
    }

    pub fn bytes(&self) -> &[u8] {
        self.joined.as_deref().unwrap_or(&self.first)
    }

    pub fn finish(self) -> Bytes {
        let bytes = self.joined.map_or(self.first, BytesMut::freeze);
        match self.held {
            Some(held) => Bytes::from_owner(Owned { bytes, _held: held }),
            None => bytes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gathered_frames_keep_one_frame_and_join_more_in_order() {
        let one = Bytes::from_static(b"<a>whole</a>");
        let mut g = Gathered::default();
        g.push(one.clone());
        assert_eq!(g.bytes(), &one[..]);
        let kept = g.finish();
        assert_eq!(kept.as_ptr(), one.as_ptr(), "one frame is kept, not copied");
        let mut g = Gathered::default();
        for piece in ["", "<a>", "", "wh", "ole</a>"] {
            g.push(Bytes::from_static(piece.as_bytes()));
        }
        assert_eq!(g.bytes(), b"<a>whole</a>");
        assert_eq!(g.finish(), one);
        assert!(Gathered::default().finish().is_empty());
    }

    #[test]
    fn a_body_of_announced_length_is_joined_into_one_buffer_of_that_length() {
        let mut g = Gathered::expecting(300_000, 1 << 20);
        for _ in 0..3 {
            g.push(Bytes::from(vec![b'x'; 100_000]));
        }
        assert_eq!(g.joined.as_ref().unwrap().capacity(), 300_000);
        assert_eq!(g.finish().len(), 300_000);
    }

    #[test]
    fn an_unannounced_body_grows_by_doubling_but_never_past_its_limit() {
        let mut g = Gathered::expecting(0, 250_000);
        for _ in 0..25 {
            g.push(Bytes::from(vec![b'x'; 10_000]));
        }
        let j = g.joined.as_ref().unwrap();
        assert_eq!(j.len(), 250_000);
        assert!(j.capacity() < 300_000, "capacity {}", j.capacity());
    }

    #[test]
    fn large_bodies_hold_the_budget_until_their_bytes_are_gone() {
        let budget = BodyBudget::new(300_000);
        let frame = || Bytes::from(vec![b'x'; 100_000]);
        let mut small = Gathered::default();
        small.push(Bytes::from_static(b"<a/>"));
        small.count(&budget).unwrap();
        assert_eq!(budget.used(), 0, "small bodies are not counted");

        let mut a = Gathered::expecting(200_000, 1 << 20);
        a.push(frame());
        a.count(&budget).unwrap();
        a.push(frame());
        a.count(&budget).unwrap();
        assert_eq!(budget.used(), 200_000);
        let a = a.finish();
        let copy = a.clone();
        drop(a);
        assert_eq!(budget.used(), 200_000, "a copy still holds it");

        let mut b = Gathered::expecting(200_000, 1 << 20);
        b.push(frame());
        b.push(frame());
        let e = b.count(&budget).unwrap_err();
        assert_eq!(e.kind, sluice_mediation::ErrorKind::Overloaded);
        assert_eq!(budget.used(), 200_000, "a refused growth takes nothing");
        drop(b);
        drop(copy);
        assert_eq!(budget.used(), 0);
    }
}
