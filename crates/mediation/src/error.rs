//! One error type for everything that can go wrong with a message, with a kind, the source and whether a
//! retry could succeed. Strings are for people; code matches on `ErrorKind`.

use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The back-end refused the connection, its address did not resolve, or (https) the TLS
    /// handshake failed: a certificate not trusted or not for the host, no common protocol.
    ConnectFailed,
    /// No connection to the back-end within the endpoint timeout.
    ConnectTimeout,
    /// The back-end did not answer within the endpoint timeout.
    ResponseTimeout,
    /// The back-end closed or reset the connection before a complete response head.
    ConnectionClosed,
    /// The back-end sent something that is not HTTP/1.1.
    BackendProtocol,
    /// The back-end's answer failed the WS-Security checks of its endpoint's inbound policy
    /// (MI's 101510).
    BackendSecurity,
    /// The endpoint is suspended after failures (`suspendOnFailure`, `markForSuspension`): nothing
    /// was sent.
    EndpointSuspended,
    /// No child of a failover or load-balance endpoint is ready (all suspended, or all failed for
    /// this message).
    NoReadyChild,
    /// A `key` names no endpoint in the configuration. Synapse looks such keys up when a message
    /// is sent, and fails that send (`ERROR_CODE` 305100); a failover parent goes on to its next
    /// child.
    EndpointNotFound,
    /// Reading the client's request failed, or it is malformed.
    BadRequest,
    /// The client stopped sending its request body (for longer than the endpoint timeout).
    ClientTimeout,
    /// No deployed service at that path.
    NotFound,
    /// A body larger than the limit had to be read into memory.
    PayloadTooLarge,
    /// A mediator failed at run time (bad value for a typed property, ...).
    Mediation,
    /// The flow ended with nowhere to send the message.
    NoRoute,
    /// A bug in Sluice.
    Internal,
    /// Sluice is at a limit it sets itself (buffered bodies, mediation queue): try again later.
    Overloaded,
    /// The request's mediation ran past its deadline, or its client went away: it was stopped.
    Stopped,
}

/// Where an error came from (as Pingora's `ErrorSource`): what a log line, a metric or an operator
/// looks at first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorSource {
    /// The client: a malformed or too large request, one sent too slowly, a path nothing serves.
    Client,
    /// A back-end: it could not be reached, answered too late or wrongly, or is suspended.
    Backend,
    /// Sluice itself: a mediator failed, nowhere to send, a limit of its own, a bug.
    Sluice,
}

impl ErrorKind {
    /// Where an error of this kind came from.
    pub fn source(self) -> ErrorSource {
        match self {
            ErrorKind::ConnectFailed
            | ErrorKind::ConnectTimeout
            | ErrorKind::ResponseTimeout
            | ErrorKind::ConnectionClosed
            | ErrorKind::BackendProtocol
            | ErrorKind::BackendSecurity
            | ErrorKind::EndpointSuspended
            | ErrorKind::NoReadyChild => ErrorSource::Backend,
            ErrorKind::BadRequest
            | ErrorKind::ClientTimeout
            | ErrorKind::NotFound
            | ErrorKind::PayloadTooLarge => ErrorSource::Client,
            ErrorKind::Mediation
            | ErrorKind::NoRoute
            | ErrorKind::EndpointNotFound
            | ErrorKind::Internal
            | ErrorKind::Overloaded
            | ErrorKind::Stopped => ErrorSource::Sluice,
        }
    }

