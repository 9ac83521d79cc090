//! Bindings of `mqbalance_core::assign` (Kafka assignors). Members arrive as tuples
//! `(member_id, group_instance_id, topic indices, owned (topic, partition) pairs, generation)`,
//! or, for large groups, as numpy columns.

use mqbalance_core::assign::{user_data, zk, Assignor, Cluster, Member, TopicPartition};
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::basic::CompareOp;
use pyo3::exceptions::PyIndexError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyBytes, PyDict, PyList, PySlice, PyString, PyTuple, PyType};
use rustc_hash::FxHashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::errors::{ok, run, InvalidInputError, UnknownStrategyError};

/// Topic name → index, for resolving names without allocating. Remembers the last list it
/// resolved: members' lists usually repeat the previous one name for name, and comparing with the
/// name at the same position is cheaper than hashing.
struct TopicIndex(FxHashMap<String, u32>, Vec<(String, u32)>);

impl TopicIndex {
    fn new(topics: &[(String, u32)]) -> Self {
        TopicIndex(
            topics
                .iter()
                .enumerate()
                .map(|(i, (t, _))| (t.clone(), i as u32))
                .collect(),
            Vec::new(),
        )
    }

    /// Indices of the names in a list of str. Unknown names have no metadata and are skipped,
    /// unless `learn`: then they get the next index.
    fn resolve(&mut self, names: &Bound<'_, PyAny>, learn: bool) -> PyResult<Vec<u32>> {
        let list = names.cast::<PyList>().map_err(|_| {
            InvalidInputError::new_err(("topic lists must be lists of str", names.clone().unbind()))
        })?;
        let mut out = Vec::with_capacity(list.len());
        for (i, item) in list.iter().enumerate() {
            let s = item.cast::<PyString>().map_err(|_| {
                InvalidInputError::new_err((
                    format!(
                        "topic names must be str, got {}",
                        item.repr().map(|r| r.to_string()).unwrap_or_default()
                    ),
                    item.clone().unbind(),
                ))
            })?;
            let name = s.to_str()?;
            if let Some((last, t)) = self.1.get(i) {
                if last == name {
                    if *t != u32::MAX {
                        out.push(*t);
                    }
                    continue;
                }
            }
            let t = if let Some(&t) = self.0.get(name) {
                t
            } else if learn {
                let t = self.0.len() as u32;
                self.0.insert(name.to_owned(), t);
                t
            } else {
                u32::MAX
            };
            if t != u32::MAX {
                out.push(t);
            }
            if let Some(slot) = self.1.get_mut(i) {
                slot.0.clear();
                slot.0.push_str(name);
                slot.1 = t;
            } else {
                self.1.push((name.to_owned(), t));
            }
        }
        Ok(out)
    }
}

/// The assignor named `name` (any ASCII case).
fn assignor(name: &str) -> PyResult<Assignor> {
    Assignor::parse(name).ok_or_else(|| {
        let known: Vec<&str> = Assignor::ALL.iter().map(|a| a.name()).collect();
        UnknownStrategyError::new_err((
            format!("unknown assignor {name:?}: {}", known.join(", ")),
            name.to_owned(),
        ))
    })
}

