//! Python inputs → owned core data. Everything is extracted here, with the GIL held, so the core
//! can then run with the GIL released.
//!
//! A string column is either a `list[str]` (interned here) or a `(dictionary: list[str],
//! codes: numpy.uint32)` pair (what Arrow dictionary arrays and factorised columns give).

use mqbalance_core::allocate::RoomMap;
use mqbalance_core::{ConsumerList, QueueTable};
use numpy::PyReadonlyArray1;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString, PyTuple};
use rustc_hash::FxHashMap;

use crate::errors::{IntoPyResult, InvalidClientIdError, InvalidQueueError};

type ErrFn = fn(String, Py<PyAny>) -> PyErr;

fn queue_err(msg: String, value: Py<PyAny>) -> PyErr {
    InvalidQueueError::new_err((msg, value))
}

fn client_err(msg: String, value: Py<PyAny>) -> PyErr {
    InvalidClientIdError::new_err((msg, value))
}

/// One string, with a typed error naming `what[index]` for non-strings and lone surrogates.
fn one_str<'a>(
    item: &'a Bound<'_, PyAny>,
    what: &str,
    index: usize,
    err: ErrFn,
) -> PyResult<&'a str> {
    let s = item.cast::<PyString>().map_err(|_| {
        err(
            format!("{what}[{index}] must be a str, got {}", repr(item)),
            item.clone().unbind(),
        )
    })?;
    s.to_str().map_err(|_| {
        err(
            format!(
                "{what}[{index}] is not valid Unicode (lone surrogate?): {}",
                repr(item)
            ),
            item.clone().unbind(),
        )
    })
}

fn repr(item: &Bound<'_, PyAny>) -> String {
    item.repr()
        .map_or_else(|_| "<unrepresentable>".into(), |r| r.to_string())
}

fn as_list<'a, 'py>(
    obj: &'a Bound<'py, PyAny>,
    what: &str,
    err: ErrFn,
) -> PyResult<&'a Bound<'py, PyList>> {
    obj.cast::<PyList>().map_err(|_| {
        err(
            format!("{what} must be a list, got {}", repr(obj)),
            obj.clone().unbind(),
        )
    })
}

/// A string column as `(dictionary, codes)`.
pub fn str_column(
    obj: &Bound<'_, PyAny>,
    what: &str,
    err: ErrFn,
) -> PyResult<(Vec<String>, Vec<u32>)> {
    if let Ok(pair) = obj.cast::<PyTuple>() {
        let dict_obj = pair.get_item(0)?;
        let dict = as_list(&dict_obj, what, err)?;
        let mut words = Vec::with_capacity(dict.len());
        for (i, item) in dict.iter().enumerate() {
            words.push(one_str(&item, what, i, err)?.to_owned());
        }
        let codes: PyReadonlyArray1<'_, u32> = pair.get_item(1)?.extract()?;
        return Ok((words, codes.as_slice()?.to_vec()));
    }
    let list = as_list(obj, what, err)?;
    let mut index: FxHashMap<String, u32> = FxHashMap::default();
    let mut words: Vec<String> = Vec::new();
    let mut codes = Vec::with_capacity(list.len());
    let mut prev: Option<(*mut pyo3::ffi::PyObject, u32)> = None;
    for (i, item) in list.iter().enumerate() {
        // Sorted columns repeat the very same object: skip hashing then.
        if let Some((p, code)) = prev {
            if p == item.as_ptr() {
                codes.push(code);
                continue;
            }
        }
        let s = one_str(&item, what, i, err)?;
        // ... or an equal string built again (an f-string per row): one comparison, no hashing.
        if let Some((_, code)) = prev {
            if words[code as usize] == s {
                prev = Some((item.as_ptr(), code));
                codes.push(code);
                continue;
            }
        }
        let code = if let Some(&c) = index.get(s) {
            c
        } else {
            words.push(s.to_owned());
            index.insert(s.to_owned(), (words.len() - 1) as u32);
            (words.len() - 1) as u32
        };
        prev = Some((item.as_ptr(), code));
        codes.push(code);
    }
    Ok((words, codes))
}

/// Queue ids (numpy int64) checked against Java's `int` range.
pub fn queue_ids(arr: PyReadonlyArray1<'_, i64>) -> PyResult<Vec<i32>> {
    let slice = arr.as_slice()?;
    check_java_ints(slice)?;
    Ok(slice.iter().map(|&v| v as i32).collect())
}

/// The number of queue ids, each checked to be a Java `int`, without copying them (for the
/// strategies that only count queues).
pub fn queue_count(arr: &PyReadonlyArray1<'_, i64>) -> PyResult<usize> {
    let slice = arr.as_slice()?;
    check_java_ints(slice)?;
    Ok(slice.len())
}

/// True when every value is a Java `int`: one branch-free pass in 64-bit adds, shifts and ors that
/// vectorise on any x86-64 (a value is a Java int when `v + 2^31` fits in 32 bits).
pub fn all_java_ints(slice: &[i64]) -> bool {
    mqbalance_core::queues::all_java_ints(slice)
}

