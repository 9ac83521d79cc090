//! Bindings of `mqbalance_core::allocate` (RocketMQ's queue allocation strategies): the strategy
//! handle, per-client `allocate` and whole-group `assign` / `owners`, over queue columns or a
//! prepared [`PyQueueTable`]. Machine rooms arrive as one `rooms=` argument ([`Rooms`]).

use std::collections::BTreeSet;

use mqbalance_core::allocate::{self, RoomMap, StrategyParams};
use mqbalance_core::ring::hash_str;
use mqbalance_core::{order, Charset, ConsumerList, QueueTable, Strategy};
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

use crate::columns;
use crate::errors::{self, ok, run, IntoPyResult, UnknownCharsetError};

/// A core strategy handle (immutable).
#[pyclass(frozen, name = "Strategy", module = "mqbalance._core")]
pub struct PyStrategy {
    pub(crate) inner: Strategy,
}

fn charset(name: &str) -> PyResult<Charset> {
    Charset::from_name(name).ok_or_else(|| {
        UnknownCharsetError::new_err((
            format!("unknown charset {name:?}: use UTF-8, ISO-8859-1 or US-ASCII"),
            name.to_owned(),
        ))
    })
}

#[pymethods]
impl PyStrategy {
    #[new]
    #[pyo3(signature = (kind, *, virtual_node_cnt = 10, charset = "UTF-8", consumer_idcs = None, inner = None, epsilon = 0.25))]
    /// `epsilon` defaults to `mqbalance_core::allocate::bounded::DEFAULT_EPSILON` (0.25).
    fn new(
        kind: &str,
        virtual_node_cnt: i64,
        charset: &str,
        consumer_idcs: Option<BTreeSet<String>>,
        inner: Option<&PyStrategy>,
        epsilon: f64,
    ) -> PyResult<Self> {
        let params = StrategyParams {
            virtual_node_cnt,
            charset: self::charset(charset)?,
            consumer_idcs,
            inner: inner.map(|s| s.inner.clone()),
            epsilon,
        };
        Ok(PyStrategy {
            inner: Strategy::from_name(kind, params).py_err()?,
        })
    }

    /// Java `getName()`.
    #[getter]
    fn name(&self) -> String {
        self.inner.name()
    }

    /// Whether owners depend on topic and broker names (`AVG` and `AVG_BY_CIRCLE` only count queues).
    #[getter]
    fn reads_queue_names(&self) -> bool {
        self.inner.reads_queue_names()
    }

    fn __repr__(&self) -> String {
        format!("<mqbalance._core.Strategy {}>", self.inner.name())
    }
}

/// The machine rooms of a call (`MACHINE_ROOM_NEARBY`), as Python passes them in `rooms=`: the
/// separator of the default prefix resolver (`"@"`), or the room of every queue and of every
/// consumer, aligned with the queue and consumer lists.
#[derive(FromPyObject)]
pub enum Rooms<'py> {
    /// `PrefixRoomResolver`'s separator: rooms are read from broker names and client ids.
    Prefix(String),
    /// `(queue_rooms, consumer_rooms)` columns.
    Columns(Bound<'py, PyAny>, Bound<'py, PyAny>),
}

impl Rooms<'_> {
    /// The core's room map over `table` and `group`.
    fn resolve(&self, table: &QueueTable, group: &ConsumerList) -> PyResult<RoomMap> {
        match self {
            Rooms::Prefix(sep) => Ok(RoomMap::from_prefix(table, group, sep)),
            Rooms::Columns(queue_rooms, consumer_rooms) => {
                columns::room_map(table, group, queue_rooms, consumer_rooms)
            }
        }
    }
}

/// Everything one allocation call needs, owned.
struct Inputs {
    table: QueueTable,
    group: ConsumerList,
    rooms: Option<RoomMap>,
}

fn inputs(
    strategy: &Strategy,
    topics: &Bound<'_, PyAny>,
    brokers: &Bound<'_, PyAny>,
    queue_ids: PyReadonlyArray1<'_, i64>,
    consumers: &Bound<'_, PyAny>,
    rooms: Option<&Rooms<'_>>,
    need_names: bool,
) -> PyResult<Inputs> {
    let table = columns::queue_table(
        topics,
        brokers,
        queue_ids,
        need_names || strategy.reads_queue_names(),
    )?;
    let group = columns::consumer_list(consumers)?;
    let rooms = rooms.map(|r| r.resolve(&table, &group)).transpose()?;
    Ok(Inputs {
        table,
        group,
        rooms,
    })
}

