//! Benchmark helpers, built only with the `bench` cargo feature (`make setup` / `make dev` turn it
//! on; the wheel does not ship it). Registered as the private submodule `mqbalance._core._bench`.

use mqbalance_core::{allocate, ConsumerList};
use pyo3::prelude::*;

use crate::columns;
use crate::errors::run;
use crate::rocketmq::{PyQueueTable, PyStrategy};

/// The median wall time in seconds of `rounds` runs of the core's per-client `allocate` over a
/// prepared table: from the ids as Rust strings (extracted from `consumers` before timing) to the
/// positions, building the core's `ConsumerList` included. The "core's own time" a per-client
/// `allocate` call is compared with (`benches/test_bench_allocate.py`).
#[pyfunction]
fn time_allocate_core(
    py: Python<'_>,
    strategy: &PyStrategy,
    current_id: Option<String>,
    table: &PyQueueTable,
    consumers: &Bound<'_, PyAny>,
    rounds: usize,
) -> PyResult<f64> {
    let ids = columns::consumer_list(consumers)?.ids().to_vec();
    let all = table.table.all();
    let mut times = Vec::with_capacity(rounds.max(1));
    for _ in 0..rounds.max(1) {
        let input = ids.clone();
        let (elapsed, picked) = run(py, || {
            let start = std::time::Instant::now();
            let group = ConsumerList::new(input);
            let picked =
                allocate::allocate(&strategy.inner, current_id.as_deref(), &all, &group, None);
            drop(group);
            let elapsed = start.elapsed().as_secs_f64();
            picked.map(|p| (elapsed, p))
        })?;
        drop(picked);
        times.push(elapsed);
    }
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2])
}

/// The median wall time in seconds of `rounds` runs of MD5 over `keys` (UTF-8, extracted before
/// timing) on all cores, with the core's own MD5: the floor of a whole group's consistent hashing,
/// whose keys are the queues' `toString()` and the virtual nodes' `<clientId>-<replica>`.
#[pyfunction]
fn time_md5_floor(py: Python<'_>, keys: Vec<String>, rounds: usize) -> PyResult<f64> {
    let keys: Vec<Vec<u8>> = keys.into_iter().map(String::into_bytes).collect();
    let mut times = Vec::with_capacity(rounds.max(1));
    for _ in 0..rounds.max(1) {
        let elapsed = run(py, || {
            let start = std::time::Instant::now();
            let hashes = mqbalance_core::ring::md5_all(&keys);
            let elapsed = start.elapsed().as_secs_f64();
            drop(hashes);
            Ok::<_, mqbalance_core::AllocateError>(elapsed)
        })?;
        times.push(elapsed);
    }
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2])
}

/// The median wall time in seconds of `rounds` runs of the broker-side columnar entry point's
/// unavoidable input and output work, nothing else: the member ids read from their Python list
/// into one buffer, every current-assignment row range-checked and narrowed, and the owner
/// array of `partitions` entries allocated and filled. The floor of `server_assign_columns`
/// (`benches/kafka_server_vs_java.py`).
#[pyfunction]
fn time_server_columns_floor(
    py: Python<'_>,
    member_ids: &Bound<'_, pyo3::types::PyList>,
    current_topics: numpy::PyReadonlyArray1<'_, i64>,
    current_partitions: numpy::PyReadonlyArray1<'_, i64>,
    topics: usize,
    partitions: usize,
    rounds: usize,
) -> PyResult<f64> {
    use numpy::IntoPyArray;
    let (cur_t, cur_p) = (current_topics.as_slice()?, current_partitions.as_slice()?);
    let mut times = Vec::with_capacity(rounds.max(1));
    for _ in 0..rounds.max(1) {
        let start = std::time::Instant::now();
        let mut ids = mqbalance_core::assign::server::MemberIds::with_capacity(member_ids.len(), 0);
        for id in member_ids.iter() {
            ids.push(id.cast::<pyo3::types::PyString>()?.to_str()?);
        }
        let ok = crate::server::current_rows_in_range(cur_t, cur_p, topics);
        let parts: Vec<u32> = cur_p.iter().map(|&p| p as u32).collect();
        let owners = vec![-1i32; partitions].into_pyarray(py);
        let elapsed = start.elapsed().as_secs_f64();
        std::hint::black_box((ok, parts, ids));
        drop(owners);
        times.push(elapsed);
    }
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2])
}

