//! The latency distribution of a load: how many answers, and their median, 99th
//! percentile and maximum, each measured from the moment the client began to connect
//! to the last byte of the answer.

use std::time::Duration;

/// A summary of latencies (nearest-rank percentiles).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Summary {
    pub(crate) count: usize,
    pub(crate) median: Duration,
    pub(crate) p99: Duration,
    pub(crate) max: Duration,
}

impl Summary {
    /// The summary of `latencies` (in any order); `None` when there are none.
    pub(crate) fn of(latencies: &[Duration]) -> Option<Self> {
        let mut sorted = latencies.to_vec();
        sorted.sort_unstable();
        let rank = |percent: usize| {
            // Nearest rank: the smallest value with at least `percent`% at or below it.
            let index = (sorted.len() * percent).div_ceil(100).saturating_sub(1);
            sorted.get(index).copied()
        };
        Some(Self {
            count: sorted.len(),
            median: rank(50)?,
            p99: rank(99)?,
            max: sorted.last().copied()?,
        })
    }

    /// `N: median X ms, p99 Y ms, max Z ms`.
    pub(crate) fn line(&self) -> String {
        format!(
            "{}: median {}, p99 {}, max {}",
            self.count,
            millis(self.median),
            millis(self.p99),
            millis(self.max)
        )
    }
}

/// A duration in milliseconds with one decimal.
pub(crate) fn millis(duration: Duration) -> String {
    format!("{:.1} ms", duration.as_secs_f64() * 1000.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(list: &[u64]) -> Vec<Duration> {
        list.iter().map(|&m| Duration::from_millis(m)).collect()
    }

    #[test]
    fn percentiles_are_nearest_rank_in_any_order() {
        let mut list: Vec<u64> = (1..=1000).collect();
        list.reverse();
        let summary = Summary::of(&ms(&list)).unwrap();
        assert_eq!(summary.count, 1000);
        assert_eq!(summary.median, Duration::from_millis(500));
        assert_eq!(summary.p99, Duration::from_millis(990));
        assert_eq!(summary.max, Duration::from_millis(1000));
        let one = Summary::of(&ms(&[7])).unwrap();
        assert_eq!(
            (one.median, one.p99, one.max),
            (ms(&[7])[0], ms(&[7])[0], ms(&[7])[0])
        );
        assert_eq!(Summary::of(&[]), None);
        assert_eq!(one.line(), "1: median 7.0 ms, p99 7.0 ms, max 7.0 ms");
    }

    #[test]
    fn a_single_slow_answer_is_the_max_not_the_p99() {
        let mut list = vec![10; 999];
        list.push(1600);
        let summary = Summary::of(&ms(&list)).unwrap();
        assert_eq!(summary.p99, Duration::from_millis(10));
        assert_eq!(summary.max, Duration::from_millis(1600));
    }
}
