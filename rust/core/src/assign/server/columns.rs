//! `uniform` straight from columns, for the common case: a homogeneous group whose current
//! assignment is valid. One fused pass over the current rows checks them (partition bounds,
//! ownership, each member's topics in runs) while it writes the current owners into the result;
//! the homogeneous builder then only revokes what is over quota and hands out what is unowned,
//! in place. Anything else (an invalid or unusual group) is left to [`super::assign`], which gives
//! the same answer or the typed error.

use super::{java_hash_set_order, KafkaRelease, ServerTopic, MAX_PARTITIONS};

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
    c: &GroupColumns<'_>,
    release: KafkaRelease,
) -> Option<Vec<i32>> {
    let n = c.members;
    let nt = c.topics.len();
    let (cur_t, cur_p) = (c.current_topics, c.current_partitions);
    if n == 0
        || n > i32::MAX as usize
        || cur_t.len() != cur_p.len()
        || c.current_offsets.len() != n + 1
        || c.current_offsets[0] != 0
    {
        return None;
    }
    // Partition counts and where each topic's block starts.
    let mut counts = Vec::with_capacity(nt);
    let mut base = Vec::with_capacity(nt);
    let mut total: u64 = 0;
    for t in c.topics {
        let count = t.partitions?;
        base.push(total as usize);
        counts.push(count as usize);
        total += u64::from(count);
    }
    if total > MAX_PARTITIONS {
        return None;
    }
    let total = total as usize;
    // Homogeneous: every topic subscribed by every member or by none, no row naming one twice.
    let rows = match c.member_subscription {
        Some(ms) if ms.len() == n => c.subscription_offsets.len().checked_sub(1)?,
        Some(_) => return None,
        None => n,
    };
    // Every row and topic as the general path checks them (used or not).
    let so = c.subscription_offsets;
    let subs_ok = so.len() == rows + 1
        && so[0] == 0
        && so[rows] == c.subscription_topics.len() as i64
        && so.windows(2).all(|w| w[0] <= w[1])
        && c.subscription_topics
            .iter()
            .all(|&t| position(t, nt).is_some());
    if !subs_ok {
        return None;
    }
    let mut uses = vec![0usize; rows];
    match c.member_subscription {
        Some(ms) => {
            // Counted by runs (members sharing a row usually come one after another).
            let mut i = 0;
            while i < ms.len() {
                let k = ms[i];
                let start = i;
                while i < ms.len() && ms[i] == k {
                    i += 1;
                }
                uses[position(k, rows)?] += i - start;
            }
        }
        None => uses.fill(1),
    }
    let first_row = c
        .member_subscription
        .map_or(Some(0), |ms| position(ms[0], rows))?;
    let mut subscribers = vec![0usize; nt];
    let mut stamp = vec![usize::MAX; nt];
    let mut first: Vec<u32> = Vec::new();
    for (row, &used) in uses.iter().enumerate() {
        if used == 0 {
            continue;
        }
        let (start, end) = bounds(c.subscription_offsets, row, c.subscription_topics.len())?;
        for &t in &c.subscription_topics[start..end] {
            let t = position(t, nt)?;
            if stamp[t] == row {
                return None;
            }
            stamp[t] = row;
            subscribers[t] += used;
            if row == first_row {
                first.push(t as u32);
            }
        }
    }
    if subscribers.iter().any(|&s| s != 0 && s != n) {
        return None;
    }
    let subscribed: Vec<bool> = subscribers.iter().map(|&s| s == n).collect();
    // The fused pass: the current owners written into the result, every row checked (topic and
    // partition in range, each partition owned once, each member's rows of a topic in one run),
    // each member's partitions of subscribed topics counted.
    let mut owners = vec![-1i32; total];
    let mut held = vec![0i64; n];
    let mut stamp = vec![u32::MAX; nt];
    let mut twice = false;
    let mut dropped = false;
    for (m, own) in held.iter_mut().enumerate() {
        let (start, end) = bounds(c.current_offsets, m, cur_t.len())?;
        let (rows_t, rows_p) = (&cur_t[start..end], &cur_p[start..end]);
        let m = m as u32;
        let mut r = 0;
        while r < rows_t.len() {
            let t = rows_t[r];
            let ti = position(t, nt)?;
            if stamp[ti] == m {
                return None; // the topic's rows split (the general path merges them)
            }
            stamp[ti] = m;
            let block = &mut owners[base[ti]..base[ti] + counts[ti]];
            let run = r;
            while r < rows_t.len() && rows_t[r] == t {
                // A negative partition is a huge index: out of the block too.
                let o = block.get_mut(rows_p[r] as usize)?;
                twice |= *o != -1;
                *o = m as i32;
                r += 1;
            }
            if subscribed[ti] {
                *own += (r - run) as i64;
            } else {
                dropped = true;
            }
        }
    }
    if twice || c.current_offsets[n] as usize != cur_t.len() {
        return None;
    }
    if dropped {
        // Topics nobody subscribes to end unowned.
        for (t, &s) in subscribed.iter().enumerate() {
            if !s {
                owners[base[t]..base[t] + counts[t]].fill(-1);
            }
        }
    }
    if first.is_empty() {
        return Some(owners);
    }
    // The homogeneous builder (see `uniform::homogeneous`), over positions in the result.
    let topic_ids: Vec<_> = first.iter().map(|&t| c.topics[t as usize].id).collect();
    let mut unassigned: Vec<usize> = Vec::new();
    let mut sum: i64 = 0;
    for k in java_hash_set_order(&topic_ids) {
        let t = first[k] as usize;
        let block = &owners[base[t]..base[t] + counts[t]];
        // One branch-free pass (the sign bits or-ed) before looking for the unowned ones.
        if block.iter().fold(0i32, |a, &o| a | o) < 0 {
            unassigned.extend(
                (0..block.len())
                    .filter(|&p| block[p] < 0)
                    .map(|p| base[t] + p),
            );
        }
        sum += counts[t] as i64;
    }
    let members = n as i64;
    let min_quota = sum / members;
    let mut extra = sum % members;
    let extras_to_holders = release.uniform_extras_to_holders();
    let mut unfilled: Vec<(usize, i64)> = Vec::new();
    for (m, &own) in held.iter().enumerate() {
        let mut has_extra = extra > 0;
        let mut quota = min_quota + i64::from(has_extra);
        if own <= quota {
            quota -= own;
        } else {
            // Keep the first `quota` partitions, rows in order, revoke the rest.
            let (start, end) = (
                c.current_offsets[m] as usize,
                c.current_offsets[m + 1] as usize,
            );
            for r in start..end {
                let t = cur_t[r] as usize;
                if !subscribed[t] {
                    continue;
                }
                if quota > 0 {
                    quota -= 1;
                } else {
                    let at = base[t] + cur_p[r] as usize;
                    owners[at] = -1;
                    unassigned.push(at);
                }
            }
        }
        if extras_to_holders && quota > 0 && has_extra && members - m as i64 > extra {
            quota -= 1;
            has_extra = false;
        }
        extra -= i64::from(has_extra);
        if quota > 0 {
            unfilled.push((m, quota));
        }
    }
    let mut next = 0usize;
    for (m, quota) in unfilled {
        let take = (quota as usize).min(unassigned.len() - next);
        for &at in &unassigned[next..next + take] {
            owners[at] = m as i32;
        }
        next += take;
    }
    (next == unassigned.len()).then_some(owners)
}
