//! Binding of `mqbalance_core::json_connections`: a snapshot's JSON text read, without the GIL,
//! into its skeleton and the connections' Arrow-layout buffers (handed to numpy without a copy).

use mqbalance_core::json_connections::{read_connections, IntColumn, StrColumn};
use numpy::IntoPyArray;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};

fn str_column(py: Python<'_>, c: StrColumn) -> PyResult<Bound<'_, PyTuple>> {
    (
        c.offsets.into_pyarray(py),
        c.data.into_pyarray(py),
        c.validity.bits.into_pyarray(py),
        c.validity.nulls,
    )
        .into_pyobject(py)
}

fn int_column(py: Python<'_>, c: IntColumn) -> PyResult<Bound<'_, PyTuple>> {
    (
        c.values.into_pyarray(py),
        c.validity.bits.into_pyarray(py),
        c.validity.nulls,
    )
        .into_pyobject(py)
}

/// The connections of a snapshot's UTF-8 JSON `text` as columns, or `None` when the reader is
/// not sure of the text (the caller's JSON parser then reads it and names any problem):
/// `(skeleton, counts, client_id, client_addr, language, version, strategy, strategy_texts)`,
/// a string column as `(offsets int32, data uint8, validity bits uint8, null count)`, `version`
/// as `(values int64, validity bits, null count)`, `strategy` an int32 index into
/// `strategy_texts` (`-1`: the connection has none).
#[pyfunction]
pub fn read_snapshot_json<'py>(
    py: Python<'py>,
    text: &[u8],
) -> PyResult<Option<Bound<'py, PyTuple>>> {
    let Some(read) = py.detach(|| read_connections(text)) else {
        return Ok(None);
    };
    let out = (
        PyBytes::new(py, read.skeleton.as_bytes()),
        read.counts.into_pyarray(py),
        str_column(py, read.client_id)?,
        str_column(py, read.client_addr)?,
        str_column(py, read.language)?,
        int_column(py, read.version)?,
        read.strategy.into_pyarray(py),
        read.strategy_texts,
    )
        .into_pyobject(py)?;
    Ok(Some(out))
}
