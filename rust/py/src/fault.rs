//! Bindings of `mqbalance_core::fault`. Counters are raw `i32`s passed in and returned, so the
//! Python layer can keep them per thread like Java's `ThreadLocalIndex`; the fault table is shared
//! and guarded by a mutex (safe on free-threaded Python too).

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, MutexGuard};

use mqbalance_core::fault::{
    simulate, BrokerModel, LatencyTable, MQFaultStrategy, QueueData, Selected, Semantics,
    SimConfig, TopicPublishInfo,
};
use mqbalance_core::QueueTable;
use numpy::IntoPyArray;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors::{run, IntoPyResult, InvalidInputError};

fn semantics(name: &str) -> PyResult<Semantics> {
    match name {
        "4.x" => Ok(Semantics::V4),
        "5.x" => Ok(Semantics::V5),
        _ => Err(InvalidInputError::new_err((
            format!("unknown semantics {name:?}: use \"4.x\" or \"5.x\""),
            name.to_owned(),
        ))),
    }
}

/// `TopicPublishInfo`: a topic's message queue list and route queue datas (immutable; the
/// `sendWhichQueue` counter is kept by the caller).
#[pyclass(frozen, name = "TopicPublishInfo", module = "mqbalance._core")]
pub struct PyTopicPublishInfo {
    pub(crate) inner: TopicPublishInfo,
}

type QueueDataTuple = (String, i64, i64);

fn queue_datas(items: Vec<QueueDataTuple>) -> Vec<QueueData> {
    items
        .into_iter()
        .map(|(b, perm, w)| QueueData {
            broker_name: b,
            perm,
            write_queue_nums: w,
        })
        .collect()
}

#[pymethods]
impl PyTopicPublishInfo {
    /// From an explicit queue list `(topics, brokers, queue_ids)` and `(broker, perm, writeQueueNums)` queue datas.
    #[new]
    fn new(
        topic: &str,
        queues: Vec<(String, String, i32)>,
        queue_data: Vec<QueueDataTuple>,
    ) -> PyResult<Self> {
        let table =
            QueueTable::from_rows(queues.iter().map(|(t, b, q)| (t.as_str(), b.as_str(), *q)));
        Ok(PyTopicPublishInfo {
            inner: TopicPublishInfo::new(table, queue_datas(queue_data), topic).py_err()?,
        })
    }

    /// `topicRouteData2TopicPublishInfo`; `brokers_with_master=None` means every broker has one.
    #[staticmethod]
    #[pyo3(signature = (topic, queue_data, brokers_with_master = None))]
    fn from_route(
        topic: &str,
        queue_data: Vec<QueueDataTuple>,
        brokers_with_master: Option<HashSet<String>>,
    ) -> PyResult<Self> {
        let inner = TopicPublishInfo::from_route(topic, &queue_datas(queue_data), |b| {
            brokers_with_master.as_ref().is_none_or(|m| m.contains(b))
        })
        .py_err()?;
        Ok(PyTopicPublishInfo { inner })
    }

    /// The queue list as `(topic, broker, queue_id)` tuples.
    fn queues(&self) -> Vec<(String, String, i32)> {
        let t = self.inner.queues();
        (0..t.len())
            .map(|i| (t.topic(i).to_owned(), t.broker(i).to_owned(), t.queue_id(i)))
            .collect()
    }

    /// One plain round-robin step: `(position, counter)`.
    fn plain_step(&self, counter: i32) -> (usize, i32) {
        let mut c = counter;
        (self.inner.plain_step(&mut c), c)
    }

    /// `selectOneMessageQueue(lastBrokerName)`: `(position, counter)`.
    #[pyo3(signature = (last_broker, counter))]
    fn select_avoiding(&self, last_broker: Option<&str>, counter: i32) -> (usize, i32) {
        let mut c = counter;
        (self.inner.select_avoiding(last_broker, &mut c), c)
    }

