//! A latency histogram of fixed buckets, lock-free on the recording side (three atomic adds),
//! and — only when the process reports through CloudWatch's embedded metric format — the
//! latest samples themselves, at most `MAX_SAMPLES` between two reports.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// Upper bounds of the buckets, in seconds (the `le` labels); one more bucket takes the rest.
pub const BUCKETS: [f64; 16] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
    60.0,
];

/// Samples kept between two EMF reports (EMF takes at most 100 values a metric); past it the
/// bucket counts still count every observation.
pub const MAX_SAMPLES: usize = 100;

#[derive(Default)]
pub struct Histogram {
    buckets: [AtomicU64; BUCKETS.len() + 1],
    count: AtomicU64,
    sum_micros: AtomicU64,
    samples: Mutex<Vec<f64>>,
}

/// What a histogram holds at one moment.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HistogramSnapshot {
    /// Per bucket (not cumulative), the last one past every bound.
    pub buckets: Vec<u64>,
    pub count: u64,
    pub sum_seconds: f64,
}

impl Histogram {
    pub fn observe(&self, took: Duration, keep_sample: bool) {
        let secs = took.as_secs_f64();
        let i = BUCKETS
            .iter()
            .position(|b| secs <= *b)
            .unwrap_or(BUCKETS.len());
        self.buckets[i].fetch_add(1, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
        self.sum_micros.fetch_add(
            took.as_micros().min(u64::MAX as u128) as u64,
            Ordering::Relaxed,
        );
        if keep_sample {
            if let Ok(mut s) = self.samples.lock() {
                if s.len() < MAX_SAMPLES {
                    s.push(secs);
                }
            }
        }
    }

    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    pub fn snapshot(&self) -> HistogramSnapshot {
        HistogramSnapshot {
            buckets: self
                .buckets
                .iter()
                .map(|b| b.load(Ordering::Relaxed))
                .collect(),
            count: self.count(),
            sum_seconds: self.sum_micros.load(Ordering::Relaxed) as f64 / 1e6,
        }
    }

    /// The samples kept since the last call, in seconds.
    pub fn take_samples(&self) -> Vec<f64> {
        self.samples
            .lock()
            .map(|mut s| std::mem::take(&mut *s))
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn observations_land_in_the_first_bucket_that_holds_them() {
        let h = Histogram::default();
        h.observe(Duration::from_micros(500), false); // on the first bound
        h.observe(Duration::from_micros(501), false); // just past it
        h.observe(Duration::from_secs(61), true); // past every bound
        let s = h.snapshot();
        assert_eq!(s.buckets[0], 1);
        assert_eq!(s.buckets[1], 1);
        assert_eq!(s.buckets[BUCKETS.len()], 1);
        assert_eq!(s.count, 3);
        assert!((s.sum_seconds - 61.001001).abs() < 1e-9);
        assert_eq!(h.take_samples(), vec![61.0]);
        assert!(h.take_samples().is_empty());
    }

    #[test]
    fn samples_stop_at_their_limit_and_the_counts_go_on() {
        let h = Histogram::default();
        for _ in 0..MAX_SAMPLES + 1 {
            h.observe(Duration::from_millis(1), true);
        }
        assert_eq!(h.take_samples().len(), MAX_SAMPLES);
        assert_eq!(h.count(), MAX_SAMPLES as u64 + 1);
    }
}
