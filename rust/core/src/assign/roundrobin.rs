//! Client-side `RoundRobinAssignor`: every (topic, partition) sorted by topic name then partition,
//! dealt cyclically over the members in [`super::member_order`], skipping members not subscribed
//! to the partition's topic.

use super::group::{canonical, member_order, subscribers, Cluster, Member, TopicPartition};

/// Every member's partitions, sorted by (topic name, partition); aligned with `members`.
pub fn assign(cluster: &Cluster, members: &[Member]) -> Vec<Vec<TopicPartition>> {
    let order = member_order(members);
    let subs = subscribers(cluster, members, &order);
    let mut subscribed = vec![vec![false; cluster.len()]; members.len()];
    for (t, ms) in subs.iter().enumerate() {
        for &m in ms {
            subscribed[m as usize][t] = true;
        }
    }
    let mut out = vec![Vec::new(); members.len()];
    let n = order.len();
    let mut cursor = 0usize;
    for t in cluster.sorted_topics() {
        if subs[t as usize].is_empty() {
            continue;
        }
        for p in 0..cluster.partitions(t) {
            // A subscriber exists, so this stops within one lap.
            while !subscribed[order[cursor] as usize][t as usize] {
                cursor = (cursor + 1) % n;
            }
            out[order[cursor] as usize].push((t, p));
            cursor = (cursor + 1) % n;
        }
    }
    canonical(cluster, &mut out);
    out
}
