//! `sticky` (eager) and `cooperative-sticky` (KIP-429 first round): balance first, then keep
//! partitions where they were. Kafka's outputs depend on `HashMap` order; ours are deterministic
//! (ties by member id in Java order) and keep Kafka's invariants:
//!
//! * **Claims.** A partition's *valid previous owner* is the member claiming it with the highest
//!   generation (`None` = -1); equal highest generations → nobody (a double claim). A member keeps
//!   a partition only if it is the valid owner and still subscribes to the topic (so Kafka's two
//!   stale-claim misbehaviours cannot happen).
//! * **Identical subscriptions** (constrained path): sizes are `⌊P/M⌋` or `⌈P/M⌉`; the `P mod M`
//!   larger quotas go to the members that validly own the most, so retention reaches the maximum
//!   possible.
//! * **Different subscriptions** (general path): keep valid owned partitions, place the rest topic
//!   by topic (fewest subscribers first) on the least-loaded subscriber, then move partitions from a
//!   member holding at least two more than another subscriber of the same topic (preferring to
//!   give a partition back to its valid owner) until Kafka's balance predicate holds. Every move
//!   lowers Σ size², so the loop ends; no reassignment ping-pong.
//! * **Cooperative**: a partition whose valid previous owner (or, for a double claim, anyone) is
//!   another member is held back this round.
//!
//! ```
//! use mqbalance_core::assign::{sticky, Cluster, Member};
//! let cluster = Cluster::new(vec![("t".into(), 4)]);
//! let mut a = Member::new("a", &[0]);
//! a.owned = vec![(0, 0), (0, 1), (0, 2), (0, 3)];
//! a.generation = Some(5);
//! let b = Member::new("b", &[0]);
//! let eager = sticky::assign(&cluster, &[a.clone(), b.clone()], false);
//! assert_eq!((eager[0].len(), eager[1].len()), (2, 2)); // balanced, a keeps two
//! let coop = sticky::assign(&cluster, &[a, b], true);
//! assert!(coop[1].is_empty()); // b waits until a has revoked
//! ```

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::group::{canonical, subscribers, Cluster, Member, TopicPartition};
use crate::order::java_cmp;

const NOBODY: i32 = -1;
const DOUBLE: i32 = -2;

struct Universe {
    /// Assignable topics in Java name order, with their first global index.
    topics: Vec<u32>,
    offset: Vec<u32>,
    /// Global index → (topic, partition).
    parts: Vec<TopicPartition>,
    /// Per topic (cluster index): subscribers in member-id order.
    subs: Vec<Vec<u32>>,
}

fn universe(cluster: &Cluster, members: &[Member], by_id: &[u32]) -> Universe {
    let subs = subscribers(cluster, members, by_id);
    let mut u = Universe {
        topics: Vec::new(),
        offset: vec![u32::MAX; cluster.len()],
        parts: Vec::new(),
        subs,
    };
    for t in cluster.sorted_topics() {
        if u.subs[t as usize].is_empty() {
            continue;
        }
        u.offset[t as usize] = u.parts.len() as u32;
        u.topics.push(t);
        u.parts.extend((0..cluster.partitions(t)).map(|p| (t, p)));
    }
    u
}

impl Universe {
    fn index(&self, cluster: &Cluster, (t, p): TopicPartition) -> Option<usize> {
        let off = *self.offset.get(t as usize)?;
        (off != u32::MAX && p < cluster.partitions(t)).then(|| (off + p) as usize)
    }

    fn range(&self, cluster: &Cluster, t: u32) -> std::ops::Range<usize> {
        let off = self.offset[t as usize] as usize;
        off..off + cluster.partitions(t) as usize
    }
}

