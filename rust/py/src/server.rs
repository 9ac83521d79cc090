//! Bindings of `mqbalance_core::assign::server` (the broker-side KIP-848 assignors): a dict API
//! shaped like the coordinator's records, and a columnar one for large groups. Inputs are
//! extracted with the GIL held; the assignor runs with it released ([`run`]).

use mqbalance_core::assign::server::{
    self, CurrentTable, GroupColumns, KafkaRelease, MemberIds, Owners, ServerAssignor, ServerGroup,
    ServerMember, ServerTopic, Uuid,
};
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};
use rustc_hash::{FxHashMap, FxHashSet};
use std::ops::Range;
use std::sync::Arc;

use crate::errors::{ok, run, InvalidInputError, UnknownStrategyError};

/// The broker-side assignors' names, from the core's registry (`ServerAssignor::ALL`).
pub fn names() -> Vec<&'static str> {
    ServerAssignor::ALL.map(ServerAssignor::name).to_vec()
}

fn assignor(name: &str) -> PyResult<ServerAssignor> {
    ServerAssignor::parse(name).ok_or_else(|| {
        let known: Vec<String> = names().iter().map(|n| format!("{n:?}")).collect();
        UnknownStrategyError::new_err((
            format!(
                "no broker-side assignor named {name:?}: use {}",
                known.join(" or ")
            ),
            name.to_owned(),
        ))
    })
}

fn repr(v: &Bound<'_, PyAny>) -> String {
    v.repr().map(|r| r.to_string()).unwrap_or_default()
}

/// The Kafka release whose assignor code to follow (`"4.1"`, `"4.0.2"`, ...).
fn release(text: &str) -> PyResult<KafkaRelease> {
    KafkaRelease::parse(text).ok_or_else(|| {
        InvalidInputError::new_err((
            format!(
                "kafka_version must be a Kafka release such as \"4.1\" or \"4.0.2\", got {text:?}"
            ),
            text.to_owned(),
        ))
    })
}

fn bad(msg: String, value: &Bound<'_, PyAny>) -> PyErr {
    InvalidInputError::new_err((msg, value.clone().unbind()))
}

/// Topic id string → index in the group's topic table.
#[derive(Default)]
struct Topics {
    index: FxHashMap<String, u32>,
    names: Vec<Py<PyString>>,
    table: Vec<ServerTopic>,
    /// str objects already resolved, by address; each is kept alive in `alive`, so an address
    /// cannot be reused by another string during the call.
    by_object: FxHashMap<usize, u32>,
    alive: Vec<Py<PyAny>>,
}

impl Topics {
    fn intern(&mut self, item: &Bound<'_, PyAny>, count: Option<u32>) -> PyResult<u32> {
        if let Some(&t) = self.by_object.get(&(item.as_ptr() as usize)) {
            return Ok(t);
        }
        let t = self.intern_str(item, count)?;
        self.by_object.insert(item.as_ptr() as usize, t);
        self.alive.push(item.clone().unbind());
        Ok(t)
    }

    fn intern_str(&mut self, item: &Bound<'_, PyAny>, count: Option<u32>) -> PyResult<u32> {
        let s = topic_str(item)?;
        let text = s.to_str()?;
        if let Some(&t) = self.index.get(text) {
            return Ok(t);
        }
        let id = topic_uuid(item, text)?;
        let t = self.table.len() as u32;
        self.index.insert(text.to_owned(), t);
        self.names.push(s.clone().unbind());
        self.table.push(ServerTopic {
            id,
            partitions: count,
        });
        Ok(t)
    }
}

/// A topic id as a `str` whose text is valid Unicode.
fn topic_str<'a, 'py>(item: &'a Bound<'py, PyAny>) -> PyResult<&'a Bound<'py, PyString>> {
    let s = item
        .cast::<PyString>()
        .map_err(|_| bad(format!("topic ids must be str, got {}", repr(item)), item))?;
    s.to_str().map_err(|_| {
        bad(
            format!("topic id {} is not valid Unicode", repr(item)),
            item,
        )
    })?;
    Ok(s)
}

