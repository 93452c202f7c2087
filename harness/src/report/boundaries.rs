//! Allocated bytes at iteration ends, shortened for reading: runs of equal values become one
//! row; a series with more runs than fit becomes a table of equal slices (low, high, last),
//! so a 30 000-iteration golden file stays short.

use crate::check::series::Boundary;
use crate::units::Bytes;

/// Consecutive iterations that ended with the same allocated bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    pub first: u32,
    pub last: u32,
    pub allocated: u64,
}

/// A slice of consecutive iterations of a long series.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slice {
    pub first: u32,
    pub last: u32,
    pub low: u64,
    pub high: u64,
    /// Allocated at the end of the slice's last iteration.
    pub at_end: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rows {
    Runs(Vec<Run>),
    Slices(Vec<Slice>),
}

/// Runs when there are at most `max_rows` of them, otherwise `max_rows` slices.
pub fn summarize(boundaries: &[Boundary], max_rows: usize) -> Rows {
    let runs = runs(boundaries);
    if runs.len() <= max_rows.max(1) {
        Rows::Runs(runs)
    } else {
        Rows::Slices(slices(boundaries, max_rows.max(1)))
    }
}

fn runs(boundaries: &[Boundary]) -> Vec<Run> {
    let mut runs: Vec<Run> = Vec::new();
    for b in boundaries {
        match runs.last_mut() {
            Some(run) if run.allocated == b.allocated => run.last = b.iteration,
            _ => runs.push(Run {
                first: b.iteration,
                last: b.iteration,
                allocated: b.allocated,
            }),
        }
    }
    runs
}

/// Slices of a round number of iterations (1, 2 or 5 times a power of ten), as few as
/// possible but at least enough to keep within `max_rows`.
fn slices(boundaries: &[Boundary], max_rows: usize) -> Vec<Slice> {
    let per_row = round_up(boundaries.len().div_ceil(max_rows));
    boundaries
        .chunks(per_row)
        .filter_map(|part| {
            let (first, last) = (part.first()?, part.last()?);
            Some(Slice {
                first: first.iteration,
                last: last.iteration,
                low: part.iter().map(|b| b.allocated).min()?,
                high: part.iter().map(|b| b.allocated).max()?,
                at_end: last.allocated,
            })
        })
        .collect()
}

/// The smallest of 1, 2, 5, 10, 20, 50, ... that is at least `n`.
fn round_up(n: usize) -> usize {
    let mut scale = 1usize;
    loop {
        for step in [1usize, 2, 5] {
            let candidate = step.saturating_mul(scale);
            if candidate >= n || candidate == usize::MAX {
                return candidate;
            }
        }
        scale = scale.saturating_mul(10);
    }
}

fn span(first: u32, last: u32, width: usize) -> String {
    let text = if first == last {
        format!("iteration {first}")
    } else {
        format!("iterations {first}-{last}")
    };
    format!("{text:<width$}")
}

/// The rows as text lines, aligned.
pub fn render(rows: &Rows) -> Vec<String> {
    match rows {
        Rows::Runs(runs) => {
            let width = runs
                .iter()
                .map(|r| span(r.first, r.last, 0).len())
                .max()
                .unwrap_or(0);
            runs.iter()
                .map(|r| {
                    format!(
                        "{}  {} ({} bytes)",
                        span(r.first, r.last, width),
                        Bytes(r.allocated),
                        r.allocated
                    )
                })
                .collect()
        }
        Rows::Slices(slices) => {
            let width = slices
                .iter()
                .map(|s| span(s.first, s.last, 0).len())
                .max()
                .unwrap_or(0);
            let cell = |b: u64| format!("{:<10}", Bytes(b).to_string());
            let mut lines = vec![format!(
                "{:width$}  {:<10} {:<10} {}",
                "", "lowest", "highest", "at end"
            )];
            lines.extend(slices.iter().map(|s| {
                format!(
                    "{}  {} {} {}",
                    span(s.first, s.last, width),
                    cell(s.low),
                    cell(s.high),
                    Bytes(s.at_end)
                )
                .trim_end()
                .to_string()
            }));
            lines
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::MIB;

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
    fn equal_values_compress_into_runs() {
        let mut values = vec![512 * MIB; 100];
        values.push(MIB);
        values.push(MIB);
        let rows = summarize(&series(&values), 40);
        let lines = render(&rows);
        assert_eq!(
            lines,
            [
                "iterations 0-99     512 MiB (536870912 bytes)",
                "iterations 100-101  1 MiB (1048576 bytes)",
            ]
        );
    }

    #[test]
    fn many_runs_become_round_slices_with_low_high_and_end() {
        let values: Vec<u64> = (0..30_000u64).map(|i| (i % 100 + 1) * MIB).collect();
        let Rows::Slices(slices) = summarize(&series(&values), 40) else {
            panic!("expected slices");
        };
        // 750 per row would fit 40 rows; rounded up to 1000 it gives 30.
        assert_eq!(slices.len(), 30);
        assert_eq!((slices[0].first, slices[0].last), (0, 999));
        assert_eq!((slices[0].low, slices[0].high), (MIB, 100 * MIB));
        assert_eq!(slices[0].at_end, 100 * MIB);
        assert_eq!((slices[29].first, slices[29].last), (29_000, 29_999));
        let lines = render(&Rows::Slices(slices));
        assert_eq!(lines.len(), 31);
        assert!(lines[1].starts_with("iterations 0-999  "), "{}", lines[1]);
        assert!(lines[1].contains("1 MiB") && lines[1].ends_with("100 MiB"));
    }

    #[test]
    fn slice_sizes_are_round() {
        let sizes: Vec<usize> = [1, 2, 3, 7, 8, 11, 750, 1001].map(round_up).to_vec();
        assert_eq!(sizes, [1, 2, 5, 10, 10, 20, 1000, 2000]);
    }
}
