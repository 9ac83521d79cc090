//! `uniform` straight from columns (or from a [`ServerGroup`] whose members share one
//! subscription), for the common case: a homogeneous group whose current assignment is valid.
//! One fused pass over the current rows checks them (partition bounds, ownership, each member's
//! topics in runs) while it writes the current owners into the result; the homogeneous builder
//! then only revokes what is over quota and hands out what is unowned, in place. Anything else (an invalid or unusual group) is left to [`super::assign`], which gives
//! the same answer or the typed error.

use std::sync::Arc;

use super::{java_hash_set_order, KafkaRelease, ServerGroup, ServerTopic, MAX_PARTITIONS};

/// A group as columns, the layout of `server_assign_columns`, unchecked: the fast path checks
/// what it reads and declines anything it does not take.
#[derive(Debug, Clone, Copy)]
pub struct GroupColumns<'a> {
    /// Every topic, in the result's order.
    pub topics: &'a [ServerTopic],
    /// The number of members. Their ids must be unique (the caller checks them; [`super::assign`]
    /// refuses duplicates): the assignment does not depend on them.
    pub members: usize,
    /// Subscription row `k` is `subscription_topics[subscription_offsets[k]..subscription_offsets[k + 1]]`.
    pub subscription_offsets: &'a [i64],
    /// Topic indices of the subscription rows.
    pub subscription_topics: &'a [i64],
    /// Each member's subscription row; `None`: row `m` for member `m`.
    pub member_subscription: Option<&'a [i64]>,
    /// Member `m`'s current rows are `current_offsets[m]..current_offsets[m + 1]`.
    pub current_offsets: &'a [i64],
    /// The current rows' topics (indices into `topics`).
    pub current_topics: &'a [i64],
    /// The current rows' partitions.
    pub current_partitions: &'a [i64],
}

/// `usize` of `v` when it is in `0..len`.
fn position(v: i64, len: usize) -> Option<usize> {
    usize::try_from(v).ok().filter(|&x| x < len)
}

/// Offsets `k` and `k + 1` of an offsets column, when they make a range within `len`.
fn bounds(offsets: &[i64], k: usize, len: usize) -> Option<(usize, usize)> {
    let start = usize::try_from(*offsets.get(k)?).ok()?;
    let end = usize::try_from(*offsets.get(k + 1)?).ok()?;
    (start <= end && end <= len).then_some((start, end))
}

/// `uniform` as [`super::assign`] computes it, the owners of all topics concatenated — when the
/// group is homogeneous and its current assignment valid, with each member's rows of one topic
/// adjacent (Java's map of sets); `None` otherwise, for any input this path does not take, valid
/// or not (then ask [`super::assign`]: the same answer, or the typed error).
///
/// ```
/// use mqbalance_core::assign::server::{uniform_homogeneous_columns, GroupColumns, KafkaRelease, ServerTopic, Uuid};
/// let topics = [ServerTopic { id: Uuid { msb: 1, lsb: 2 }, partitions: Some(3) }];
/// let c = GroupColumns {
///     topics: &topics,
///     members: 2,
///     subscription_offsets: &[0, 1], // one row: topic 0
///     subscription_topics: &[0],
///     member_subscription: Some(&[0, 0]),
///     current_offsets: &[0, 3, 3], // the first member owns all three partitions, the second joins
///     current_topics: &[0, 0, 0],
///     current_partitions: &[0, 1, 2],
/// };
/// assert_eq!(uniform_homogeneous_columns(&c, KafkaRelease::NEWEST), Some(vec![0, 0, 1]));
/// // a partition owned twice: not for this path
/// let twice = GroupColumns { current_partitions: &[0, 1, 1], ..c };
/// assert_eq!(uniform_homogeneous_columns(&twice, KafkaRelease::NEWEST), None);
/// ```
pub fn uniform_homogeneous_columns(
    group: &GroupColumns<'_>,
    release: KafkaRelease,
) -> Option<Vec<i32>> {
    let members = group.members;
    if members == 0
        || members > i32::MAX as usize
        || group.current_topics.len() != group.current_partitions.len()
        || group.current_offsets.len() != members + 1
        || group.current_offsets[0] != 0
    {
        return None;
    }
    let blocks = Blocks::new(group.topics)?;
    let (first, subscribed) = homogeneous_subscription(group)?;
    let current = Current::read(group, &blocks, &subscribed)?;
    let (topics_of, parts_of) = (group.current_topics, group.current_partitions);
    build(
        group.topics,
        &first,
        &blocks,
        current,
        release,
        |member, revoke| {
            let start = group.current_offsets[member] as usize;
            let end = group.current_offsets[member + 1] as usize;
            for row in start..end {
                let topic = topics_of[row] as usize;
                if subscribed[topic] {
                    revoke(blocks.base[topic] + parts_of[row] as usize);
                }
            }
        },
    )
}