/// A topic id's text parsed (Kafka's base64url form: one text per id).
fn topic_uuid(item: &Bound<'_, PyAny>, text: &str) -> PyResult<Uuid> {
    Uuid::parse(text).ok_or_else(|| {
        bad(
            format!(
                "malformed topic id {text:?}: expected Kafka's 22-character base64url Uuid form"
            ),
            item,
        )
    })
}

/// A partition count: a Java int, not negative.
fn count_of(n: i64, v: &Bound<'_, PyAny>) -> PyResult<u32> {
    i32::try_from(n)
        .ok()
        .and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| bad(format!("partition count {n} is negative or too large"), v))
}

fn partition_count(v: &Bound<'_, PyAny>) -> PyResult<u32> {
    let n: i64 = v
        .extract()
        .map_err(|_| bad(format!("partition counts must be int, got {}", repr(v)), v))?;
    count_of(n, v)
}

fn field<'py>(
    item: &Bound<'py, PyAny>,
    name: &Bound<'py, PyString>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let v = if let Ok(d) = item.cast::<PyDict>() {
        d.get_item(name)?
    } else {
        item.getattr_opt(name)?
    };
    Ok(v.filter(|v| !v.is_none()))
}

/// One partition of a current assignment: a Java int, not negative.
fn partition(p: &Bound<'_, PyAny>) -> PyResult<u32> {
    let v: i64 = p
        .extract()
        .map_err(|_| bad("partitions must be int".into(), p))?;
    u32::try_from(v).map_err(|_| bad(format!("negative partition {v}"), p))
}

/// A `[topic_id, [partition, ...]]` entry: lists and tuples read directly, anything else of
/// length 2 through the sequence protocol.
fn current_entry<'py>(
    pair: &Bound<'py, PyAny>,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    let entry = || {
        bad(
            "current_assignment entries must be [topic_id, [partition, ...]]".into(),
            pair,
        )
    };
    if let Ok(l) = pair.cast::<PyList>() {
        if l.len() != 2 {
            return Err(entry());
        }
        return Ok((l.get_item(0)?, l.get_item(1)?));
    }
    if let Ok(t) = pair.cast::<PyTuple>() {
        if t.len() != 2 {
            return Err(entry());
        }
        return Ok((t.get_item(0)?, t.get_item(1)?));
    }
    if pair.is_instance_of::<PyString>() || pair.len().ok() != Some(2) {
        return Err(entry());
    }
    Ok((
        pair.get_item(0).map_err(|_| entry())?,
        pair.get_item(1).map_err(|_| entry())?,
    ))
}

/// What [`member`] gathers for the whole group besides each member.
#[derive(Default)]
struct Read {
    /// Each member's id as a Python key for the result.
    keys: Vec<Py<PyAny>>,
    ids: MemberIds,
    current: CurrentTable,
}

/// A member's id as given, and as a Python key for the result: the caller's own `str` object
/// when it is exactly a `str` (its hash is already computed), else a new one.
fn member(
    py: Python<'_>,
    item: &Bound<'_, PyAny>,
    topics: &mut Topics,
    previous: &mut Previous,
    with_current: bool,
    out: &mut Read,
) -> PyResult<ServerMember> {
    let Read {
        keys,
        ids,
        current: table,
    } = out;
    let id_object = field(item, intern!(py, "member_id"))?
        .ok_or_else(|| bad(format!("member {} has no member_id", repr(item)), item))?;
    let id_str = id_object
        .cast::<PyString>()
        .map_err(|_| bad("member_id must be str".into(), item))?;
    let member_id = id_str
        .to_str()
        .map_err(|_| bad("member_id must be str".into(), item))?;
    ids.push(member_id);
    keys.push(if id_object.is_exact_instance_of::<PyString>() {
        id_object.clone().unbind()
    } else {
        PyString::new(py, member_id).into_any().unbind()
    });
    let instance_id: Option<String> = match field(item, intern!(py, "instance_id"))? {
        Some(v) => Some(
            v.extract()
                .map_err(|_| bad("instance_id must be str or None".into(), &v))?,
        ),
        None => None,
    };
    let subscribed = match field(item, intern!(py, "subscribed_topic_ids"))? {
        Some(subs) => previous.resolve(&subs, topics)?,
        None => previous.resolve_empty(),
    };
    let first = table.len();
    let cur = if with_current {
        field(item, intern!(py, "current_assignment"))?
    } else {
        None
    };
    if let Some(cur) = cur {
        let mut read = |pair: &Bound<'_, PyAny>| -> PyResult<()> {
            let (t, parts) = current_entry(pair)?;
            table.push_entry(topics.intern(&t, None)?);
            if let Ok(l) = parts.cast::<PyList>() {
                for p in l.iter() {
                    table.push_partition(partition(&p)?);
                }
            } else {
                for p in parts.try_iter()? {
                    table.push_partition(partition(&p?)?);
                }
            }
            Ok(())
        };
        if let Ok(l) = cur.cast::<PyList>() {
            for pair in l.iter() {
                read(&pair)?;
            }
        } else {
            let pairs: Vec<Bound<'_, PyAny>> = if let Ok(d) = cur.cast::<PyDict>() {
                d.items().iter().collect()
            } else {
                cur.try_iter()?.collect::<PyResult<_>>()?
            };
            for pair in &pairs {
                read(pair)?;
            }
        }
    }
    Ok(ServerMember {
        instance_id,
        subscribed,
        current: first..table.len(),
    })
}

