//! `UniformAssignor`: `UniformHomogeneousAssignmentBuilder` when every member subscribes to the
//! same topics, `UniformHeterogeneousAssignmentBuilder` otherwise; transcribed step for step,
//! with members as positions and maps keyed by member as arrays.

use std::cmp::Ordering;

use super::{java_hash_set_order, uniform_missing, Owners, ServerAssignError, ServerGroup};

/// The homogeneous builder: keep each member's current partitions up to its quota (members in
/// order take the `total % members` extra ones), then hand out the unassigned partitions — topics
/// in Java `HashSet` order, then revoked ones — to the members under quota, in member order.
/// `extras_to_holders` (Kafka 4.1.0 on, see [`super::KafkaRelease`]): a member left under its
/// quota by what it keeps gives its extra up while more members remain than extras.
pub(super) fn homogeneous(
    g: &ServerGroup,
    current: &Owners,
    mut owners: Owners,
    extras_to_holders: bool,
) -> Result<Owners, ServerAssignError> {
    let first = &g.members[0].subscribed;
    if first.is_empty() {
        return Ok(owners);
    }
    let ids: Vec<_> = first.iter().map(|&t| g.topics[t as usize].id).collect();
    let order = java_hash_set_order(&ids);
    let mut subscribed = vec![false; g.topics.len()];
    let mut unassigned: Vec<(u32, u32)> = Vec::new();
    let mut total: i64 = 0;
    for &k in &order {
        let t = first[k];
        subscribed[t as usize] = true;
        let topic = &g.topics[t as usize];
        let count = topic.partitions.ok_or_else(|| uniform_missing(topic.id))?;
        let cur = &current[t as usize];
        unassigned.extend(
            (0..count)
                .filter(|&p| cur[p as usize] == -1)
                .map(|p| (t, p)),
        );
        total += i64::from(count);
    }
    let n = g.members.len() as i64;
    let min_quota = total / n;
    let mut extra = total % n;
    let mut unfilled: Vec<(usize, i64)> = Vec::new();
    for (mi, m) in g.members.iter().enumerate() {
        let mut has_extra = extra > 0;
        let mut quota = min_quota + i64::from(has_extra);
        for (t, parts) in g.current.entries(m.current.clone()) {
            let t = &t;
            if !subscribed[*t as usize] {
                continue; // the whole topic is dropped
            }
            let row = &mut owners[*t as usize];
            if parts.len() as i64 <= quota {
                quota -= parts.len() as i64;
                for &p in parts {
                    row[p as usize] = mi as i32;
                }
            } else {
                for &p in parts {
                    if quota > 0 {
                        quota -= 1;
                        row[p as usize] = mi as i32;
                    } else {
                        unassigned.push((*t, p));
                    }
                }
            }
        }
        if extras_to_holders && quota > 0 && has_extra && n - mi as i64 > extra {
            quota -= 1;
            has_extra = false;
        }
        extra -= i64::from(has_extra);
        if quota > 0 {
            unfilled.push((mi, quota));
        }
    }
    let mut next = 0usize;
    for (mi, quota) in unfilled {
        let take = (quota as usize).min(unassigned.len() - next);
        for &(t, p) in &unassigned[next..next + take] {
            owners[t as usize][p as usize] = mi as i32;
        }
        next += take;
    }
    if next < unassigned.len() {
        return Err(ServerAssignError::Assignor {
            message: "Partitions were left unassigned".into(),
        });
    }
    Ok(owners)
}

/// `MemberAssignmentBalancer`: walks the subscribers of one topic from the least and from the
/// most loaded, in ranges of equal load.
struct Balancer {
    sorted: Vec<u32>,
    least_end: usize,
    least_count: i32,
    next_least: usize,
    most_start: usize,
    most_end: usize,
    most_count: i32,
    next_most: isize,
}

impl Balancer {
    fn new() -> Self {
        Balancer {
            sorted: Vec::new(),
            least_end: 0,
            least_count: -1,
            next_least: 0,
            most_start: 0,
            most_end: 0,
            most_count: 1,
            next_most: -1,
        }
    }