    fn __len__(&self) -> usize {
        self.inner.len()
    }

    /// Broker names in dictionary-code order (what simulation codes refer to).
    fn brokers(&self) -> Vec<String> {
        self.inner.queues().broker_dict().to_vec()
    }
}

/// One producer's `MQFaultStrategy` (settings and `LatencyFaultTolerance` items).
#[pyclass(frozen, name = "MQFaultStrategy", module = "mqbalance._core")]
pub struct PyMQFaultStrategy {
    inner: Mutex<MQFaultStrategy>,
}

type ItemTuple = (i64, i64, bool, i64);

impl PyMQFaultStrategy {
    fn lock(&self) -> MutexGuard<'_, MQFaultStrategy> {
        // A panic while holding the lock cannot leave the table half-updated (updates are
        // single assignments), so a poisoned lock is still safe to use.
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[pymethods]
impl PyMQFaultStrategy {
    #[new]
    #[pyo3(signature = (semantics, *, enabled, latency_max = None, not_available_duration = None, start_detector_enable = false, detect_interval = 2000))]
    fn new(
        semantics: &str,
        enabled: bool,
        latency_max: Option<Vec<i64>>,
        not_available_duration: Option<Vec<i64>>,
        start_detector_enable: bool,
        detect_interval: i64,
    ) -> PyResult<Self> {
        let sem = self::semantics(semantics)?;
        let t = LatencyTable::with_overrides(sem, latency_max, not_available_duration).py_err()?;
        Ok(PyMQFaultStrategy {
            inner: Mutex::new(
                MQFaultStrategy::new(sem, t, enabled)
                    .with_detector(start_detector_enable, detect_interval),
            ),
        })
    }

    #[getter]
    fn latency_max(&self) -> Vec<i64> {
        self.lock().table().latency_max().to_vec()
    }

    #[getter]
    fn not_available_duration(&self) -> Vec<i64> {
        self.lock().table().not_available_duration().to_vec()
    }

    fn compute_not_available_duration(&self, latency: i64) -> i64 {
        self.lock().compute_not_available_duration(latency)
    }

    fn update_fault_item(
        &self,
        broker: &str,
        latency: i64,
        isolation: bool,
        reachable: bool,
        now: i64,
    ) -> PyResult<()> {
        self.lock()
            .update_fault_item(broker, latency, isolation, reachable, now)
            .py_err()
    }

    fn is_available(&self, broker: &str, now: i64) -> bool {
        self.lock().is_available(broker, now)
    }

    fn is_reachable(&self, broker: &str) -> bool {
        self.lock().is_reachable(broker)
    }

    fn remove(&self, broker: &str) {
        self.lock().remove(broker);
    }

    /// `{broker: (currentLatency, startTimestamp, reachable, checkStamp)}`.
    fn items(&self) -> HashMap<String, ItemTuple> {
        self.lock()
            .items()
            .iter()
            .map(|(k, i)| {
                (
                    k.clone(),
                    (
                        i.current_latency,
                        i.start_timestamp,
                        i.reachable,
                        i.check_stamp,
                    ),
                )
            })
            .collect()
    }

    /// 4.x `pickOneAtLeast`: `(broker or None, whichItemWorst)`.
    fn pick_one_at_least_4x(&self, now: i64, which_item_worst: i32) -> (Option<String>, i32) {
        let mut w = which_item_worst;
        let picked = self
            .lock()
            .pick_one_at_least_4x(now, &mut w)
            .map(str::to_owned);
        (picked, w)
    }

    /// 5.x `pickOneAtLeast` candidates (reachable items, by name).
    fn reachable_candidates(&self) -> Vec<String> {
        self.lock()
            .reachable_candidates()
            .into_iter()
            .map(str::to_owned)
            .collect()
    }

