//! The errors the transport raises itself, by kind: a relayed stream that stalls, a client's body
//! that comes too slowly, a back-end's bytes that are not HTTP/1.1, a body that does not match its
//! length. Each says where it came from ([`ErrorSource`]); the engine decides on the kind (a
//! [`Fault`] travels boxed through `http_body` streams and is told apart by downcasting), never on
//! the text, which is for people.

use sluice_mediation::ErrorSource;

/// What went wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// A relayed stream made no progress for its idle timeout.
    Stalled,
    /// A client's request body came slower than its [`BodyPace`](crate::body::BodyPace) allows:
    /// answered 408.
    TooSlow,
    /// A back-end's response is not HTTP/1.1 as RFC 9112 frames it.
    Protocol(Protocol),
    /// A request body Sluice relays did not match the length it declared.
    BodyLength,
}

/// Which part of a back-end's response broke HTTP/1.1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// The head is larger than Sluice reads.
    HeadTooLarge,
    /// The head does not parse (status line or header lines).
    Head,
    /// A status code outside 100-999, or 101 (upgrades are not relayed).
    Status,
    /// A header name or value HTTP does not allow.
    Header,
    /// `Content-Length` is not a number, or two differ.
    ContentLength,
    /// A chunk-size line, chunk data or the trailer section is framed wrongly or too long.
    Chunked,
}

/// An error of the transport's own: its kind, where it came from, and what a person reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    kind: FaultKind,
    from: ErrorSource,
    detail: String,
}

impl Fault {
    pub fn new(kind: FaultKind, from: ErrorSource, detail: impl Into<String>) -> Fault {
        Fault {
            kind,
            from,
            detail: detail.into(),
        }
    }

    /// A back-end's bytes that are not HTTP/1.1.
    pub fn protocol(part: Protocol, detail: impl Into<String>) -> Fault {
        Fault::new(FaultKind::Protocol(part), ErrorSource::Backend, detail)
    }

    pub fn kind(&self) -> FaultKind {
        self.kind
    }

    /// Where it came from.
    pub fn from(&self) -> ErrorSource {
        self.from
    }

    /// Whether `e` is a fault of kind `kind`.
    pub fn is(e: &(dyn std::error::Error + 'static), kind: FaultKind) -> bool {
        e.downcast_ref::<Fault>().is_some_and(|f| f.kind == kind)
    }
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.detail)
    }
}

impl std::error::Error for Fault {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fault_is_told_apart_by_kind_through_a_box() {
        let e: Box<dyn std::error::Error + Send + Sync> = Box::new(Fault::new(
            FaultKind::TooSlow,
            ErrorSource::Client,
            "the request body came too slowly",
        ));
        assert!(Fault::is(e.as_ref(), FaultKind::TooSlow));
        assert!(!Fault::is(e.as_ref(), FaultKind::Stalled));
        assert_eq!(e.to_string(), "the request body came too slowly");
        let p = Fault::protocol(Protocol::Chunked, "invalid chunk size");
        assert_eq!(p.from(), ErrorSource::Backend);
        assert_eq!(p.kind(), FaultKind::Protocol(Protocol::Chunked));
        let io = std::io::Error::other("x");
        assert!(!Fault::is(&io, FaultKind::TooSlow));
    }
}