/// Core members from `(member_id, group_instance_id, topics: list[str], owned, generation)`
/// tuples, where `owned` is `None`, a list of `(topic, partition)` or the bytes of Java
/// `StickyAssignor` userData (whose generation, if any, replaces `generation`). Names without
/// metadata are skipped; with `learn`, every subscribed name gets an index in `index` (owned
/// partitions of topics nobody subscribes to are still skipped).
fn members_from(
    index: &mut TopicIndex,
    learn: bool,
    members: &Bound<'_, PyList>,
) -> PyResult<Vec<Member>> {
    let mut list = Vec::with_capacity(members.len());
    let mut owned_values = Vec::with_capacity(members.len());
    for item in members.iter() {
        let tuple = item.cast::<PyTuple>().map_err(|_| {
            InvalidInputError::new_err(("members must be tuples", item.clone().unbind()))
        })?;
        let member_id: String = tuple.get_item(0)?.extract()?;
        let group_instance_id: Option<String> = tuple.get_item(1)?.extract()?;
        let topics = index.resolve(&tuple.get_item(2)?, learn)?;
        let generation: Option<i32> = tuple.get_item(4)?.extract()?;
        owned_values.push(tuple.get_item(3)?);
        list.push(Member {
            member_id,
            group_instance_id,
            topics,
            owned: Vec::new(),
            generation,
        });
    }
    for (member, value) in list.iter_mut().zip(owned_values) {
        if value.is_none() {
            continue;
        }
        if let Ok(bytes) = value.cast::<PyBytes>() {
            if let Some(data) = user_data::previous_assignment(bytes.as_bytes()) {
                member.generation = data.generation;
                for (t, p) in data.partitions {
                    if let (Some(&t), Ok(p)) = (index.0.get(t), u32::try_from(p)) {
                        member.owned.push((t, p));
                    }
                }
            }
            continue;
        }
        let owned_list = value.cast::<PyList>().map_err(|_| {
            InvalidInputError::new_err((
                "owned partitions must be a list or sticky userData bytes",
                value.clone().unbind(),
            ))
        })?;
        for pair in owned_list.iter() {
            let (t, p): (Bound<'_, PyString>, i64) = pair.extract()?;
            if let (Some(&t), Ok(p)) = (index.0.get(t.to_str()?), u32::try_from(p)) {
                member.owned.push((t, p));
            }
        }
    }
    Ok(list)
}

/// The cluster of the topics `index` learnt (Python's `sorted` order, which is byte order in
/// UTF-8), each with `partitions_for_topic(name)`'s size; topics for which it gives `None` or an
/// empty collection have no metadata and are dropped from `members`.
fn learnt_cluster(
    index: TopicIndex,
    partitions_for_topic: &Bound<'_, PyAny>,
    members: &mut [Member],
) -> PyResult<Cluster> {
    let mut names: Vec<(String, u32)> = index.0.into_iter().collect();
    names.sort_unstable();
    let mut code = vec![u32::MAX; names.len()];
    let mut topics = Vec::with_capacity(names.len());
    for (name, learnt) in names {
        let parts = partitions_for_topic.call1((name.as_str(),))?;
        let count = if parts.is_none() { 0 } else { parts.len()? };
        if count > 0 {
            code[learnt as usize] = topics.len() as u32;
            let count = u32::try_from(count).map_err(|_| {
                InvalidInputError::new_err((
                    format!("topic {name:?} has too many partitions"),
                    count,
                ))
            })?;
            topics.push((name, count));
        }
    }
    for m in members.iter_mut() {
        m.topics.retain_mut(|t| {
            *t = code[*t as usize];
            *t != u32::MAX
        });
        m.owned.retain_mut(|(t, _)| {
            *t = code[*t as usize];
            *t != u32::MAX
        });
    }
    Ok(Cluster::new(topics))
}

/// Run assignor `name` over the extracted members, with the GIL released.
fn assign_members(
    py: Python<'_>,
    name: &str,
    topics: Vec<(String, u32)>,
    members: &Bound<'_, PyList>,
) -> PyResult<(Cluster, Vec<Vec<TopicPartition>>)> {
    let which = assignor(name)?;
    let mut index = TopicIndex::new(&topics);
    let list = members_from(&mut index, false, members)?;
    let cluster = Cluster::new(topics);
    let lists = run(py, || ok(which.assign(&cluster, &list)))?;
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

/// `mqbalance.kafka.TopicPartition` and `tuple.__new__`, looked up once.
static TOPIC_PARTITION: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static TUPLE_NEW: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// Builds `TopicPartition` namedtuples without running their Python `__new__`:
/// `tuple.__new__(cls, (topic, partition))`, what the namedtuple's own `_make` does.
struct TopicPartitions<'py> {
    tuple_new: Bound<'py, PyAny>,
    cls: Bound<'py, PyAny>,
}

impl<'py> TopicPartitions<'py> {
    fn new(py: Python<'py>) -> PyResult<Self> {
        Ok(TopicPartitions {
            tuple_new: TUPLE_NEW
                .get_or_try_init(py, || {
                    py.get_type::<PyTuple>()
                        .getattr(intern!(py, "__new__"))
                        .map(Bound::unbind)
                })?
                .bind(py)
                .clone(),
            cls: TOPIC_PARTITION
                .import(py, "mqbalance.kafka", "TopicPartition")?
                .clone()
                .into_any(),
        })
    }

    fn make(
        &self,
        py: Python<'py>,
        topic: &Bound<'py, PyString>,
        partition: u32,
    ) -> PyResult<Bound<'py, PyAny>> {
        let pair = PyTuple::new(
            py,
            [
                topic.as_any().clone(),
                partition.into_pyobject(py)?.into_any(),
            ],
        )?;
        self.tuple_new.call1((&self.cls, pair))
    }
}