/// The previous member's subscription: a member whose subscription is a list equal to the
/// previous member's list (compared by Python, identity first) shares its parsed ids.
#[derive(Default)]
struct Previous {
    list: Option<(Py<PyAny>, Arc<[u32]>)>,
}

impl Previous {
    fn resolve(&mut self, subs: &Bound<'_, PyAny>, topics: &mut Topics) -> PyResult<Arc<[u32]>> {
        let is_list = subs.is_exact_instance_of::<PyList>();
        if let (true, Some((prev, parsed))) = (is_list, &self.list) {
            if subs.is(prev) || subs.eq(prev)? {
                return Ok(Arc::clone(parsed));
            }
        }
        let parsed: Arc<[u32]> = subs
            .try_iter()?
            .map(|t| topics.intern(&t?, None))
            .collect::<PyResult<Vec<u32>>>()?
            .into();
        self.list = is_list.then(|| (subs.clone().unbind(), Arc::clone(&parsed)));
        Ok(parsed)
    }

    fn resolve_empty(&mut self) -> Arc<[u32]> {
        self.list = None;
        Arc::from(Vec::new())
    }
}

/// `server_assign(name, members, topics, kafka_version)`: `{member_id: {topic_id: [partitions]}}`
/// (every member, `{}` for none; partitions ascending).
#[pyfunction]
pub fn server_assign<'py>(
    py: Python<'py>,
    name: &str,
    members: &Bound<'py, PyAny>,
    topics: &Bound<'py, PyAny>,
    kafka_version: &str,
) -> PyResult<Bound<'py, PyDict>> {
    let a = assignor(name)?;
    let kafka = release(kafka_version)?;
    let mut table = Topics::default();
    let topic_map = topics.cast::<PyDict>().map_err(|_| {
        bad(
            "topics must be a dict {topic_id: partition count}".into(),
            topics,
        )
    })?;
    let mut total = 0usize;
    for (k, v) in topic_map.iter() {
        let count = partition_count(&v)?;
        total = total.saturating_add(count as usize);
        table.intern(&k, Some(count))?;
    }
    // Sized once: grown push by push, the tables are copied and their fresh pages faulted in
    // at every doubling (a tenth of a 10,000-member call). A valid current assignment holds each
    // partition at most once.
    let n = members.len().unwrap_or(0);
    let with_current = a == ServerAssignor::Uniform;
    let mut list = Vec::with_capacity(n);
    let mut read = Read {
        keys: Vec::with_capacity(n),
        ids: MemberIds::with_capacity(n, n.saturating_mul(16)),
        current: if with_current {
            CurrentTable::with_capacity(n, total.min(MAX_RESERVED_PARTITIONS))
        } else {
            CurrentTable::default()
        },
    };
    let mut previous = Previous::default();
    // `range` does not read the current assignment: it is neither extracted nor checked.
    let mut one = |item: &Bound<'py, PyAny>| -> PyResult<()> {
        list.push(member(
            py,
            item,
            &mut table,
            &mut previous,
            with_current,
            &mut read,
        )?);
        Ok(())
    };
    if let Ok(l) = members.cast::<PyList>() {
        for item in l.iter() {
            one(&item)?;
        }
    } else {
        for item in members.try_iter()? {
            one(&item?)?;
        }
    }
    let group = ServerGroup {
        topics: table.table,
        member_ids: read.ids,
        members: list,
        current: read.current,
    };
    // A homogeneous group whose members share one list, with a valid current assignment: the
    // fused path (it declines anything else, which the general path below answers or refuses).
    // Its answer stands once the ids are unique (else the general path refuses the duplicate).
    let fused = if with_current {
        run(py, || ok(server::uniform_homogeneous_group(&group, kafka)))?
    } else {
        None
    };
    if let Some(flat) = fused {
        if unique_keys(py, &read.keys)? {
            let mut rest = &flat[..];
            let rows: Vec<&[i32]> = group
                .topics
                .iter()
                .map(|t| {
                    let (row, tail) = rest.split_at(t.partitions.unwrap_or(0) as usize);
                    rest = tail;
                    row
                })
                .collect();
            return result(py, &rows, &table.names, &read.keys);
        }
    }
    let owners = run(py, || server::assign(a, &group, kafka))?;
    drop(group);
    let rows: Vec<&[i32]> = owners.iter().map(Vec::as_slice).collect();
    result(py, &rows, &table.names, &read.keys)
}

