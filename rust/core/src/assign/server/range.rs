//! The server-side `RangeAssignor`: members sorted (static members first by instance id, then
//! dynamic members by member id, Java string order); each topic split into contiguous ranges over
//! its subscribers in that order, the first `count % subscribers` getting one more.

use std::cmp::Ordering;
use std::sync::Arc;

use rustc_hash::FxHashMap;

use super::{Owners, ServerAssignError, ServerGroup};
use crate::order::java_cmp;

fn missing() -> ServerAssignError {
    ServerAssignError::Assignor {
        message: "Member is subscribed to a non-existent topic".into(),
    }
}

/// `sortMemberIds`: a stable sort, as Java's `List.sort`. Each member's key (its instance id, or
/// its member id) is looked up once, not at every comparison.
fn sorted_members(g: &ServerGroup) -> Vec<usize> {
    let keys: Vec<(bool, &str)> = g
        .members
        .iter()
        .enumerate()
        .map(|(i, m)| match &m.instance_id {
            Some(x) => (false, x.as_str()), // static members first
            None => (true, g.member_ids.get(i)),
        })
        .collect();
    let mut order: Vec<usize> = (0..g.members.len()).collect();
    order.sort_by(|&a, &b| {
        let ((sa, ka), (sb, kb)) = (keys[a], keys[b]);
        match sa.cmp(&sb) {
            Ordering::Equal => java_cmp(ka, kb),
            other => other,
        }
    });
    order
}

/// Give topic `t`'s partitions to `members` (in sorted order) in contiguous ranges: the `k`-th
/// gets `count / n` partitions, plus one when `k < count % n` — what Java's per-member
/// `addPartitionsToAssignment` calls add up to, computed per topic in O(partitions).
fn split(owners: &mut [i32], count: u32, members: &[usize]) {
    let n = members.len() as u32;
    let (min_quota, extra) = (count / n, count % n);
    if min_quota == 0 {
        // Fewer partitions than members: partition k goes to the k-th member.
        for (owner, &m) in owners[..count as usize].iter_mut().zip(members) {
            *owner = m as i32;
        }
        return;
    }
    let mut start = 0u32;
    for (k, &m) in members.iter().enumerate() {
        if start >= count {
            break;
        }
        let end = (start + min_quota + u32::from((k as u32) < extra)).min(count);
        owners[start as usize..end as usize].fill(m as i32);
        start = end;
    }
}

pub(super) fn assign(
    g: &ServerGroup,
    homogeneous: bool,
    mut owners: Owners,
) -> Result<Owners, ServerAssignError> {
    let order = sorted_members(g);
    if homogeneous {
        let topics = &g.members[order[0]].subscribed;
        for &t in topics.iter() {
            g.topics[t as usize].partitions.ok_or_else(missing)?;
        }
        for &t in topics.iter() {
            let count = g.topics[t as usize].partitions.unwrap_or(0);
            split(&mut owners[t as usize], count, &order);
        }
        return Ok(owners);
    }
    // Subscribers of each topic in sorted member order. Members sharing one subscription list
    // are gathered once per list (in sorted order), so a topic of one list takes that list's
    // members as they are, and a topic of several lists their members merged by sorted position:
    // no work per (member, topic) pair. Any subscribed topic without metadata fails, with Java's
    // one message.
    let mut list_of: FxHashMap<usize, usize> = FxHashMap::default();
    let mut lists: Vec<(&[u32], Vec<usize>)> = Vec::new();
    for &mi in &order {
        let subscribed = &g.members[mi].subscribed;
        let k = *list_of
            .entry(Arc::as_ptr(subscribed).cast::<u32>() as usize)
            .or_insert_with(|| {
                lists.push((&subscribed[..], Vec::new()));
                lists.len() - 1
            });
        lists[k].1.push(mi);
    }
    let mut lists_of_topic: Vec<Vec<usize>> = vec![Vec::new(); g.topics.len()];
    for (k, (topics, _)) in lists.iter().enumerate() {
        for &t in *topics {
            g.topics[t as usize].partitions.ok_or_else(missing)?;
            lists_of_topic[t as usize].push(k);
        }
    }
    let mut position = vec![0usize; g.members.len()];
    for (p, &mi) in order.iter().enumerate() {
        position[mi] = p;
    }
    let mut merged: Vec<usize> = Vec::new();
    for (t, ks) in lists_of_topic.iter().enumerate() {
        let count = g.topics[t].partitions.unwrap_or(0);
        match ks.as_slice() {
            [] => {}
            [k] => split(&mut owners[t], count, &lists[*k].1),
            _ => {
                merged.clear();
                for &k in ks {
                    merged.extend_from_slice(&lists[k].1);
                }
                merged.sort_unstable_by_key(|&mi| position[mi]);
                split(&mut owners[t], count, &merged);
            }
        }
    }
    Ok(owners)
}
