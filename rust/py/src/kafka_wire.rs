//! Bindings of `mqbalance_core::kafka_wire`: a Kafka answer's body decoded into columns (numpy
//! arrays moved out of Rust, names as lists of str), and the CRC-32C of record batches. The
//! connection code (kafka-python's) sends the request and reads the frame; only the decoding of
//! the body is here.

use mqbalance_core::kafka_wire::{self, WireError};
use numpy::IntoPyArray;
use pyo3::buffer::PyBuffer;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyTuple};

use crate::errors::{run, CoreError};

pyo3::import_exception!(mqbalance.exceptions, KafkaWireError);

/// Bytes that are not the answer they were read as: `KafkaWireError`, its value the byte offset.
impl CoreError for WireError {
    fn into_py(self) -> PyErr {
        let msg = self.to_string();
        match self {
            WireError::UnsupportedVersion { version, .. } => {
                KafkaWireError::new_err((msg, version))
            }
            WireError::Truncated { offset, .. }
            | WireError::Malformed { offset, .. }
            | WireError::TrailingBytes { offset, .. } => KafkaWireError::new_err((msg, offset)),
        }
    }
}

/// `decode_offset_fetch(data, /, *, version)`: the body of an `OffsetFetch` answer (v8–9) as
/// `(throttle_time_ms, groups, group_errors, topics, group, topic, partition, committed_offset,
/// leader_epoch, error_code)` — one row per partition; `group` and `topic` index `groups` and
/// `topics`. Decoded with the GIL released.
#[pyfunction]
#[pyo3(signature = (data, /, *, version))]
pub fn decode_offset_fetch<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyBytes>,
    version: i16,
) -> PyResult<Bound<'py, PyTuple>> {
    let bytes = data.as_bytes();
    let a = run(py, || kafka_wire::offset_fetch(bytes, version))?;
    let items: [Bound<'py, PyAny>; 10] = [
        a.throttle_time_ms.into_pyobject(py)?.into_any(),
        PyList::new(py, &a.groups)?.into_any(),
        a.group_errors.into_pyarray(py).into_any(),
        PyList::new(py, &a.topics)?.into_any(),
        a.group.into_pyarray(py).into_any(),
        a.topic.into_pyarray(py).into_any(),
        a.partition.into_pyarray(py).into_any(),
        a.committed_offset.into_pyarray(py).into_any(),
        a.leader_epoch.into_pyarray(py).into_any(),
        a.error_code.into_pyarray(py).into_any(),
    ];
    PyTuple::new(py, items)
}

/// `crc32c(data, /)`: the CRC-32C (Castagnoli) of a bytes-like object, as record batches carry it.
#[pyfunction]
#[pyo3(signature = (data, /))]
pub fn crc32c(py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<u32> {
    if let Ok(b) = data.cast::<PyBytes>() {
        return Ok(kafka_wire::crc32c(b.as_bytes()));
    }
    let copy = PyBuffer::<u8>::get(data)?.to_vec(py)?;
    Ok(kafka_wire::crc32c(&copy))
}

/// Adds the functions to `_core`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(decode_offset_fetch, m)?)?;
    m.add_function(wrap_pyfunction!(crc32c, m)?)?;
    Ok(())
}