/// At most this many current partitions are reserved before reading (the metadata's count can
/// be far more than any member holds).
const MAX_RESERVED_PARTITIONS: usize = 1 << 24;

/// Partition numbers below this share one `int` object each in a dict result.
const SHARED_INTS: usize = 1 << 20;

/// `{member: {topic: [partitions ascending]}}` from the owners: topics in the group's order in
/// each member's dict, every partition number one shared `int` object. A topic whose owners come
/// in runs, no member in two (what the assignors mostly give), is read once: each run is a
/// member's list. Any other topic's partitions are bucketed by owner in one flat buffer (a
/// counting sort).
fn result<'py>(
    py: Python<'py>,
    owners: &[&[i32]],
    topic_names: &[Py<PyString>],
    keys: &[Py<PyAny>],
) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    let per_member: Vec<Bound<'py, PyDict>> = keys
        .iter()
        .map(|k| -> PyResult<_> {
            let d = PyDict::new(py);
            out.set_item(k.bind(py), &d)?;
            Ok(d)
        })
        .collect::<PyResult<_>>()?;
    // Shared ints for the partition numbers of the widest topic anybody got (at most 2^20).
    let widest = owners
        .iter()
        .filter(|row| row.iter().any(|&o| o >= 0))
        .map(|row| row.len())
        .max()
        .unwrap_or(0)
        .min(SHARED_INTS);
    let ints: Vec<Bound<'py, PyAny>> = (0..widest as u32).map(|p| new_int(py, p)).collect();
    // the counting sort's, sized at its first topic
    let (mut count, mut next) = (Vec::<u32>::new(), Vec::<u32>::new());
    // The topic (+ 1) in which each member last began a run: a second run of one member in one
    // topic sends that topic to the counting sort.
    let mut run_in = vec![0u32; keys.len()];
    let mut runs: Vec<(u32, u32, i32)> = Vec::new();
    let mut touched: Vec<usize> = Vec::new();
    let mut flat: Vec<u32> = Vec::new();
    for (t, row) in owners.iter().enumerate() {
        let name = topic_names[t].bind(py);
        let shared = row.len() <= ints.len();
        if let Some(runs) = owner_runs(row, t as u32 + 1, &mut run_in, &mut runs) {
            for &(start, end, o) in runs {
                if o >= 0 {
                    per_member[o as usize].set_item(name, list(py, start..end, &ints, shared)?)?;
                }
            }
            continue;
        }
        if count.is_empty() {
            count.resize(keys.len(), 0);
            next.resize(keys.len(), 0);
        }
        touched.clear();
        for &o in *row {
            if o >= 0 {
                let c = &mut count[o as usize];
                if *c == 0 {
                    touched.push(o as usize);
                }
                *c += 1;
            }
        }
        if touched.is_empty() {
            continue;
        }
        let mut at = 0u32;
        for &m in &touched {
            next[m] = at;
            at += count[m];
        }
        flat.clear();
        flat.resize(at as usize, 0);
        for (p, &o) in row.iter().enumerate() {
            if o >= 0 {
                let n = &mut next[o as usize];
                flat[*n as usize] = p as u32;
                *n += 1;
            }
        }
        for &m in &touched {
            let (end, n) = (next[m] as usize, count[m] as usize);
            let parts = list(py, flat[end - n..end].iter().copied(), &ints, shared)?;
            per_member[m].set_item(name, parts)?;
            count[m] = 0;
        }
    }
    Ok(out)
}

