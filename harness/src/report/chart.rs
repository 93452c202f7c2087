//! A compact ASCII chart of a memory series: one column per bucket of consecutive values,
//! rows of equal height from 0 to the series' maximum. A column is `#` up to the bucket's
//! lowest value and `:` from there to its highest, so a bucket that swings (a sawtooth
//! squeezed into one column) reads differently from one that holds steady.

use crate::units::{GIB, KIB, MIB};

/// Width of the y-axis labels, so every row starts its plot at the same column.
const LABEL_WIDTH: usize = 10;

/// Renders `values` (one per x position, the first at `first_x`) as at most `width` columns
/// by `height` rows. Returns no lines for an empty series.
pub fn render(
    values: &[u64],
    first_x: u32,
    x_name: &str,
    width: usize,
    height: usize,
) -> Vec<String> {
    let last_x = (first_x as u64 + values.len() as u64).saturating_sub(1);
    render_range(values, first_x, last_x, x_name, width, height)
}

/// Like [`render`] for a series resampled to evenly spaced x positions from `first_x` to
/// `last_x` (a long run's folded iterations).
pub fn render_range(
    values: &[u64],
    first_x: u32,
    last_x: u64,
    x_name: &str,
    width: usize,
    height: usize,
) -> Vec<String> {
    if values.is_empty() || width == 0 || height == 0 {
        return Vec::new();
    }
    let columns = buckets(values, width);
    let max = columns.iter().map(|b| b.high).max().unwrap_or(0);
    let unit = axis_unit(max);
    let levels: Vec<(usize, usize)> = columns
        .iter()
        .map(|b| (level(b.low, max, height), level(b.high, max, height)))
        .collect();

    let mut lines = Vec::with_capacity(height + 3);
    for row in (1..=height).rev() {
        let label = if row == height || row == height.div_ceil(2) {
            axis_label(max as u128 * row as u128 / height as u128, unit)
        } else {
            String::new()
        };
        let cells: String = levels
            .iter()
            .map(|&(low, high)| {
                if low >= row {
                    '#'
                } else if high >= row {
                    ':'
                } else {
                    ' '
                }
            })
            .collect();
        lines.push(format!("{label:>LABEL_WIDTH$} |{}", cells.trim_end()));
    }
    lines.push(format!(
        "{:>LABEL_WIDTH$} +{}",
        axis_label(0, unit),
        "-".repeat(columns.len())
    ));
    let (left, right) = (first_x.to_string(), last_x.to_string());
    let gap = columns
        .len()
        .saturating_sub(left.len() + right.len())
        .max(1);
    let x_axis = if columns.len() == 1 {
        left
    } else {
        format!("{left}{}{right}", " ".repeat(gap))
    };
    lines.push(format!("{:LABEL_WIDTH$}  {x_axis}", ""));
    lines.push(format!(
        "{:LABEL_WIDTH$}  {x_name}, {}",
        "",
        bucket_caption(values.len(), columns.len())
    ));
    lines
}

/// The lowest and highest value of one column's bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bucket {
    pub low: u64,
    pub high: u64,
}

/// `min(width, n)` buckets of consecutive values, differing in size by at most one.
pub fn buckets(values: &[u64], width: usize) -> Vec<Bucket> {
    let n = values.len();
    let columns = n.min(width);
    (0..columns)
        .map(|j| {
            let part = &values[j * n / columns..(j + 1) * n / columns];
            Bucket {
                low: part.iter().copied().min().unwrap_or(0),
                high: part.iter().copied().max().unwrap_or(0),
            }
        })
        .collect()
}

/// Rows a value fills: any value above zero fills at least one, the maximum fills all.
fn level(value: u64, max: u64, height: usize) -> usize {
    if max == 0 {
        return 0;
    }
    (value as u128 * height as u128).div_ceil(max as u128) as usize
}

fn bucket_caption(values: usize, columns: usize) -> String {
    let (small, large) = (values / columns, values.div_ceil(columns));
    if large == 1 {
        "one per column".to_string()
    } else if small == large {
        format!("{small} per column, ':' from lowest to highest")
    } else {
        format!("{small}-{large} per column, ':' from lowest to highest")
    }
}

fn axis_unit(max: u64) -> (u64, &'static str) {
    if max >= GIB {
        (GIB, "GiB")
    } else if max >= MIB {
        (MIB, "MiB")
    } else if max >= KIB {
        (KIB, "KiB")
    } else {
        (1, "B")
    }
}

fn axis_label(bytes: u128, (scale, name): (u64, &str)) -> String {
    if bytes == 0 {
        return format!("0 {name}");
    }
    if scale == 1 {
        return format!("{bytes} B");
    }
    format!("{:.1} {name}", bytes as f64 / scale as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sawtooth_draws_teeth_at_the_right_columns() {
        // Three teeth of period 10: 1..=10 MiB.
        let values: Vec<u64> = (0..30).map(|i| (i % 10 + 1) * MIB).collect();
        let lines = render(&values, 0, "iteration", 60, 10);
        assert_eq!(lines.len(), 13);
        let plot = |line: &str| line[LABEL_WIDTH + 2..].to_string();
        // Top row: only the tops of the teeth (iterations 9, 19, 29).
        assert_eq!(
            plot(&lines[0]),
            format!("{}#{}#{}#", " ".repeat(9), " ".repeat(9), " ".repeat(9))
        );
        assert!(lines[0].starts_with("  10.0 MiB |"));
        // Middle row (level 5) holds the upper half of each tooth.
        let half = format!("{}{}", " ".repeat(4), "#".repeat(6));
        assert_eq!(plot(&lines[5]), half.repeat(3));
        assert!(lines[5].starts_with("   5.0 MiB |"));
        // Bottom row is full; the axis has one dash per column.
        assert_eq!(plot(&lines[9]), "#".repeat(30));
        assert_eq!(lines[10], format!("{:>10} +{}", "0 MiB", "-".repeat(30)));
        assert!(lines[11].trim_start().starts_with('0') && lines[11].ends_with("29"));
        assert!(lines[12].contains("one per column"));
    }

    #[test]
    fn long_series_are_bucketed_by_maximum() {
        let mut values = vec![GIB; 600];
        values[123] = 4 * GIB;
        let columns = buckets(&values, 60);
        assert_eq!(columns.len(), 60);
        assert_eq!(
            columns[12],
            Bucket {
                low: GIB,
                high: 4 * GIB
            }
        );
        assert_eq!(columns.iter().filter(|c| c.high == 4 * GIB).count(), 1);
        let lines = render(&values, 0, "iteration", 60, 10);
        assert!(lines[0].starts_with("   4.0 GiB |"));
        // Column 12 swings from 1 GiB (levels 1-3 solid) to 4 GiB (levels 4-10 dotted).
        assert_eq!(
            lines[0].trim_start_matches(|c| c != '|'),
            format!("|{}:", " ".repeat(12))
        );
        assert_eq!(
            lines[6].trim_start_matches(|c| c != '|'),
            format!("|{}:", " ".repeat(12))
        );
        assert_eq!(
            lines[7].trim_start_matches(|c| c != '|'),
            format!("|{}", "#".repeat(60))
        );
        assert!(lines[12].contains("10 per column"));
        assert!(lines[11].ends_with("599"));
    }

    #[test]
    fn empty_and_zero_series_do_not_panic() {
        assert!(render(&[], 0, "iteration", 60, 10).is_empty());
        let lines = render(&[0, 0], 5, "iteration", 60, 10);
        assert!(lines.iter().take(10).all(|l| l.ends_with('|')));
    }
}
