//! The allocation error enum. One variant per distinct failure; every variant is mapped to its own
//! Python exception class by the binding crate (the enum is deliberately not `#[non_exhaustive]`,
//! so a new variant fails to compile there until it is mapped).

use thiserror::Error;

/// Everything the allocation core can refuse. Messages of the variants that mirror a Java
/// `IllegalArgumentException` are Java's text, letter for letter.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum AllocateError {
    /// Java: `currentCID is empty` (null or `""`).
    #[error("currentCID is empty")]
    EmptyCurrentId,
    /// Java: `mqAll is null or mqAll empty`.
    #[error("mqAll is null or mqAll empty")]
    EmptyQueues,
    /// Java: `cidAll is null or cidAll empty`.
    #[error("cidAll is null or cidAll empty")]
    EmptyConsumers,
    /// Java: `illegal virtualNodeCnt :<n>` (a negative count, at construction).
    #[error("illegal virtualNodeCnt :{0}")]
    IllegalVirtualNodeCnt(i64),
    /// The ring would hold more virtual nodes than we are willing to build.
    #[error("consistent-hash ring too large: {consumers} consumers x {virtual_node_cnt} virtual nodes > {limit} entries")]
    RingTooLarge {
        /// Number of consumer entries (duplicates counted).
        consumers: usize,
        /// Virtual nodes per consumer.
        virtual_node_cnt: u32,
        /// The limit, [`crate::ring::MAX_RING_ENTRIES`].
        limit: usize,
    },
    /// `MACHINE_ROOM` with `consumeridcs` never set met a `idc@broker` name (Java: `NullPointerException`).
    #[error("MACHINE_ROOM consumer_idcs is not set (Java throws NullPointerException at broker name {broker:?})")]
    ConsumerIdcsNotSet {
        /// The first two-part broker name that needed the idc set.
        broker: String,
    },
    /// Java: `Machine room is null for mq <mq>` (the resolver gave a null or empty room).
    #[error("Machine room is null for mq {queue}")]
    EmptyQueueRoom {
        /// `MessageQueue.toString()` of the queue.
        queue: String,
    },
    /// Java: `Machine room is null for consumer id <cid>`.
    #[error("Machine room is null for consumer id {client_id}")]
    EmptyConsumerRoom {
        /// The client id whose room was empty.
        client_id: String,
    },
    /// [`Strategy::from_name`](crate::Strategy::from_name): no core strategy has this name.
    #[error("no core strategy named {name:?}")]
    UnknownStrategy {
        /// The name given.
        name: String,
    },
    /// [`Strategy::from_name`](crate::Strategy::from_name): `MACHINE_ROOM_NEARBY` without its
    /// inner strategy.
    #[error("{name} needs an inner strategy")]
    MissingInner {
        /// The strategy named.
        name: String,
    },
    /// A strategy that cannot be used where it was asked for (e.g. CONFIG inside `MACHINE_ROOM_NEARBY`).
    #[error("strategy {name} is not supported here: {reason}")]
    UnsupportedStrategy {
        /// Strategy name.
        name: String,
        /// Why.
        reason: String,
    },
    /// `CONSISTENT_HASH_BOUNDED` with an ε that is NaN or infinite (the bits of the `f64`).
    #[error("epsilon must be a finite number >= 0, got {}", f64::from_bits(*bits))]
    InvalidEpsilon {
        /// `f64::to_bits` of the value.
        bits: u64,
    },
    /// `CONSISTENT_HASH_BOUNDED` with a negative ε: for some group sizes the cap
    /// ⌈(1+ε)·queues/consumers⌉ would be below the average load, so some queue could not be placed.
    #[error("epsilon {} is too small: the cap ceil((1+epsilon)*queues/consumers) would fall below the average load; the minimum is 0 (cap = ceil(average))", f64::from_bits(*bits))]
    EpsilonTooSmall {
        /// `f64::to_bits` of the value.
        bits: u64,
    },
    /// A strategy that needs the group's previous assignment (`STICKY`) was called without one:
    /// the per-client `allocate`, or a whole-group call that was given none.
    #[error("{name} needs the group's previous assignment, which this call does not have: compute the whole group with it (Python: assign(..., previous=...) or bulk.owners(..., previous=...)); a client computing only its own share can use CONSISTENT_HASH_BOUNDED instead")]
    PreviousRequired {
        /// Strategy name.
        name: String,
    },
    /// A dictionary code that does not index its dictionary.
    #[error("invalid {what} code {code} at row {row}: the dictionary has {dict_len} entries")]
    InvalidCode {
        /// Which column.
        what: &'static str,
        /// Row of the bad code.
        row: usize,
        /// The code.
        code: u32,
        /// Dictionary size.
        dict_len: usize,
    },
    /// Segment bounds of a batch that do not partition the rows (`0 = b[0] <= ... <= b[n] = rows`).
    #[error("segment bounds {reason}")]
    InvalidBounds {
        /// What is wrong, with the values.
        reason: String,
    },
    /// Column lengths or room arrays that do not line up.
    #[error("length mismatch: {what} has {got} entries, expected {expected}")]
    LengthMismatch {
        /// Which input.
        what: &'static str,
        /// Its length.
        got: usize,
        /// The length it should have.
        expected: usize,
    },
}
