//! Bindings of `mqbalance_core::assign` (Kafka assignors). Members arrive as tuples
//! `(member_id, group_instance_id, topic indices, owned (topic, partition) pairs, generation)`,
//! or, for large groups, as numpy columns.

use mqbalance_core::assign::{zk, Assignor, Cluster, Member, TopicPartition};
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString, PyTuple};
use rustc_hash::FxHashMap;

use crate::errors::{InvalidInputError, UnknownStrategyError};

/// Topic name → index, for resolving names without allocating.
struct TopicIndex(FxHashMap<String, u32>);

impl TopicIndex {
    fn new(topics: &[(String, u32)]) -> Self {
        TopicIndex(
            topics
                .iter()
                .enumerate()
                .map(|(i, (t, _))| (t.clone(), i as u32))
                .collect(),
        )
    }

    /// Indices of the known names in a list of str (unknown names have no metadata: skipped).
    fn resolve(&self, names: &Bound<'_, PyAny>) -> PyResult<Vec<u32>> {
        let list = names.cast::<PyList>().map_err(|_| {
            InvalidInputError::new_err(("topic lists must be lists of str", names.clone().unbind()))
        })?;
        let mut out = Vec::with_capacity(list.len());
        for item in list.iter() {
            let s = item.cast::<PyString>().map_err(|_| {
                InvalidInputError::new_err((
                    format!(
                        "topic names must be str, got {}",
                        item.repr().map(|r| r.to_string()).unwrap_or_default()
                    ),
                    item.clone().unbind(),
                ))
            })?;
            if let Some(&t) = self.0.get(s.to_str()?) {
                out.push(t);
            }
        }
        Ok(out)
    }
}

/// The assignor named `name` (any ASCII case).
fn assignor(name: &str) -> PyResult<Assignor> {
    Assignor::parse(name).ok_or_else(|| {
        UnknownStrategyError::new_err((
            format!("unknown assignor {name:?}: range, roundrobin, sticky, cooperative-sticky"),
            name.to_owned(),
        ))
    })
}

/// Core members from `(member_id, group_instance_id, topics: list[str], owned: list[(topic,
/// partition)] | None, generation)` tuples; names without metadata are skipped.
fn members_from(index: &TopicIndex, members: &Bound<'_, PyList>) -> PyResult<Vec<Member>> {
    let mut list = Vec::with_capacity(members.len());
    for item in members.iter() {
        let tuple = item.cast::<PyTuple>().map_err(|_| {
            InvalidInputError::new_err(("members must be tuples", item.clone().unbind()))
        })?;
        let member_id: String = tuple.get_item(0)?.extract()?;
        let group_instance_id: Option<String> = tuple.get_item(1)?.extract()?;
        let topics = index.resolve(&tuple.get_item(2)?)?;
        let mut owned = Vec::new();
        let owned_list = tuple.get_item(3)?;
        if !owned_list.is_none() {
            let owned_list = owned_list.cast::<PyList>().map_err(|_| {
                InvalidInputError::new_err((
                    "owned partitions must be a list",
                    owned_list.clone().unbind(),
                ))
            })?;
            for pair in owned_list.iter() {
                let (t, p): (Bound<'_, PyString>, i64) = pair.extract()?;
                if let (Some(&t), Ok(p)) = (index.0.get(t.to_str()?), u32::try_from(p)) {
                    owned.push((t, p));
                }
            }
        }
        let generation: Option<i32> = tuple.get_item(4)?.extract()?;
        list.push(Member {
            member_id,
            group_instance_id,
            topics,
            owned,
            generation,
        });
    }
    Ok(list)
}

/// Run assignor `name` over the extracted members, with the GIL released.
fn run(
    py: Python<'_>,
    name: &str,
    topics: Vec<(String, u32)>,
    members: &Bound<'_, PyList>,
) -> PyResult<(Cluster, Vec<Vec<TopicPartition>>)> {
    let which = assignor(name)?;
    let index = TopicIndex::new(&topics);
    let list = members_from(&index, members)?;
    let cluster = Cluster::new(topics);
    let lists = py.detach(|| which.assign(&cluster, &list));
    Ok((cluster, lists))
}

/// Python objects shared by every row of a result: one str per topic, one int per partition id
/// (created on first use), so a result holds no duplicate of either.
struct Atoms<'py> {
    topics: Vec<Bound<'py, PyString>>,
    ints: Vec<Option<Bound<'py, PyAny>>>,
}

impl<'py> Atoms<'py> {
    fn new(py: Python<'py>, cluster: &Cluster) -> Self {
        let n = cluster.len() as u32;
        let max = (0..n).map(|t| cluster.partitions(t)).max().unwrap_or(0);
        Atoms {
            topics: (0..n).map(|t| PyString::new(py, cluster.name(t))).collect(),
            ints: vec![None; max as usize],
        }
    }