/// A member's partitions of one topic as a list; `shared`: each has its `int` in `ints`.
fn list<'py>(
    py: Python<'py>,
    parts: impl ExactSizeIterator<Item = u32>,
    ints: &[Bound<'py, PyAny>],
    shared: bool,
) -> PyResult<Bound<'py, PyList>> {
    if shared {
        PyList::new(py, parts.map(|p| &ints[p as usize]))
    } else {
        PyList::new(py, parts.map(|p| new_int(py, p)))
    }
}

fn new_int(py: Python<'_>, p: u32) -> Bound<'_, PyAny> {
    match p.into_pyobject(py) {
        Ok(i) => i.into_any(),
        Err(never) => match never {},
    }
}

/// The runs of equal owners of one topic's `row` as `(start, end, owner)`, or `None` when a
/// member (not -1) owns two runs. `mark` is the topic's stamp in `run_in` (one per member, never
/// 0 and new for each topic).
fn owner_runs<'a>(
    row: &[i32],
    mark: u32,
    run_in: &mut [u32],
    runs: &'a mut Vec<(u32, u32, i32)>,
) -> Option<&'a [(u32, u32, i32)]> {
    runs.clear();
    let mut start = 0usize;
    while start < row.len() {
        let o = row[start];
        let end = start + row[start..].iter().take_while(|&&x| x == o).count();
        if o >= 0 {
            let seen = &mut run_in[o as usize];
            if *seen == mark {
                return None;
            }
            *seen = mark;
        }
        runs.push((start as u32, end as u32, o));
        start = end;
    }
    Some(runs)
}

fn offsets(name: &str, a: &[i64], n: usize, len: usize) -> PyResult<Vec<usize>> {
    let ok = a.len() == n + 1
        && a.first() == Some(&0)
        && a.last() == Some(&(len as i64))
        && a.windows(2).all(|w| w[0] <= w[1]);
    if !ok {
        return Err(InvalidInputError::new_err((
            format!(
                "{name} must hold {} non-decreasing offsets from 0 to {len}",
                n + 1
            ),
            a.len(),
        )));
    }
    Ok(a.iter().map(|&x| x as usize).collect())
}

fn index(name: &str, v: i64, len: usize) -> PyResult<u32> {
    u32::try_from(v)
        .ok()
        .filter(|&x| (x as usize) < len)
        .ok_or_else(|| InvalidInputError::new_err((format!("{name} {v} out of range 0..{len}"), v)))
}

/// The topic table of the columnar entry point: ids in order, each once, with its count.
fn topic_table(topic_ids: &Bound<'_, PyAny>, counts: &[i64]) -> PyResult<Vec<ServerTopic>> {
    let mut table = Vec::with_capacity(counts.len());
    let mut seen: FxHashSet<Uuid> =
        FxHashSet::with_capacity_and_hasher(counts.len(), rustc_hash::FxBuildHasher);
    for (item, &c) in topic_ids.try_iter()?.zip(counts) {
        let item = item?;
        let count = count_of(c, &item)?;
        let id = topic_uuid(&item, topic_str(&item)?.to_str()?)?;
        if !seen.insert(id) {
            return Err(bad("topic id listed twice".into(), &item));
        }
        table.push(ServerTopic {
            id,
            partitions: Some(count),
        });
    }
    if table.len() != counts.len() || topic_ids.len()? != counts.len() {
        return Err(InvalidInputError::new_err((
            format!(
                "{} topic ids for {} partition counts",
                topic_ids.len()?,
                counts.len()
            ),
            counts.len(),
        )));
    }
    Ok(table)
}