/// [`all_java_ints`], and the first value out of range as the error when not.
pub fn check_java_ints(slice: &[i64]) -> PyResult<()> {
    let in_range = |v: &i64| i32::try_from(*v).is_ok();
    if all_java_ints(slice) {
        return Ok(());
    }
    let (i, &v) = slice
        .iter()
        .enumerate()
        .find(|(_, v)| !in_range(v))
        .expect("an id out of range");
    Err(Python::attach(|py| {
        queue_err(
            format!("queue_ids[{i}] = {v} is outside Java's int range"),
            v.into_pyobject(py)
                .map_or_else(|_| py.None(), |o| o.into_any().unbind()),
        )
    }))
}

/// The queue table. With `names = false` only the count and ids are kept (`AVG`/`AVG_BY_CIRCLE` on
/// presorted input never read topic or broker names).
pub fn queue_table(
    topics: &Bound<'_, PyAny>,
    brokers: &Bound<'_, PyAny>,
    ids: PyReadonlyArray1<'_, i64>,
    names: bool,
) -> PyResult<QueueTable> {
    let qids = queue_ids(ids)?;
    let n = qids.len();
    if !names {
        return QueueTable::from_columns(
            vec![String::new()],
            vec![0; n],
            vec![String::new()],
            vec![0; n],
            qids,
        )
        .py_err();
    }
    let (tdict, tcodes) = str_column(topics, "topics", queue_err)?;
    let (bdict, bcodes) = str_column(brokers, "brokers", queue_err)?;
    QueueTable::from_columns(tdict, tcodes, bdict, bcodes, qids).py_err()
}

/// The items of a client-id list, kept alive for [`borrowed_ids`].
pub fn consumer_items<'py>(ids: &Bound<'py, PyAny>) -> PyResult<Vec<Bound<'py, PyAny>>> {
    Ok(as_list(ids, "consumers", client_err)?.iter().collect())
}

/// The client ids as `&str` read in place (the interpreter keeps an ASCII string's UTF-8 form in the
/// object): the same per-item errors as [`consumer_list`], no string copied.
pub fn borrowed_ids<'a>(items: &'a [Bound<'_, PyAny>]) -> PyResult<Vec<&'a str>> {
    items
        .iter()
        .enumerate()
        .map(|(i, item)| one_str(item, "consumers", i, client_err))
        .collect()
}

/// Client ids (a list of str), as passed.
pub fn consumer_list(ids: &Bound<'_, PyAny>) -> PyResult<ConsumerList> {
    let list = as_list(ids, "consumers", client_err)?;
    let mut out = Vec::with_capacity(list.len());
    for (i, item) in list.iter().enumerate() {
        out.push(one_str(&item, "consumers", i, client_err)?.to_owned());
    }
    Ok(ConsumerList::new(out))
}

/// Machine rooms from explicit per-queue and per-consumer room names (the prefix separator is
/// `RoomMap::from_prefix`, no extraction).
pub fn room_map(
    table: &QueueTable,
    group: &ConsumerList,
    queue_rooms: &Bound<'_, PyAny>,
    consumer_rooms: &Bound<'_, PyAny>,
) -> PyResult<RoomMap> {
    let (mut names, qcodes) = str_column(queue_rooms, "queue_rooms", queue_err)?;
    let (cnames, ccodes) = str_column(consumer_rooms, "consumer_rooms", client_err)?;
    let shift = names.len() as u32;
    names.extend(cnames);
    let ccodes = ccodes.into_iter().map(|x| x + shift).collect();
    RoomMap::new(names, qcodes, ccodes, table, group).py_err()
}

/// The strings of an Arrow string column given as its two buffers, `offsets` (`n + 1` entries,
/// the column's own slice of them, widened to 64 bits) and `data`, read in place. A bad offset or a string that is not
/// UTF-8 is an [`InvalidClientIdError`] naming the index (a column built from buffers is not
/// checked by Arrow).
pub fn arrow_strs<'a>(offsets: &[i64], data: &'a [u8], what: &str) -> PyResult<Vec<&'a str>> {
    let bad = |msg: String, at: usize| InvalidClientIdError::new_err((msg, at));
    if offsets.is_empty() {
        return Err(bad(format!("{what}: no offsets (a column has n + 1)"), 0));
    }
    let mut out = Vec::with_capacity(offsets.len() - 1);
    for (i, w) in offsets.windows(2).enumerate() {
        let (a, b) = (w[0], w[1]);
        let bytes = usize::try_from(a)
            .ok()
            .zip(usize::try_from(b).ok())
            .and_then(|(a, b)| data.get(a..b))
            .ok_or_else(|| {
                bad(
                    format!(
                        "{what}[{i}]: offsets {a}..{b} outside its {} bytes",
                        data.len()
                    ),
                    i,
                )
            })?;
        out.push(
            std::str::from_utf8(bytes)
                .map_err(|e| bad(format!("{what}[{i}] is not UTF-8: {e}"), i))?,
        );
    }
    Ok(out)
}