    fn initialize(&mut self, members: &[u32], sizes: &[i32]) -> i32 {
        self.sorted.clear();
        self.sorted.extend_from_slice(members);
        self.sorted
            .sort_unstable_by_key(|&m| (sizes[m as usize], m));
        let n = self.sorted.len();
        let lo = sizes[self.sorted[0] as usize];
        let hi = sizes[self.sorted[n - 1] as usize];
        self.least_end = 0;
        self.least_count = lo - 1;
        self.next_least = 0;
        self.most_start = n;
        self.most_end = n;
        self.most_count = hi + 1;
        self.next_most = n as isize - 1;
        hi - lo
    }

    fn next_least(&mut self, sizes: &[i32]) -> u32 {
        if self.next_least >= self.least_end {
            self.least_count += 1;
            while self.least_end < self.sorted.len()
                && sizes[self.sorted[self.least_end] as usize] == self.least_count
            {
                self.least_end += 1;
            }
            self.next_least = 0;
        }
        let m = self.sorted[self.next_least];
        self.next_least += 1;
        m
    }

    fn next_most(&mut self, sizes: &[i32]) -> Option<u32> {
        if self.next_most < self.most_start as isize {
            if self.most_end <= self.most_start && self.most_start > 0 {
                self.most_count = sizes[self.sorted[self.most_start - 1] as usize];
            } else {
                self.most_count -= 1;
            }
            while self.most_start > 0
                && sizes[self.sorted[self.most_start - 1] as usize] == self.most_count
            {
                self.most_start -= 1;
            }
            self.next_most = self.most_end as isize - 1;
        }
        if self.next_most < 0 {
            return None;
        }
        let m = self.sorted[self.next_most as usize];
        self.next_most -= 1;
        Some(m)
    }

    fn exclude_most(&mut self) {
        let i = (self.next_most + 1) as usize;
        self.sorted.swap(i, self.most_end - 1);
        self.most_end -= 1;
    }

    fn is_balanced(&self) -> bool {
        self.most_count - self.least_count <= 1
    }
}

const MAX_ITERATION_COUNT: usize = 16;

/// The heterogeneous builder's state: owners and per-member sizes as arrays.
struct Hetero<'a> {
    g: &'a ServerGroup,
    owners: Owners,
    sizes: Vec<i32>,
    subscribers: Vec<Vec<u32>>,
}

impl Hetero<'_> {
    fn count(&self, t: usize) -> u32 {
        self.g.topics[t].partitions.unwrap_or(0)
    }

    /// Partitions per subscriber descending, then subscriber count ascending, then topic id.
    fn topic_cmp(&self, a: u32, b: u32) -> Ordering {
        let (a, b) = (a as usize, b as usize);
        let (sa, sb) = (self.subscribers[a].len(), self.subscribers[b].len());
        let ra = f64::from(self.count(a)) / f64::from(sa as u32);
        let rb = f64::from(self.count(b)) / f64::from(sb as u32);
        rb.total_cmp(&ra)
            .then(sa.cmp(&sb))
            .then(self.g.topics[a].id.cmp(&self.g.topics[b].id))
    }

    fn sorted_topics(&self, mut topics: Vec<u32>) -> Vec<u32> {
        topics.sort_unstable_by(|&a, &b| self.topic_cmp(a, b));
        topics
    }

    fn assign_partition(&mut self, t: usize, p: usize, m: u32) {
        let old = self.owners[t][p];
        if old != -1 {
            self.sizes[old as usize] -= 1;
        }
        self.owners[t][p] = m as i32;
        self.sizes[m as usize] += 1;
    }

    fn balance_topic(
        &mut self,
        t: usize,
        bal: &mut Balancer,
        parts: &mut Vec<u32>,
        start: &mut [i32],
        end: &mut [i32],
    ) -> usize {
        let mut reassigned = 0;
        let subs = std::mem::take(&mut self.subscribers[t]);
        let imbalance = bal.initialize(&subs, &self.sizes);
        self.subscribers[t] = subs;
        if imbalance <= 1 {
            return 0;
        }
        let owners = &self.owners[t];
        parts.clear();
        parts.extend(0..owners.len() as u32);
        parts.sort_unstable_by_key(|&p| (owners[p as usize], p));
        for &m in &self.subscribers[t] {
            start[m as usize] = -1;
            end[m as usize] = -1;
        }
        for (i, &p) in parts.iter().enumerate() {
            let o = owners[p as usize] as usize;
            if start[o] == -1 {
                start[o] = i as i32;
            }
            end[o] = i as i32 + 1;
        }
        while !bal.is_balanced() {
            let mut most = None;
            while let Some(m) = bal.next_most(&self.sizes) {
                let m_ = m as usize;
                if end[m_] == -1 || end[m_] - start[m_] <= 0 {
                    bal.exclude_most();
                    continue;
                }
                most = Some(m_);
                break;
            }
            let Some(most) = most else { break };
            let p = parts[(end[most] - 1) as usize];
            end[most] -= 1;
            let least = bal.next_least(&self.sizes);
            if bal.is_balanced() {
                break;
            }
            self.assign_partition(t, p as usize, least);
            reassigned += 1;
        }
        reassigned
    }
}

