//! A fixed-bucket latency histogram with bounded relative error, in the manner of HDR
//! histograms: recording is an index computation and an increment, never an allocation.
//!
//! Values are nanoseconds (any `u64`).
//! Values below 64 have a bucket each; above that every power of two is split into 64 equal
//! buckets, so a bucket is never wider than 1/64 of its lower bound and a reported quantile
//! (the bucket's midpoint) is within 1/128 (0.8%) of a value that was recorded.

/// Sub-buckets per power of two, as a power of two.
const SUB_BITS: u32 = 6;
/// Sub-buckets per power of two.
const SUB_COUNT: usize = 1 << SUB_BITS;
/// Buckets needed to cover every `u64`.
const BUCKETS: usize = (64 - SUB_BITS as usize + 1) * SUB_COUNT;

/// A latency histogram over `u64` nanoseconds.
///
/// ```
/// use mcp_bench::histogram::Histogram;
///
/// let mut h = Histogram::new();
/// for v in 1..=100u64 {
///     h.record(v * 1_000);
/// }
/// assert_eq!(h.count(), 100);
/// let p50 = h.quantile(0.5);
/// assert!((49_000..=51_000).contains(&p50), "{p50}");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Histogram {
    counts: Box<[u64]>,
    total: u64,
    max: u64,
}

impl Histogram {
    /// An empty histogram (one allocation of about 30 KiB).
    pub fn new() -> Self {
        Self {
            counts: vec![0; BUCKETS].into_boxed_slice(),
            total: 0,
            max: 0,
        }
    }

    /// Records one value.
    pub fn record(&mut self, value: u64) {
        self.counts[index(value)] += 1;
        self.total += 1;
        self.max = self.max.max(value);
    }

    /// How many values were recorded.
    pub fn count(&self) -> u64 {
        self.total
    }

    /// The largest value recorded, exactly; 0 when empty.
    pub fn max(&self) -> u64 {
        self.max
    }

    /// Adds every value recorded in `other`.
    pub fn merge(&mut self, other: &Self) {
        for (mine, theirs) in self.counts.iter_mut().zip(other.counts.iter()) {
            *mine += theirs;
        }
        self.total += other.total;
        self.max = self.max.max(other.max);
    }

    /// Forgets every value.
    pub fn clear(&mut self) {
        self.counts.fill(0);
        self.total = 0;
        self.max = 0;
    }

    /// The value at quantile `q` (0.0 to 1.0, clamped): the midpoint of the bucket holding the
    /// `ceil(q * count)`-th smallest value (at least the first), capped at [`max`](Self::max).
    /// Returns 0 when empty.
    pub fn quantile(&self, q: f64) -> u64 {
        if self.total == 0 {
            return 0;
        }
        let q = if q.is_nan() { 0.0 } else { q.clamp(0.0, 1.0) };
        // The float-to-int cast saturates; `total` fits f64 exactly below 2^53 calls.
        let rank = ((q * self.total as f64).ceil() as u64).clamp(1, self.total);
        let mut seen = 0;
        for (i, &n) in self.counts.iter().enumerate() {
            seen += n;
            if seen >= rank {
                let (low, width) = bounds(i);
                return (low + width / 2).min(self.max);
            }
        }
        self.max
    }
}

impl Default for Histogram {
    fn default() -> Self {
        Self::new()
    }
}

/// The bucket of `value`.
fn index(value: u64) -> usize {
    if value < SUB_COUNT as u64 {
        return value as usize;
    }
    let msb = 63 - value.leading_zeros();
    let shift = msb - SUB_BITS;
    let sub = (value >> shift) as usize & (SUB_COUNT - 1);
    ((shift as usize + 1) << SUB_BITS) + sub
}

/// The lowest value of bucket `i` and its width.
fn bounds(i: usize) -> (u64, u64) {
    if i < SUB_COUNT {
        return (i as u64, 1);
    }
    let shift = (i >> SUB_BITS) - 1;
    let sub = (i & (SUB_COUNT - 1)) as u64;
    ((SUB_COUNT as u64 + sub) << shift, 1 << shift)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn buckets_are_contiguous_and_cover_u64() {
        let mut expected_low = 0u64;
        for i in 0..BUCKETS {
            let (low, width) = bounds(i);
            assert_eq!(low, expected_low, "bucket {i}");
            assert_eq!(index(low), i);
            assert_eq!(index(low + (width - 1)), i);
            expected_low = low.wrapping_add(width);
        }
        assert_eq!(expected_low, 0, "the last bucket ends at u64::MAX");
        assert_eq!(index(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn quantiles_of_known_sets() {
        struct Case {
            values: &'static [u64],
            q: f64,
            expected: u64,
        }
        let cases = [
            Case {
                values: &[],
                q: 0.5,
                expected: 0,
            },
            Case {
                values: &[7],
                q: 0.0,
                expected: 7,
            },
            Case {
                values: &[7],
                q: 1.0,
                expected: 7,
            },
            Case {
                values: &[1, 2, 3, 4],
                q: 0.5,
                expected: 2,
            },
            Case {
                values: &[1, 2, 3, 4],
                q: 0.51,
                expected: 3,
            },
            Case {
                values: &[1, 2, 3, 100],
                q: 0.99,
                expected: 100,
            },
            // 1000 lies in [1000, 1008): midpoint 1004.
            Case {
                values: &[1000],
                q: 0.5,
                expected: 1000,
            },
            Case {
                values: &[1000, 1001],
                q: 0.5,
                expected: 1001,
            },
            Case {
                values: &[5, 5, 5, 1_000_000],
                q: 0.75,
                expected: 5,
            },
            Case {
                values: &[5, 5, 5, 1_000_000],
                q: 1.0,
                expected: 1_000_000,
            },
        ];
        for case in cases {
            let mut h = Histogram::new();
            for &v in case.values {
                h.record(v);
            }
            assert_eq!(
                h.quantile(case.q),
                case.expected,
                "values {:?} q {}",
                case.values,
                case.q
            );
        }
    }

    #[test]
    fn merge_adds_counts_and_keeps_max() {
        let mut a = Histogram::new();
        let mut b = Histogram::new();
        a.record(10);
        b.record(20);
        b.record(30_000);
        a.merge(&b);
        assert_eq!(a.count(), 3);
        assert_eq!(a.max(), 30_000);
        assert_eq!(a.quantile(0.5), 20);
        a.clear();
        assert_eq!((a.count(), a.max(), a.quantile(0.5)), (0, 0, 0));
    }

    proptest! {
        #[test]
        fn quantile_is_within_relative_error_of_a_sorted_value(
            mut values in proptest::collection::vec(0u64..10_000_000_000, 1..200),
            q in 0.0f64..=1.0,
        ) {
            let mut h = Histogram::new();
            for &v in &values {
                h.record(v);
            }
            values.sort_unstable();
            let rank = ((q * values.len() as f64).ceil() as usize).clamp(1, values.len());
            let exact = values[rank - 1];
            let got = h.quantile(q);
            let tolerance = exact / 64 + 1;
            prop_assert!(got.abs_diff(exact) <= tolerance, "exact {exact} got {got}");
        }
    }
}
