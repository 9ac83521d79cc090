//! The broker-side assignors of Kafka's consumer-group protocol (KIP-848): `uniform`
//! (`UniformAssignor`, with its homogeneous and heterogeneous builders) and the server-side `range`
//! (`RangeAssignor`), exactly as the group coordinator computes them.
//!
//! The input is the coordinator's view of the group ([`ServerGroup`]): topics (id and partition
//! count, or no metadata), and members **in the coordinator's iteration order**, each with its
//! subscribed topics and current assignment **in the order given** (the homogeneous `uniform`
//! builder keeps an over-quota member's first partitions in that order). The result is the owner
//! (a member position, or -1) of every partition of every topic.
//!
//! ```
//! use mqbalance_core::assign::server::{assign, KafkaRelease, ServerAssignor, ServerGroup, ServerMember, ServerTopic, Uuid};
//! let t = ServerTopic { id: Uuid { msb: 1, lsb: 2 }, partitions: Some(5) };
//! let m = |id: &str| ServerMember { member_id: id.into(), instance_id: None, subscribed: vec![0].into(), current: 0..0 };
//! let group = ServerGroup { topics: vec![t], members: vec![m("b"), m("a")], current: Default::default() };
//! // uniform fills members in the given order; the extra partition goes to the last member
//! // (Kafka 4.1 on: b gets 2, a gets 3), to the first before 4.1 (b gets 3, a gets 2).
//! let newest = KafkaRelease::NEWEST;
//! assert_eq!(assign(ServerAssignor::Uniform, &group, newest).unwrap(), vec![vec![0, 0, 1, 1, 1]]);
//! let kafka_4_0 = KafkaRelease::parse("4.0").unwrap();
//! assert_eq!(assign(ServerAssignor::Uniform, &group, kafka_4_0).unwrap(), vec![vec![0, 0, 0, 1, 1]]);
//! // range sorts member ids: a gets 0..3, b gets 3..5.
//! assert_eq!(assign(ServerAssignor::Range, &group, newest).unwrap(), vec![vec![1, 1, 1, 0, 0]]);
//! ```

mod hash_set;
mod range;
mod release;
mod uniform;
mod uuid;

use std::ops::Range;
use std::sync::Arc;

use rustc_hash::{FxHashMap, FxHashSet};
use thiserror::Error;

pub use hash_set::java_hash_set_order;
pub use release::KafkaRelease;
pub use uuid::Uuid;

/// A broker-side assignor by its Kafka name (`group.consumer.assignors`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerAssignor {
    /// `UniformAssignor` (`uniform`, the broker's default).
    Uniform,
    /// The server-side `RangeAssignor` (`range`).
    Range,
}

impl ServerAssignor {
    /// Every broker-side assignor, in the order the names are listed to users.
    pub const ALL: [ServerAssignor; 2] = [ServerAssignor::Uniform, ServerAssignor::Range];

    /// Kafka's name.
    pub fn name(self) -> &'static str {
        match self {
            ServerAssignor::Uniform => "uniform",
            ServerAssignor::Range => "range",
        }
    }

    /// The assignor named `name` (ASCII case ignored), or `None`.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|a| a.name().eq_ignore_ascii_case(name))
    }
}

/// A topic the group refers to: its id, and its partition count from the metadata (`None`: the
/// topic is not in the metadata).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerTopic {
    /// Topic id.
    pub id: Uuid,
    /// Partition count, `None` when the metadata lacks the topic.
    pub partitions: Option<u32>,
}

/// One member, as the coordinator's `MemberSubscriptionAndAssignmentImpl`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerMember {
    /// Member id.
    pub member_id: String,
    /// Static membership's `group.instance.id`.
    pub instance_id: Option<String>,
    /// Subscribed topics (indices into [`ServerGroup::topics`]), in the order given; members
    /// with the same subscription may share one list (it is then checked and counted once).
    pub subscribed: Arc<[u32]>,
    /// Current assignment: these entries of [`ServerGroup::current`], each (topic index,
    /// partitions); topics and partitions in the order given.
    pub current: Range<usize>,
}

/// The group as the assignor sees it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ServerGroup {
    /// Every topic referred to.
    pub topics: Vec<ServerTopic>,
    /// Members in the coordinator's order.
    pub members: Vec<ServerMember>,
    /// Every member's current assignment, in one table (see [`ServerMember::current`]).
    pub current: CurrentTable,
}