/// One member's partitions: an immutable sequence of `TopicPartition` (an assignor's result is
/// sorted by topic, then partition) that compares equal to a list or tuple of the same items.
/// Compact: one object per member, topic names shared by every list of a result, each
/// `TopicPartition` made when it is read, so a 100k-partition assignment does not fill the heap
/// with 100k objects the garbage collector has to scan. `tolist()` gives a plain list, `by_topic()`
/// the `{topic: [partition, ...]}` grouping a `ConsumerProtocolAssignment` carries.
///
/// >>> tps = TopicPartitionList([("t0", 0), ("t0", 1), ("t1", 0)])
/// >>> len(tps), tps[-1], tps == [("t0", 0), ("t0", 1), ("t1", 0)]
/// (3, TopicPartition(topic='t1', partition=0), True)
/// >>> tps.by_topic()
/// {'t0': [0, 1], 't1': [0]}
#[pyclass(
    frozen,
    sequence,
    name = "TopicPartitionList",
    module = "mqbalance.kafka"
)]
pub struct TopicPartitionList {
    topics: Arc<[Py<PyString>]>,
    items: Box<[TopicPartition]>,
}

impl TopicPartitionList {
    fn topic<'py>(&self, py: Python<'py>, t: u32) -> &Bound<'py, PyString> {
        self.topics[t as usize].bind(py)
    }

    fn item<'py>(&self, make: &TopicPartitions<'py>, i: usize) -> PyResult<Bound<'py, PyAny>> {
        let py = make.cls.py();
        let (t, p) = self.items[i];
        make.make(py, self.topic(py, t), p)
    }

    /// Whether item `i` equals `other` (a `TopicPartition`, or any `(topic, partition)` pair).
    fn item_eq(&self, py: Python<'_>, i: usize, other: &Bound<'_, PyAny>) -> PyResult<bool> {
        let Ok(pair) = other.cast::<PyTuple>() else {
            return Ok(false);
        };
        if pair.len() != 2 {
            return Ok(false);
        }
        let (t, p) = self.items[i];
        Ok(pair.get_item(0)?.eq(self.topic(py, t))? && pair.get_item(1)?.eq(p)?)
    }
}

