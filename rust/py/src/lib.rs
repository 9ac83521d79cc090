//! `mqbalance._core`: thin PyO3 bindings over `mqbalance-core`, one file per product:
//! [`rocketmq`] (queue allocation), [`kafka`] (client-side and ZooKeeper-era assignors, sticky
//! userData), [`server`] (Kafka's broker-side assignors), [`fault`] (producer fault tolerance), [`kafka_wire`] (Kafka answers decoded from their bytes).
//!
//! Inputs are extracted into owned Rust data with the GIL held ([`columns`]); the core then runs
//! with the GIL released and its error mapped, through the one helper [`errors::run`]; numpy
//! results are moved out without a copy. The public API is the Python facade in `mqbalance/`.

#[cfg(feature = "bench")]
mod bench;
mod columns;
mod errors;
mod fault;
mod json_reader;
mod kafka;
mod kafka_wire;
mod rocketmq;
mod server;

use pyo3::prelude::*;

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<rocketmq::PyStrategy>()?;
    m.add_function(wrap_pyfunction!(rocketmq::allocate_positions, m)?)?;
    m.add_function(wrap_pyfunction!(rocketmq::assign_positions, m)?)?;
    m.add_class::<rocketmq::PyQueueTable>()?;
    m.add_function(wrap_pyfunction!(rocketmq::allocate_prepared, m)?)?;
    m.add_function(wrap_pyfunction!(rocketmq::assign_prepared, m)?)?;
    m.add_function(wrap_pyfunction!(rocketmq::owners, m)?)?;
    m.add_function(wrap_pyfunction!(rocketmq::owners_by_pair, m)?)?;
    m.add_function(wrap_pyfunction!(rocketmq::owners_by_pair_in_column, m)?)?;
    m.add_function(wrap_pyfunction!(rocketmq::distinct_ids, m)?)?;
    m.add_function(wrap_pyfunction!(rocketmq::json_keys, m)?)?;
    m.add_function(wrap_pyfunction!(json_reader::read_snapshot_json, m)?)?;
    m.add_function(wrap_pyfunction!(rocketmq::sort_strings_order, m)?)?;
    m.add_function(wrap_pyfunction!(rocketmq::key_order, m)?)?;
    m.add_function(wrap_pyfunction!(rocketmq::sort_queues_order, m)?)?;
    m.add_function(wrap_pyfunction!(rocketmq::ring_hash, m)?)?;
    m.add("MAX_RING_ENTRIES", mqbalance_core::ring::MAX_RING_ENTRIES)?;
    m.add_class::<fault::PyMQFaultStrategy>()?;
    m.add_class::<fault::PyTopicPublishInfo>()?;
    kafka::register(m)?;
    kafka_wire::register(m)?;
    m.add_function(wrap_pyfunction!(server::server_assign, m)?)?;
    m.add_function(wrap_pyfunction!(server::server_assign_columns, m)?)?;
    m.add(
        "SERVER_ASSIGNORS",
        pyo3::types::PyTuple::new(m.py(), server::names())?,
    )?;
    let newest = mqbalance_core::assign::server::KafkaRelease::NEWEST;
    m.add(
        "KAFKA_NEWEST_RELEASE",
        format!("{}.{}", newest.major, newest.minor),
    )?;
    #[cfg(feature = "bench")]
    m.add_submodule(&bench::module(m.py())?)?;
    Ok(())
}
