use thiserror::Error;

/// Everything the fault-tolerance core can refuse.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum FaultError {
    /// A latency below zero (Java would store it; it is always a caller bug).
    #[error("latency must be >= 0 ms, got {0}")]
    NegativeLatency(i64),
    /// `latencyMax` and `notAvailableDuration` differ in length.
    #[error("latency_max has {latency_max} entries but not_available_duration has {durations}")]
    TableLengthMismatch {
        /// Entries of `latencyMax`.
        latency_max: usize,
        /// Entries of `notAvailableDuration`.
        durations: usize,
    },
    /// A table that is not ascending, or has a negative entry.
    #[error("{table} must be ascending and >= 0; entry {index} is {value}")]
    TableNotSorted {
        /// Which table.
        table: &'static str,
        /// The offending index.
        index: usize,
        /// Its value.
        value: i64,
    },
    /// A route with no writable queue (nothing can be sent).
    #[error("topic {topic:?} has no writable queue (every queue data is read-only, has zero write queues, or its broker has no master)")]
    EmptyRoute {
        /// Topic.
        topic: String,
    },
    /// A queue data with a negative queue count.
    #[error("queue data of broker {broker:?} has a negative {field}: {value}")]
    InvalidQueueData {
        /// Broker name.
        broker: String,
        /// `writeQueueNums` or `readQueueNums`.
        field: &'static str,
        /// The value.
        value: i64,
    },
    /// A broker the route does not know (simulation models).
    #[error("unknown broker {0:?}: not in the topic's route")]
    UnknownBroker(String),
    /// A request whose result cannot be allocated (fallible reservation failed, or the size
    /// overflows): `name` is the parameter, `value` its value, `bytes` what it would need.
    #[error("{name} = {value} is too large: it would need about {bytes} bytes of memory")]
    TooLarge {
        /// Parameter.
        name: &'static str,
        /// Its value.
        value: u64,
        /// Bytes the result would need (saturated at `u64::MAX`).
        bytes: u64,
    },
    /// A simulation parameter out of range.
    #[error("invalid simulation parameter {name}: {reason}")]
    InvalidSimulation {
        /// Parameter.
        name: &'static str,
        /// Why.
        reason: String,
    },
}