#[pymethods]
impl TopicPartitionList {
    /// From `(topic, partition)` pairs, kept in the order given.
    #[new]
    fn py_new(py: Python<'_>, items: &Bound<'_, PyAny>) -> PyResult<Self> {
        let mut index: FxHashMap<String, u32> = FxHashMap::default();
        let mut topics: Vec<Py<PyString>> = Vec::new();
        let mut out = Vec::new();
        for item in items.try_iter()? {
            let item = item?;
            let (t, p): (Bound<'_, PyString>, i64) = item.extract().map_err(|_| {
                InvalidInputError::new_err((
                    format!(
                        "a TopicPartitionList holds (topic: str, partition: int) pairs, got {}",
                        item.repr().map(|r| r.to_string()).unwrap_or_default()
                    ),
                    item.clone().unbind(),
                ))
            })?;
            let p = u32::try_from(p).map_err(|_| {
                InvalidInputError::new_err((format!("partition must be >= 0, got {p}"), p))
            })?;
            let name = t.to_str()?;
            let code = if let Some(&c) = index.get(name) {
                c
            } else {
                index.insert(name.to_owned(), topics.len() as u32);
                topics.push(t.clone().unbind());
                (topics.len() - 1) as u32
            };
            out.push((code, p));
        }
        let _ = py;
        Ok(TopicPartitionList {
            topics: topics.into(),
            items: out.into_boxed_slice(),
        })
    }

    fn __len__(&self) -> usize {
        self.items.len()
    }

    fn __getitem__<'py>(
        &self,
        py: Python<'py>,
        index: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if let Ok(slice) = index.cast::<PySlice>() {
            let ind = slice.indices(self.items.len() as isize)?;
            let mut items = Vec::with_capacity(ind.slicelength);
            let mut k = ind.start;
            for _ in 0..ind.slicelength {
                items.push(self.items[k as usize]);
                k += ind.step;
            }
            let sub = TopicPartitionList {
                topics: Arc::clone(&self.topics),
                items: items.into_boxed_slice(),
            };
            return Ok(Bound::new(py, sub)?.into_any());
        }
        let i: isize = index.extract()?;
        let n = self.items.len() as isize;
        let k = if i < 0 { i + n } else { i };
        if !(0..n).contains(&k) {
            return Err(PyIndexError::new_err(
                "TopicPartitionList index out of range",
            ));
        }
        self.item(&TopicPartitions::new(py)?, k as usize)
    }

    fn __iter__(slf: Bound<'_, Self>) -> TopicPartitionIter {
        TopicPartitionIter {
            list: slf.unbind(),
            next: AtomicUsize::new(0),
        }
    }

    fn __contains__(&self, py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<bool> {
        for i in 0..self.items.len() {
            if self.item_eq(py, i, value)? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Equal to another `TopicPartitionList`, a list or a tuple holding equal items in the same
    /// order (so `result["C0"] == [TopicPartition("t", 0)]` reads as it did for lists).
    fn __richcmp__(
        &self,
        py: Python<'_>,
        other: &Bound<'_, PyAny>,
        op: CompareOp,
    ) -> PyResult<Py<PyAny>> {
        let eq =
            match op {
                CompareOp::Eq | CompareOp::Ne => {
                    if let Ok(o) = other.cast::<TopicPartitionList>() {
                        let o = o.get();
                        self.items.len() == o.items.len()
                            && self.items.iter().zip(o.items.iter()).all(
                                |(&(ta, pa), &(tb, pb))| {
                                    pa == pb
                                        && self.topics[ta as usize].bind(py).to_str().ok()
                                            == o.topics[tb as usize].bind(py).to_str().ok()
                                },
                            )
                    } else if other.is_instance_of::<PyList>()
                        || other.is_exact_instance_of::<PyTuple>()
                    {
                        if other.len()? == self.items.len() {
                            let mut all = true;
                            for (i, v) in other.try_iter()?.enumerate() {
                                if !self.item_eq(py, i, &v?)? {
                                    all = false;
                                    break;
                                }
                            }
                            all
                        } else {
                            false
                        }
                    } else {
                        return Ok(py.NotImplemented());
                    }
                }
                _ => return Ok(py.NotImplemented()),
            };
        Ok(
            PyBool::new(py, if matches!(op, CompareOp::Eq) { eq } else { !eq })
                .to_owned()
                .into_any()
                .unbind(),
        )
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!("TopicPartitionList({})", self.tolist(py)?.repr()?))
    }

    /// The items as a `list` of `TopicPartition` (what `assign` returned before this type).
    fn tolist<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let make = TopicPartitions::new(py)?;
        let out = PyList::empty(py);
        for i in 0..self.items.len() {
            out.append(self.item(&make, i)?)?;
        }
        Ok(out)
    }

    /// `{topic: [partition, ...]}` in the list's order: what a `ConsumerProtocolAssignment` carries.
    fn by_topic<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let out = PyDict::new(py);
        for run in self.items.chunk_by(|a, b| a.0 == b.0) {
            let topic = self.topic(py, run[0].0);
            let ids = if let Some(l) = out.get_item(topic)? {
                l.cast_into::<PyList>()?
            } else {
                let l = PyList::empty(py);
                out.set_item(topic, &l)?;
                l
            };
            for &(_, p) in run {
                ids.append(p)?;
            }
        }
        Ok(out)
    }

    /// Pickles as the class applied to its `(topic, partition)` pairs.
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> (Bound<'py, PyAny>, (Vec<Pair>,)) {
        let py = slf.py();
        let this = slf.get();
        let pairs = this
            .items
            .iter()
            .map(|&(t, p)| (this.topics[t as usize].clone_ref(py), p))
            .collect();
        (slf.get_type().into_any(), (pairs,))
    }
}