/// The member ids checked (each a `str` of valid text) and hashed, not copied: by `str`'s own
/// hash, `None` when one is of a subclass (which may redefine it: the general path checks them).
fn member_hashes(member_ids: &Bound<'_, PyList>) -> PyResult<Option<Vec<u64>>> {
    let mut hashes = Vec::with_capacity(member_ids.len());
    let mut exact = true;
    for id in member_ids.iter() {
        let s = id.cast::<PyString>().map_err(|_| {
            pyo3::exceptions::PyTypeError::new_err("member_ids must be a list of str")
        })?;
        s.to_str()?;
        exact &= id.is_exact_instance_of::<PyString>();
        if exact {
            hashes.push(s.hash()? as u64);
        }
    }
    Ok(exact.then_some(hashes))
}

/// Whether the ids are unique, by their Python hashes (a `str` keeps its hash once computed:
/// a list passed again is not hashed again), comparing texts only when two hashes are equal.
fn unique_ids(ids: &Bound<'_, PyList>, hashes: &[u64]) -> PyResult<bool> {
    unique_by_hash(hashes, |i, j| {
        same_text(&ids.get_item(i)?, &ids.get_item(j)?)
    })
}

/// Whether two `str` objects hold the same text.
fn same_text(a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>) -> PyResult<bool> {
    Ok(a.cast::<PyString>()?.to_str()? == b.cast::<PyString>()?.to_str()?)
}

/// Whether the dict API's member keys (each a `str`) are unique, as [`unique_ids`].
fn unique_keys(py: Python<'_>, keys: &[Py<PyAny>]) -> PyResult<bool> {
    let hashes = keys
        .iter()
        .map(|k| k.bind(py).hash().map(|h| h as u64))
        .collect::<PyResult<Vec<u64>>>()?;
    unique_by_hash(&hashes, |i, j| {
        same_text(keys[i].bind(py), keys[j].bind(py))
    })
}

/// Whether no two items are equal (`same`), by an open-addressing table of their hashes.
fn unique_by_hash(hashes: &[u64], same: impl Fn(usize, usize) -> PyResult<bool>) -> PyResult<bool> {
    let size = (hashes.len() * 2).next_power_of_two().max(16);
    let mask = size - 1;
    let mut table = vec![u32::MAX; size];
    for (i, &h) in hashes.iter().enumerate() {
        let mut slot = (h ^ (h >> 32)) as usize & mask;
        while table[slot] != u32::MAX {
            let j = table[slot] as usize;
            if hashes[j] == h && same(i, j)? {
                return Ok(false);
            }
            slot = (slot + 1) & mask;
        }
        table[slot] = i as u32;
    }
    Ok(true)
}

/// One subscribed-topic list, shared by the members that use it.
type Subscription = Arc<[u32]>;

/// The subscription table (row `k` is `subs[offsets[k]..offsets[k + 1]]`, each row one shared
/// list) and the row of each member: `member_subscription[m]`, or row `m` without it.
fn subscription_rows(
    member_subscription: Option<&PyReadonlyArray1<'_, i64>>,
    subscription_offsets: &PyReadonlyArray1<'_, i64>,
    subs: &[i64],
    n_members: usize,
    n_topics: usize,
) -> PyResult<(Vec<Subscription>, Vec<usize>)> {
    let rows_n = match member_subscription {
        Some(_) => subscription_offsets.len()?.saturating_sub(1),
        None => n_members,
    };
    let bounds = offsets(
        "subscription_offsets",
        subscription_offsets.as_slice()?,
        rows_n,
        subs.len(),
    )?;
    let rows: Vec<Subscription> = (0..rows_n)
        .map(|k| {
            subs[bounds[k]..bounds[k + 1]]
                .iter()
                .map(|&t| index("subscription topic", t, n_topics))
                .collect::<PyResult<Vec<u32>>>()
                .map(Arc::from)
        })
        .collect::<PyResult<_>>()?;
    let which: Vec<usize> = match member_subscription {
        Some(ms) => {
            let ms = ms.as_slice()?;
            if ms.len() != n_members {
                return Err(InvalidInputError::new_err((
                    format!("{} member subscriptions for {n_members} members", ms.len()),
                    ms.len(),
                )));
            }
            ms.iter()
                .map(|&k| index("member subscription", k, rows_n).map(|k| k as usize))
                .collect::<PyResult<_>>()?
        }
        None => (0..n_members).collect(),
    };
    Ok((rows, which))
}