/// The current assignments of a whole group in two flat vectors (no allocation per member):
/// entry `k` is a topic and the partitions pushed after it.
///
/// ```
/// use mqbalance_core::assign::server::CurrentTable;
/// let mut c = CurrentTable::default();
/// c.push_entry(3);
/// c.push_partition(1);
/// c.push_partition(0);
/// c.push_entry(5);
/// assert_eq!((c.len(), c.entry(0), c.entry(1)), (2, (3, &[1, 0][..]), (5, &[][..])));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CurrentTable {
    /// (topic index, start of its partitions in `partitions`).
    entries: Vec<(u32, usize)>,
    partitions: Vec<u32>,
}

impl CurrentTable {
    /// A table with room for `entries` entries and `partitions` partitions.
    pub fn with_capacity(entries: usize, partitions: usize) -> Self {
        CurrentTable {
            entries: Vec::with_capacity(entries),
            partitions: Vec::with_capacity(partitions),
        }
    }

    /// Start a new entry for `topic`; the partitions pushed next are its.
    pub fn push_entry(&mut self, topic: u32) {
        self.entries.push((topic, self.partitions.len()));
    }

    /// Append a partition to the last entry.
    pub fn push_partition(&mut self, partition: u32) {
        self.partitions.push(partition);
    }

    /// Append partitions to the last entry.
    pub fn extend_partitions(&mut self, partitions: &[u32]) {
        self.partitions.extend_from_slice(partitions);
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the table has no entry.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Entry `k`: (topic index, partitions).
    pub fn entry(&self, k: usize) -> (u32, &[u32]) {
        let (t, start) = self.entries[k];
        let end = self
            .entries
            .get(k + 1)
            .map_or(self.partitions.len(), |e| e.1);
        (t, &self.partitions[start..end])
    }

    /// The entries of `range` (a member's [`ServerMember::current`]).
    pub fn entries(&self, range: Range<usize>) -> impl Iterator<Item = (u32, &[u32])> + '_ {
        range.map(|k| self.entry(k))
    }
}

/// What the broker-side assignors refuse.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ServerAssignError {
    /// Java's `PartitionAssignorException`, with Java's message.
    #[error("{message}")]
    Assignor {
        /// Java's message.
        message: String,
    },
    /// Two members with one id.
    #[error("duplicate member id {0:?}")]
    DuplicateMember(String),
    /// A member lists a topic twice in its subscription or its current assignment.
    #[error("member {member:?} lists topic {topic} twice")]
    DuplicateTopic {
        /// The member.
        member: String,
        /// The topic id.
        topic: Uuid,
    },
    /// One partition in two members' (or twice in one member's) current assignment.
    #[error("partition {topic}-{partition} is owned twice in the current assignment (member {member:?})")]
    OwnedTwice {
        /// Topic id.
        topic: Uuid,
        /// Partition.
        partition: u32,
        /// The second owner.
        member: String,
    },
    /// A current partition beyond the topic's partition count.
    #[error(
        "member {member:?} owns partition {topic}-{partition} but the topic has {count} partitions"
    )]
    PartitionOutOfRange {
        /// Topic id.
        topic: Uuid,
        /// Partition.
        partition: u32,
        /// The topic's count.
        count: u32,
        /// The member.
        member: String,
    },
    /// More partitions in total than [`MAX_PARTITIONS`] (the owner table would not fit).
    #[error("{0} partitions in total: more than the {MAX_PARTITIONS} this assignor handles")]
    TooManyPartitions(u64),
    /// A topic index outside [`ServerGroup::topics`].
    #[error("topic index {0} out of range")]
    TopicIndex(u32),
}

/// Owner (member position, -1 for none) of every partition, one vector per topic of the group
/// (empty for topics without metadata).
pub type Owners = Vec<Vec<i32>>;

/// The most partitions one group may have in total (an owner table of 1 GiB).
pub const MAX_PARTITIONS: u64 = 1 << 28;

