//! Kafka consumer-group assignors: the ZooKeeper-era `range` / `roundrobin` over consumer threads
//! ([`zk`]), the client-side `range` / `roundrobin` ([`range`], [`roundrobin`]) and the sticky family
//! (`sticky`, `cooperative-sticky`: [`sticky`]).
//!
//! Inputs are plain data: a [`Cluster`] (topic names and partition counts; partitions are
//! `0..count`) and [`Member`]s whose topics and owned partitions refer to topics by index. Topics a
//! member subscribes to that have no metadata (not in the cluster, or 0 partitions) are skipped,
//! as Kafka's client-side assignors do. All string orders are Java's (UTF-16 code units).
//!
//! ```
//! use mqbalance_core::assign::{range, Cluster, Member};
//! let cluster = Cluster::new(vec![("t0".into(), 3), ("t1".into(), 3)]);
//! let members = vec![Member::new("C0", &[0, 1]), Member::new("C1", &[0, 1])];
//! // Kafka's Javadoc example: C0 gets t0p0, t0p1, t1p0, t1p1; C1 gets t0p2, t1p2.
//! let a = range::assign(&cluster, &members);
//! assert_eq!(a[0], vec![(0, 0), (0, 1), (1, 0), (1, 1)]);
//! assert_eq!(a[1], vec![(0, 2), (1, 2)]);
//! ```

pub mod range;
pub mod roundrobin;
pub mod sticky;
pub mod zk;

use std::cmp::Ordering;

use crate::order::java_cmp;

/// A client-side assignor by its Kafka name (`partition.assignment.strategy`'s `name()`).
///
/// ```
/// use mqbalance_core::assign::Assignor;
/// assert_eq!(Assignor::parse("Cooperative-Sticky"), Some(Assignor::CooperativeSticky));
/// assert_eq!(Assignor::RoundRobin.name(), "roundrobin");
/// assert_eq!(Assignor::parse("uniform"), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Assignor {
    /// `RangeAssignor`.
    Range,
    /// `RoundRobinAssignor`.
    RoundRobin,
    /// `StickyAssignor` (eager).
    Sticky,
    /// `CooperativeStickyAssignor`.
    CooperativeSticky,
}

impl Assignor {
    /// Every assignor, in the order the names are listed to users.
    pub const ALL: [Assignor; 4] = [
        Assignor::Range,
        Assignor::RoundRobin,
        Assignor::Sticky,
        Assignor::CooperativeSticky,
    ];

    /// Kafka's name: `range`, `roundrobin`, `sticky`, `cooperative-sticky`.
    pub fn name(self) -> &'static str {
        match self {
            Assignor::Range => "range",
            Assignor::RoundRobin => "roundrobin",
            Assignor::Sticky => "sticky",
            Assignor::CooperativeSticky => "cooperative-sticky",
        }
    }

    /// The assignor named `name`, ignoring ASCII case; `None` if there is none.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|a| a.name().eq_ignore_ascii_case(name))
    }

    /// Run it: one `(topic, partition)` list per member, aligned with `members`.
    pub fn assign(self, cluster: &Cluster, members: &[Member]) -> Vec<Vec<TopicPartition>> {
        match self {
            Assignor::Range => range::assign(cluster, members),
            Assignor::RoundRobin => roundrobin::assign(cluster, members),
            Assignor::Sticky => sticky::assign(cluster, members, false),
            Assignor::CooperativeSticky => sticky::assign(cluster, members, true),
        }
    }
}

/// Topic metadata: names and partition counts.
#[derive(Debug, Clone, Default)]
pub struct Cluster {
    names: Vec<String>,
    partitions: Vec<u32>,
}

impl Cluster {
    /// From `(topic, partition count)` pairs.
    pub fn new(topics: Vec<(String, u32)>) -> Self {
        let (names, partitions) = topics.into_iter().unzip();
        Cluster { names, partitions }
    }

    /// Number of topics.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// True when there are no topics.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// Name of topic `t`.
    pub fn name(&self, t: u32) -> &str {
        &self.names[t as usize]
    }

    /// Partition count of topic `t` (0 when it has no metadata).
    pub fn partitions(&self, t: u32) -> u32 {
        self.partitions.get(t as usize).copied().unwrap_or(0)
    }

    /// Topic indices in Java name order.
    pub fn sorted_topics(&self) -> Vec<u32> {
        let mut t: Vec<u32> = (0..self.names.len() as u32).collect();
        t.sort_by(|&a, &b| java_cmp(&self.names[a as usize], &self.names[b as usize]));
        t
    }
}

/// A topic partition `(topic index, partition)`.
pub type TopicPartition = (u32, u32);

/// A group member as the leader sees it.
#[derive(Debug, Clone, Default)]
pub struct Member {
    /// Member id.
    pub member_id: String,
    /// `group.instance.id` of a static member.
    pub group_instance_id: Option<String>,
    /// Subscribed topics (indices; unknown topics are simply not listed or have 0 partitions).
    pub topics: Vec<u32>,
    /// Previously owned partitions (sticky family).
    pub owned: Vec<TopicPartition>,
    /// Generation of the owned partitions (`None` = -1).
    pub generation: Option<i32>,
}

impl Member {
    /// A dynamic member subscribing to `topics`.
    pub fn new(member_id: &str, topics: &[u32]) -> Self {
        Member {
            member_id: member_id.to_owned(),
            topics: topics.to_vec(),
            ..Member::default()
        }
    }
}

/// Kafka's `MemberInfo` order: static members first (by instance id), then dynamic ones (by
/// member id), both in Java string order.
pub fn member_order(members: &[Member]) -> Vec<u32> {
    let mut idx: Vec<u32> = (0..members.len() as u32).collect();
    idx.sort_by(|&a, &b| cmp_members(&members[a as usize], &members[b as usize]));
    idx
}

fn cmp_members(a: &Member, b: &Member) -> Ordering {
    match (&a.group_instance_id, &b.group_instance_id) {
        (Some(x), Some(y)) => java_cmp(x, y),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => java_cmp(&a.member_id, &b.member_id),
    }
}

/// Per topic, the members subscribing to it (member indices in `order`).
pub(crate) fn subscribers(cluster: &Cluster, members: &[Member], order: &[u32]) -> Vec<Vec<u32>> {
    let mut subs = vec![Vec::new(); cluster.len()];
    let mut sorted = Vec::new();
    for &m in order {
        let topics = &members[m as usize].topics;
        // Usually already strictly ascending (distinct): no copy needed then.
        let topics = if topics.windows(2).all(|w| w[0] < w[1]) {
            topics
        } else {
            sorted.clone_from(topics);
            sorted.sort_unstable();
            sorted.dedup();
            &sorted
        };
        for &t in topics {
            if (t as usize) < cluster.len() && cluster.partitions(t) > 0 {
                subs[t as usize].push(m);
            }
        }
    }
    subs
}

/// Sort every member's list by (topic name, partition), Kafka's canonical output order.
pub(crate) fn canonical(cluster: &Cluster, lists: &mut [Vec<TopicPartition>]) {
    let rank = crate::order::java_ranks(&cluster.names);
    for l in lists {
        l.sort_unstable_by_key(|&(t, p)| (rank[t as usize], t, p));
    }
}
