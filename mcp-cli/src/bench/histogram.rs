//! The latency histogram of `mcp bench`: fixed memory whatever the run's length.
//!
//! Latencies are whole microseconds. Below [`SUB`] each value has a bucket of its own; from
//! there on every octave (`[2^k, 2^(k+1))`) is cut into [`SUB`] buckets of equal width, so a
//! bucket is at most 1/32 of its lower bound wide. A quantile is reported as the middle of its
//! bucket (capped at the largest value seen), within 1/64 (about 1.6%) of a recorded value.
//! Every `u64` has a bucket: [`BUCKETS`] counters, about 15 KiB, allocated once.

/// Buckets per octave (a power of two).
const SUB: u64 = 32;
/// `log2(SUB)`.
const SUB_BITS: u32 = SUB.trailing_zeros();
/// Buckets covering every `u64`: the `SUB` exact ones, then `SUB` per octave from `2^SUB_BITS`
/// to `2^63`.
const BUCKETS: usize = ((64 - SUB_BITS + 1) as usize) * SUB as usize;

/// Counts of latencies in microseconds, with the exact maximum.
#[derive(Debug, Clone)]
pub(crate) struct Histogram {
    counts: Box<[u64]>,
    count: u64,
    max: u64,
}

impl Histogram {
    /// An empty histogram.
    pub(crate) fn new() -> Self {
        Self {
            counts: vec![0; BUCKETS].into_boxed_slice(),
            count: 0,
            max: 0,
        }
    }

    /// Records one latency, in microseconds.
    pub(crate) fn record(&mut self, micros: u64) {
        if let Some(slot) = self.counts.get_mut(bucket_of(micros)) {
            *slot += 1;
        }
        self.count += 1;
        self.max = self.max.max(micros);
    }

    /// How many latencies were recorded.
    pub(crate) fn count(&self) -> u64 {
        self.count
    }

    /// The largest latency recorded (0 when none was).
    pub(crate) fn max(&self) -> u64 {
        self.max
    }

    /// The latency below or at which a fraction `q` (0 to 1) of the recorded ones lie: the
    /// middle of the bucket holding the `ceil(q * count)`-th smallest (the first at least),
    /// never above the maximum; the maximum itself, exactly, for the largest. 0 when nothing
    /// was recorded.
    pub(crate) fn quantile(&self, q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let q = if q.is_finite() {
            q.clamp(0.0, 1.0)
        } else {
            0.0
        };
        // Exact for any count a run can reach (below 2^53).
        let wanted = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        if wanted == self.count {
            return self.max;
        }
        let mut below = 0u64;
        for (index, n) in self.counts.iter().enumerate() {
            below += n;
            if below >= wanted {
                let (low, width) = range_of(index);
                return low.saturating_add(width / 2).min(self.max);
            }
        }
        self.max
    }
}

/// The bucket of `value`.
fn bucket_of(value: u64) -> usize {
    if value < SUB {
        return value as usize;
    }
    // The octave: value is in [2^octave, 2^(octave+1)), octave >= SUB_BITS.
    let octave = 63 - value.leading_zeros();
    let shift = octave - SUB_BITS;
    let within = ((value >> shift) - SUB) as usize;
    (shift as usize + 1) * SUB as usize + within
}

/// The lowest value of bucket `index` and how many values it holds.
fn range_of(index: usize) -> (u64, u64) {
    let sub = SUB as usize;
    if index < sub {
        return (index as u64, 1);
    }
    let shift = (index / sub - 1) as u32;
    let within = (index % sub) as u64;
    ((SUB + within) << shift, 1u64 << shift)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_value_has_one_bucket_and_buckets_do_not_overlap() {
        let mut next = 0u64;
        for index in 0..BUCKETS {
            let (low, width) = range_of(index);
            assert_eq!(low, next, "bucket {index} starts where the previous ended");
            assert_eq!(bucket_of(low), index);
            assert_eq!(bucket_of(low + (width - 1)), index);
            next = low.wrapping_add(width);
        }
        assert_eq!(next, 0, "the last bucket ends at u64::MAX");
        assert_eq!(bucket_of(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn quantiles_are_close_to_the_sorted_values() {
        // A spread of latencies from 1 µs to 10 s, in a fixed pseudo-random order.
        let mut values: Vec<u64> = (0..5000u64)
            .map(|i| 1 + (i.wrapping_mul(2_654_435_761) % 10_000_000))
            .collect();
        let mut h = Histogram::new();
        for &v in &values {
            h.record(v);
        }
        values.sort_unstable();
        assert_eq!(h.count(), 5000);
        assert_eq!(h.max(), *values.last().expect("values"));
        for q in [0.0, 0.01, 0.5, 0.9, 0.99, 0.999, 1.0] {
            let rank = ((q * values.len() as f64).ceil() as usize).clamp(1, values.len());
            let exact = values[rank - 1];
            let got = h.quantile(q);
            assert!(
                got.abs_diff(exact) <= exact / 64 + 1,
                "q {q}: exact {exact}, got {got}"
            );
        }
    }

    #[test]
    fn small_and_empty_cases() {
        let h = Histogram::new();
        assert_eq!((h.count(), h.max(), h.quantile(0.5)), (0, 0, 0));
        let mut h = Histogram::new();
        for v in [3, 3, 3, 900] {
            h.record(v);
        }
        assert_eq!(h.quantile(0.5), 3);
        assert_eq!(h.quantile(0.75), 3);
        assert_eq!(h.quantile(1.0), 900);
        assert_eq!(h.quantile(f64::NAN), 3);
        h.record(u64::MAX);
        assert_eq!(h.quantile(1.0), u64::MAX);
    }
}
