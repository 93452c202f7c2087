//! What the CUDA driver showed during a run on a real device (`device: cuda`), next to the
//! model: only in the human and JSON reports, since it depends on the machine.

use super::sections::Lines;
use crate::timeline::{DriverObservation, DriverSample};
use crate::units::Bytes;

/// Samples listed in the human report (first ones, then the last).
const LISTED_SAMPLES: usize = 5;

pub fn driver_section(out: &mut Lines, driver: &DriverObservation) {
    out.push(format!(
        "cuda:{} {}, {} total; {} in use before the run (CUDA context and other processes)",
        driver.ordinal,
        driver.device_name,
        Bytes(driver.total_bytes),
        Bytes(driver.used_before_run)
    ));
    if driver.samples.is_empty() {
        out.push("no iteration ended: no driver samples".to_string());
        return;
    }
    out.push(
        "iteration end: model reserved | driver in use | difference (context, other processes)"
            .to_string(),
    );
    let n = driver.samples.len();
    for (i, sample) in driver.samples.iter().enumerate() {
        if i < LISTED_SAMPLES || i + 1 == n {
            out.push(sample_line(sample));
        } else if i == LISTED_SAMPLES {
            out.push(format!("  ... {} more", n - LISTED_SAMPLES - 1));
        }
    }
    let peak = driver
        .samples
        .iter()
        .max_by_key(|s| (s.driver_used, std::cmp::Reverse(s.iteration)))
        .copied();
    if let Some(peak) = peak {
        out.push(format!(
            "highest driver use at an iteration end: {} at iteration {} (model reserved {})",
            Bytes(peak.driver_used),
            peak.iteration,
            Bytes(peak.model_reserved)
        ));
    }
}

fn sample_line(s: &DriverSample) -> String {
    let difference = s.driver_used as i128 - s.model_reserved as i128;
    let sign = if difference < 0 { "-" } else { "+" };
    format!(
        "  {:>6}: {} | {} | {sign}{}",
        s.iteration,
        Bytes(s.model_reserved),
        Bytes(s.driver_used),
        Bytes(difference.unsigned_abs() as u64)
    )
}