    fn int(&mut self, py: Python<'py>, p: u32) -> PyResult<Bound<'py, PyAny>> {
        let i = p as usize;
        if i >= self.ints.len() {
            return Ok(p.into_pyobject(py)?.into_any());
        }
        if let Some(v) = &self.ints[i] {
            return Ok(v.clone());
        }
        let v = p.into_pyobject(py)?.into_any();
        self.ints[i] = Some(v.clone());
        Ok(v)
    }
}

/// Builds `TopicPartition` namedtuples without running their Python `__new__`:
/// `tuple.__new__(cls, (topic, partition))`, what the namedtuple's own `_make` does.
struct TopicPartitions<'py> {
    tuple_new: Bound<'py, PyAny>,
    cls: Bound<'py, PyAny>,
}

impl<'py> TopicPartitions<'py> {
    fn new(py: Python<'py>, cls: Bound<'py, PyAny>) -> PyResult<Self> {
        Ok(TopicPartitions {
            tuple_new: py.get_type::<PyTuple>().getattr(intern!(py, "__new__"))?,
            cls,
        })
    }

    fn make(
        &self,
        py: Python<'py>,
        topic: &Bound<'py, PyString>,
        partition: Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let pair = PyTuple::new(py, [topic.as_any().clone(), partition])?;
        self.tuple_new.call1((&self.cls, pair))
    }
}

/// Per member, its `cls(topic, partition)` list, sharing one str per topic and one int per id.
fn topic_partition_lists<'py>(
    py: Python<'py>,
    cluster: &Cluster,
    cls: Bound<'py, PyAny>,
    lists: &[Vec<TopicPartition>],
) -> PyResult<Bound<'py, PyList>> {
    let mut atoms = Atoms::new(py, cluster);
    let make = TopicPartitions::new(py, cls)?;
    let out = PyList::empty(py);
    for lst in lists {
        let row = PyList::empty(py);
        for &(t, p) in lst {
            let int = atoms.int(py, p)?;
            row.append(make.make(py, &atoms.topics[t as usize], int)?)?;
        }
        out.append(row)?;
    }
    Ok(out)
}

/// Modern assignor (`assignor(name).assign`). `members` as in [`members_from`]; `cls` is
/// `mqbalance.kafka.TopicPartition`. Returns, aligned with `members`, each member's list of
/// `cls(topic, partition)` in the core's order (topic name, then partition).
#[pyfunction]
pub fn kafka_assign<'py>(
    py: Python<'py>,
    name: &str,
    topics: Vec<(String, u32)>,
    members: &Bound<'py, PyList>,
    cls: Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyList>> {
    let (cluster, lists) = run(py, name, topics, members)?;
    topic_partition_lists(py, &cluster, cls, &lists)
}

/// What kafka-python's `ConsumerProtocolAssignment` carries, per member: `[(topic, (partition,
/// ...)), ...]`, topics in Python's `sorted` order (code points), partitions ascending. Aligned
/// with `members` (as in [`members_from`]); no per-partition object besides the int (shared).
/// The pairs and partition groups are tuples of atoms: they encode exactly like kafka-python's
/// lists, and the collector stops tracking them after one pass, so a large assignment does not
/// set off full collections.
#[pyfunction]
pub fn kafka_assign_grouped<'py>(
    py: Python<'py>,
    name: &str,
    topics: Vec<(String, u32)>,
    members: &Bound<'py, PyList>,
) -> PyResult<Bound<'py, PyList>> {
    let (cluster, mut lists) = run(py, name, topics, members)?;
    let n = cluster.len() as u32;
    // rank[t]: position of topic t in code-point order (what Python's `sorted` gives).
    let mut by_name: Vec<u32> = (0..n).collect();
    by_name.sort_unstable_by(|&a, &b| cluster.name(a).cmp(cluster.name(b)));
    let mut rank = vec![0u32; n as usize];
    for (r, &t) in by_name.iter().enumerate() {
        rank[t as usize] = r as u32;
    }
    let mut atoms = Atoms::new(py, &cluster);
    let out = PyList::empty(py);
    // A run of partition ids equal to the previous one reuses its (immutable) tuple: range and
    // roundrobin over identical subscriptions give a member the same ids in every topic.
    let mut prev: Option<(&[TopicPartition], Bound<'py, PyTuple>)> = None;
    for lst in &mut lists {
        let key = |&(t, p): &(u32, u32)| (rank[t as usize], p);
        if !lst.is_sorted_by_key(key) {
            lst.sort_unstable_by_key(key);
        }
    }
    for lst in &lists {
        let row = PyList::empty(py);
        for run in lst.chunk_by(|a, b| a.0 == b.0) {
            let t = run[0].0;
            let ps = match &prev {
                Some((r, ps))
                    if r.len() == run.len() && r.iter().zip(run).all(|(a, b)| a.1 == b.1) =>
                {
                    ps.clone()
                }
                _ => {
                    let ints = run
                        .iter()
                        .map(|&(_, p)| atoms.int(py, p))
                        .collect::<PyResult<Vec<_>>>()?;
                    let ps = PyTuple::new(py, ints)?;
                    prev = Some((run, ps.clone()));
                    ps
                }
            };
            row.append(PyTuple::new(
                py,
                [atoms.topics[t as usize].as_any().clone(), ps.into_any()],
            )?)?;
        }
        out.append(row)?;
    }
    Ok(out)
}

