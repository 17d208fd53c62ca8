//! Latency statistics and the measured window.

use hdrhistogram::Histogram;
use serde::Serialize;
use std::time::{Duration, Instant};

/// Latencies are recorded in microseconds, from 1 µs to 1 hour, 3 significant digits.
pub fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("valid histogram bounds")
}

/// A run's phases: warm-up from `start`, then the measured window `[warm_end, end)`.
#[derive(Clone, Copy, Debug)]
pub struct Window {
    pub start: Instant,
    pub warm_end: Instant,
    pub end: Instant,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Warmup,
    Measured,
    After,
}

impl Window {
    pub fn new(start: Instant, warmup: Duration, measured: Duration) -> Window {
        Window {
            start,
            warm_end: start + warmup,
            end: start + warmup + measured,
        }
    }

    /// Which phase a request completing at `t` belongs to. Only completions in the measured window
    /// count, so requests started during warm-up but finished inside the window do count (as a closed
    /// loop's steady state should), and none finished after the end do.
    pub fn phase(&self, t: Instant) -> Phase {
        if t < self.warm_end {
            Phase::Warmup
        } else if t < self.end {
            Phase::Measured
        } else {
            Phase::After
        }
    }

    pub fn measured(&self) -> Duration {
        self.end - self.warm_end
    }
}

/// The summary the tables print, in milliseconds.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct Summary {
    pub count: u64,
    pub mean_ms: f64,
    pub stddev_ms: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
    pub max_ms: f64,
}

impl Summary {
    pub fn of(h: &Histogram<u64>) -> Summary {
        if h.is_empty() {
            return Summary::default();
        }
        let ms = |us: f64| us / 1000.0;
        let q = |q: f64| ms(h.value_at_quantile(q) as f64);
        Summary {
            count: h.len(),
            mean_ms: ms(h.mean()),
            stddev_ms: ms(h.stdev()),
            p50_ms: q(0.5),
            p90_ms: q(0.9),
            p99_ms: q(0.99),
            p999_ms: q(0.999),
            max_ms: ms(h.max() as f64),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= b.abs() * rel
    }

    /// The summary of a histogram of these latencies (µs).
    fn summary_of(us: impl IntoIterator<Item = u64>) -> Summary {
        let mut h = histogram();
        for v in us {
            h.record(v).unwrap();
        }
        Summary::of(&h)
    }

    #[test]
    fn percentiles_of_a_uniform_series() {
        let s = summary_of((1..=10_000u64).map(|k| k * 10)); // 10 µs .. 100 ms
        assert_eq!(s.count, 10_000);
        assert!(close(s.p50_ms, 50.0, 0.002), "{s:?}");
        assert!(close(s.p90_ms, 90.0, 0.002), "{s:?}");
        assert!(close(s.p99_ms, 99.0, 0.002), "{s:?}");
        assert!(close(s.p999_ms, 99.9, 0.002), "{s:?}");
        assert!(close(s.max_ms, 100.0, 0.002), "{s:?}");
        assert!(close(s.mean_ms, 50.005, 0.002), "{s:?}");
    }

    #[test]
    fn std_dev_of_two_values() {
        let s = summary_of([1_000, 3_000].repeat(500));
        assert!(close(s.mean_ms, 2.0, 0.001), "{s:?}");
        // Population std-dev of {1, 3} ms is 1 ms.
        assert!(close(s.stddev_ms, 1.0, 0.001), "{s:?}");
    }

    #[test]
    fn a_tail_shows_in_p99_not_p50() {
        let s = summary_of([vec![1_000; 980], vec![500_000; 20]].concat());
        assert!(close(s.p50_ms, 1.0, 0.001));
        assert!(close(s.p99_ms, 500.0, 0.001), "{s:?}");
    }

    #[test]
    fn empty_histogram_is_zeroes() {
        assert_eq!(Summary::of(&histogram()), Summary::default());
    }

    #[test]
    fn window_splits_warmup_measured_and_after() {
        let t0 = Instant::now();
        let w = Window::new(t0, Duration::from_secs(10), Duration::from_secs(30));
        assert_eq!(w.phase(t0), Phase::Warmup);
        assert_eq!(w.phase(t0 + Duration::from_millis(9_999)), Phase::Warmup);
        assert_eq!(w.phase(t0 + Duration::from_secs(10)), Phase::Measured);
        assert_eq!(w.phase(t0 + Duration::from_millis(39_999)), Phase::Measured);
        assert_eq!(w.phase(t0 + Duration::from_secs(40)), Phase::After);
        assert_eq!(w.measured(), Duration::from_secs(30));
        // No warm-up: everything from the start is measured.
        let w = Window::new(t0, Duration::ZERO, Duration::from_secs(1));
        assert_eq!(w.phase(t0), Phase::Measured);
    }
}
