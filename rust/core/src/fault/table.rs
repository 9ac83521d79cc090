//! `computeNotAvailableDuration`: how long a broker is avoided after a send of a given latency.
//!
//! ```
//! use mqbalance_core::fault::LatencyTable;
//! let t = LatencyTable::v4();
//! let d = |latency| t.compute_not_available_duration(latency);
//! assert_eq!((d(49), d(550), d(30_000)), (0, 30_000, 600_000));
//! assert_eq!(LatencyTable::v5().compute_not_available_duration(30_000), 30_000);
//! ```

use super::error::FaultError;
use super::semantics::Semantics;

/// `latencyMax` (ms, ascending) and the matching `notAvailableDuration` (ms).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LatencyTable {
    latency_max: Vec<i64>,
    not_available: Vec<i64>,
}

impl LatencyTable {
    /// RocketMQ ≤ 5.1.3 defaults.
    pub fn v4() -> Self {
        LatencyTable {
            latency_max: vec![50, 100, 550, 1000, 2000, 3000, 15000],
            not_available: vec![0, 0, 30_000, 60_000, 120_000, 180_000, 600_000],
        }
    }

    /// RocketMQ 5.1.4+ defaults.
    pub fn v5() -> Self {
        LatencyTable {
            latency_max: vec![50, 100, 550, 1800, 3000, 5000, 15000],
            not_available: vec![0, 0, 2000, 5000, 6000, 10000, 30000],
        }
    }

    /// The defaults of a client generation ([`v4`](Self::v4) or [`v5`](Self::v5)).
    pub fn of(semantics: Semantics) -> Self {
        match semantics {
            Semantics::V4 => Self::v4(),
            Semantics::V5 => Self::v5(),
        }
    }

    /// A generation's defaults with either list replaced (Java's setters), checked as in
    /// [`new`](Self::new).
    ///
    /// ```
    /// use mqbalance_core::fault::{LatencyTable, Semantics};
    /// let t = LatencyTable::with_overrides(Semantics::V5, None, Some(vec![0; 7])).unwrap();
    /// assert_eq!((t.latency_max(), t.not_available_duration()), (LatencyTable::v5().latency_max(), &[0; 7][..]));
    /// assert!(LatencyTable::with_overrides(Semantics::V4, Some(vec![1]), None).is_err());
    /// ```
    pub fn with_overrides(
        semantics: Semantics,
        latency_max: Option<Vec<i64>>,
        not_available: Option<Vec<i64>>,
    ) -> Result<Self, FaultError> {
        let default = Self::of(semantics);
        if latency_max.is_none() && not_available.is_none() {
            return Ok(default);
        }
        Self::new(
            latency_max.unwrap_or(default.latency_max),
            not_available.unwrap_or(default.not_available),
        )
    }

    /// A custom table (Java's setters). Both lists must have the same length; `latency_max` must
    /// ascend and no entry may be negative (Java does not check; an unsorted table makes the
    /// backwards scan meaningless).
    pub fn new(latency_max: Vec<i64>, not_available: Vec<i64>) -> Result<Self, FaultError> {
        if latency_max.len() != not_available.len() {
            return Err(FaultError::TableLengthMismatch {
                latency_max: latency_max.len(),
                durations: not_available.len(),
            });
        }
        for (table, values, ascending) in [
            ("latency_max", &latency_max, true),
            ("not_available_duration", &not_available, false),
        ] {
            for (index, &value) in values.iter().enumerate() {
                if value < 0 || (ascending && index > 0 && value < values[index - 1]) {
                    return Err(FaultError::TableNotSorted {
                        table,
                        index,
                        value,
                    });
                }
            }
        }
        Ok(LatencyTable {
            latency_max,
            not_available,
        })
    }

    /// The latency thresholds.
    pub fn latency_max(&self) -> &[i64] {
        &self.latency_max
    }

    /// The durations.
    pub fn not_available_duration(&self) -> &[i64] {
        &self.not_available
    }

    /// Scan from the last threshold down; the first `latency >= latencyMax[k]` gives
    /// `notAvailableDuration[k]`; none gives 0.
    pub fn compute_not_available_duration(&self, latency: i64) -> i64 {
        (0..self.latency_max.len())
            .rev()
            .find(|&k| latency >= self.latency_max[k])
            .map_or(0, |k| self.not_available[k])
    }
}