/// Java's per-client `allocate` on the lists as given: positions in the queue list, in Java's order.
#[pyfunction]
#[pyo3(signature = (strategy, current_id, topics, brokers, queue_ids, consumers, *, rooms = None))]
#[allow(clippy::too_many_arguments)]
pub fn allocate_positions<'py>(
    py: Python<'py>,
    strategy: &PyStrategy,
    current_id: Option<String>,
    topics: &Bound<'py, PyAny>,
    brokers: &Bound<'py, PyAny>,
    queue_ids: PyReadonlyArray1<'py, i64>,
    consumers: &Bound<'py, PyAny>,
    rooms: Option<Rooms<'py>>,
) -> PyResult<Bound<'py, PyArray1<u32>>> {
    let s = &strategy.inner;
    let x = inputs(
        s,
        topics,
        brokers,
        queue_ids,
        consumers,
        rooms.as_ref(),
        false,
    )?;
    let picked = run(py, || {
        allocate::allocate(
            s,
            current_id.as_deref(),
            &x.table.all(),
            &x.group,
            x.rooms.as_ref(),
        )
    })?;
    Ok(picked.into_pyarray(py))
}

/// A queue list extracted once (topic and broker names interned, ids checked), for many
/// `allocate` / `assign` calls over the same queues.
#[pyclass(frozen, name = "QueueTable", module = "mqbalance._core")]
pub struct PyQueueTable {
    pub(crate) table: QueueTable,
}

#[pymethods]
impl PyQueueTable {
    #[new]
    fn new(
        topics: &Bound<'_, PyAny>,
        brokers: &Bound<'_, PyAny>,
        queue_ids: PyReadonlyArray1<'_, i64>,
    ) -> PyResult<Self> {
        Ok(PyQueueTable {
            table: columns::queue_table(topics, brokers, queue_ids, true)?,
        })
    }

    fn __len__(&self) -> usize {
        self.table.len()
    }
}

/// `items[k]` for each position: the caller's own objects, no copy.
fn pick<'py>(items: &Bound<'py, PyTuple>, positions: &[u32]) -> PyResult<Bound<'py, PyList>> {
    let out = PyList::empty(items.py());
    for &k in positions {
        out.append(items.get_item(k as usize)?)?;
    }
    Ok(out)
}

/// The consumer list and rooms of a call over a prepared table whose rows are `items` (checked to
/// be as many as the table's queues).
fn prepared_inputs(
    table: &PyQueueTable,
    items: &Bound<'_, PyTuple>,
    consumers: &Bound<'_, PyAny>,
    rooms: Option<&Rooms<'_>>,
) -> PyResult<(ConsumerList, Option<RoomMap>)> {
    if items.len() != table.table.len() {
        return Err(errors::LengthMismatchError::new_err((
            format!(
                "{} items for a table of {} queues",
                items.len(),
                table.table.len()
            ),
            items.len(),
        )));
    }
    let group = columns::consumer_list(consumers)?;
    let rooms = rooms.map(|r| r.resolve(&table.table, &group)).transpose()?;
    Ok((group, rooms))
}

/// Java's per-client `allocate` over a prepared [`PyQueueTable`] whose rows are `items`: only the
/// consumer list is extracted; returns the list of `items` the client consumes, in Java's order.
#[pyfunction]
#[pyo3(signature = (strategy, current_id, table, items, consumers, *, rooms = None))]
#[allow(clippy::too_many_arguments)]
pub fn allocate_prepared<'py>(
    py: Python<'py>,
    strategy: &PyStrategy,
    current_id: Option<String>,
    table: &PyQueueTable,
    items: &Bound<'py, PyTuple>,
    consumers: &Bound<'py, PyAny>,
    rooms: Option<Rooms<'py>>,
) -> PyResult<Bound<'py, PyList>> {
    let s = &strategy.inner;
    let (group, rooms) = prepared_inputs(table, items, consumers, rooms.as_ref())?;
    let picked = run(py, || {
        allocate::allocate(
            s,
            current_id.as_deref(),
            &table.table.all(),
            &group,
            rooms.as_ref(),
        )
    })?;
    pick(items, &picked)
}

