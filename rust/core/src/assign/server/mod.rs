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
//! let m = ServerMember { instance_id: None, subscribed: vec![0].into(), current: 0..0 };
//! let group = ServerGroup {
//!     topics: vec![t],
//!     member_ids: ["b", "a"].into_iter().collect(),
//!     members: vec![m.clone(), m],
//!     current: Default::default(),
//! };
//! // uniform fills members in the given order; the extra partition goes to the last member
//! // (Kafka 4.1 on: b gets 2, a gets 3), to the first before 4.1 (b gets 3, a gets 2).
//! let newest = KafkaRelease::NEWEST;
//! assert_eq!(assign(ServerAssignor::Uniform, &group, newest).unwrap(), vec![vec![0, 0, 1, 1, 1]]);
//! let kafka_4_0 = KafkaRelease::parse("4.0").unwrap();
//! assert_eq!(assign(ServerAssignor::Uniform, &group, kafka_4_0).unwrap(), vec![vec![0, 0, 0, 1, 1]]);
//! // range sorts member ids: a gets 0..3, b gets 3..5.
//! assert_eq!(assign(ServerAssignor::Range, &group, newest).unwrap(), vec![vec![1, 1, 1, 0, 0]]);
//! ```

mod columns;
mod hash_set;
mod range;
mod release;
mod uniform;
mod uuid;

use std::ops::Range;
use std::sync::Arc;

use rustc_hash::{FxHashMap, FxHashSet};
use thiserror::Error;

pub use columns::{uniform_homogeneous_columns, uniform_homogeneous_group, GroupColumns};
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

/// One member, as the coordinator's `MemberSubscriptionAndAssignmentImpl` (its id is in
/// [`ServerGroup::member_ids`], at the same position).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerMember {
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
    /// The members' ids, aligned with `members`.
    pub member_ids: MemberIds,
    /// Members in the coordinator's order.
    pub members: Vec<ServerMember>,
    /// Every member's current assignment, in one table (see [`ServerMember::current`]).
    pub current: CurrentTable,
}

/// The member ids of a group in one buffer (no allocation per member).
///
/// ```
/// use mqbalance_core::assign::server::MemberIds;
/// let ids: MemberIds = ["b", "a"].into_iter().collect();
/// assert_eq!((ids.len(), ids.get(0), ids.get(1)), (2, "b", "a"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MemberIds {
    text: String,
    ends: Vec<usize>,
}

impl MemberIds {
    /// Room for `n` ids of `bytes` bytes in all.
    pub fn with_capacity(n: usize, bytes: usize) -> Self {
        MemberIds {
            text: String::with_capacity(bytes),
            ends: Vec::with_capacity(n),
        }
    }

    /// Append an id.
    pub fn push(&mut self, id: &str) {
        self.text.push_str(id);
        self.ends.push(self.text.len());
    }

    /// Id `i`.
    pub fn get(&self, i: usize) -> &str {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.text[start..self.ends[i]]
    }

    /// The number of ids.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether there is no id.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }
}

impl<S: AsRef<str>> FromIterator<S> for MemberIds {
    fn from_iter<I: IntoIterator<Item = S>>(iter: I) -> Self {
        let mut ids = MemberIds::default();
        for id in iter {
            ids.push(id.as_ref());
        }
        ids
    }
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
    /// [`ServerGroup::member_ids`] and [`ServerGroup::members`] differ in length.
    #[error("{ids} member ids for {members} members")]
    MemberIds {
        /// Ids.
        ids: usize,
        /// Members.
        members: usize,
    },
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
    let mut previous: Option<usize> = None;
    if g.member_ids.len() != g.members.len() {
        return Err(ServerAssignError::MemberIds {
            ids: g.member_ids.len(),
            members: g.members.len(),
        });
    }
    for (mi, m) in g.members.iter().enumerate() {
        let member_id = g.member_ids.get(mi);
        if !ids.insert(member_id) {
            return Err(ServerAssignError::DuplicateMember(member_id.to_owned()));
        }
        // Each distinct subscription list is checked once (members sharing one usually come
        // one after another).
        let list = Arc::as_ptr(&m.subscribed).cast::<u32>() as usize;
        let fresh = previous != Some(list) && checked.insert(list);
        previous = Some(list);
        if fresh {
            let stamp = checked.len() as u32;
            for &t in m.subscribed.iter() {
                let slot = seen_sub
                    .get_mut(t as usize)
                    .ok_or(ServerAssignError::TopicIndex(t))?;
                if *slot == stamp {
                    return Err(ServerAssignError::DuplicateTopic {
                        member: member_id.to_owned(),
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
                    member: member_id.to_owned(),
                    topic: g.topics[*t as usize].id,
                });
            }
            *slot = stamp;
            let topic = &g.topics[*t as usize];
            for &p in parts {
                let twice = || ServerAssignError::OwnedTwice {
                    topic: topic.id,
                    partition: p,
                    member: member_id.to_owned(),
                };
                match topic.partitions {
                    Some(count) => {
                        let o = owners[*t as usize].get_mut(p as usize).ok_or_else(|| {
                            ServerAssignError::PartitionOutOfRange {
                                topic: topic.id,
                                partition: p,
                                count,
                                member: member_id.to_owned(),
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
    let mut mi = 0;
    while mi < g.members.len() {
        // A run of members sharing one list counts at once.
        let list = &g.members[mi].subscribed;
        let mut end = mi + 1;
        while end < g.members.len() && Arc::ptr_eq(&g.members[end].subscribed, list) {
            end += 1;
        }
        lists
            .entry(Arc::as_ptr(list).cast::<u32>() as usize)
            .or_insert((mi, 0))
            .1 += end - mi;
        mi = end;
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
