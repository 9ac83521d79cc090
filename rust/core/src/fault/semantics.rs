//! Which Java client generation the fault-tolerance code reproduces.

/// Which Java client generation to reproduce (Python: `mqbalance.versions.Semantics`, `"4.x"` /
/// `"5.x"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Semantics {
    /// `"4.x"`: the 4.9.x line's `MQFaultStrategy`, checked against `rocketmq-all-4.9.8` (4.x
    /// tables; a failure counts as 30 s; the fallback picks a new queue on `pickOneAtLeast`'s broker).
    V4,
    /// `"5.x"`: RocketMQ 5.1.4+ (RIP-63: queue filters, reachability, the detector; 5.x tables),
    /// checked against `rocketmq-all-5.3.3`.
    V5,
}
