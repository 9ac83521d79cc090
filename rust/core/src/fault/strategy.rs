//! `MQFaultStrategy`'s state: its settings (`sendLatencyFaultEnable`, the `latencyMax` /
//! `notAvailableDuration` tables) and its `LatencyFaultToleranceImpl` (the `FaultItem` table, the
//! 5.x detector), with `updateFaultItem`, `isAvailable`, `isReachable`, `pickOneAtLeast`.
//!
//! ```
//! use mqbalance_core::fault::{MQFaultStrategy, LatencyTable, Semantics};
//! let mut ft = MQFaultStrategy::new(Semantics::V5, LatencyTable::v5(), true);
//! ft.update_fault_item("broker-a", 3_000, false, true, 1_000).unwrap(); // 6 s away
//! ft.update_fault_item("broker-a", 10, false, true, 2_000).unwrap();    // 5.x: a fast send does not shorten it
//! assert!(!ft.is_available("broker-a", 6_999) && ft.is_available("broker-a", 7_000));
//! ```

use std::cmp::Ordering;
use std::collections::BTreeMap;

use super::error::FaultError;
use super::semantics::Semantics;
use super::table::LatencyTable;
use super::thread_local_index::next_index;

/// One broker's entry. `reachable` and `check_stamp` are 5.x only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FaultItem {
    /// Latency of the last send (ms).
    pub current_latency: i64,
    /// Not available before this time (ms).
    pub start_timestamp: i64,
    /// 5.x: whether the broker is considered reachable.
    pub reachable: bool,
    /// 5.x: when the detector may probe it next (ms).
    pub check_stamp: i64,
}

/// One producer's `MQFaultStrategy`: its settings and its `LatencyFaultTolerance` items.
/// Selection (`selectOneMessageQueue`) is [`TopicPublishInfo::select_4x`] / [`TopicPublishInfo::select_5x`].
///
/// [`TopicPublishInfo::select_4x`]: super::TopicPublishInfo::select_4x
/// [`TopicPublishInfo::select_5x`]: super::TopicPublishInfo::select_5x
#[derive(Debug, Clone)]
pub struct MQFaultStrategy {
    semantics: Semantics,
    table: LatencyTable,
    enabled: bool,
    start_detector_enable: bool,
    detect_interval: i64,
    // Sorted by name: Java iterates a ConcurrentHashMap, whose order only matters for exact ties
    // in 4.x pickOneAtLeast; we break those ties by broker name (documented divergence).
    items: BTreeMap<String, FaultItem>,
}

/// Pseudo-latency a failed send is recorded with, per generation (`isolation = true`).
fn isolation_latency(semantics: Semantics) -> i64 {
    match semantics {
        Semantics::V4 => 30_000,
        Semantics::V5 => 10_000,
    }
}

impl MQFaultStrategy {
    /// A table with `sendLatencyFaultEnable = enabled`; 5.x detector off, interval 2000 ms.
    pub fn new(semantics: Semantics, table: LatencyTable, enabled: bool) -> Self {
        MQFaultStrategy {
            semantics,
            table,
            enabled,
            start_detector_enable: false,
            detect_interval: 2000,
            items: BTreeMap::new(),
        }
    }

    /// 5.x detector settings (`startDetectorEnable`, `detectInterval`).
    #[must_use]
    pub fn with_detector(mut self, start_detector_enable: bool, detect_interval: i64) -> Self {
        self.start_detector_enable = start_detector_enable;
        self.detect_interval = detect_interval;
        self
    }

    /// The generation reproduced.
    pub fn semantics(&self) -> Semantics {
        self.semantics
    }

    /// `sendLatencyFaultEnable`.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// 5.x `startDetectorEnable`.
    pub fn start_detector_enable(&self) -> bool {
        self.start_detector_enable
    }

    /// The duration table.
    pub fn table(&self) -> &LatencyTable {
        &self.table
    }

    /// `computeNotAvailableDuration(latency)`.
    pub fn compute_not_available_duration(&self, latency: i64) -> i64 {
        self.table.compute_not_available_duration(latency)
    }

    /// The whole table, sorted by broker name.
    pub fn items(&self) -> &BTreeMap<String, FaultItem> {
        &self.items
    }