/// `uniform` as [`super::assign`] computes it, the owners of all topics concatenated — when
/// every member shares one subscription list (one `Arc`, as `Arc::ptr_eq` tells) and the current
/// assignment is valid with each topic once per member; `None` otherwise, for any input this path
/// does not take, valid or not (then ask [`super::assign`]: the same answer, or the typed error).
/// The member ids must be unique: the caller checks them ([`super::assign`] refuses duplicates),
/// the assignment does not depend on them.
///
/// ```
/// use mqbalance_core::assign::server::{uniform_homogeneous_group, CurrentTable, KafkaRelease, ServerGroup, ServerMember, ServerTopic, Uuid};
/// let topics = vec![ServerTopic { id: Uuid { msb: 1, lsb: 2 }, partitions: Some(3) }];
/// let mut current = CurrentTable::default();
/// current.push_entry(0); // the first member owns all three partitions, the second joins
/// current.extend_partitions(&[0, 1, 2]);
/// let everything: std::sync::Arc<[u32]> = vec![0].into();
/// let member = |current| ServerMember { instance_id: None, subscribed: everything.clone(), current };
/// let g = ServerGroup { topics, member_ids: ["a", "b"].into_iter().collect(), members: vec![member(0..1), member(1..1)], current };
/// assert_eq!(uniform_homogeneous_group(&g, KafkaRelease::NEWEST), Some(vec![0, 0, 1]));
/// ```
pub fn uniform_homogeneous_group(g: &ServerGroup, release: KafkaRelease) -> Option<Vec<i32>> {
    let members = g.members.len();
    if members == 0 || members > i32::MAX as usize || g.member_ids.len() != members {
        return None;
    }
    let first = &g.members[0].subscribed;
    if !g.members.iter().all(|m| Arc::ptr_eq(&m.subscribed, first)) {
        return None;
    }
    let blocks = Blocks::new(&g.topics)?;
    let mut subscribed = vec![false; g.topics.len()];
    for &t in first.iter() {
        let slot = subscribed.get_mut(t as usize)?;
        if *slot {
            return None; // a topic listed twice (the general path refuses it)
        }
        *slot = true;
    }
    let current = Current::read_table(g, &blocks, &subscribed)?;
    build(
        &g.topics,
        first,
        &blocks,
        current,
        release,
        |member, revoke| {
            for (topic, parts) in g.current.entries(g.members[member].current.clone()) {
                let topic = topic as usize;
                if subscribed[topic] {
                    let base = blocks.base[topic];
                    for &p in parts {
                        revoke(base + p as usize);
                    }
                }
            }
        },
    )
}