/// Every member's list over a prepared [`PyQueueTable`] whose rows are `items`, as lists of
/// `items` (entry `j` is empty for a repeated id).
#[pyfunction]
#[pyo3(signature = (strategy, table, items, consumers, *, rooms = None))]
#[allow(clippy::too_many_arguments)]
pub fn assign_prepared<'py>(
    py: Python<'py>,
    strategy: &PyStrategy,
    table: &PyQueueTable,
    items: &Bound<'py, PyTuple>,
    consumers: &Bound<'py, PyAny>,
    rooms: Option<Rooms<'py>>,
) -> PyResult<Bound<'py, PyList>> {
    let s = &strategy.inner;
    let (group, rooms) = prepared_inputs(table, items, consumers, rooms.as_ref())?;
    let lists = run(py, || {
        allocate::assign(s, &table.table.all(), &group, rooms.as_ref())
    })?;
    let out = PyList::empty(py);
    for positions in &lists {
        out.append(pick(items, positions)?)?;
    }
    Ok(out)
}

/// Every member's list in one pass (lists as given); entry `j` is empty for a repeated id.
#[pyfunction]
#[pyo3(signature = (strategy, topics, brokers, queue_ids, consumers, *, rooms = None, previous = None))]
#[allow(clippy::too_many_arguments)]
pub fn assign_positions(
    py: Python<'_>,
    strategy: &PyStrategy,
    topics: &Bound<'_, PyAny>,
    brokers: &Bound<'_, PyAny>,
    queue_ids: PyReadonlyArray1<'_, i64>,
    consumers: &Bound<'_, PyAny>,
    rooms: Option<Rooms<'_>>,
    previous: Option<PyReadonlyArray1<'_, i64>>,
) -> PyResult<Vec<Vec<u32>>> {
    let s = &strategy.inner;
    let x = inputs(
        s,
        topics,
        brokers,
        queue_ids,
        consumers,
        rooms.as_ref(),
        false,
    )?;
    let previous: Option<Vec<i64>> = previous.map(|p| p.as_array().to_vec());
    run(py, || {
        allocate::assign_with_previous(
            s,
            &x.table.all(),
            &x.group,
            x.rooms.as_ref(),
            previous.as_deref(),
        )
    })
}

/// Owner of every queue (position of the owning id's first occurrence in `consumers`, -1 for
/// nobody), aligned with the input rows. Unless `presorted`, queues and ids are sorted the Java way
/// first, as `RebalanceImpl` does.
#[pyfunction]
#[pyo3(signature = (strategy, topics, brokers, queue_ids, consumers, *, presorted = false, rooms = None, previous = None))]
#[allow(clippy::too_many_arguments)]
pub fn owners<'py>(
    py: Python<'py>,
    strategy: &PyStrategy,
    topics: &Bound<'py, PyAny>,
    brokers: &Bound<'py, PyAny>,
    queue_ids: PyReadonlyArray1<'py, i64>,
    consumers: &Bound<'py, PyAny>,
    presorted: bool,
    rooms: Option<Rooms<'py>>,
    previous: Option<PyReadonlyArray1<'py, i64>>,
) -> PyResult<Bound<'py, PyArray1<i64>>> {
    let s = &strategy.inner;
    if presorted
        && rooms.is_none()
        && previous.is_none()
        && matches!(s, Strategy::Avg | Strategy::AvgByCircle)
    {
        return owners_of_count_written(py, s, &queue_ids, consumers);
    }
    let previous: Option<Vec<i64>> = previous.map(|p| p.as_array().to_vec());
    let prev = previous.as_deref();
    if presorted && !s.reads_queue_names() && rooms.is_none() {
        // Only the number of queues matters: no table, no copy of the ids.
        let n = columns::queue_count(&queue_ids)?;
        let group = columns::consumer_list(consumers)?;
        let out = run(py, || allocate::owners_of_count(s, n, &group, prev))?;
        return Ok(out.into_pyarray(py));
    }
    let x = inputs(
        s,
        topics,
        brokers,
        queue_ids,
        consumers,
        rooms.as_ref(),
        !presorted,
    )?;
    let out = run(py, || {
        if presorted {
            allocate::owners_with_previous(s, &x.table.all(), &x.group, x.rooms.as_ref(), prev)
        } else {
            allocate::rebalance_owners_with_previous(s, &x.table, &x.group, x.rooms.as_ref(), prev)
        }
    })?;
    Ok(out.into_pyarray(py))
}

