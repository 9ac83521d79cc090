//! `uniform_homogeneous_columns` and `uniform_homogeneous_group` (the fast paths of `uniform`,
//! from columns and from a [`ServerGroup`]) against `assign` over the same group (the general
//! path), by proptest: whenever a fast path answers, `assign` gives the same owners; each answers
//! for every valid homogeneous group it takes (the group one: members sharing one list); neither
//! answers for a group `assign` refuses (partitions owned twice or out of range, a topic listed
//! twice by a member). Duplicate member ids are the
//! caller's check (tested in Python).

#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use mqbalance_core::assign::server::{
    assign, uniform_homogeneous_columns, uniform_homogeneous_group, CurrentTable, GroupColumns,
    KafkaRelease, ServerAssignor, ServerGroup, ServerMember, ServerTopic, Uuid,
};
use proptest::prelude::*;

/// A group as columns, owned.
#[derive(Debug, Clone)]
struct Cols {
    topics: Vec<ServerTopic>,
    ids: Vec<String>,
    subscriptions: Vec<Arc<[u32]>>,
    which: Vec<usize>,
    offsets: Vec<usize>,
    cur_t: Vec<i64>,
    cur_p: Vec<i64>,
}

impl Cols {
    fn fast(&self, release: KafkaRelease) -> Option<Vec<i32>> {
        let own_rows = self.which.iter().enumerate().all(|(m, &w)| m == w)
            && self.subscriptions.len() == self.ids.len();
        let mut offsets = vec![0i64];
        let mut topics = Vec::new();
        for s in &self.subscriptions {
            topics.extend(s.iter().map(|&t| i64::from(t)));
            offsets.push(topics.len() as i64);
        }
        let which: Vec<i64> = self.which.iter().map(|&w| w as i64).collect();
        let current_offsets: Vec<i64> = self.offsets.iter().map(|&o| o as i64).collect();
        let c = GroupColumns {
            topics: &self.topics,
            members: self.ids.len(),
            subscription_offsets: &offsets,
            subscription_topics: &topics,
            member_subscription: if own_rows { None } else { Some(&which) },
            current_offsets: &current_offsets,
            current_topics: &self.cur_t,
            current_partitions: &self.cur_p,
        };
        uniform_homogeneous_columns(&c, release)
    }

    /// The group as [`ServerGroup`]: each member's rows as entries, one per run of one topic
    /// (rows of a topic split in two runs are then a topic listed twice: `assign` refuses it).
    fn group(&self) -> ServerGroup {
        let mut current = CurrentTable::default();
        let mut members = Vec::new();
        for m in 0..self.ids.len() {
            let first = current.len();
            let mut previous = None;
            for r in self.offsets[m]..self.offsets[m + 1] {
                if previous != Some(self.cur_t[r]) {
                    current.push_entry(self.cur_t[r] as u32);
                    previous = Some(self.cur_t[r]);
                }
                current.push_partition(self.cur_p[r] as u32);
            }
            members.push(ServerMember {
                instance_id: None,
                subscribed: Arc::clone(&self.subscriptions[self.which[m]]),
                current: first..current.len(),
            });
        }
        ServerGroup {
            topics: self.topics.clone(),
            member_ids: self.ids.iter().collect(),
            members,
            current,
        }
    }

    /// The general path.
    fn slow(&self, release: KafkaRelease) -> Result<Vec<i32>, String> {
        assign(ServerAssignor::Uniform, &self.group(), release)
            .map(|o| o.concat())
            .map_err(|e| e.to_string())
    }
}

/// How a settled assignment is spoiled (or not).
#[derive(Debug, Clone, Copy)]
enum Fault {
    None,
    OwnedTwice,
    OutOfRange,
    Scattered,
    Heterogeneous,
    OwnRows,
}

fn faults() -> impl Strategy<Value = Fault> {
    prop_oneof![
        4 => Just(Fault::None),
        1 => Just(Fault::OwnedTwice),
        1 => Just(Fault::OutOfRange),
        1 => Just(Fault::Scattered),
        1 => Just(Fault::Heterogeneous),
        1 => Just(Fault::OwnRows),
    ]
}

