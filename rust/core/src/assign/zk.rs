//! The ZooKeeper-era consumer's assignors (Kafka 0.8–0.10), over consumer *threads*
//! `<consumerId>-<k>` (`k < stream count` of that consumer for the topic), as every consumer
//! computes them from the same ZooKeeper snapshot.
//!
//! ```
//! use mqbalance_core::assign::zk::{range, ZkConsumer};
//! // Scaladoc example: C1 and C2 with 2 streams each over p0..p4.
//! let consumers = [ZkConsumer::new("C1", &[(0, 2)]), ZkConsumer::new("C2", &[(0, 2)])];
//! let owners = range(&[5], &consumers);
//! let names: Vec<&str> = owners[0].iter().map(|o| o.as_deref().unwrap()).collect();
//! assert_eq!(names, ["C1-0", "C1-0", "C1-1", "C2-0", "C2-1"]);
//! ```

use crate::order::{java_cmp, java_hash_code};

/// The ZooKeeper-era consumer's `partition.assignment.strategy`: `range` or `roundrobin`.
///
/// ```
/// use mqbalance_core::assign::zk::ZkAssignor;
/// assert_eq!(ZkAssignor::parse("RoundRobin"), Some(ZkAssignor::RoundRobin));
/// assert_eq!(ZkAssignor::parse("sticky"), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ZkAssignor {
    /// `RangeAssignor` (Scala).
    Range,
    /// `RoundRobinAssignor` (Scala).
    RoundRobin,
}

impl ZkAssignor {
    /// Every ZooKeeper-era assignor, in the order the names are listed to users.
    pub const ALL: [ZkAssignor; 2] = [ZkAssignor::Range, ZkAssignor::RoundRobin];

    /// Kafka's name: `range` or `roundrobin`.
    pub fn name(self) -> &'static str {
        match self {
            ZkAssignor::Range => "range",
            ZkAssignor::RoundRobin => "roundrobin",
        }
    }

    /// The assignor named `name`, ignoring ASCII case; `None` if there is none.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|a| a.name().eq_ignore_ascii_case(name))
    }

    /// Run it: `owners[t][p]` = the owning thread id, or `None`. `names` are the topic names
    /// (`roundrobin` orders by them), `partitions` their partition counts.
    pub fn assign(
        self,
        names: &[&str],
        partitions: &[u32],
        consumers: &[ZkConsumer],
    ) -> Vec<Vec<Option<String>>> {
        match self {
            ZkAssignor::Range => range(partitions, consumers),
            ZkAssignor::RoundRobin => roundrobin(names, partitions, consumers),
        }
    }
}

/// A consumer registration: id and `topic index → stream count`.
#[derive(Debug, Clone)]
pub struct ZkConsumer {
    /// Consumer id (`<group>_<host>-<ts>-<uuid8>` in Kafka).
    pub consumer_id: String,
    /// `(topic index, stream count)`.
    pub subscription: Vec<(u32, u32)>,
}

impl ZkConsumer {
    /// Convenience constructor.
    pub fn new(consumer_id: &str, subscription: &[(u32, u32)]) -> Self {
        ZkConsumer {
            consumer_id: consumer_id.to_owned(),
            subscription: subscription.to_vec(),
        }
    }
}

/// Sorted thread ids per topic (`consumersForTopic`).
fn threads_per_topic(partitions: &[u32], consumers: &[ZkConsumer]) -> Vec<Vec<String>> {
    let mut per = vec![Vec::new(); partitions.len()];
    for c in consumers {
        for &(t, streams) in &c.subscription {
            if let Some(list) = per.get_mut(t as usize) {
                list.extend((0..streams).map(|k| format!("{}-{k}", c.consumer_id)));
            }
        }
    }
    for list in &mut per {
        list.sort_by(|a, b| java_cmp(a, b));
        list.dedup();
    }
    per
}

/// Old `RangeAssignor`: owner thread of every partition, `owners[t][p]` (`None` = nobody).
pub fn range(partitions: &[u32], consumers: &[ZkConsumer]) -> Vec<Vec<Option<String>>> {
    let per = threads_per_topic(partitions, consumers);
    partitions
        .iter()
        .zip(&per)
        .map(|(&count, threads)| {
            let mut owners = vec![None; count as usize];
            let n = threads.len() as u32;
            for (i, th) in threads.iter().enumerate() {
                let (start, len) = super::range::slice(count, n, i as u32);
                for p in start..start + len {
                    owners[p as usize] = Some(th.clone());
                }
            }
            owners
        })
        .collect()
}

/// Old `RoundRobinAssignor` (0.10.2+ semantics, unequal subscriptions allowed): partitions in
/// order of the Java `hashCode` of `"[topic,partition]"` (stable; equal hash codes are not portable
/// in Kafka and keep topic/partition order here), dealt over all threads cyclically, skipping
/// threads not subscribed to the topic.
pub fn roundrobin(
    names: &[&str],
    partitions: &[u32],
    consumers: &[ZkConsumer],
) -> Vec<Vec<Option<String>>> {
    let per = threads_per_topic(partitions, consumers);
    let mut all: Vec<&String> = per.iter().flatten().collect();
    all.sort_by(|a, b| java_cmp(a, b));
    all.dedup();
    let mut owners: Vec<Vec<Option<String>>> =
        partitions.iter().map(|&c| vec![None; c as usize]).collect();
    let mut order: Vec<(i32, u32, u32)> = Vec::new();
    for (t, &count) in partitions.iter().enumerate() {
        if per[t].is_empty() {
            continue;
        }
        for p in 0..count {
            order.push((java_hash_code(&format!("[{},{p}]", names[t])), t as u32, p));
        }
    }
    order.sort_by_key(|&(h, _, _)| h);
    let mut cursor = 0usize;
    for (_, t, p) in order {
        let eligible = &per[t as usize];
        while eligible
            .binary_search_by(|x| java_cmp(x, all[cursor]))
            .is_err()
        {
            cursor = (cursor + 1) % all.len();
        }
        owners[t as usize][p as usize] = Some(all[cursor].clone());
        cursor = (cursor + 1) % all.len();
    }
    owners
}