/// The homogeneous builder (see `uniform::homogeneous`) over positions in the result, from the
/// current owners: each member keeps its first partitions (`rows` calls back each partition of a
/// subscribed topic it holds, in order) up to its quota, then the unassigned ones are handed out.
fn build(
    topics: &[ServerTopic],
    first: &[u32],
    blocks: &Blocks,
    mut current: Current,
    release: KafkaRelease,
    rows: impl Fn(usize, &mut dyn FnMut(usize)),
) -> Option<Vec<i32>> {
    if first.is_empty() {
        return Some(current.owners);
    }
    let members = current.held.len();
    let topic_ids: Vec<_> = first.iter().map(|&t| topics[t as usize].id).collect();
    let owners = &mut current.owners;
    let mut unassigned: Vec<usize> = Vec::new();
    let mut sum: i64 = 0;
    for k in java_hash_set_order(&topic_ids) {
        let range = blocks.range(first[k] as usize);
        let start = range.start;
        let block = &owners[range];
        // One branch-free pass (the sign bits or-ed) before looking for the unowned ones.
        if block.iter().fold(0i32, |acc, &o| acc | o) < 0 {
            unassigned.extend(
                (0..block.len())
                    .filter(|&p| block[p] < 0)
                    .map(|p| start + p),
            );
        }
        sum += block.len() as i64;
    }
    let count = members as i64;
    let min_quota = sum / count;
    let mut extra = sum % count;
    let extras_to_holders = release.uniform_extras_to_holders();
    let mut unfilled: Vec<(usize, i64)> = Vec::new();
    for (member, &own) in current.held.iter().enumerate() {
        let mut has_extra = extra > 0;
        let mut quota = min_quota + i64::from(has_extra);
        if own <= quota {
            quota -= own;
        } else {
            // Keep the first `quota` partitions, rows in order, revoke the rest.
            let mut keep = quota;
            rows(member, &mut |at| {
                if keep > 0 {
                    keep -= 1;
                } else {
                    owners[at] = -1;
                    unassigned.push(at);
                }
            });
            quota = 0;
        }
        if extras_to_holders && quota > 0 && has_extra && count - member as i64 > extra {
            quota -= 1;
            has_extra = false;
        }
        extra -= i64::from(has_extra);
        if quota > 0 {
            unfilled.push((member, quota));
        }
    }
    let mut next = 0usize;
    for (member, quota) in unfilled {
        let take = (quota as usize).min(unassigned.len() - next);
        for &at in &unassigned[next..next + take] {
            owners[at] = member as i32;
        }
        next += take;
    }
    (next == unassigned.len()).then_some(current.owners)
}

/// Where each topic's partitions start in the result, and how many it has.
struct Blocks {
    base: Vec<usize>,
    counts: Vec<usize>,
    total: usize,
}

impl Blocks {
    /// `None` when a topic has no metadata or the group has too many partitions.
    fn new(topics: &[ServerTopic]) -> Option<Blocks> {
        let mut counts = Vec::with_capacity(topics.len());
        let mut base = Vec::with_capacity(topics.len());
        let mut total: u64 = 0;
        for topic in topics {
            let count = topic.partitions?;
            base.push(total as usize);
            counts.push(count as usize);
            total += u64::from(count);
        }
        (total <= MAX_PARTITIONS).then_some(Blocks {
            base,
            counts,
            total: total as usize,
        })
    }

    fn range(&self, topic: usize) -> std::ops::Range<usize> {
        self.base[topic]..self.base[topic] + self.counts[topic]
    }
}

/// The first member's subscription (topic indices in order) and whether each topic is
/// subscribed, when every topic is subscribed by every member or by none and no row the members
/// use names a topic twice; every row and topic checked as the general path checks them.
fn homogeneous_subscription(group: &GroupColumns<'_>) -> Option<(Vec<u32>, Vec<bool>)> {
    let members = group.members;
    let topics = group.topics.len();
    let rows = match group.member_subscription {
        Some(ms) if ms.len() == members => group.subscription_offsets.len().checked_sub(1)?,
        Some(_) => return None,
        None => members,
    };
    let offsets = group.subscription_offsets;
    let listed = group.subscription_topics;
    let valid = offsets.len() == rows + 1
        && offsets[0] == 0
        && offsets[rows] == listed.len() as i64
        && offsets.windows(2).all(|w| w[0] <= w[1])
        && listed.iter().all(|&t| position(t, topics).is_some());
    if !valid {
        return None;
    }
    let mut uses = vec![0usize; rows];
    match group.member_subscription {
        Some(ms) => {
            // Counted by runs (members sharing a row usually come one after another).
            let mut i = 0;
            while i < ms.len() {
                let row = ms[i];
                let start = i;
                while i < ms.len() && ms[i] == row {
                    i += 1;
                }
                uses[position(row, rows)?] += i - start;
            }
        }
        None => uses.fill(1),
    }
    let first_row = group
        .member_subscription
        .map_or(Some(0), |ms| position(ms[0], rows))?;
    let mut subscribers = vec![0usize; topics];
    let mut stamp = vec![usize::MAX; topics];
    let mut first: Vec<u32> = Vec::new();
    for (row, &used) in uses.iter().enumerate() {
        if used == 0 {
            continue;
        }
        let (start, end) = bounds(offsets, row, listed.len())?;
        for &t in &listed[start..end] {
            let topic = position(t, topics)?;
            if stamp[topic] == row {
                return None;
            }
            stamp[topic] = row;
            subscribers[topic] += used;
            if row == first_row {
                first.push(topic as u32);
            }
        }
    }
    if subscribers.iter().any(|&s| s != 0 && s != members) {
        return None;
    }
    Some((first, subscribers.iter().map(|&s| s == members).collect()))
}

