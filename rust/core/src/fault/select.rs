//! `TopicPublishInfo` and queue selection (`MQFaultStrategy.selectOneMessageQueue`).
//!
//! The per-thread `ThreadLocalIndex` counters are raw `i32`s owned by the caller
//! ([`next_index`]).
//!
//! ```
//! use mqbalance_core::fault::{TopicPublishInfo, QueueData};
//! let tp = TopicPublishInfo::from_route("T", &[QueueData::new("b", 6, 2), QueueData::new("a", 6, 1)], |_| true).unwrap();
//! assert_eq!(tp.len(), 3); // a/0, b/0, b/1 — queue datas sorted by broker name
//! ```

use super::error::FaultError;
use super::strategy::MQFaultStrategy;
use super::thread_local_index::next_index;
use crate::order::java_cmp;
use crate::QueueTable;

/// Permission bit: readable.
pub const PERM_READ: i64 = 4;
/// Permission bit: writable.
pub const PERM_WRITE: i64 = 2;

/// One `QueueData` of a topic route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueData {
    /// Broker name.
    pub broker_name: String,
    /// Permission bits (`PERM_READ` 4, `PERM_WRITE` 2, inherit 1).
    pub perm: i64,
    /// `writeQueueNums`.
    pub write_queue_nums: i64,
}

impl QueueData {
    /// Convenience constructor.
    pub fn new(broker_name: &str, perm: i64, write_queue_nums: i64) -> Self {
        QueueData {
            broker_name: broker_name.to_owned(),
            perm,
            write_queue_nums,
        }
    }
}

/// What a selection returns: a queue of the publish list, or (4.9.8's fallback) a new queue on
/// the broker `pickOneAtLeast` chose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selected {
    /// Position in the publish queue list.
    Position(usize),
    /// `new MessageQueue(topic of the list's queue at position, broker, queue_id)`.
    New {
        /// Position whose topic is used.
        topic_of: usize,
        /// The chosen broker.
        broker: String,
        /// The queue id.
        queue_id: i32,
    },
}

impl Selected {
    /// Broker name of the selected queue.
    pub fn broker<'a>(&'a self, tp: &'a TopicPublishInfo) -> &'a str {
        match self {
            Selected::Position(p) => tp.queues.broker(*p),
            Selected::New { broker, .. } => broker,
        }
    }
}

/// Bytes per queue of a publish info (a row while building, then its columns).
pub const ROW_BYTES: u64 = 56;

/// A topic's publish information: the message queue list and the route's queue data.
#[derive(Debug, Clone)]
pub struct TopicPublishInfo {
    queues: QueueTable,
    queue_datas: Vec<QueueData>,
}

impl TopicPublishInfo {
    /// `topicRouteData2TopicPublishInfo`: queue datas sorted by broker name; each writable one whose
    /// broker has a master contributes queues `0..writeQueueNums`.
    pub fn from_route(
        topic: &str,
        queue_datas: &[QueueData],
        has_master: impl Fn(&str) -> bool,
    ) -> Result<Self, FaultError> {
        for qd in queue_datas {
            if qd.write_queue_nums < 0 {
                return Err(FaultError::InvalidQueueData {
                    broker: qd.broker_name.clone(),
                    field: "writeQueueNums",
                    value: qd.write_queue_nums,
                });
            }
        }
        let mut sorted = queue_datas.to_vec();
        sorted.sort_by(|a, b| java_cmp(&a.broker_name, &b.broker_name));
        let writable = |qd: &&QueueData| qd.perm & PERM_WRITE != 0 && has_master(&qd.broker_name);
        let total: u64 = sorted
            .iter()
            .filter(writable)
            .map(|qd| qd.write_queue_nums.clamp(0, i64::from(i32::MAX)) as u64)
            .sum();
        let too_large = || FaultError::TooLarge {
            name: "writeQueueNums",
            value: total,
            bytes: total.saturating_mul(ROW_BYTES),
        };
        let mut rows = Vec::new();
        rows.try_reserve_exact(usize::try_from(total).map_err(|_| too_large())?)
            .map_err(|_| too_large())?;
        for qd in sorted.iter().filter(writable) {
            for q in 0..qd.write_queue_nums.min(i64::from(i32::MAX)) as i32 {
                rows.push((topic, qd.broker_name.as_str(), q));
            }
        }
        Self::new(QueueTable::from_rows(rows), sorted, topic)
    }

    /// From an explicit queue list (in order) and the route's queue datas (for 4.x's fallback).
    pub fn new(
        queues: QueueTable,
        queue_datas: Vec<QueueData>,
        topic: &str,
    ) -> Result<Self, FaultError> {
        if queues.is_empty() {
            return Err(FaultError::EmptyRoute {
                topic: topic.to_owned(),
            });
        }
        Ok(TopicPublishInfo {
            queues,
            queue_datas,
        })
    }