/// Valid previous owner of every partition (`NOBODY`, `DOUBLE`, or a member index).
fn valid_owners(cluster: &Cluster, members: &[Member], u: &Universe) -> Vec<i32> {
    let mut owner = vec![NOBODY; u.parts.len()];
    let mut best = vec![i64::MIN; u.parts.len()];
    for (m, member) in members.iter().enumerate() {
        let gen = i64::from(member.generation.unwrap_or(-1));
        for &tp in &member.owned {
            let Some(g) = u.index(cluster, tp) else {
                continue;
            };
            if gen > best[g] {
                best[g] = gen;
                owner[g] = m as i32;
            } else if gen == best[g] && owner[g] != m as i32 {
                owner[g] = DOUBLE;
            }
        }
    }
    owner
}

/// Every member's partitions (sorted by topic name, partition); aligned with `members`.
/// Member ids are expected to be unique.
pub fn assign(
    cluster: &Cluster,
    members: &[Member],
    cooperative: bool,
) -> Vec<Vec<TopicPartition>> {
    let m_count = members.len();
    let mut out = vec![Vec::new(); m_count];
    if m_count == 0 {
        return out;
    }
    let mut by_id: Vec<u32> = (0..m_count as u32).collect();
    by_id.sort_by(|&a, &b| {
        java_cmp(
            &members[a as usize].member_id,
            &members[b as usize].member_id,
        )
    });
    let mut rank = vec![0u32; m_count];
    for (r, &m) in by_id.iter().enumerate() {
        rank[m as usize] = r as u32;
    }
    let u = universe(cluster, members, &by_id);
    let owner = valid_owners(cluster, members, &u);
    let subscribed: Vec<Vec<u32>> = {
        let mut s = vec![Vec::new(); m_count];
        for &t in &u.topics {
            for &m in &u.subs[t as usize] {
                s[m as usize].push(t);
            }
        }
        for topics in &mut s {
            topics.sort_unstable(); // by index: searched with binary_search below
        }
        s
    };
    let identical = subscribed.windows(2).all(|w| w[0] == w[1]);
    let holder = if identical {
        constrained(u.parts.len(), &owner, &by_id, &rank)
    } else {
        general(cluster, &u, &owner, &rank, &subscribed)
    };
    for (g, &h) in holder.iter().enumerate() {
        if h < 0 {
            continue;
        }
        if cooperative && owner[g] != NOBODY && owner[g] != h {
            continue; // moving between members (or doubly claimed): revoke first, assign next round
        }
        out[h as usize].push(u.parts[g]);
    }
    canonical(cluster, &mut out);
    out
}

/// Identical subscriptions: quotas ⌊P/M⌋ / ⌈P/M⌉, larger quotas to the biggest valid owners.
///
/// `owner[g]` is the valid previous owner of item `g` (a member index, or negative for nobody);
/// members are visited in `by_id` order and tie-broken by `rank`. Each member keeps the first of
/// its previous items up to its quota, so the number kept is the maximum any balanced assignment
/// can keep; free items are dealt out in item order, members in `by_id` order (with no previous
/// owner at all: contiguous blocks, the first `P mod M` members one larger — RocketMQ's AVG).
/// Also the core of RocketMQ's `STICKY` ([`crate::allocate::sticky`]).
pub(crate) fn constrained(p: usize, owner: &[i32], by_id: &[u32], rank: &[u32]) -> Vec<i32> {
    let m_count = by_id.len();
    let (min_q, extra) = (p / m_count, p % m_count);
    let mut previous: Vec<Vec<usize>> = vec![Vec::new(); m_count];
    for (g, &o) in owner.iter().enumerate() {
        if o >= 0 {
            previous[o as usize].push(g);
        }
    }
    let mut order: Vec<usize> = (0..m_count).collect();
    order.sort_by_key(|&m| (Reverse(previous[m].len()), rank[m]));
    let mut holder = vec![NOBODY; p];
    let mut quota = vec![min_q; m_count];
    let mut size = vec![0usize; m_count];
    let mut granted = 0;
    for &m in &order {
        let keep = if extra > 0 && previous[m].len() > min_q && granted < extra {
            granted += 1;
            quota[m] = min_q + 1;
            min_q + 1
        } else {
            previous[m].len().min(min_q)
        };
        for &g in &previous[m][..keep] {
            holder[g] = m as i32;
        }
        size[m] = keep;
    }
    for &m in &order {
        if granted == extra {
            break;
        }
        if quota[m] == min_q {
            quota[m] = min_q + 1;
            granted += 1;
        }
    }
    let free_list: Vec<usize> = (0..p).filter(|&g| holder[g] == NOBODY).collect();
    let mut free = free_list.into_iter();
    for &m in by_id {
        let m = m as usize;
        while size[m] < quota[m] {
            let Some(g) = free.next() else { break };
            holder[g] = m as i32;
            size[m] += 1;
        }
    }
    holder
}