/// The current assignment read into the result.
struct Current {
    /// The current owner of every partition (of subscribed topics; -1 elsewhere).
    owners: Vec<i32>,
    /// Each member's current partitions of subscribed topics.
    held: Vec<i64>,
}

impl Current {
    /// The fused pass: the current owners written into the result, every row checked (topic and
    /// partition in range, each partition owned once, each member's rows of a topic in one
    /// run), each member's partitions of subscribed topics counted. `None` for anything else.
    fn read(group: &GroupColumns<'_>, blocks: &Blocks, subscribed: &[bool]) -> Option<Current> {
        let (topics_of, parts_of) = (group.current_topics, group.current_partitions);
        let topics = group.topics.len();
        let mut owners = vec![-1i32; blocks.total];
        let mut held = vec![0i64; group.members];
        let mut stamp = vec![u32::MAX; topics];
        let mut twice = false;
        let mut dropped = false;
        for (member, own) in held.iter_mut().enumerate() {
            let (start, end) = bounds(group.current_offsets, member, topics_of.len())?;
            let (row_topics, row_parts) = (&topics_of[start..end], &parts_of[start..end]);
            let member = member as u32;
            let mut row = 0;
            while row < row_topics.len() {
                let t = row_topics[row];
                let topic = position(t, topics)?;
                if stamp[topic] == member {
                    return None; // the topic's rows split (the general path merges them)
                }
                stamp[topic] = member;
                let block = &mut owners[blocks.range(topic)];
                let run = row;
                while row < row_topics.len() && row_topics[row] == t {
                    // A negative partition is a huge index: out of the block too.
                    let owner = block.get_mut(row_parts[row] as usize)?;
                    twice |= *owner != -1;
                    *owner = member as i32;
                    row += 1;
                }
                if subscribed[topic] {
                    *own += (row - run) as i64;
                } else {
                    dropped = true;
                }
            }
        }
        if twice || group.current_offsets[group.members] as usize != topics_of.len() {
            return None;
        }
        Some(Current::kept(owners, held, dropped, blocks, subscribed))
    }

    /// The current owners and counts read, topics nobody subscribes to (`dropped`: some were
    /// held) made unowned.
    fn kept(
        mut owners: Vec<i32>,
        held: Vec<i64>,
        dropped: bool,
        blocks: &Blocks,
        subscribed: &[bool],
    ) -> Current {
        if dropped {
            for (topic, &s) in subscribed.iter().enumerate() {
                if !s {
                    owners[blocks.range(topic)].fill(-1);
                }
            }
        }
        Current { owners, held }
    }

    /// [`Current::read`] over a [`ServerGroup`]'s current table: each member's entries checked
    /// (a topic once per member, partitions in range, each owned once) and counted.
    fn read_table(g: &ServerGroup, blocks: &Blocks, subscribed: &[bool]) -> Option<Current> {
        let topics = g.topics.len();
        let mut owners = vec![-1i32; blocks.total];
        let mut held = vec![0i64; g.members.len()];
        let mut stamp = vec![u32::MAX; topics];
        let mut twice = false;
        let mut dropped = false;
        for ((member, own), m) in held.iter_mut().enumerate().zip(&g.members) {
            if m.current.start > m.current.end || m.current.end > g.current.len() {
                return None;
            }
            let member = member as u32;
            for (topic, parts) in g.current.entries(m.current.clone()) {
                let topic = topic as usize;
                if *stamp.get(topic)? == member {
                    return None; // a topic listed twice (the general path refuses it)
                }
                stamp[topic] = member;
                let block = &mut owners[blocks.range(topic)];
                for &p in parts {
                    let owner = block.get_mut(p as usize)?;
                    twice |= *owner != -1;
                    *owner = member as i32;
                }
                if subscribed[topic] {
                    *own += parts.len() as i64;
                } else {
                    dropped = true;
                }
            }
        }
        if twice {
            return None;
        }
        Some(Current::kept(owners, held, dropped, blocks, subscribed))
    }
}