/// Median seconds of making a dict API answer's objects anew in Rust: `{member: {topic:
/// [partitions]}}` with the answer's own key and `int` objects, one new dict per member and list
/// per (member, topic) — what any dict result costs the interpreter, whatever computed it. Its shape is
/// read before the clock starts; each copy is freed after it stops.
#[pyfunction]
fn time_dict_result_floor(
    py: Python<'_>,
    answer: &Bound<'_, pyo3::types::PyDict>,
    rounds: usize,
) -> PyResult<f64> {
    use pyo3::types::{PyDict, PyList};
    type Row<'py> = (Bound<'py, PyAny>, Vec<Bound<'py, PyAny>>);
    let mut shape: Vec<(Bound<'_, PyAny>, Vec<Row<'_>>)> = Vec::with_capacity(answer.len());
    for (member, topics) in answer.iter() {
        let topics = topics.cast::<PyDict>()?;
        let mut rows = Vec::with_capacity(topics.len());
        for (topic, parts) in topics.iter() {
            rows.push((topic, parts.cast::<PyList>()?.iter().collect()));
        }
        shape.push((member, rows));
    }
    let mut times = Vec::with_capacity(rounds.max(1));
    for _ in 0..rounds.max(1) {
        let start = std::time::Instant::now();
        let out = PyDict::new(py);
        for (member, rows) in &shape {
            let d = PyDict::new(py);
            out.set_item(member, &d)?;
            for (topic, parts) in rows {
                d.set_item(topic, PyList::new(py, parts)?)?;
            }
        }
        let elapsed = start.elapsed().as_secs_f64();
        drop(out);
        times.push(elapsed);
    }
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2])
}

/// Median seconds of only reading a dict API group's members in Rust, as any reader must: each
/// member dict's fields, its subscription list's ids (a list object seen at the member before is
/// not read again), and with `current` every current `[topic_id, [partition, ...]]` entry, each
/// partition an `int`. Nothing is checked, kept or computed.
#[pyfunction]
fn time_dict_input_floor(
    py: Python<'_>,
    members: &Bound<'_, pyo3::types::PyList>,
    current: bool,
    rounds: usize,
) -> PyResult<f64> {
    use pyo3::types::{PyDict, PyList, PyString};
    let key = |name: &str| PyString::new(py, name);
    let (id_key, instance_key, rack_key) = (key("member_id"), key("instance_id"), key("rack"));
    let (subs_key, current_key) = (key("subscribed_topic_ids"), key("current_assignment"));
    let mut times = Vec::with_capacity(rounds.max(1));
    for _ in 0..rounds.max(1) {
        let start = std::time::Instant::now();
        let mut bytes = 0usize;
        let mut previous: Option<Bound<'_, PyAny>> = None;
        for m in members.iter() {
            let m = m.cast::<PyDict>()?;
            if let Some(id) = m.get_item(&id_key)? {
                bytes += id.cast::<PyString>()?.to_str()?.len();
            }
            std::hint::black_box((m.get_item(&instance_key)?, m.get_item(&rack_key)?));
            if let Some(subs) = m.get_item(&subs_key)? {
                if previous.as_ref().is_none_or(|p| !p.is(&subs)) {
                    for t in subs.cast::<PyList>()?.iter() {
                        bytes += t.cast::<PyString>()?.to_str()?.len();
                    }
                }
                previous = Some(subs);
            }
            if current {
                if let Some(cur) = m.get_item(&current_key)? {
                    for pair in cur.cast::<PyList>()?.iter() {
                        let pair = pair.cast::<PyList>()?;
                        bytes += pair.get_item(0)?.cast::<PyString>()?.to_str()?.len();
                        for p in pair.get_item(1)?.cast::<PyList>()?.iter() {
                            bytes += p.extract::<i64>()? as usize;
                        }
                    }
                }
            }
        }
        times.push(start.elapsed().as_secs_f64());
        std::hint::black_box(bytes);
    }
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2])
}

/// The `_bench` submodule of `_core`.
pub fn module(py: Python<'_>) -> PyResult<Bound<'_, PyModule>> {
    let m = PyModule::new(py, "_bench")?;
    m.add_function(wrap_pyfunction!(time_allocate_core, &m)?)?;
    m.add_function(wrap_pyfunction!(time_md5_floor, &m)?)?;
    m.add_function(wrap_pyfunction!(time_server_columns_floor, &m)?)?;
    m.add_function(wrap_pyfunction!(time_dict_result_floor, &m)?)?;
    m.add_function(wrap_pyfunction!(time_dict_input_floor, &m)?)?;
    Ok(m)
}
