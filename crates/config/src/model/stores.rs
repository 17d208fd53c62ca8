//! Message stores, message processors, and the `store` and `datamapper` mediators' models.

use super::ValueSrc;
use crate::diag::Location;

/// `<messageStore name class>`: a queue of stored messages.
#[derive(Clone, Debug)]
pub struct MessageStore {
    pub name: String,
    /// `None`: the in-memory store Sluice runs. `Some(what)`: a kind it does not run (JMS,
    /// RabbitMQ, JDBC, a Java class), kept so that what names it is not deployed either.
    pub unsupported: Option<String>,
    pub loc: Location,
}

/// `<messageProcessor name class messageStore>`: takes the store's messages on a schedule.
#[derive(Clone, Debug)]
pub struct MessageProcessor {
    pub name: String,
    pub store: String,
    pub kind: ProcessorKind,
    /// `interval` in milliseconds (1000 by default).
    pub interval_ms: u64,
    /// `is.active`: whether it starts active.
    pub active: bool,
    pub loc: Location,
}

#[derive(Clone, Debug)]
pub enum ProcessorKind {
    /// The scheduled message forwarding processor: each message to an endpoint, with retries.
    Forwarding(Forwarding),
    /// The sampling processor: up to `concurrency` messages a run through `sequence`.
    Sampling {
        sequence: Option<String>,
        concurrency: usize,
    },
}

/// What a forwarding processor does with each message ([`ProcessorKind::Forwarding`]).
#[derive(Clone, Debug)]
pub struct Forwarding {
    /// `targetEndpoint` (or the `target.endpoint` parameter); `None`: each message's own
    /// `target.endpoint` property.
    pub endpoint: Option<String>,
    /// Tries of one message, the first counted; 0 or less: no limit.
    pub max_attempts: i64,
    /// Milliseconds after a failed try.
    pub retry_interval_ms: u64,
    /// After the last failed try: remove the message and go on (else deactivate).
    pub drop_after: bool,
    /// Statuses that count as delivered (`non.retry.status.codes`).
    pub non_retry: Vec<u16>,
    pub reply_sequence: Option<String>,
    pub fault_sequence: Option<String>,
    pub deactivate_sequence: Option<String>,
    /// `message.processor.failMessagesStore`: where a message goes after its last failed try.
    pub fail_store: Option<String>,
}

/// `<datamapper config inputSchema outputSchema inputType outputType xsltStyleSheet>`: registry keys
/// of the mapping, its schemas and its XSLT form.
#[derive(Clone, Debug)]
pub struct Datamapper {
    pub config: String,
    pub input_schema: String,
    pub output_schema: String,
    pub input_type: Option<String>,
    pub output_type: Option<String>,
    pub xslt: Option<String>,
}

/// `<store messageStore sequence>`.
#[derive(Clone, Debug)]
pub struct Store {
    /// The store's name, or (`{xpath}`) an expression naming it per message.
    pub store: ValueSrc,
    /// A sequence run on the message before it is stored.
    pub sequence: Option<String>,
}