    /// 5.x detector round with the given answers (`resolve[broker]` → address or None;
    /// `detect_ok[address]` → bool; missing keys mean None / False).
    fn detect_round(
        &self,
        now: i64,
        resolve: HashMap<String, Option<String>>,
        detect_ok: HashMap<String, bool>,
    ) {
        self.lock().detect_round(
            now,
            |b| resolve.get(b).cloned().flatten(),
            |a| detect_ok.get(a).copied().unwrap_or(false),
        );
    }

    /// 4.9.8 selection: `(position, None, counter, whichItemWorst)` or, for the fallback's new
    /// queue, `(topic position, (broker, queue_id), counter, whichItemWorst)`.
    #[pyo3(signature = (publish_info, now, last_broker, counter, which_item_worst))]
    #[allow(clippy::type_complexity)]
    fn select_4x(
        &self,
        publish_info: &PyTopicPublishInfo,
        now: i64,
        last_broker: Option<&str>,
        counter: i32,
        which_item_worst: i32,
    ) -> (usize, Option<(String, i32)>, i32, i32) {
        let (mut c, mut w) = (counter, which_item_worst);
        let picked =
            publish_info
                .inner
                .select_4x(&mut self.lock(), now, last_broker, &mut c, &mut w);
        match picked {
            Selected::Position(p) => (p, None, c, w),
            Selected::New {
                topic_of,
                broker,
                queue_id,
            } => (topic_of, Some((broker, queue_id)), c, w),
        }
    }

    /// 5.3.3 selection: `(position, counter)`.
    #[pyo3(signature = (publish_info, now, last_broker, reset_to, counter))]
    fn select_5x(
        &self,
        publish_info: &PyTopicPublishInfo,
        now: i64,
        last_broker: Option<&str>,
        reset_to: Option<i32>,
        counter: i32,
    ) -> (usize, i32) {
        let mut c = counter;
        let p = publish_info
            .inner
            .select_5x(&self.lock(), now, last_broker, reset_to, &mut c);
        (p, c)
    }

    /// Batch simulation on a copy of this table (the table itself is not changed); the GIL is
    /// released while it runs. `models[k]` = `(latency_ms, jitter_ms, failure_rate)` of the
    /// publish info's `k`-th broker (`publish_info.brokers()`).
    #[pyo3(signature = (publish_info, models, *, sends, start_ms, interval_ms, retry_times, seed, send_which_queue, which_item_worst, failure_reachable))]
    #[allow(clippy::too_many_arguments)]
    fn simulate<'py>(
        &self,
        py: Python<'py>,
        publish_info: &PyTopicPublishInfo,
        models: Vec<(i64, i64, f64)>,
        sends: usize,
        start_ms: i64,
        interval_ms: i64,
        retry_times: u32,
        seed: u64,
        send_which_queue: i32,
        which_item_worst: i32,
        failure_reachable: bool,
    ) -> PyResult<Bound<'py, PyDict>> {
        let mut ft = self.lock().clone();
        let models: Vec<BrokerModel> = models
            .into_iter()
            .map(|(latency_ms, jitter_ms, failure_rate)| BrokerModel {
                latency_ms,
                jitter_ms,
                failure_rate,
            })
            .collect();
        let cfg = SimConfig {
            sends,
            start_ms,
            interval_ms,
            retry_times,
            seed,
            send_which_queue,
            which_item_worst,
            failure_reachable,
        };
        let r = run(py, || simulate(&publish_info.inner, &mut ft, &models, &cfg))?;
        let out = PyDict::new(py);
        out.set_item("broker", r.broker.into_pyarray(py))?;
        out.set_item("queue_id", r.queue_id.into_pyarray(py))?;
        out.set_item("attempts", r.attempts.into_pyarray(py))?;
        out.set_item("ok", r.ok.into_pyarray(py))?;
        out.set_item("elapsed_ms", r.elapsed_ms.into_pyarray(py))?;
        out.set_item("send_which_queue", r.send_which_queue)?;
        out.set_item("which_item_worst", r.which_item_worst)?;
        Ok(out)
    }
}
