//! Producer-side queue selection and broker fault isolation (`MQFaultStrategy`,
//! `LatencyFaultToleranceImpl`, `TopicPublishInfo`), for RocketMQ 4.9.x and 5.x (RIP-63).
//!
//! No clock and no randomness of its own: `now_ms` is an argument, the `ThreadLocalIndex`
//! counters are raw `i32` values the caller owns and passes in, and 5.x's random choices arrive as
//! values. Everything else is deterministic, as in Java.
//!
//! ```
//! use mqbalance_core::fault::{FaultTolerance, LatencyTable, PublishInfo, QueueData, Semantics};
//! let route = [QueueData::new("broker1", 6, 4), QueueData::new("broker2", 6, 4)];
//! let tp = PublishInfo::from_route("topic-a", &route, |_| true).unwrap();
//! let mut ft = FaultTolerance::new(Semantics::V4_9, LatencyTable::v4(), true);
//! let (mut counter, mut worst) = (0i32, 0i32);
//! // broker1 answered in 30 s: isolated for 600 s (4.x table); the next send avoids it.
//! ft.update("broker1", 30_000, false, true, 0).unwrap();
//! let q = tp.select_4x(&mut ft, 1_000, None, &mut counter, &mut worst);
//! assert_eq!(q.broker(&tp), "broker2");
//! ```

mod error;
mod select;
mod simulate;

mod table;
mod tolerance;

pub use error::FaultError;
pub use select::{next_index, PublishInfo, QueueData, Selected, PERM_READ, PERM_WRITE};
pub use simulate::{simulate, BrokerModel, SimConfig, SimResult, SplitMix64};

pub use table::LatencyTable;
pub use tolerance::{FaultItem, FaultTolerance};

/// Which Java generation's behaviour to reproduce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Semantics {
    /// `rocketmq-all-4.9.8` (the "old" fault strategy, 4.x tables).
    V4_9,
    /// `rocketmq-all-5.3.3` (RIP-63: filters, reachability, detector; 5.x tables).
    V5,
}