/// A homogeneous group over `counts` with `n` members subscribed to `subscribed` of the topics
/// (members keep rows of the others: dropped topics): each partition owned by
/// `owner[k] % (n + 1)` (`n`: nobody), each member's partitions grouped by topic in a shuffled
/// order, then `fault`.
fn group(
    counts: &[u32],
    n: usize,
    owner: &[usize],
    order: &[usize],
    subscribed: usize,
    fault: Fault,
    pick: usize,
) -> Cols {
    let nt = counts.len();
    let topics: Vec<ServerTopic> = (0..nt)
        .map(|t| ServerTopic {
            id: Uuid {
                msb: (t as i64 + 1) * 0x9E37_79B9,
                lsb: (t as i64) << 33 | 7,
            },
            partitions: Some(counts[t]),
        })
        .collect();
    // The first `subscribed` topics of a rotation, in that order.
    let sub: Vec<u32> = (0..nt)
        .map(|k| ((k + pick) % nt) as u32)
        .take(subscribed.min(nt))
        .collect();
    let mut rows: Vec<Vec<(i64, i64)>> = vec![Vec::new(); n];
    let mut k = 0;
    for (t, &c) in counts.iter().enumerate() {
        for p in 0..c {
            let o = owner[k % owner.len()] % (n + 1);
            k += 1;
            if o < n {
                rows[o].push((t as i64, i64::from(p)));
            }
        }
    }
    for (m, r) in rows.iter_mut().enumerate() {
        // topics of a member in a shuffled order, each topic's partitions rotated
        r.sort_by_key(|&(t, p)| ((t as usize + order[m % order.len()]) % nt, p));
        if r.len() > 1 {
            let s = order[(m + 1) % order.len()] % r.len();
            let t0 = r[0].0;
            let run = r.iter().take_while(|x| x.0 == t0).count();
            r[..run].rotate_left(s % run);
        }
    }
    let ids: Vec<String> = (0..n).map(|m| format!("m{m}")).collect();
    let mut subscriptions: Vec<Arc<[u32]>> = vec![Arc::from(sub.clone())];
    let mut which = vec![0; n];
    let target = pick % n;
    match fault {
        Fault::None => {}
        Fault::OwnedTwice => {
            if let Some(&x) = rows.iter().flatten().nth(pick % k.max(1)) {
                rows[target].push(x);
            }
        }
        Fault::OutOfRange => {
            let t = pick % nt;
            rows[target].push((t as i64, i64::from(counts[t]) + (pick % 3) as i64));
        }
        Fault::Scattered => {
            if let Some(m) = (0..n).find(|&m| {
                rows[m]
                    .first()
                    .is_some_and(|f| rows[m].iter().any(|x| x.0 != f.0))
            }) {
                let x = rows[m][0];
                rows[m].remove(0);
                rows[m].push(x);
            }
        }
        Fault::Heterogeneous => {
            let mut other = sub.clone();
            other.pop();
            subscriptions.push(Arc::from(other));
            which[target] = 1;
        }
        Fault::OwnRows => {
            // one row per member, the same topics in other orders: still homogeneous
            subscriptions = (0..n)
                .map(|m| {
                    let mut s = sub.clone();
                    if m > 0 && !s.is_empty() {
                        let len = s.len();
                        s.rotate_left(m % len);
                    }
                    Arc::from(s)
                })
                .collect();
            which = (0..n).collect();
        }
    }
    let mut offsets = vec![0];
    let (mut cur_t, mut cur_p) = (Vec::new(), Vec::new());
    for r in &rows {
        for &(t, p) in r {
            cur_t.push(t);
            cur_p.push(p);
        }
        offsets.push(cur_t.len());
    }
    Cols {
        topics,
        ids,
        subscriptions,
        which,
        offsets,
        cur_t,
        cur_p,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]
    #[test]
    fn the_fast_path_is_the_general_one(
        counts in prop::collection::vec(0..14u32, 1..7),
        n in 1..9usize,
        owner in prop::collection::vec(0..20usize, 1..40),
        order in prop::collection::vec(0..7usize, 1..9),
        subscribed in 0..7usize,
        fault in faults(),
        pick in 0..1000usize,
        newest in any::<bool>(),
    ) {
        let release = if newest { KafkaRelease::NEWEST } else { KafkaRelease::parse("4.0").unwrap() };
        let c = group(&counts, n, &owner, &order, subscribed, fault, pick);
        let slow = c.slow(release);
        if let Some(fast) = c.fast(release) {
            prop_assert_eq!(Ok(fast), slow.clone(), "{:?}", fault);
        } else {
            // Only a group outside the fast path's case: refused by `assign`, heterogeneous,
            // or with a member's topic rows split.
            let split = (0..n).any(|m| {
                let r = &c.cur_t[c.offsets[m]..c.offsets[m + 1]];
                (1..r.len()).any(|i| r[i] != r[i - 1] && r[..i - 1].contains(&r[i]))
            });
            let mut subscribers = vec![0; counts.len()];
            for &w in &c.which {
                for &t in c.subscriptions[w].iter() {
                    subscribers[t as usize] += 1;
                }
            }
            let heterogeneous = subscribers.iter().any(|&s| s != 0 && s != n);
            prop_assert!(slow.is_err() || split || heterogeneous, "{:?} {:?}", fault, slow);
        }
        let shared = c.which.iter().all(|&w| Arc::ptr_eq(&c.subscriptions[w], &c.subscriptions[c.which[0]]));
        match uniform_homogeneous_group(&c.group(), release) {
            Some(fast) => prop_assert_eq!(Ok(fast), slow, "{:?}", fault),
            None => prop_assert!(slow.is_err() || !shared, "{:?} {:?}", fault, slow),
        }
    }
}