/// The heterogeneous builder: keep every current partition of a subscribed topic, give the
/// unassigned ones to the least loaded subscriber topic by topic, then move partitions from the
/// most to the least loaded subscribers of each shared topic for up to 16 rounds.
pub(super) fn heterogeneous(g: &ServerGroup, owners: Owners) -> Result<Owners, ServerAssignError> {
    let nt = g.topics.len();
    let mut subscribers: Vec<Vec<u32>> = vec![Vec::new(); nt];
    let mut subscribed_topics: Vec<u32> = Vec::new();
    for (mi, m) in g.members.iter().enumerate() {
        for &t in m.subscribed.iter() {
            let topic = &g.topics[t as usize];
            if topic.partitions.is_none() {
                return Err(uniform_missing(topic.id));
            }
            if subscribers[t as usize].is_empty() {
                subscribed_topics.push(t);
            }
            subscribers[t as usize].push(mi as u32);
        }
    }
    let mut h = Hetero {
        g,
        owners,
        sizes: vec![0; g.members.len()],
        subscribers,
    };
    if subscribed_topics.is_empty() {
        return Ok(h.owners);
    }
    // maybeRevokePartitions: keep what members still subscribe to.
    let mut mine = vec![u32::MAX; nt];
    for (mi, m) in g.members.iter().enumerate() {
        for &t in m.subscribed.iter() {
            mine[t as usize] = mi as u32;
        }
        for (t, parts) in g.current.entries(m.current.clone()) {
            let t = &t;
            if mine[*t as usize] != mi as u32 {
                continue;
            }
            h.sizes[mi] += parts.len() as i32;
            for &p in parts {
                h.owners[*t as usize][p as usize] = mi as i32;
            }
        }
    }
    // assignRemainingPartitions.
    let with_unassigned: Vec<u32> = subscribed_topics
        .iter()
        .copied()
        .filter(|&t| h.owners[t as usize].contains(&-1))
        .collect();
    let mut bal = Balancer::new();
    for t in h.sorted_topics(with_unassigned) {
        let t = t as usize;
        let subs = std::mem::take(&mut h.subscribers[t]);
        bal.initialize(&subs, &h.sizes);
        h.subscribers[t] = subs;
        for p in 0..h.owners[t].len() {
            if h.owners[t][p] == -1 {
                let m = bal.next_least(&h.sizes);
                h.assign_partition(t, p, m);
            }
        }
    }
    // balance.
    let shared: Vec<u32> = subscribed_topics
        .into_iter()
        .filter(|&t| h.subscribers[t as usize].len() >= 2)
        .collect();
    if !shared.is_empty() {
        let sorted = h.sorted_topics(shared);
        let mut last: Option<usize> = None;
        let mut parts = Vec::new();
        let mut start = vec![-1i32; g.members.len()];
        let mut end = vec![-1i32; g.members.len()];
        'rounds: for _ in 0..MAX_ITERATION_COUNT {
            for (ti, &t) in sorted.iter().enumerate() {
                if last == Some(ti) {
                    break 'rounds;
                }
                let moved = h.balance_topic(t as usize, &mut bal, &mut parts, &mut start, &mut end);
                if moved > 0 || last.is_none() {
                    last = Some(ti);
                }
            }
        }
    }
    Ok(h.owners)
}