/// Different subscriptions: keep, place on the least loaded, then balance topic by topic.
fn general(
    cluster: &Cluster,
    u: &Universe,
    owner: &[i32],
    rank: &[u32],
    subscribed: &[Vec<u32>],
) -> Vec<i32> {
    let m_count = rank.len();
    let mut holder = vec![NOBODY; u.parts.len()];
    let mut size = vec![0usize; m_count];
    for (g, &o) in owner.iter().enumerate() {
        if o >= 0 && subscribed[o as usize].binary_search(&u.parts[g].0).is_ok() {
            holder[g] = o;
            size[o as usize] += 1;
        }
    }
    // Topics with fewer potential consumers first (they have fewer places to go), then by name.
    let mut topics = u.topics.clone();
    topics.sort_by_key(|&t| u.subs[t as usize].len());
    for &t in &topics {
        let mut heap: BinaryHeap<Reverse<(usize, u32, u32)>> = u.subs[t as usize]
            .iter()
            .map(|&m| Reverse((size[m as usize], rank[m as usize], m)))
            .collect();
        for g in u.range(cluster, t) {
            if holder[g] != NOBODY {
                continue;
            }
            let Some(Reverse((s, r, m))) = heap.pop() else {
                break;
            };
            holder[g] = m as i32;
            size[m as usize] = s + 1;
            heap.push(Reverse((s + 1, r, m)));
        }
    }
    // Balance: until no subscriber of a topic has two fewer than a holder of one of its partitions.
    loop {
        let mut moved = false;
        for &t in &topics {
            let subs = &u.subs[t as usize];
            if subs.len() < 2 {
                continue;
            }
            while let Some(&c) = subs
                .iter()
                .min_by_key(|&&m| (size[m as usize], rank[m as usize]))
            {
                let range = u.range(cluster, t);
                let Some(o) = range
                    .clone()
                    .map(|g| holder[g])
                    .filter(|&h| h >= 0)
                    .max_by_key(|&h| (size[h as usize], Reverse(rank[h as usize])))
                else {
                    break;
                };
                if size[o as usize] < size[c as usize] + 2 {
                    break;
                }
                // Prefer handing back c's own partition, then one o did not validly own.
                let pick = range
                    .clone()
                    .filter(|&g| holder[g] == o)
                    .min_by_key(|&g| (owner[g] != c as i32, owner[g] == o, g));
                let Some(g) = pick else { break };
                holder[g] = c as i32;
                size[o as usize] -= 1;
                size[c as usize] += 1;
                moved = true;
            }
        }
        if !moved {
            return holder;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: topic indices not in name order, heterogeneous path — valid owned partitions
    /// must all be kept when the assignment is already balanced (no swap of b0 / b1).
    #[test]
    fn keeps_a_balanced_assignment_when_topic_indices_are_not_in_name_order() {
        let cluster = Cluster::new(vec![("d".into(), 3), ("b".into(), 2)]);
        let mut m1 = Member::new("m1", &[0, 1]);
        m1.owned = vec![(1, 0), (0, 0), (0, 2)];
        m1.generation = Some(10);
        let mut m2 = Member::new("m2", &[0, 1]);
        m2.owned = vec![(1, 1), (0, 1)];
        m2.generation = Some(10);
        let m0 = Member::new("m0", &[]);
        let got = assign(&cluster, &[m1, m2, m0], false);
        assert_eq!(got[0], vec![(1, 0), (0, 0), (0, 2)]);
        assert_eq!(got[1], vec![(1, 1), (0, 1)]);
    }
}
