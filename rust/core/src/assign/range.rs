//! Client-side `RangeAssignor` (no racks): per topic, contiguous ranges over the subscribers in
//! [`super::member_order`]; the first `count mod n` get one extra.

use super::group::{canonical, member_order, subscribers, Cluster, Member, TopicPartition};

/// `(start, len)` of position `i` among `n` over `count` partitions.
#[inline]
pub fn slice(count: u32, n: u32, i: u32) -> (u32, u32) {
    let (q, r) = (count / n, count % n);
    (q * i + i.min(r), q + u32::from(i < r))
}

/// Every member's partitions, sorted by (topic name, partition); aligned with `members`.
pub fn assign(cluster: &Cluster, members: &[Member]) -> Vec<Vec<TopicPartition>> {
    let order = member_order(members);
    let subs = subscribers(cluster, members, &order);
    let mut out = vec![Vec::new(); members.len()];
    for (t, ms) in subs.iter().enumerate() {
        let count = cluster.partitions(t as u32);
        for (i, &m) in ms.iter().enumerate() {
            let (start, len) = slice(count, ms.len() as u32, i as u32);
            out[m as usize].extend((start..start + len).map(|p| (t as u32, p)));
        }
    }
    canonical(cluster, &mut out);
    out
}