/// `AVG` / `AVG_BY_CIRCLE` over presorted queues: only their number matters, and of the ids only
/// which slots repeat an earlier one, so the ids are read in place (no copy) and each owner is
/// written once into the array handed over to numpy. Same errors, in the same order, as the
/// general path: queue ids, then client ids, then the core's list checks.
fn owners_of_count_written<'py>(
    py: Python<'py>,
    s: &Strategy,
    queue_ids: &PyReadonlyArray1<'py, i64>,
    consumers: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyArray1<i64>>> {
    // A client-id error is raised only once the queue ids are known to be fine.
    let items = match columns::consumer_items(consumers) {
        Ok(items) => items,
        Err(e) => {
            columns::queue_count(queue_ids)?;
            return Err(e);
        }
    };
    let ids = match columns::borrowed_ids(&items) {
        Ok(ids) => ids,
        Err(e) => {
            columns::queue_count(queue_ids)?;
            return Err(e);
        }
    };
    let first = mqbalance_core::queues::first_slots(&ids);
    let empty = ids.iter().position(|id| id.is_empty());
    let qids = queue_ids.as_slice()?;
    // The queue ids are range-checked in the pass that writes the owners.
    let out = run(py, || {
        allocate::owners_of_first_slots_checked(s, qids, &first, empty)
    })?;
    match out {
        Some(out) => Ok(out.into_pyarray(py)),
        None => Err(columns::queue_count(queue_ids).err().unwrap_or_else(|| {
            pyo3::exceptions::PyRuntimeError::new_err("queue ids checked twice, two answers")
        })),
    }
}

/// Whether any object of a JSON text repeats a key: `"distinct"`, `"duplicate"` or `"unsure"`
/// (an escaped key, malformed text: the caller's key-checking parser decides). Keys compared as
/// written, without the GIL.
#[pyfunction]
pub fn json_keys(py: Python<'_>, text: &Bound<'_, pyo3::types::PyString>) -> &'static str {
    use mqbalance_core::json_keys::{scan_keys, KeyScan};
    let Ok(text) = text.to_str() else {
        return "unsure"; // a lone surrogate: not UTF-8, the parser names it
    };
    match py.detach(|| scan_keys(text.as_bytes())) {
        KeyScan::Distinct => "distinct",
        KeyScan::Duplicate => "duplicate",
        KeyScan::Unsure => "unsure",
    }
}

/// Many (group, topic) segments in one call: rows `bounds[s]..bounds[s+1]` use
/// `strategies[seg_strategy[s]]` over `consumers[s]`; owners are positions in each segment's list.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub fn owners_by_pair<'py>(
    py: Python<'py>,
    topics: &Bound<'py, PyAny>,
    brokers: &Bound<'py, PyAny>,
    queue_ids: PyReadonlyArray1<'py, i64>,
    bounds: PyReadonlyArray1<'py, u64>,
    strategies: Vec<PyRef<'py, PyStrategy>>,
    seg_strategy: PyReadonlyArray1<'py, u32>,
    consumers: Vec<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyArray1<i64>>> {
    let table = columns::queue_table(topics, brokers, queue_ids, true)?;
    let bounds: Vec<usize> = bounds.as_slice()?.iter().map(|&b| b as usize).collect();
    let which = seg_strategy.as_slice()?;
    let kinds = segment_kinds(&strategies, which, consumers.len(), "consumer lists")?;
    // A group's pairs pass the same list object: it is converted once, and the core then shares
    // its sorted order and ring between those pairs.
    let mut seen: std::collections::HashMap<usize, usize> = std::collections::HashMap::new();
    let mut groups: Vec<ConsumerList> = Vec::new();
    let mut of_segment: Vec<usize> = Vec::with_capacity(consumers.len());
    for item in &consumers {
        let key = item.as_ptr() as usize;
        if let Some(&g) = seen.get(&key) {
            of_segment.push(g);
            continue;
        }
        groups.push(ConsumerList::new(item.extract::<Vec<String>>()?));
        seen.insert(key, groups.len() - 1);
        of_segment.push(groups.len() - 1);
    }
    let out = run(py, || {
        owners_of_segments(&table, &bounds, &kinds, which, &groups, &of_segment)
    })?;
    Ok(out.into_pyarray(py))
}

