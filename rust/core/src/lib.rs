//! mqbalance-core: RocketMQ consumer-group queue allocation, bit-exact with the Java client.
//!
//! Pure Rust: no PyO3, no clock, no I/O, no randomness of its own. Plain data in, index arrays out.
//!
//! The natural primitive is *the owner of every queue* for a whole group ([`allocate::owners`]);
//! the Java per-client call ([`allocate::allocate`]) is a view of it.
//!
//! ```
//! use mqbalance_core::{allocate, ConsumerList, QueueTable, Strategy};
//! let queues = QueueTable::from_rows((0..5).map(|q| ("TopicTest", "broker-a", q)));
//! let group = ConsumerList::new(vec!["c1".to_string(), "c2".to_string()]);
//! // AVG: contiguous blocks, the first `5 mod 2` consumers get one more.
//! assert_eq!(allocate::owners(&Strategy::Avg, &queues.all(), &group, None).unwrap(), vec![0, 0, 0, 1, 1]);
//! assert_eq!(allocate::allocate(&Strategy::Avg, Some("c2"), &queues.all(), &group, None).unwrap(), vec![3, 4]);
//! ```
#![warn(missing_docs)]

pub mod allocate;
pub mod assign;
pub mod error;
pub mod fault;
pub mod json_connections;
pub mod json_keys;
pub mod kafka_wire;
pub mod order;
pub mod queues;
pub mod ring;

pub use allocate::Strategy;
pub use error::AllocateError;
pub use queues::{ConsumerList, QueueTable, QueueView};
pub use ring::{Charset, ConsistentHashRing};