/// Each member's rows (checked by [`check_current_rows`]) (`bounds`: its row range) as entries of one table: runs of
/// rows with one topic, a topic whose rows are not contiguous merged into one entry (topics in
/// order of first appearance, partitions in row order). Returns the table and each member's
/// entries.
fn current_table(
    cur_t: &[i64],
    cur_p: &[i64],
    bounds: &[(usize, usize)],
    n_topics: usize,
) -> (CurrentTable, Vec<Range<usize>>) {
    let parts: Vec<u32> = cur_p.iter().map(|&p| p as u32).collect();
    let mut current = CurrentTable::with_capacity(bounds.len(), parts.len());
    let mut ranges = Vec::with_capacity(bounds.len());
    // The member that last listed each topic, and the order a member's topics first came in.
    let mut stamp = vec![usize::MAX; n_topics];
    let mut rank = vec![0u32; n_topics];
    let mut gather: Vec<(u32, usize)> = Vec::new();
    let run_end = |row: usize, end: usize| {
        let mut run = row + 1;
        while run < end && cur_t[run] == cur_t[row] {
            run += 1;
        }
        run
    };
    for (m, &(start, end)) in bounds.iter().enumerate() {
        let first = current.len();
        let mut runs = 0u32;
        let mut scattered = false;
        let mut row = start;
        while row < end {
            let topic = cur_t[row] as usize;
            if stamp[topic] == m {
                scattered = true;
            } else {
                stamp[topic] = m;
                rank[topic] = runs;
                runs += 1;
            }
            row = run_end(row, end);
        }
        if scattered {
            gather.clear();
            gather.extend((start..end).map(|r| (rank[cur_t[r] as usize], r)));
            gather.sort_by_key(|&(k, _)| k); // stable: rows keep their order within a topic
            let mut last = u32::MAX;
            for &(k, r) in &gather {
                if k != last {
                    current.push_entry(cur_t[r] as u32);
                    last = k;
                }
                current.push_partition(parts[r]);
            }
        } else {
            let mut row = start;
            while row < end {
                let run = run_end(row, end);
                current.push_entry(cur_t[row] as u32);
                current.extend_partitions(&parts[row..run]);
                row = run;
            }
        }
        ranges.push(first..current.len());
    }
    (current, ranges)
}

/// Whether every current row has a topic index below `n_topics` and a partition in `0..=u32::MAX`:
/// the extremes of both columns, in one branch-free pass each.
pub(crate) fn current_rows_in_range(cur_t: &[i64], cur_p: &[i64], n_topics: usize) -> bool {
    let (lo_t, hi_t) = cur_t
        .iter()
        .fold((0i64, -1i64), |(lo, hi), &t| (lo.min(t), hi.max(t)));
    let (lo_p, hi_p) = cur_p
        .iter()
        .fold((0i64, 0i64), |(lo, hi), &p| (lo.min(p), hi.max(p)));
    lo_t >= 0 && hi_t < n_topics as i64 && lo_p >= 0 && hi_p <= i64::from(u32::MAX)
}

/// Every row of the current-assignment columns checked: a topic index, a partition a Java int not
/// negative. One branch-free pass over both columns (their extremes); only a bad column is walked
/// again, row by row, for the first bad value in row order.
fn check_current_rows(cur_t: &[i64], cur_p: &[i64], n_topics: usize) -> PyResult<()> {
    if !current_rows_in_range(cur_t, cur_p, n_topics) {
        for (&t, &p) in cur_t.iter().zip(cur_p) {
            index("current topic", t, n_topics)?;
            u32::try_from(p)
                .map_err(|_| InvalidInputError::new_err((format!("negative partition {p}"), p)))?;
        }
    }
    Ok(())
}

