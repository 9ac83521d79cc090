//! Bindings of `mqbalance_core::assign` (Kafka assignors). Members arrive as tuples
//! `(member_id, group_instance_id, topic indices, owned (topic, partition) pairs, generation)`,
//! or, for large groups, as numpy columns.

use mqbalance_core::assign::{self, zk, Cluster, Member};
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;

use crate::errors::{InvalidInputError, UnknownStrategyError};

type MemberTuple = (String, Option<String>, Vec<u32>, Vec<(u32, u32)>, Option<i32>);

fn run(name: &str, cluster: &Cluster, members: &[Member]) -> PyResult<Vec<Vec<(u32, u32)>>> {
    Ok(match name {
        "range" => assign::range::assign(cluster, members),
        "roundrobin" => assign::roundrobin::assign(cluster, members),
        "sticky" => assign::sticky::assign(cluster, members, false),
        "cooperative-sticky" => assign::sticky::assign(cluster, members, true),
        _ => return Err(UnknownStrategyError::new_err((format!("unknown assignor {name:?}: range, roundrobin, sticky, cooperative-sticky"), name.to_owned()))),
    })
}

fn members_of(items: Vec<MemberTuple>) -> Vec<Member> {
    items
        .into_iter()
        .map(|(member_id, group_instance_id, topics, owned, generation)| Member { member_id, group_instance_id, topics, owned, generation })
        .collect()
}

/// Modern assignor over member tuples: one `[(topic, partition), ...]` list per member.
#[pyfunction]
pub fn kafka_assign(py: Python<'_>, name: &str, topics: Vec<(String, u32)>, members: Vec<MemberTuple>) -> PyResult<Vec<Vec<(u32, u32)>>> {
    let cluster = Cluster::new(topics);
    let members = members_of(members);
    py.detach(|| run(name, &cluster, &members))
}

/// Columnar variant: members' topics as `(member index, topic index)` pairs, owned partitions as
/// `(member, topic, partition)` columns, generations per member (`i64::MIN` = none). Returns the
/// `(member, topic, partition)` columns of the assignment.
#[pyfunction]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
pub fn kafka_assign_columns<'py>(
    py: Python<'py>,
    name: &str,
    topics: Vec<(String, u32)>,
    member_ids: Vec<String>,
    sub_member: PyReadonlyArray1<'py, u32>,
    sub_topic: PyReadonlyArray1<'py, u32>,
    owned_member: PyReadonlyArray1<'py, u32>,
    owned_topic: PyReadonlyArray1<'py, u32>,
    owned_partition: PyReadonlyArray1<'py, u32>,
    generation: PyReadonlyArray1<'py, i64>,
) -> PyResult<(Bound<'py, PyArray1<u32>>, Bound<'py, PyArray1<u32>>, Bound<'py, PyArray1<u32>>)> {
    let cluster = Cluster::new(topics);
    let n = member_ids.len();
    let gens = generation.as_slice()?;
    if gens.len() != n {
        return Err(InvalidInputError::new_err((format!("generation has {} entries for {n} members", gens.len()), gens.len())));
    }
    let mut members: Vec<Member> = member_ids.into_iter().map(|id| Member::new(&id, &[])).collect();
    for (m, g) in members.iter_mut().zip(gens) {
        m.generation = (*g != i64::MIN).then(|| (*g).clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32);
    }
    let (sm, st) = (sub_member.as_slice()?, sub_topic.as_slice()?);
    let (om, ot, op) = (owned_member.as_slice()?, owned_topic.as_slice()?, owned_partition.as_slice()?);
    if sm.len() != st.len() || om.len() != ot.len() || om.len() != op.len() {
        return Err(InvalidInputError::new_err(("subscription / owned columns must have equal lengths", sm.len())));
    }
    for (&m, &t) in sm.iter().zip(st) {
        members.get_mut(m as usize).ok_or_else(|| InvalidInputError::new_err((format!("member index {m} out of range"), m)))?.topics.push(t);
    }
    for ((&m, &t), &p) in om.iter().zip(ot).zip(op) {
        members.get_mut(m as usize).ok_or_else(|| InvalidInputError::new_err((format!("member index {m} out of range"), m)))?.owned.push((t, p));
    }
    let lists = py.detach(|| run(name, &cluster, &members))?;
    let total: usize = lists.iter().map(Vec::len).sum();
    let (mut rm, mut rt, mut rp) = (Vec::with_capacity(total), Vec::with_capacity(total), Vec::with_capacity(total));
    for (m, l) in lists.iter().enumerate() {
        for &(t, p) in l {
            rm.push(m as u32);
            rt.push(t);
            rp.push(p);
        }
    }
    Ok((rm.into_pyarray(py), rt.into_pyarray(py), rp.into_pyarray(py)))
}

/// ZooKeeper-era assignor: `owners[t][p]` = owning thread id or None.
#[pyfunction]
pub fn zk_assign(py: Python<'_>, name: &str, topics: Vec<(String, u32)>, consumers: Vec<(String, Vec<(u32, u32)>)>) -> PyResult<Vec<Vec<Option<String>>>> {
    let (names, counts): (Vec<String>, Vec<u32>) = topics.into_iter().unzip();
    let consumers: Vec<zk::ZkConsumer> = consumers.into_iter().map(|(consumer_id, subscription)| zk::ZkConsumer { consumer_id, subscription }).collect();
    match name {
        "range" => Ok(py.detach(|| zk::range(&counts, &consumers))),
        "roundrobin" => {
            let refs: Vec<&str> = names.iter().map(String::as_str).collect();
            Ok(py.detach(|| zk::roundrobin(&refs, &counts, &consumers)))
        }
        _ => Err(UnknownStrategyError::new_err((format!("unknown ZooKeeper-era assignor {name:?}: range, roundrobin"), name.to_owned()))),
    }
}