/// A `(topic, partition)` pair as pickled.
type Pair = (Py<PyString>, u32);

/// Iterator over a [`TopicPartitionList`], making each `TopicPartition` as it is reached.
#[pyclass(
    frozen,
    name = "TopicPartitionListIterator",
    module = "mqbalance.kafka"
)]
pub struct TopicPartitionIter {
    list: Py<TopicPartitionList>,
    next: AtomicUsize,
}

#[pymethods]
impl TopicPartitionIter {
    fn __iter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let list = self.list.get();
        let i = self.next.fetch_add(1, Ordering::Relaxed);
        if i >= list.items.len() {
            self.next.store(list.items.len(), Ordering::Relaxed);
            return Ok(None);
        }
        let (t, p) = list.items[i];
        let make = TopicPartitions::new(py)?;
        make.make(py, list.topic(py, t), p).map(Some)
    }
}

/// One `TopicPartitionList` per member of `lists`, sharing one str per topic.
fn topic_partition_lists<'py>(
    py: Python<'py>,
    cluster: &Cluster,
    lists: Vec<Vec<TopicPartition>>,
) -> PyResult<Bound<'py, PyList>> {
    let topics: Arc<[Py<PyString>]> = (0..cluster.len() as u32)
        .map(|t| PyString::new(py, cluster.name(t)).unbind())
        .collect();
    let out = PyList::empty(py);
    for items in lists {
        let list = TopicPartitionList {
            topics: Arc::clone(&topics),
            items: items.into_boxed_slice(),
        };
        out.append(Bound::new(py, list)?)?;
    }
    Ok(out)
}

/// Modern assignor (`assignor(name).assign`). `members` as in [`members_from`]. Returns, aligned
/// with `members`, each member's [`TopicPartitionList`] in the core's order (topic name, then
/// partition).
#[pyfunction]
pub fn kafka_assign<'py>(
    py: Python<'py>,
    name: &str,
    topics: Vec<(String, u32)>,
    members: &Bound<'py, PyList>,
) -> PyResult<Bound<'py, PyList>> {
    let (cluster, lists) = assign_members(py, name, topics, members)?;
    topic_partition_lists(py, &cluster, lists)
}