    /// The Synapse `ERROR_CODE` users' fault sequences match on.
    pub fn synapse_code(self) -> i64 {
        match self {
            ErrorKind::ConnectFailed => 101503,
            ErrorKind::ConnectTimeout => 101508,
            ErrorKind::ResponseTimeout => 101504,
            ErrorKind::ConnectionClosed => 101505,
            ErrorKind::BackendProtocol => 101506,
            ErrorKind::BackendSecurity => 101510,
            ErrorKind::EndpointSuspended => 303001,
            ErrorKind::NoReadyChild => 303000,
            ErrorKind::EndpointNotFound => 305100,
            ErrorKind::BadRequest | ErrorKind::ClientTimeout => 101001,
            ErrorKind::NotFound => 404,
            ErrorKind::PayloadTooLarge => 101001,
            ErrorKind::Mediation | ErrorKind::NoRoute | ErrorKind::Internal => 0,
            ErrorKind::Overloaded | ErrorKind::Stopped => 0,
        }
    }

    /// The `ERROR_MESSAGE` Synapse's pass-through transport sets for this kind, where it sets a
    /// fixed one (its DeliveryAgent's words); Sluice's own reason is then `ERROR_DETAIL`.
    pub fn synapse_message(self) -> Option<&'static str> {
        match self {
            ErrorKind::ConnectFailed => {
                Some("Error while connecting to the endpoint (Connection Failed)")
            }
            ErrorKind::ConnectTimeout => {
                Some("Error while connecting to the endpoint (Connection Timeout)")
            }
            _ => None,
        }
    }

    /// The HTTP status Sluice answers with when no fault sequence answered.
    pub fn http_status(self) -> u16 {
        match self {
            ErrorKind::ConnectFailed
            | ErrorKind::ConnectionClosed
            | ErrorKind::BackendProtocol
            | ErrorKind::BackendSecurity => 502,
            ErrorKind::ConnectTimeout | ErrorKind::ResponseTimeout => 504,
            ErrorKind::EndpointSuspended | ErrorKind::NoReadyChild => 503,
            ErrorKind::BadRequest => 400,
            ErrorKind::ClientTimeout => 408,
            ErrorKind::NotFound => 404,
            ErrorKind::PayloadTooLarge => 413,
            ErrorKind::Mediation
            | ErrorKind::NoRoute
            | ErrorKind::EndpointNotFound
            | ErrorKind::Internal => 500,
            ErrorKind::Overloaded => 503,
            ErrorKind::Stopped => 500,
        }
    }

    /// Whether sending the same request again (to this or another endpoint) could succeed.
    pub fn retryable(self) -> bool {
        matches!(
            self,
            ErrorKind::ConnectFailed
                | ErrorKind::ConnectTimeout
                | ErrorKind::EndpointSuspended
                | ErrorKind::NoReadyChild
        )
    }

    /// Whether the back-end failed (what counts toward suspending an endpoint, and what a failover
    /// or load-balance endpoint sends to another child): not a client's broken or aborted request.
    pub fn is_backend_failure(self) -> bool {
        // The back-end's errors, but for those where nothing was sent to it.
        self.source() == ErrorSource::Backend
            && !matches!(self, ErrorKind::EndpointSuspended | ErrorKind::NoReadyChild)
    }

    /// Whether a failover or load-balance endpoint that fails over sends a message that failed
    /// this way to another child: a back-end failure, or a child whose key names no endpoint (as
    /// Synapse's IndirectEndpoint tells its parent).
    pub fn moves_to_next_child(self) -> bool {
        self.is_backend_failure() || self == ErrorKind::EndpointNotFound
    }

    /// Whether the client, not the server side, is at fault (SOAP `Client` / `Sender` code).
    pub fn is_client_fault(self) -> bool {
        self.source() == ErrorSource::Client
    }

    pub fn describe(self) -> &'static str {
        match self {
            ErrorKind::ConnectFailed => "connection to the back-end failed",
            ErrorKind::ConnectTimeout => "connecting to the back-end timed out",
            ErrorKind::ResponseTimeout => "the back-end did not answer in time",
            ErrorKind::ConnectionClosed => {
                "the back-end closed the connection before a complete response"
            }
            ErrorKind::BackendProtocol => "the back-end sent an invalid HTTP response",
            ErrorKind::BackendSecurity => "the back-end's answer failed its WS-Security checks",
            ErrorKind::EndpointSuspended => "the endpoint is suspended after failures",
            ErrorKind::NoReadyChild => "no child endpoint is ready",
            ErrorKind::EndpointNotFound => "no such endpoint",
            ErrorKind::BadRequest => "bad request",
            ErrorKind::ClientTimeout => "the client stopped sending its request",
            ErrorKind::NotFound => "not found",
            ErrorKind::PayloadTooLarge => "message too large",
            ErrorKind::Mediation => "mediation failed",
            ErrorKind::NoRoute => "no route",
            ErrorKind::Internal => "internal error",
            ErrorKind::Overloaded => "Sluice is at its limit; try again later",
            ErrorKind::Stopped => "mediation stopped",
        }
    }
}

pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

#[derive(Debug)]
pub struct Error {
    pub kind: ErrorKind,
    /// What was involved: the endpoint name and address, the mediator, ...
    pub context: String,
    pub source: Option<BoxError>,
    /// A sequence's `onError` sequence ran for it already: the proxy's fault sequence does not run
    /// again, and the client gets Sluice's fault.
    pub handled: bool,
}

impl Error {
    pub fn new(kind: ErrorKind, context: impl Into<String>) -> Self {
        Error {
            kind,
            context: context.into(),
            source: None,
            handled: false,
        }
    }

    /// The error, marked as handled by an `onError` sequence.
    pub fn handled(mut self) -> Self {
        self.handled = true;
        self
    }

    pub fn with_source(mut self, source: impl Into<BoxError>) -> Self {
        self.source = Some(source.into());
        self
    }

    pub fn retryable(&self) -> bool {
        self.kind.retryable()
    }

    /// One line for people: what happened, where, and why.
    pub fn reason(&self) -> String {
        let mut s = String::from(self.kind.describe());
        if !self.context.is_empty() {
            s.push_str(": ");
            s.push_str(&self.context);
        }
        let mut src: Option<&(dyn std::error::Error + 'static)> =
            self.source.as_deref().map(|e| e as _);
        // Walk the source chain to its root cause, which is what people need.
        let mut last = None;
        while let Some(e) = src {
            last = Some(e);
            src = e.source();
        }
        if let Some(e) = last {
            s.push_str(" (");
            s.push_str(&e.to_string());
            s.push(')');
        }
        s
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reason())
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.as_deref().map(|e| e as _)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [ErrorKind; 18] = [
        ErrorKind::ConnectFailed,
        ErrorKind::ConnectTimeout,
        ErrorKind::ResponseTimeout,
        ErrorKind::ConnectionClosed,
        ErrorKind::BackendProtocol,
        ErrorKind::BackendSecurity,
        ErrorKind::EndpointSuspended,
        ErrorKind::NoReadyChild,
        ErrorKind::EndpointNotFound,
        ErrorKind::BadRequest,
        ErrorKind::ClientTimeout,
        ErrorKind::NotFound,
        ErrorKind::PayloadTooLarge,
        ErrorKind::Mediation,
        ErrorKind::NoRoute,
        ErrorKind::Internal,
        ErrorKind::Overloaded,
        ErrorKind::Stopped,
    ];

    /// Each kind's source agrees with what else the taxonomy says of it: a back-end failure comes
    /// from the back-end, a client's fault is a 4xx, and what Sluice does wrong a 5xx.
    #[test]
    fn sources_agree_with_statuses_and_failures() {
        for k in ALL {
            let status = k.http_status();
            match k.source() {
                ErrorSource::Client => assert!((400..500).contains(&status), "{k:?}"),
                ErrorSource::Backend => assert!((502..505).contains(&status), "{k:?}"),
                ErrorSource::Sluice => assert!((500..504).contains(&status), "{k:?}"),
            }
            if k.is_backend_failure() {
                assert_eq!(k.source(), ErrorSource::Backend, "{k:?}");
            }
        }
    }
}