/// The strategies' core handles, once `which` (each segment's index into them) is checked to
/// have one entry per segment (`segments` consumer lists or id ranges) and no index past them.
fn segment_kinds(
    strategies: &[PyRef<'_, PyStrategy>],
    which: &[u32],
    segments: usize,
    what: &str,
) -> PyResult<Vec<Strategy>> {
    if which.len() != segments {
        return Err(errors::LengthMismatchError::new_err((
            format!("{} segment strategies for {segments} {what}", which.len()),
            which.len(),
        )));
    }
    let kinds: Vec<Strategy> = strategies.iter().map(|s| s.inner.clone()).collect();
    if let Some(&bad) = which.iter().find(|&&k| k as usize >= kinds.len()) {
        return Err(errors::LengthMismatchError::new_err((
            format!("segment strategy index {bad} out of range"),
            bad,
        )));
    }
    Ok(kinds)
}

/// The core's owners of every segment: segment `s` uses `kinds[which[s]]` over
/// `groups[of_segment[s]]`.
fn owners_of_segments(
    table: &QueueTable,
    bounds: &[usize],
    kinds: &[Strategy],
    which: &[u32],
    groups: &[ConsumerList],
    of_segment: &[usize],
) -> Result<Vec<i64>, mqbalance_core::AllocateError> {
    use mqbalance_core::allocate::batch::{owners_by_segment, Segment};
    let segments: Vec<Segment<'_>> = which
        .iter()
        .zip(of_segment)
        .map(|(&k, &g)| Segment {
            strategy: &kinds[k as usize],
            group: &groups[g],
        })
        .collect();
    owners_by_segment(table, bounds, &segments).map_err(|(_, e)| e)
}

/// Ranges `starts[k]..stops[k]` of a column of `n` ids, checked.
fn id_ranges(
    starts: &PyReadonlyArray1<'_, i64>,
    stops: &PyReadonlyArray1<'_, i64>,
    n: usize,
) -> PyResult<Vec<(usize, usize)>> {
    let (starts, stops) = (starts.as_slice()?, stops.as_slice()?);
    if starts.len() != stops.len() {
        return Err(errors::LengthMismatchError::new_err((
            format!("{} range starts for {} stops", starts.len(), stops.len()),
            stops.len(),
        )));
    }
    starts
        .iter()
        .zip(stops)
        .enumerate()
        .map(
            |(k, (&a, &b))| match (usize::try_from(a), usize::try_from(b)) {
                (Ok(a), Ok(b)) if a <= b && b <= n => Ok((a, b)),
                _ => Err(errors::InvalidInputError::new_err((
                    format!("id range {k} is {a}..{b}, not within the {n} ids"),
                    k,
                ))),
            },
        )
        .collect()
}

/// Distinct ids of each range `starts[k]..stops[k]` of an Arrow string column (its `offsets` and
/// `data` buffers), without a Python string per id.
#[pyfunction]
pub fn distinct_ids<'py>(
    py: Python<'py>,
    offsets: PyReadonlyArray1<'py, i64>,
    data: PyReadonlyArray1<'py, u8>,
    starts: PyReadonlyArray1<'py, i64>,
    stops: PyReadonlyArray1<'py, i64>,
) -> PyResult<Bound<'py, PyArray1<i64>>> {
    let ids = columns::arrow_strs(offsets.as_slice()?, data.as_slice()?, "client_ids")?;
    let ranges = id_ranges(&starts, &stops, ids.len())?;
    let counts = py
        .detach(|| mqbalance_core::queues::distinct_per_range(&ids, &ranges))
        .unwrap_or_default(); // the ranges were checked above
    Ok(counts
        .into_iter()
        .map(i64::from)
        .collect::<Vec<_>>()
        .into_pyarray(py))
}

