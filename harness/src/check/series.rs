//! The per-iteration series that steady-state and leak checks judge: allocated bytes at the
//! end of each completed iteration.

use crate::timeline::Timeline;

/// Allocated bytes when one completed iteration ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Boundary {
    pub iteration: u32,
    pub allocated: u64,
}

/// The boundaries of the completed iterations, in order. The iteration an OOM interrupted is
/// left out: it has no end. A long run's folded iterations are represented by each summary's
/// lowest, highest and last ends (the timeline's approximations say so).
pub fn completed_boundaries(timeline: &Timeline) -> Vec<Boundary> {
    let mut boundaries: Vec<Boundary> = timeline
        .iterations
        .iter()
        .filter(|m| m.completed)
        .map(|m| Boundary {
            iteration: m.iteration,
            allocated: m.allocated_at_end,
        })
        .collect();
    let spans = timeline.folded_spans();
    if !spans.is_empty() {
        for span in spans {
            for (iteration, allocated) in [span.lowest_end, span.highest_end, span.last_end]
                .into_iter()
                .flatten()
            {
                boundaries.push(Boundary {
                    iteration,
                    allocated,
                });
            }
        }
        boundaries.sort_by_key(|b| b.iteration);
        boundaries.dedup_by_key(|b| b.iteration);
    }
    boundaries
}

/// Too few completed iterations to judge: a check must fail rather than pass vacuously.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooFewIterations {
    pub needed: usize,
    pub completed: usize,
}

/// How the boundaries after the warm-up moved relative to the first of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Band {
    /// The first boundary after the warm-up: the band is centred on it.
    pub reference: Boundary,
    /// The first boundary outside `reference ± tolerance`, with its signed distance from the
    /// reference.
    pub first_exit: Option<(Boundary, i128)>,
    /// The boundary farthest from the reference, with its signed distance.
    pub widest: (Boundary, i128),
    /// The last boundary judged.
    pub last: Boundary,
}

/// Judges the boundaries after the first `warmup` completed iterations against the first of
/// them. Needs `warmup + 2` completed iterations: the reference and at least one to compare.
pub fn steady_band(
    boundaries: &[Boundary],
    warmup: u32,
    tolerance: u64,
) -> Result<Band, TooFewIterations> {
    let warmup = warmup as usize;
    let needed = warmup.saturating_add(2);
    if boundaries.len() < needed {
        return Err(TooFewIterations {
            needed,
            completed: boundaries.len(),
        });
    }
    let judged = &boundaries[warmup..];
    let reference = judged[0];
    let distance = |b: &Boundary| b.allocated as i128 - reference.allocated as i128;
    let first_exit = judged
        .iter()
        .map(|b| (*b, distance(b)))
        .find(|(_, d)| d.unsigned_abs() > tolerance as u128);
    let widest = judged
        .iter()
        .map(|b| (*b, distance(b)))
        .fold((reference, 0i128), |best, next| {
            if next.1.unsigned_abs() > best.1.unsigned_abs() {
                next
            } else {
                best
            }
        });
    Ok(Band {
        reference,
        first_exit,
        widest,
        last: judged[judged.len() - 1],
    })
}

/// Growth of allocated bytes per iteration: the least-squares slope over the boundaries after
/// the first completed iteration (whose end still holds one-time allocations).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slope {
    /// Signed and rounded to whole bytes: a shrinking run has a negative slope.
    pub bytes_per_iteration: i64,
    pub first: Boundary,
    pub last: Boundary,
}

/// Needs three completed iterations: the first is skipped and a slope needs two points.
pub fn growth_per_iteration(boundaries: &[Boundary]) -> Result<Slope, TooFewIterations> {
    if boundaries.len() < 3 {
        return Err(TooFewIterations {
            needed: 3,
            completed: boundaries.len(),
        });
    }
    let points = &boundaries[1..];
    let n = points.len() as f64;
    // Centring first keeps the sums small, so f64 stays exact enough for 80 GiB over
    // tens of thousands of iterations.
    let mean_x = points.iter().map(|b| b.iteration as f64).sum::<f64>() / n;
    let mean_y = points.iter().map(|b| b.allocated as f64).sum::<f64>() / n;
    let (mut sxy, mut sxx) = (0.0f64, 0.0f64);
    for b in points {
        let dx = b.iteration as f64 - mean_x;
        sxy += dx * (b.allocated as f64 - mean_y);
        sxx += dx * dx;
    }
    let slope = if sxx > 0.0 { sxy / sxx } else { 0.0 };
    Ok(Slope {
        bytes_per_iteration: slope.round() as i64,
        first: points[0],
        last: points[points.len() - 1],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(values: &[u64]) -> Vec<Boundary> {
        values
            .iter()
            .enumerate()
            .map(|(i, &allocated)| Boundary {
                iteration: i as u32,
                allocated,
            })
            .collect()
    }

    #[test]
    fn slope_is_exact_for_linear_growth_at_large_scale() {
        let values: Vec<u64> = (0..30_000u64).map(|i| (1 << 30) + i * 3 * 512).collect();
        let slope = growth_per_iteration(&series(&values)).unwrap();
        assert_eq!(slope.bytes_per_iteration, 1536);
        assert_eq!(slope.first.iteration, 1);
        assert_eq!(slope.last.iteration, 29_999);
    }

    #[test]
    fn slope_ignores_the_first_iteration_and_is_signed() {
        // A big one-time allocation in iteration 0, then a shrinking series.
        let slope = growth_per_iteration(&series(&[1 << 40, 3000, 2000, 1000])).unwrap();
        assert_eq!(slope.bytes_per_iteration, -1000);
    }

    #[test]
    fn band_finds_first_exit_and_widest_point() {
        let band = steady_band(&series(&[9, 100, 101, 99, 105, 130, 100]), 1, 2).unwrap();
        assert_eq!(band.reference.iteration, 1);
        assert_eq!(band.first_exit.map(|(b, d)| (b.iteration, d)), Some((4, 5)));
        assert_eq!((band.widest.0.iteration, band.widest.1), (5, 30));
        assert_eq!(band.last.iteration, 6);
    }

    #[test]
    fn too_few_iterations_is_an_error() {
        assert_eq!(
            steady_band(&series(&[1, 2]), 1, 0),
            Err(TooFewIterations {
                needed: 3,
                completed: 2
            })
        );
        assert!(growth_per_iteration(&series(&[1, 2])).is_err());
    }
}
