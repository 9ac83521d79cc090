//! Batch simulation of a producer's sends, for capacity studies: one producer thread sending
//! synchronously (send `i` is due at `start_ms + i * interval_ms` and starts once the previous
//! send has returned), per-broker latency and failure models, the producer's retry loop (`retryTimesWhenSendFailed`, default 2 → up to 3 attempts,
//! the previous attempt's broker passed as `lastBrokerName`, 5.x `resetIndex` on retries), the
//! fault table updated after every attempt as `DefaultMQProducerImpl` does.
//!
//! Randomness comes from a [`SplitMix64`] seeded by the caller. Per attempt the draws are, in
//! order: 5.x only and only on a retry with latency fault enabled, the counter reset
//! (`next_below(i32::MAX)`); the latency jitter (`next_below(jitter + 1)`, only when
//! `jitter > 0`); the failure draw (`next_f64() < failure_rate`).
//!
//! ```
//! use mqbalance_core::fault::*;
//! let tp = TopicPublishInfo::from_route("t", &[QueueData::new("a", 6, 4), QueueData::new("b", 6, 4)], |_| true).unwrap();
//! let mut ft = MQFaultStrategy::new(Semantics::V4, LatencyTable::v4(), true);
//! let models = [BrokerModel { latency_ms: 5, jitter_ms: 0, failure_rate: 0.0 }, BrokerModel { latency_ms: 5, jitter_ms: 0, failure_rate: 1.0 }];
//! let cfg = SimConfig { sends: 100, ..SimConfig::default() };
//! let r = simulate(&tp, &mut ft, &models, &cfg).unwrap();
//! assert!(r.ok.iter().all(|&ok| ok)); // every send ends on broker a, after at most one retry
//! ```

use rustc_hash::FxHashMap;

use super::error::FaultError;
use super::select::{Selected, TopicPublishInfo};
use super::semantics::Semantics;
use super::strategy::MQFaultStrategy;