/// [`owners_by_pair`] with every segment's consumers a range `id_starts[s]..id_stops[s]` of one
/// Arrow string column (its `offsets` and `data` buffers, read in place): the owner of each row is
/// the position *in the column* of its id's first occurrence in the range, `-1` for nobody.
/// Segments with the same range share one consumer list.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub fn owners_by_pair_in_column<'py>(
    py: Python<'py>,
    topics: &Bound<'py, PyAny>,
    brokers: &Bound<'py, PyAny>,
    queue_ids: PyReadonlyArray1<'py, i64>,
    bounds: PyReadonlyArray1<'py, u64>,
    strategies: Vec<PyRef<'py, PyStrategy>>,
    seg_strategy: PyReadonlyArray1<'py, u32>,
    id_offsets: PyReadonlyArray1<'py, i64>,
    id_data: PyReadonlyArray1<'py, u8>,
    id_starts: PyReadonlyArray1<'py, i64>,
    id_stops: PyReadonlyArray1<'py, i64>,
) -> PyResult<Bound<'py, PyArray1<i64>>> {
    let table = columns::queue_table(topics, brokers, queue_ids, true)?;
    let bounds: Vec<usize> = bounds.as_slice()?.iter().map(|&b| b as usize).collect();
    let which = seg_strategy.as_slice()?;
    let ids = columns::arrow_strs(id_offsets.as_slice()?, id_data.as_slice()?, "client_ids")?;
    let ranges = id_ranges(&id_starts, &id_stops, ids.len())?;
    let kinds = segment_kinds(&strategies, which, ranges.len(), "id ranges")?;
    let out = run(py, || {
        // A group's pairs share its range: its list is built once, and the core then shares its
        // sorted order and ring between those pairs.
        let mut seen: std::collections::HashMap<(usize, usize), usize> =
            std::collections::HashMap::new();
        let mut groups: Vec<ConsumerList> = Vec::new();
        let of_segment: Vec<usize> = ranges
            .iter()
            .map(|&(a, b)| {
                *seen.entry((a, b)).or_insert_with(|| {
                    groups.push(ConsumerList::new(
                        ids[a..b].iter().map(|s| (*s).to_owned()).collect(),
                    ));
                    groups.len() - 1
                })
            })
            .collect();
        let mut out = owners_of_segments(&table, &bounds, &kinds, which, &groups, &of_segment)?;
        for (s, &(start, _)) in ranges.iter().enumerate() {
            for owner in &mut out[bounds[s]..bounds[s + 1]] {
                if *owner >= 0 {
                    *owner += start as i64;
                }
            }
        }
        Ok::<_, mqbalance_core::AllocateError>(out)
    })?;
    Ok(out.into_pyarray(py))
}

/// Stable permutation sorting strings in Java order (UTF-16 code units).
#[pyfunction]
pub fn sort_strings_order<'py>(
    py: Python<'py>,
    items: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyArray1<u32>>> {
    let group = columns::consumer_list(items)?;
    Ok(run(py, || ok(order::sort_order(group.ids())))?.into_pyarray(py))
}

/// Stable permutation sorting non-negative integer keys ascending (a radix sort).
#[pyfunction]
pub fn key_order<'py>(
    py: Python<'py>,
    keys: PyReadonlyArray1<'py, u64>,
) -> PyResult<Bound<'py, PyArray1<u32>>> {
    let keys = keys.as_slice()?;
    if u32::try_from(keys.len()).is_err() {
        return Err(errors::InvalidInputError::new_err((
            format!("{} keys: at most 2^32 - 1 can be ordered", keys.len()),
            keys.len(),
        )));
    }
    Ok(run(py, || ok(order::key_order(keys)))?.into_pyarray(py))
}

/// Stable permutation sorting queues in Java `MessageQueue` order.
#[pyfunction]
pub fn sort_queues_order<'py>(
    py: Python<'py>,
    topics: &Bound<'py, PyAny>,
    brokers: &Bound<'py, PyAny>,
    queue_ids: PyReadonlyArray1<'py, i64>,
) -> PyResult<Bound<'py, PyArray1<u32>>> {
    let table = columns::queue_table(topics, brokers, queue_ids, true)?;
    Ok(run(py, || ok(table.java_sort_order()))?.into_pyarray(py))
}

/// RocketMQ's MD5 ring hash of a string under a charset (for tooling and tests).
#[pyfunction]
#[pyo3(signature = (text, charset = "UTF-8"))]
pub fn ring_hash(text: &str, charset: &str) -> PyResult<u32> {
    Ok(hash_str(text, self::charset(charset)?))
}