/// What kafka-python's `ConsumerProtocolAssignment` carries, per member: `[(topic, (partition,
/// ...)), ...]`, topics in Python's `sorted` order (code points), partitions ascending. `topics`
/// is a list of `(name, partition count)` or kafka-python's `ClusterMetadata.partitions_for_topic`
/// (asked once per distinct subscribed topic). Aligned with `members` (as in [`members_from`]); no
/// per-partition object besides the int (shared). Plain data: the caller (Python) makes the
/// kafka-python objects. The pairs and partition groups are tuples of atoms: they encode exactly
/// like kafka-python's lists, and the collector stops tracking them after one pass, so a large
/// assignment does not set off full collections.
#[pyfunction]
pub fn kafka_assign_grouped<'py>(
    py: Python<'py>,
    name: &str,
    topics: &Bound<'py, PyAny>,
    members: &Bound<'py, PyList>,
) -> PyResult<Bound<'py, PyList>> {
    let (cluster, mut lists) = if topics.is_callable() {
        let which = assignor(name)?;
        let mut index = TopicIndex(FxHashMap::default(), Vec::new());
        let mut list = members_from(&mut index, true, members)?;
        let cluster = learnt_cluster(index, topics, &mut list)?;
        let lists = run(py, || ok(which.assign(&cluster, &list)))?;
        (cluster, lists)
    } else {
        assign_members(py, name, topics.extract()?, members)?
    };
    let n = cluster.len() as u32;
    // rank[t]: position of topic t in code-point order (what Python's `sorted` gives).
    let mut by_name: Vec<u32> = (0..n).collect();
    by_name.sort_unstable_by(|&a, &b| cluster.name(a).cmp(cluster.name(b)));
    let mut rank = vec![0u32; n as usize];
    for (r, &t) in by_name.iter().enumerate() {
        rank[t as usize] = r as u32;
    }
    let mut atoms = Atoms::new(py, &cluster);
    for lst in &mut lists {
        let key = |&(t, p): &(u32, u32)| (rank[t as usize], p);
        if !lst.is_sorted_by_key(key) {
            lst.sort_unstable_by_key(key);
        }
    }
    // One (immutable) tuple per distinct run of partition ids: range and roundrobin over
    // identical subscriptions give a member the same ids in every topic, sticky spreads single
    // partitions, so most runs repeat one seen before.
    // Runs of one partition (the common case with many members) are looked up by partition.
    let mut groups: FxHashMap<Vec<u32>, Bound<'py, PyTuple>> = FxHashMap::default();
    let mut singles: Vec<Option<Bound<'py, PyTuple>>> = vec![None; atoms.ints.len()];
    let mut ids: Vec<u32> = Vec::new();
    let mut rows: Vec<Bound<'py, PyList>> = Vec::with_capacity(lists.len());
    let mut row: Vec<Bound<'py, PyTuple>> = Vec::new();
    for lst in &lists {
        row.clear();
        for run in lst.chunk_by(|a, b| a.0 == b.0) {
            let single = match run {
                [(_, p)] => singles.get(*p as usize).and_then(Option::as_ref),
                _ => None,
            };
            if let Some(ps) = single {
                let t = run[0].0;
                row.push(PyTuple::new(
                    py,
                    [atoms.topics[t as usize].as_any(), ps.as_any()],
                )?);
                continue;
            }
            ids.clear();
            ids.extend(run.iter().map(|&(_, p)| p));
            let ps = if let Some(ps) = groups.get(ids.as_slice()) {
                ps.clone()
            } else {
                let ints = ids
                    .iter()
                    .map(|&p| atoms.int(py, p))
                    .collect::<PyResult<Vec<_>>>()?;
                let ps = PyTuple::new(py, ints)?;
                match singles.get_mut(ids[0] as usize) {
                    Some(slot) if ids.len() == 1 => *slot = Some(ps.clone()),
                    _ => {
                        groups.insert(ids.clone(), ps.clone());
                    }
                }
                ps
            };
            let t = run[0].0;
            row.push(PyTuple::new(
                py,
                [atoms.topics[t as usize].as_any(), ps.as_any()],
            )?);
        }
        rows.push(PyList::new(py, row.drain(..))?);
    }
    PyList::new(py, rows)
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
    let mut index = TopicIndex::new(&topics);
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
        m.topics = index.resolve(&names, false)?;
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
    let lists = run(py, || ok(which.assign(&cluster, &members)))?;
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

