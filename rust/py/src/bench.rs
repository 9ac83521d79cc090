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

/// The `_bench` submodule of `_core`.
pub fn module(py: Python<'_>) -> PyResult<Bound<'_, PyModule>> {
    let m = PyModule::new(py, "_bench")?;
    m.add_function(wrap_pyfunction!(time_allocate_core, &m)?)?;
    m.add_function(wrap_pyfunction!(time_md5_floor, &m)?)?;
    Ok(m)
}