/// The columnar entry point: owner (member position, -1 for none) of every partition, topics in
/// the order given and partitions ascending (`partition_counts` long blocks).
#[pyfunction]
#[pyo3(signature = (name, topic_ids, partition_counts, member_ids, instance_ids, member_subscription, subscription_offsets, subscription_topics, current_offsets, current_topics, current_partitions, kafka_version))]
#[allow(clippy::too_many_arguments)]
pub fn server_assign_columns<'py>(
    py: Python<'py>,
    name: &str,
    topic_ids: &Bound<'py, PyAny>,
    partition_counts: PyReadonlyArray1<'py, i64>,
    member_ids: &Bound<'py, PyList>,
    instance_ids: Option<Vec<Option<String>>>,
    member_subscription: Option<PyReadonlyArray1<'py, i64>>,
    subscription_offsets: PyReadonlyArray1<'py, i64>,
    subscription_topics: PyReadonlyArray1<'py, i64>,
    current_offsets: PyReadonlyArray1<'py, i64>,
    current_topics: PyReadonlyArray1<'py, i64>,
    current_partitions: PyReadonlyArray1<'py, i64>,
    kafka_version: &str,
) -> PyResult<Bound<'py, PyArray1<i32>>> {
    let assignor = assignor(name)?;
    let kafka = release(kafka_version)?;
    let topics = topic_table(topic_ids, partition_counts.as_slice()?)?;
    let n_topics = topics.len();
    let n = member_ids.len();
    let hashes = member_hashes(member_ids)?;
    let instances = instance_ids.unwrap_or_else(|| vec![None; n]);
    if instances.len() != n {
        return Err(InvalidInputError::new_err((
            format!("{} instance ids for {n} members", instances.len()),
            instances.len(),
        )));
    }
    let (subs, cur_t, cur_p) = (
        subscription_topics.as_slice()?,
        current_topics.as_slice()?,
        current_partitions.as_slice()?,
    );
    if cur_t.len() != cur_p.len() {
        return Err(InvalidInputError::new_err((
            format!(
                "{} current topics for {} current partitions",
                cur_t.len(),
                cur_p.len()
            ),
            cur_p.len(),
        )));
    }
    let uniform = assignor == ServerAssignor::Uniform;
    let unique = match &hashes {
        Some(hashes) => unique_ids(member_ids, hashes)?,
        None => false,
    };
    if uniform && unique {
        // A homogeneous group with a valid current assignment, straight from the columns (it
        // declines anything else, which the general path below answers or refuses).
        let columns = GroupColumns {
            topics: &topics,
            members: n,
            subscription_offsets: subscription_offsets.as_slice()?,
            subscription_topics: subs,
            member_subscription: member_subscription
                .as_ref()
                .map(PyReadonlyArray1::as_slice)
                .transpose()?,
            current_offsets: current_offsets.as_slice()?,
            current_topics: cur_t,
            current_partitions: cur_p,
        };
        if let Some(owners) = run(py, || {
            ok(server::uniform_homogeneous_columns(&columns, kafka))
        })? {
            return Ok(owners.into_pyarray(py));
        }
    }
    let (table_rows, which) = subscription_rows(
        member_subscription.as_ref(),
        &subscription_offsets,
        subs,
        n,
        n_topics,
    )?;
    let co = offsets(
        "current_offsets",
        current_offsets.as_slice()?,
        n,
        cur_t.len(),
    )?;
    // `range` does not read the current assignment: it is neither extracted nor checked.
    let rows = if uniform { cur_t.len() } else { 0 };
    if uniform {
        check_current_rows(cur_t, cur_p, n_topics)?;
    }
    let bounds: Vec<(usize, usize)> = (0..n)
        .map(|m| if uniform { (co[m], co[m + 1]) } else { (0, 0) })
        .collect();
    let (current, ranges) = current_table(&cur_t[..rows], &cur_p[..rows], &bounds, n_topics);
    let mut ids = MemberIds::with_capacity(n, 0);
    for id in member_ids.iter() {
        ids.push(id.cast::<PyString>()?.to_str()?);
    }
    let members: Vec<ServerMember> = instances
        .into_iter()
        .zip(ranges)
        .enumerate()
        .map(|(m, (instance_id, current))| ServerMember {
            instance_id,
            subscribed: Arc::clone(&table_rows[which[m]]),
            current,
        })
        .collect();
    let group = ServerGroup {
        topics,
        member_ids: ids,
        members,
        current,
    };
    let owners: Owners = run(py, || server::assign(assignor, &group, kafka))?;
    Ok(owners.concat().into_pyarray(py))
}