    /// `MQFaultStrategy.updateFaultItem` (no-op unless enabled). 4.x overwrites the window
    /// (`now + duration`, may shorten it); 5.x only ever extends it and records `reachable`.
    pub fn update_fault_item(
        &mut self,
        broker: &str,
        latency: i64,
        isolation: bool,
        reachable: bool,
        now: i64,
    ) -> Result<(), FaultError> {
        if latency < 0 {
            return Err(FaultError::NegativeLatency(latency));
        }
        if !self.enabled {
            return Ok(());
        }
        let d = self.compute_not_available_duration(if isolation {
            isolation_latency(self.semantics)
        } else {
            latency
        });
        if !self.items.contains_key(broker) {
            let fresh = FaultItem {
                current_latency: latency,
                start_timestamp: 0,
                reachable: true,
                check_stamp: 0,
            };
            self.items.insert(broker.to_owned(), fresh);
        }
        let Some(item) = self.items.get_mut(broker) else {
            return Ok(());
        };
        item.current_latency = latency;
        match self.semantics {
            Semantics::V4 => item.start_timestamp = now.saturating_add(d),
            Semantics::V5 => {
                let until = now.saturating_add(d);
                if d > 0 && until > item.start_timestamp {
                    item.start_timestamp = until;
                }
                item.reachable = reachable;
            }
        }
        Ok(())
    }

    /// `isAvailable`: no item, or its window has passed.
    pub fn is_available(&self, broker: &str, now: i64) -> bool {
        self.items
            .get(broker)
            .is_none_or(|i| now >= i.start_timestamp)
    }

    /// 5.x `isReachable`: no item, or flagged reachable.
    pub fn is_reachable(&self, broker: &str) -> bool {
        self.items.get(broker).is_none_or(|i| i.reachable)
    }

    /// `remove(broker)`.
    pub fn remove(&mut self, broker: &str) {
        self.items.remove(broker);
    }

    /// 4.x `FaultItem.compareTo`: available first, then lower latency, then earlier window end.
    fn cmp_4x(a: &FaultItem, b: &FaultItem, now: i64) -> Ordering {
        let (aa, ba) = (now >= a.start_timestamp, now >= b.start_timestamp);
        ba.cmp(&aa)
            .then(a.current_latency.cmp(&b.current_latency))
            .then(a.start_timestamp.cmp(&b.start_timestamp))
    }

    /// 4.x `pickOneAtLeast`: sort the items, then take one of the better half with the
    /// `whichItemWorst` counter (`raw` is advanced); a single item is returned as is.
    pub fn pick_one_at_least_4x(&self, now: i64, which_item_worst: &mut i32) -> Option<&str> {
        let mut list: Vec<(&String, &FaultItem)> = self.items.iter().collect();
        list.sort_by(|a, b| Self::cmp_4x(a.1, b.1, now));
        let half = list.len() / 2;
        match list.len() {
            0 => None,
            _ if half == 0 => Some(list[0].0),
            _ => Some(list[(next_index(which_item_worst) as usize) % half].0),
        }
    }

    /// 5.x `pickOneAtLeast`'s candidates: the reachable items (Java shuffles and takes the first).
    pub fn reachable_candidates(&self) -> Vec<&str> {
        self.items
            .iter()
            .filter(|(_, i)| i.reachable)
            .map(|(n, _)| n.as_str())
            .collect()
    }

    /// 5.x detector round (`detectByOneRound`): every item due (`now >= checkStamp`) gets
    /// `checkStamp = now + detectInterval`; an unresolvable broker is removed; a resolved one the
    /// detector answers OK for becomes reachable. (Java's scheduler runs a round every 3 s only
    /// when `startDetectorEnable`; the round itself does not look at the flag.)
    pub fn detect_round(
        &mut self,
        now: i64,
        mut resolve: impl FnMut(&str) -> Option<String>,
        mut detect_ok: impl FnMut(&str) -> bool,
    ) {
        let due: Vec<String> = self
            .items
            .iter()
            .filter(|(_, i)| now >= i.check_stamp)
            .map(|(n, _)| n.clone())
            .collect();
        for name in due {
            let addr = resolve(&name);
            let Some(item) = self.items.get_mut(&name) else {
                continue;
            };
            item.check_stamp = now.saturating_add(self.detect_interval);
            match addr {
                None => {
                    self.items.remove(&name);
                }
                Some(addr) => {
                    if detect_ok(&addr) && !item.reachable {
                        item.reachable = true;
                    }
                }
            }
        }
    }
}
