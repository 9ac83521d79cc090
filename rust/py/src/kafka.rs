//! Bindings of `mqbalance_core::assign` (Kafka assignors). Members arrive as tuples
//! `(member_id, group_instance_id, topic indices, owned (topic, partition) pairs, generation)`,
//! or, for large groups, as numpy columns.

use mqbalance_core::assign::{zk, Assignor, Cluster, Member};
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
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

/// Modern assignor. `members`: `(member_id, group_instance_id, topics: list[str], owned:
/// list[(topic, partition)], generation)`; names without metadata are skipped. Returns one
/// `[(topic index, partition), ...]` list per member.
#[pyfunction]
pub fn kafka_assign(
    py: Python<'_>,
    name: &str,
    topics: Vec<(String, u32)>,
    members: &Bound<'_, PyList>,
) -> PyResult<Vec<Vec<(u32, u32)>>> {
    let index = TopicIndex::new(&topics);
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
        let generation: Option<i32> = tuple.get_item(4)?.extract()?;
        list.push(Member {
            member_id,
            group_instance_id,
            topics,
            owned,
            generation,
        });
    }
    let cluster = Cluster::new(topics);
    let which = assignor(name)?;
    Ok(py.detach(|| which.assign(&cluster, &list)))
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

/// ZooKeeper-era assignor: `owners[t][p]` = owning thread id or None.
#[pyfunction]
pub fn zk_assign(
    py: Python<'_>,
    name: &str,
    topics: Vec<(String, u32)>,
    consumers: Vec<(String, Vec<(u32, u32)>)>,
) -> PyResult<Vec<Vec<Option<String>>>> {
    let (names, counts): (Vec<String>, Vec<u32>) = topics.into_iter().unzip();
    let consumers: Vec<zk::ZkConsumer> = consumers
        .into_iter()
        .map(|(consumer_id, subscription)| zk::ZkConsumer {
            consumer_id,
            subscription,
        })
        .collect();
    let Some(which) = zk::ZkAssignor::parse(name) else {
        return Err(UnknownStrategyError::new_err((
            format!("unknown ZooKeeper-era assignor {name:?}: range, roundrobin"),
            name.to_owned(),
        )));
    };
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    Ok(py.detach(|| which.assign(&refs, &counts, &consumers)))
}
