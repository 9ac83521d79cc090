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

mod group;
pub mod range;
pub mod roundrobin;
pub mod server;
pub mod sticky;
pub mod user_data;
pub mod zk;

pub use group::{member_order, Cluster, Member, TopicPartition};

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

    /// Whether it reads the members' previous assignment (the sticky family).
    pub fn reads_previous(self) -> bool {
        matches!(self, Assignor::Sticky | Assignor::CooperativeSticky)
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