    /// Number of queues.
    pub fn len(&self) -> usize {
        self.queues.len()
    }

    /// Never true (an empty route is refused).
    pub fn is_empty(&self) -> bool {
        self.queues.is_empty()
    }

    /// The queue list.
    pub fn queues(&self) -> &QueueTable {
        &self.queues
    }

    /// The route's queue datas, sorted by broker name.
    pub fn queue_datas(&self) -> &[QueueData] {
        &self.queue_datas
    }

    fn broker(&self, pos: usize) -> &str {
        self.queues.broker(pos)
    }

    /// One round-robin step: `list[counter.incrementAndGet() % len]`.
    pub fn plain_step(&self, counter: &mut i32) -> usize {
        next_index(counter) as usize % self.len()
    }

    /// `selectOneMessageQueue(lastBrokerName)`: up to `len` steps (each advancing the counter) for a
    /// queue not on `last_broker`, else one more plain step. `None` → a single plain step.
    pub fn select_avoiding(&self, last_broker: Option<&str>, counter: &mut i32) -> usize {
        let Some(last) = last_broker else {
            return self.plain_step(counter);
        };
        self.select_filtered(counter, |b| b != last)
            .unwrap_or_else(|| self.plain_step(counter))
    }

    /// 5.x `selectOneMessageQueue(filters...)`: up to `len` steps, the first queue whose broker
    /// passes; `None` if none does.
    pub fn select_filtered(&self, counter: &mut i32, pass: impl Fn(&str) -> bool) -> Option<usize> {
        (0..self.len())
            .map(|_| self.plain_step(counter))
            .find(|&p| pass(self.broker(p)))
    }

    /// `getQueueIdByBroker`: `writeQueueNums` of the first writable queue data of `broker`, or -1.
    pub fn write_queue_nums(&self, broker: &str) -> i64 {
        self.queue_datas
            .iter()
            .find(|qd| qd.broker_name == broker && qd.perm & PERM_WRITE != 0)
            .map_or(-1, |qd| qd.write_queue_nums)
    }

    /// 4.9.8 `MQFaultStrategy.selectOneMessageQueue(tp, lastBrokerName)`.
    ///
    /// Disabled: [`Self::select_avoiding`]. Enabled: one counter step, then probe consecutive
    /// positions (local, not stored) for an available broker — `last_broker` is ignored here, as in
    /// Java — else `pickOneAtLeast` and a new queue on that broker, else a plain step.
    pub fn select_4x(
        &self,
        ft: &mut MQFaultStrategy,
        now: i64,
        last_broker: Option<&str>,
        counter: &mut i32,
        which_item_worst: &mut i32,
    ) -> Selected {
        if !ft.enabled() {
            return Selected::Position(self.select_avoiding(last_broker, counter));
        }
        let len = self.len() as i32;
        let idx = next_index(counter);
        for i in 0..len {
            // Math.abs(index++) % len, clamped to 0 when the local value wrapped to MIN_VALUE.
            let pos = idx.wrapping_add(i).wrapping_abs() % len;
            let pos = pos.max(0) as usize;
            if ft.is_available(self.broker(pos), now) {
                return Selected::Position(pos);
            }
        }
        let not_best = ft
            .pick_one_at_least_4x(now, which_item_worst)
            .map(str::to_owned);
        if let Some(nb) = not_best {
            let w = self.write_queue_nums(&nb);
            if w > 0 {
                let topic_of = self.plain_step(counter);
                let queue_id = (i64::from(next_index(counter)) % w) as i32;
                return Selected::New {
                    topic_of,
                    broker: nb,
                    queue_id,
                };
            }
            ft.remove(&nb);
        }
        Selected::Position(self.plain_step(counter))
    }

    /// 5.3.3 `MQFaultStrategy.selectOneMessageQueue(tp, lastBrokerName, resetIndex)`.
    ///
    /// `reset_to` is the value `ThreadLocalIndex.reset()` picks (Java: random), used only when
    /// latency fault is enabled and the caller asked for a reset.
    pub fn select_5x(
        &self,
        ft: &MQFaultStrategy,
        now: i64,
        last_broker: Option<&str>,
        reset_to: Option<i32>,
        counter: &mut i32,
    ) -> usize {
        let other_broker = |b: &str| last_broker.is_none_or(|last| b != last);
        if ft.enabled() {
            if let Some(r) = reset_to {
                *counter = r;
            }
            if let Some(p) =
                self.select_filtered(counter, |b| ft.is_available(b, now) && other_broker(b))
            {
                return p;
            }
            if let Some(p) =
                self.select_filtered(counter, |b| ft.is_reachable(b) && other_broker(b))
            {
                return p;
            }
        } else if let Some(p) = self.select_filtered(counter, other_broker) {
            return p;
        }
        self.plain_step(counter)
    }
}