/// Check the group and return the current owner of every partition (-1: unowned).
fn current_owners(g: &ServerGroup) -> Result<Owners, ServerAssignError> {
    let total: u64 = g
        .topics
        .iter()
        .map(|t| u64::from(t.partitions.unwrap_or(0)))
        .sum();
    if total > MAX_PARTITIONS {
        return Err(ServerAssignError::TooManyPartitions(total));
    }
    let nt = g.topics.len();
    let mut owners: Owners = g
        .topics
        .iter()
        .map(|t| vec![-1; t.partitions.unwrap_or(0) as usize])
        .collect();
    let mut ids: FxHashSet<&str> =
        FxHashSet::with_capacity_and_hasher(g.members.len(), rustc_hash::FxBuildHasher);
    let mut unknown: FxHashSet<(u32, u32)> = FxHashSet::default();
    let mut seen = vec![u32::MAX; nt];
    let mut seen_sub = vec![0u32; nt];
    let mut checked: FxHashSet<usize> = FxHashSet::default();
    for (mi, m) in g.members.iter().enumerate() {
        if !ids.insert(&m.member_id) {
            return Err(ServerAssignError::DuplicateMember(m.member_id.clone()));
        }
        // Each distinct subscription list is checked once.
        if checked.insert(Arc::as_ptr(&m.subscribed).cast::<u32>() as usize) {
            let stamp = checked.len() as u32;
            for &t in m.subscribed.iter() {
                let slot = seen_sub
                    .get_mut(t as usize)
                    .ok_or(ServerAssignError::TopicIndex(t))?;
                if *slot == stamp {
                    return Err(ServerAssignError::DuplicateTopic {
                        member: m.member_id.clone(),
                        topic: g.topics[t as usize].id,
                    });
                }
                *slot = stamp;
            }
        }
        let stamp = mi as u32;
        for (t, parts) in g.current.entries(m.current.clone()) {
            let t = &t;
            let slot = seen
                .get_mut(*t as usize)
                .ok_or(ServerAssignError::TopicIndex(*t))?;
            if *slot == stamp {
                return Err(ServerAssignError::DuplicateTopic {
                    member: m.member_id.clone(),
                    topic: g.topics[*t as usize].id,
                });
            }
            *slot = stamp;
            let topic = &g.topics[*t as usize];
            for &p in parts {
                let twice = || ServerAssignError::OwnedTwice {
                    topic: topic.id,
                    partition: p,
                    member: m.member_id.clone(),
                };
                match topic.partitions {
                    Some(count) => {
                        let o = owners[*t as usize].get_mut(p as usize).ok_or_else(|| {
                            ServerAssignError::PartitionOutOfRange {
                                topic: topic.id,
                                partition: p,
                                count,
                                member: m.member_id.clone(),
                            }
                        })?;
                        if *o != -1 {
                            return Err(twice());
                        }
                        *o = mi as i32;
                    }
                    None => {
                        if !unknown.insert((*t, p)) {
                            return Err(twice());
                        }
                    }
                }
            }
        }
    }
    Ok(owners)
}

/// Whether every member subscribes to the same topics: the coordinator's `HOMOGENEOUS`
/// subscription type (every subscribed topic has every member as subscriber).
pub fn is_homogeneous(g: &ServerGroup) -> bool {
    // Members sharing one list count once, times their number.
    let mut lists: FxHashMap<usize, (usize, usize)> = FxHashMap::default();
    for (mi, m) in g.members.iter().enumerate() {
        lists
            .entry(Arc::as_ptr(&m.subscribed).cast::<u32>() as usize)
            .or_insert((mi, 0))
            .1 += 1;
    }
    let mut counts = vec![0usize; g.topics.len()];
    for (mi, n) in lists.into_values() {
        for &t in g.members[mi].subscribed.iter() {
            counts[t as usize] += n;
        }
    }
    counts.iter().all(|&c| c == 0 || c == g.members.len())
}

/// Run `assignor` over the group as `release`'s coordinator does: the owner of every partition
/// (see [`Owners`]).
pub fn assign(
    assignor: ServerAssignor,
    g: &ServerGroup,
    release: KafkaRelease,
) -> Result<Owners, ServerAssignError> {
    let current = current_owners(g)?;
    let empty = || -> Owners {
        g.topics
            .iter()
            .map(|t| vec![-1; t.partitions.unwrap_or(0) as usize])
            .collect()
    };
    if g.members.is_empty() {
        return Ok(empty());
    }
    let homogeneous = is_homogeneous(g);
    match assignor {
        ServerAssignor::Uniform if homogeneous => {
            uniform::homogeneous(g, &current, empty(), release.uniform_extras_to_holders())
        }
        ServerAssignor::Uniform => uniform::heterogeneous(g, empty()),
        ServerAssignor::Range => range::assign(g, homogeneous, empty()),
    }
}

/// Java's message for a subscribed topic missing from the metadata, in `uniform`.
fn uniform_missing(topic: Uuid) -> ServerAssignError {
    ServerAssignError::Assignor {
        message: format!(
            "Members are subscribed to topic {topic} which doesn't exist in the topic metadata."
        ),
    }
}
