//! Producer-side queue selection and broker fault isolation (`MQFaultStrategy` with its
//! `LatencyFaultTolerance`, `TopicPublishInfo`), for RocketMQ 4.x (the 4.9.x line) and 5.x (RIP-63).
//!
//! No clock and no randomness of its own: `now_ms` is an argument, the `ThreadLocalIndex`
//! counters are raw `i32` values the caller owns and passes in, and 5.x's random choices arrive as
//! values. Everything else is deterministic, as in Java.
//!
//! ```
//! use mqbalance_core::fault::{MQFaultStrategy, LatencyTable, TopicPublishInfo, QueueData, Semantics};
//! let route = [QueueData::new("broker1", 6, 4), QueueData::new("broker2", 6, 4)];
//! let tp = TopicPublishInfo::from_route("topic-a", &route, |_| true).unwrap();
//! let mut ft = MQFaultStrategy::new(Semantics::V4, LatencyTable::v4(), true);
//! let (mut counter, mut worst) = (0i32, 0i32);
//! // broker1 answered in 30 s: isolated for 600 s (4.x table); the next send avoids it.
//! ft.update_fault_item("broker1", 30_000, false, true, 0).unwrap();
//! let q = tp.select_4x(&mut ft, 1_000, None, &mut counter, &mut worst);
//! assert_eq!(q.broker(&tp), "broker2");
//! ```

mod error;
mod select;
mod semantics;
mod simulate;
mod strategy;
mod table;
mod thread_local_index;

pub use error::FaultError;
pub use select::{QueueData, Selected, TopicPublishInfo, PERM_READ, PERM_WRITE};
pub use semantics::Semantics;
pub use simulate::{simulate, BrokerModel, SimConfig, SimResult, SplitMix64};
pub use strategy::{FaultItem, MQFaultStrategy};
pub use table::LatencyTable;
pub use thread_local_index::next_index;
