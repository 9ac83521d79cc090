//! A consumer group as the leader sees it: the topic metadata ([`Cluster`]), the [`Member`]s, and
//! what every assignor shares (Kafka's member order, the subscribers of each topic, the canonical
//! output order).

use std::cmp::Ordering;

use crate::order::java_cmp;

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
