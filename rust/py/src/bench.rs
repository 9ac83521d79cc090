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

/// The `_bench` submodule of `_core`.
pub fn module(py: Python<'_>) -> PyResult<Bound<'_, PyModule>> {
    let m = PyModule::new(py, "_bench")?;
    m.add_function(wrap_pyfunction!(time_allocate_core, &m)?)?;
    m.add_function(wrap_pyfunction!(time_md5_floor, &m)?)?;
    m.add_function(wrap_pyfunction!(time_server_columns_floor, &m)?)?;
    Ok(m)
}