/// Columnar variant: members' topic-name lists, owned partitions as `(member, topic index,
/// partition)` columns, generations per member (`i64::MIN` = none). Returns the `(member, topic,
/// partition)` columns of the assignment.
#[pyfunction]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
pub fn kafka_assign_columns<'py>(
    py: Python<'py>,
    name: &str,
    topics: Vec<(String, u32)>,
    member_ids: Vec<String>,
    member_topics: &Bound<'py, PyList>,
    owned_member: PyReadonlyArray1<'py, u32>,
    owned_topic: PyReadonlyArray1<'py, u32>,
    owned_partition: PyReadonlyArray1<'py, u32>,
    generation: PyReadonlyArray1<'py, i64>,
) -> PyResult<(
    Bound<'py, PyArray1<u32>>,
    Bound<'py, PyArray1<u32>>,
    Bound<'py, PyArray1<u32>>,
)> {
    let index = TopicIndex::new(&topics);
    let cluster = Cluster::new(topics);
    let n = member_ids.len();
    if member_topics.len() != n {
        return Err(InvalidInputError::new_err((
            format!(
                "member_topics has {} entries for {n} members",
                member_topics.len()
            ),
            member_topics.len(),
        )));
    }
    let gens = generation.as_slice()?;
    if gens.len() != n {
        return Err(InvalidInputError::new_err((
            format!("generation has {} entries for {n} members", gens.len()),
            gens.len(),
        )));
    }
    let mut members: Vec<Member> = member_ids
        .into_iter()
        .map(|id| Member::new(&id, &[]))
        .collect();
    for (m, g) in members.iter_mut().zip(gens) {
        m.generation =
            (*g != i64::MIN).then(|| (*g).clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32);
    }
    for (m, names) in members.iter_mut().zip(member_topics.iter()) {
        m.topics = index.resolve(&names)?;
    }
    let (om, ot, op) = (
        owned_member.as_slice()?,
        owned_topic.as_slice()?,
        owned_partition.as_slice()?,
    );
    if om.len() != ot.len() || om.len() != op.len() {
        return Err(InvalidInputError::new_err((
            "owned columns must have equal lengths",
            om.len(),
        )));
    }
    for ((&m, &t), &p) in om.iter().zip(ot).zip(op) {
        members
            .get_mut(m as usize)
            .ok_or_else(|| {
                InvalidInputError::new_err((format!("member index {m} out of range"), m))
            })?
            .owned
            .push((t, p));
    }
    let which = assignor(name)?;
    let lists = py.detach(|| which.assign(&cluster, &members));
    let total: usize = lists.iter().map(Vec::len).sum();
    let (mut rm, mut rt, mut rp) = (
        Vec::with_capacity(total),
        Vec::with_capacity(total),
        Vec::with_capacity(total),
    );
    for (m, l) in lists.iter().enumerate() {
        for &(t, p) in l {
            rm.push(m as u32);
            rt.push(t);
            rp.push(p);
        }
    }
    Ok((
        rm.into_pyarray(py),
        rt.into_pyarray(py),
        rp.into_pyarray(py),
    ))
}

/// ZooKeeper-era assignor: for each of `threads` (thread ids, in the order wanted), its list of
/// `cls(topic, partition)`, topic by topic in `topics` order, partitions ascending.
#[pyfunction]
pub fn zk_assign<'py>(
    py: Python<'py>,
    name: &str,
    topics: Vec<(String, u32)>,
    consumers: Vec<(String, Vec<(u32, u32)>)>,
    threads: Vec<String>,
    cls: Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyList>> {
    let Some(which) = zk::ZkAssignor::parse(name) else {
        return Err(UnknownStrategyError::new_err((
            format!("unknown ZooKeeper-era assignor {name:?}: range, roundrobin"),
            name.to_owned(),
        )));
    };
    let consumers: Vec<zk::ZkConsumer> = consumers
        .into_iter()
        .map(|(consumer_id, subscription)| zk::ZkConsumer {
            consumer_id,
            subscription,
        })
        .collect();
    let cluster = Cluster::new(topics);
    let owners = py.detach(|| {
        let refs: Vec<&str> = (0..cluster.len() as u32).map(|t| cluster.name(t)).collect();
        let counts: Vec<u32> = (0..cluster.len() as u32)
            .map(|t| cluster.partitions(t))
            .collect();
        which.assign(&refs, &counts, &consumers)
    });
    let slot: FxHashMap<&str, usize> = threads
        .iter()
        .enumerate()
        .map(|(i, t)| (t.as_str(), i))
        .collect();
    let mut rows: Vec<Vec<TopicPartition>> = vec![Vec::new(); threads.len()];
    for (t, per_topic) in owners.iter().enumerate() {
        for (p, owner) in per_topic.iter().enumerate() {
            if let Some(owner) = owner {
                let i = *slot.get(owner.as_str()).ok_or_else(|| {
                    InvalidInputError::new_err((
                        format!("thread {owner:?} is not in the thread list"),
                        owner.clone(),
                    ))
                })?;
                rows[i].push((t as u32, p as u32));
            }
        }
    }
    topic_partition_lists(py, &cluster, cls, &rows)
}