/// ZooKeeper-era assignor: for each of `threads` (thread ids, in the order wanted), its
/// [`TopicPartitionList`], topic by topic in `topics` order, partitions ascending.
#[pyfunction]
pub fn zk_assign<'py>(
    py: Python<'py>,
    name: &str,
    topics: Vec<(String, u32)>,
    consumers: Vec<(String, Vec<(u32, u32)>)>,
    threads: Vec<String>,
) -> PyResult<Bound<'py, PyList>> {
    let Some(which) = zk::ZkAssignor::parse(name) else {
        let known: Vec<&str> = zk::ZkAssignor::ALL.iter().map(|a| a.name()).collect();
        return Err(UnknownStrategyError::new_err((
            format!(
                "unknown ZooKeeper-era assignor {name:?}: {}",
                known.join(", ")
            ),
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
    let owners = run(py, || {
        let refs: Vec<&str> = (0..cluster.len() as u32).map(|t| cluster.name(t)).collect();
        let counts: Vec<u32> = (0..cluster.len() as u32)
            .map(|t| cluster.partitions(t))
            .collect();
        ok(which.assign(&refs, &counts, &consumers))
    })?;
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
    topic_partition_lists(py, &cluster, rows)
}

/// Java `StickyAssignor` userData (v1) for the `(topics[i], partitions[i])` pairs and a
/// generation.
#[pyfunction]
pub fn sticky_user_data_encode<'py>(
    py: Python<'py>,
    topics: Vec<Bound<'py, PyString>>,
    partitions: Vec<i32>,
    generation: Option<i32>,
) -> PyResult<Bound<'py, PyBytes>> {
    if topics.len() != partitions.len() {
        return Err(InvalidInputError::new_err((
            format!(
                "{} topics for {} partitions",
                topics.len(),
                partitions.len()
            ),
            partitions.len(),
        )));
    }
    let pairs = topics
        .iter()
        .zip(partitions)
        .map(|(t, p)| Ok((t.to_str()?, p)))
        .collect::<PyResult<Vec<_>>>()?;
    let data = run(py, || user_data::encode(pairs.iter().copied(), generation))?;
    Ok(PyBytes::new(py, &data))
}

/// `(partitions, generation)` of Java `StickyAssignor` userData (v1, else v0), or `None` when the
/// bytes are neither. The pairs of one topic share its `str`.
#[pyfunction]
pub fn sticky_user_data_decode<'py>(
    py: Python<'py>,
    data: &[u8],
) -> PyResult<Option<(Bound<'py, PyList>, Option<i32>)>> {
    let Some(d) = run(py, || ok(user_data::previous_assignment(data)))? else {
        return Ok(None);
    };
    let out = PyList::empty(py);
    for same in d.partitions.chunk_by(|a, b| std::ptr::eq(a.0, b.0)) {
        let topic = PyString::new(py, same[0].0);
        for &(_, p) in same {
            out.append((&topic, p))?;
        }
    }
    Ok(Some((out, d.generation)))
}

/// Adds the Kafka bindings to `_core`, with the assignor names of the core's registry
/// (`Assignor::ALL`, `ZkAssignor::ALL`): the one list Python reads them from.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    let sticky: Vec<&str> = Assignor::ALL
        .into_iter()
        .filter(|a| a.reads_previous())
        .map(Assignor::name)
        .collect();
    m.add_class::<TopicPartitionList>()?;
    m.add_class::<TopicPartitionIter>()?;
    m.add_function(wrap_pyfunction!(kafka_assign, m)?)?;
    m.add_function(wrap_pyfunction!(kafka_assign_grouped, m)?)?;
    m.add_function(wrap_pyfunction!(kafka_assign_columns, m)?)?;
    m.add_function(wrap_pyfunction!(zk_assign, m)?)?;
    m.add_function(wrap_pyfunction!(sticky_user_data_encode, m)?)?;
    m.add_function(wrap_pyfunction!(sticky_user_data_decode, m)?)?;
    m.add(
        "STICKY_USER_DATA_MAX_TOPIC_BYTES",
        user_data::MAX_TOPIC_BYTES,
    )?;
    m.add(
        "KAFKA_ASSIGNORS",
        PyTuple::new(py, Assignor::ALL.map(Assignor::name))?,
    )?;
    m.add("KAFKA_STICKY_ASSIGNORS", PyTuple::new(py, sticky)?)?;
    m.add(
        "ZK_ASSIGNORS",
        PyTuple::new(py, zk::ZkAssignor::ALL.map(zk::ZkAssignor::name))?,
    )?;
    Ok(())
}