/// `SplitMix64`: a tiny, well-known, seedable generator (Steele, Lea & Flood 2014).
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// Seeded generator.
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)` (53 bits).
    #[allow(
        clippy::cast_precision_loss,
        reason = "both operands are below 2^53, exact in an f64"
    )]
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform-ish in `[0, n)` (`n > 0`; modulo reduction).
    pub fn next_below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// How one broker behaves: each attempt takes `latency_ms + U[0, jitter_ms]` and fails with
/// probability `failure_rate`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BrokerModel {
    /// Base latency (ms).
    pub latency_ms: i64,
    /// Extra uniform latency, `0..=jitter_ms` (ms).
    pub jitter_ms: i64,
    /// Probability that an attempt fails.
    pub failure_rate: f64,
}

/// Bytes of result per send (the five columns).
pub const SEND_BYTES: u64 = 4 + 4 + 1 + 1 + 8;

/// Simulation settings.
#[derive(Debug, Clone)]
pub struct SimConfig {
    /// Number of sends.
    pub sends: usize,
    /// Time of the first send (ms).
    pub start_ms: i64,
    /// Time between the due times of consecutive sends (ms); a send starts later if the previous
    /// one has not returned yet.
    pub interval_ms: i64,
    /// `retryTimesWhenSendFailed` (attempts = 1 + this).
    pub retry_times: u32,
    /// Seed of the generator.
    pub seed: u64,
    /// Starting raw value of the send thread's `sendWhichQueue`.
    pub send_which_queue: i32,
    /// Starting raw value of 4.x `whichItemWorst`.
    pub which_item_worst: i32,
    /// 5.x: the `reachable` flag a failed attempt records (`!startDetectorEnable` for a
    /// `RemotingException`).
    pub failure_reachable: bool,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            sends: 0,
            start_ms: 0,
            interval_ms: 1,
            retry_times: 2,
            seed: 0,
            send_which_queue: 0,
            which_item_worst: 0,
            failure_reachable: true,
        }
    }
}

/// Per-send outcome arrays.
#[derive(Debug, Clone, Default)]
pub struct SimResult {
    /// Broker of the last attempt (code into the route's broker dictionary).
    pub broker: Vec<u32>,
    /// Queue id of the last attempt.
    pub queue_id: Vec<i32>,
    /// Attempts made (`1..=1+retry_times`).
    pub attempts: Vec<u8>,
    /// Whether the send succeeded.
    pub ok: Vec<bool>,
    /// Time from the send's start to its return, all attempts (ms).
    pub elapsed_ms: Vec<i64>,
    /// Counter values at the end.
    pub send_which_queue: i32,
    /// 4.x `whichItemWorst` at the end.
    pub which_item_worst: i32,
}

fn check(models: &[BrokerModel], tp: &TopicPublishInfo, cfg: &SimConfig) -> Result<(), FaultError> {
    let brokers = tp.queues().broker_dict().len();
    if models.len() != brokers {
        return Err(FaultError::InvalidSimulation {
            name: "models",
            reason: format!("{} models for {} brokers", models.len(), brokers),
        });
    }
    for m in models {
        if m.latency_ms < 0 || m.jitter_ms < 0 {
            return Err(FaultError::InvalidSimulation {
                name: "latency_ms",
                reason: format!(
                    "latency and jitter must be >= 0, got {} and {}",
                    m.latency_ms, m.jitter_ms
                ),
            });
        }
        if !(0.0..=1.0).contains(&m.failure_rate) {
            return Err(FaultError::InvalidSimulation {
                name: "failure_rate",
                reason: format!("must be in [0, 1], got {}", m.failure_rate),
            });
        }
    }
    if cfg.retry_times > 254 {
        return Err(FaultError::InvalidSimulation {
            name: "retry_times",
            reason: format!("at most 254, got {}", cfg.retry_times),
        });
    }
    if cfg.interval_ms < 0 {
        return Err(FaultError::InvalidSimulation {
            name: "interval_ms",
            reason: format!("must be >= 0, got {}", cfg.interval_ms),
        });
    }
    // The last send returns by start + sends * interval + sends * attempts * slowest attempt; if
    // that passes i64::MAX ms, times would saturate and elapsed times read 0: refuse instead.
    let slowest = models
        .iter()
        .map(|m| i128::from(m.latency_ms) + i128::from(m.jitter_ms.max(0)))
        .max()
        .unwrap_or(0);
    let sends = cfg.sends as i128;
    let end = i128::from(cfg.start_ms)
        .saturating_add(sends.saturating_mul(i128::from(cfg.interval_ms)))
        .saturating_add(
            sends
                .saturating_mul(i128::from(cfg.retry_times) + 1)
                .saturating_mul(slowest),
        );
    if end > i128::from(i64::MAX) {
        return Err(FaultError::InvalidSimulation {
            name: "start_ms",
            reason: format!(
                "the run from start_ms {} ({} sends every {} ms, up to {} attempts of up to {} ms) could end after {} ms, past the largest time (i64::MAX ms); use an earlier start_ms or fewer sends",
                cfg.start_ms,
                cfg.sends,
                cfg.interval_ms,
                u64::from(cfg.retry_times) + 1,
                slowest,
                end
            ),
        });
    }
    Ok(())
}

/// Run `cfg.sends` sends through `ft` (which is updated as the producer would update it).
pub fn simulate(
    tp: &TopicPublishInfo,
    ft: &mut MQFaultStrategy,
    models: &[BrokerModel],
    cfg: &SimConfig,
) -> Result<SimResult, FaultError> {
    check(models, tp, cfg)?;
    let dict = tp.queues().broker_dict();
    let code_of: FxHashMap<&str, u32> = dict
        .iter()
        .enumerate()
        .map(|(i, b)| (b.as_str(), i as u32))
        .collect();
    let mut rng = SplitMix64::new(cfg.seed);
    let (mut counter, mut worst) = (cfg.send_which_queue, cfg.which_item_worst);
    let sends = cfg.sends;
    let too_large = || FaultError::TooLarge {
        name: "sends",
        value: sends as u64,
        bytes: (sends as u64).saturating_mul(SEND_BYTES),
    };
    let mut r = SimResult::default();
    r.broker.try_reserve_exact(sends).map_err(|_| too_large())?;
    r.queue_id
        .try_reserve_exact(sends)
        .map_err(|_| too_large())?;
    r.attempts
        .try_reserve_exact(sends)
        .map_err(|_| too_large())?;
    r.ok.try_reserve_exact(sends).map_err(|_| too_large())?;
    r.elapsed_ms
        .try_reserve_exact(sends)
        .map_err(|_| too_large())?;
    let mut free_at = i64::MIN;
    for i in 0..cfg.sends {
        // One producer thread sending synchronously: a send starts when it is due and the
        // previous one has returned.
        let start = cfg
            .start_ms
            .saturating_add((i as i64).saturating_mul(cfg.interval_ms))
            .max(free_at);
        let mut now = start;
        let mut last: Option<u32> = None;
        let (mut b, mut q, mut ok, mut attempts) = (0u32, 0i32, false, 0u8);
        for attempt in 0..=cfg.retry_times {
            let last_name = last.map(|c| dict[c as usize].as_str());
            (b, q) = match ft.semantics() {
                Semantics::V4 => match tp.select_4x(ft, now, last_name, &mut counter, &mut worst) {
                    Selected::Position(p) => (tp.queues().broker_code(p), tp.queues().queue_id(p)),
                    Selected::New {
                        broker, queue_id, ..
                    } => (
                        code_of
                            .get(broker.as_str())
                            .copied()
                            .ok_or(FaultError::UnknownBroker(broker))?,
                        queue_id,
                    ),
                },
                Semantics::V5 => {
                    let reset = (attempt > 0 && ft.enabled())
                        .then(|| rng.next_below(i32::MAX as u64) as i32);
                    let p = tp.select_5x(ft, now, last_name, reset, &mut counter);
                    (tp.queues().broker_code(p), tp.queues().queue_id(p))
                }
            };
            let m = models[b as usize];
            let latency = m.latency_ms
                + if m.jitter_ms > 0 {
                    rng.next_below(m.jitter_ms as u64 + 1) as i64
                } else {
                    0
                };
            let failed = rng.next_f64() < m.failure_rate;
            now = now.saturating_add(latency);
            attempts += 1;
            let name = dict[b as usize].as_str();
            if failed {
                ft.update_fault_item(name, latency, true, cfg.failure_reachable, now)?;
                last = Some(b);
            } else {
                ft.update_fault_item(name, latency, false, true, now)?;
                ok = true;
                break;
            }
        }
        r.broker.push(b);
        r.queue_id.push(q);
        r.attempts.push(attempts);
        r.ok.push(ok);
        r.elapsed_ms.push(now - start);
        free_at = now;
    }
    r.send_which_queue = counter;
    r.which_item_worst = worst;
    Ok(r)
}
