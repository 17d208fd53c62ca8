//! Correlation IDs, as WSO2 MI gives every request one: the client's `activityid` header when it
//! sends one, else a new UUID, which the back-end gets too. MI's `[passthru_properties]
//! correlation_header_name` renames the header ([`set_header`], once at start).
//!
//! A new ID is a version-4 UUID made without a system call or an allocation: each thread walks a
//! Weyl sequence from a random seed through splitmix64, a bijection, so a thread never repeats one
//! and two threads collide only if their 64-bit streams meet. It is written out as text only where
//! it is shown ([`sluice_mediation::message::Correlation`]).

use http::{HeaderMap, HeaderName, HeaderValue};
use sluice_mediation::message::{uuid_text, Correlation, Id};
use std::cell::Cell;
use std::hash::{BuildHasher, Hasher};
use std::sync::OnceLock;

/// MI's default header name.
pub const DEFAULT_HEADER: &str = "activityid";

static HEADER: OnceLock<HeaderName> = OnceLock::new();

/// Names the header (before serving; later calls change nothing).
pub fn set_header(name: HeaderName) {
    let _ = HEADER.set(name);
}

/// The header that carries the correlation ID.
pub fn header() -> &'static HeaderName {
    HEADER.get_or_init(|| HeaderName::from_static(DEFAULT_HEADER))
}

/// The odd step of each thread's sequence (2^64 / the golden ratio).
const STEP: u64 = 0x9E37_79B9_7F4A_7C15;

thread_local! {
    static NEXT: Cell<u64> = Cell::new(seed());
}

/// A random start for this thread: std's per-process random hash keys, mixed with the thread.
fn seed() -> u64 {
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(std::process::id().into());
    std::hash::Hash::hash(&std::thread::current().id(), &mut h);
    h.finish()
}

fn splitmix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A new correlation ID: a version-4 UUID.
#[inline]
pub fn new_id() -> Id {
    let x = NEXT.with(|c| {
        let x = c.get();
        c.set(x.wrapping_add(STEP));
        x
    });
    let (hi, lo) = (splitmix(x), splitmix(x ^ STEP.rotate_left(17)));
    // Version 4 in the 13th hex digit, variant 10 in the 17th.
    let hi = (hi & !0xF000) | 0x4000;
    let lo = (lo & !(0b11 << 62)) | (0b10 << 62);
    Id(hi, lo)
}

/// The correlation ID of a request with these headers: the client's, else a new one.
#[inline]
pub fn of(headers: &HeaderMap) -> Correlation {
    match headers.get(header()) {
        Some(v) => Correlation::Client(v.clone()),
        None => Correlation::Made(new_id()),
    }
}

/// Puts a new ID into `headers` unless they hold one (for the access log, which reads it there).
pub fn ensure(headers: &mut HeaderMap) {
    if !headers.contains_key(header()) {
        if let Ok(v) = HeaderValue::from_bytes(&uuid_text(new_id())) {
            headers.insert(header().clone(), v);
        }
    }
}

/// A made ID, to write into a back-end request unless its headers carry one by then (a mediator
/// may have set it): [`crate::h1::write_request_head`] looks as it writes them.
#[inline]
pub fn to_send(c: &Correlation) -> Option<Id> {
    match c {
        Correlation::Made(id) => Some(*id),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_version_4_uuids_and_do_not_repeat() {
        let mut seen = std::collections::HashSet::new();
        for _ in 0..10_000 {
            let text = uuid_text(new_id());
            let s = std::str::from_utf8(&text).unwrap();
            let parts: Vec<&str> = s.split('-').collect();
            assert_eq!(
                parts.iter().map(|p| p.len()).collect::<Vec<_>>(),
                [8, 4, 4, 4, 12]
            );
            assert!(parts[2].starts_with('4'), "{s}");
            assert!(matches!(&parts[3][..1], "8" | "9" | "a" | "b"), "{s}");
            assert!(seen.insert(s.to_owned()), "{s} repeated");
        }
        // Another thread starts elsewhere.
        let other = std::thread::spawn(new_id).join().unwrap();
        assert!(!seen.contains(std::str::from_utf8(&uuid_text(other)).unwrap()));
    }

    #[test]
    fn a_client_id_is_kept_and_a_missing_one_is_made() {
        let mut h = HeaderMap::new();
        h.insert(header(), HeaderValue::from_static("client-42"));
        assert_eq!(of(&h).to_string(), "client-42");
        assert!(to_send(&of(&h)).is_none());
        let made = of(&HeaderMap::new());
        assert!(matches!(made, Correlation::Made(_)));
        assert!(to_send(&made).is_some());
        let mut h = HeaderMap::new();
        ensure(&mut h);
        assert_eq!(h.get(header()).unwrap().len(), 36);
    }
}
