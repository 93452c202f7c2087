//! The one runner of the user-report tests (`user_reports*.rs`): a report's figures (growth,
//! peaks, what the collector freed) from an inline workload, a report with its fix
//! (`vary: fix`), one variant of a scenario, or each variant of a shipped scenario.

pub mod list_states;

use gpumem_harness::check::series::{completed_boundaries, growth_per_iteration};
use gpumem_harness::run::run_variant;
use gpumem_harness::scenario::{self, Scenario};
use gpumem_harness::timeline::Timeline;

/// What a report is judged by.
pub struct Figures {
    /// Least-squares growth of allocated bytes per iteration after iteration 0.
    pub growth: i64,
    pub peak: u64,
    pub peak_reserved: u64,
    /// Device bytes the cycle collector freed.
    pub collector_freed: u64,
    /// Completed iterations of the measured loop.
    pub iterations: usize,
    /// The lines the workload printed.
    pub printed: Vec<String>,
    /// An out-of-memory error no handler caught ended the run.
    pub oom: bool,
}

pub fn figures(timeline: &Timeline, file: &str) -> Figures {
    let boundaries = completed_boundaries(timeline);
    Figures {
        growth: growth_per_iteration(&boundaries)
            .unwrap_or_else(|e| panic!("{file}: {e:?}"))
            .bytes_per_iteration,
        peak: timeline.peak_allocated(),
        peak_reserved: timeline.peak_reserved(),
        collector_freed: timeline.collector_freed().1,
        iterations: boundaries.len(),
        printed: timeline.printed.all_lines().map(str::to_string).collect(),
        oom: timeline.oom.is_some(),
    }
}

/// A scenario around `workload`: 3.11, an 80 GiB card, `vary` lines as given (`""`: none).
pub fn inline_yaml(name: &str, vary: &str, workload: &str) -> String {
    inline_yaml_on(name, "h100-80gb", vary, workload)
}

/// [`inline_yaml`] on the card `device` (a preset name or a `{ capacity: ... }` map).
pub fn inline_yaml_on(name: &str, device: &str, vary: &str, workload: &str) -> String {
    let body: String = workload.lines().map(|l| format!("  {l}\n")).collect();
    format!("name: {name}\ndevice: {device}\npython: \"3.11\"\n{vary}workload: |\n{body}")
}

fn parsed(yaml: &str, file: &str) -> Scenario {
    scenario::parse(yaml, file).unwrap_or_else(|e| panic!("{file}: {e}"))
}

/// The variant named `variant` (`""` for a scenario without `vary`) of a scenario.
pub fn judge_variant(yaml: &str, file: &str, variant: &str) -> Figures {
    let scenario = parsed(yaml, file);
    let chosen = scenario
        .variants()
        .into_iter()
        .find(|v| v.name() == variant)
        .unwrap_or_else(|| panic!("{file}: no variant {variant}"));
    let timeline = run_variant(&scenario, &chosen).unwrap_or_else(|e| panic!("{file}: {e}"));
    figures(&timeline, file)
}

/// An inline report: no `vary`.
pub fn judge(name: &str, workload: &str) -> Figures {
    judge_on(name, "h100-80gb", workload)
}

/// [`judge`] on the card `device`.
pub fn judge_on(name: &str, device: &str, workload: &str) -> Figures {
    let file = format!("{name}.yaml");
    judge_variant(&inline_yaml_on(name, device, "", workload), &file, "")
}

/// An inline report, or the run's error (a refused feature) as text.
pub fn try_judge(name: &str, workload: &str) -> Result<Figures, String> {
    let file = format!("{name}.yaml");
    let scenario =
        scenario::parse(&inline_yaml(name, "", workload), &file).map_err(|e| e.to_string())?;
    let variant = scenario.variants().remove(0);
    let timeline = run_variant(&scenario, &variant).map_err(|e| e.to_string())?;
    Ok(figures(&timeline, &file))
}

/// A report and its fix: the workload branches on `fix` (`False` as reported, `True` fixed).
pub fn judge_fix(name: &str, workload: &str) -> (Figures, Figures) {
    judge_fix_on(name, "h100-80gb", workload)
}

/// [`judge_fix`] on the card `device`.
pub fn judge_fix_on(name: &str, device: &str, workload: &str) -> (Figures, Figures) {
    let file = format!("{name}.yaml");
    let yaml = inline_yaml_on(name, device, "vary:\n  fix: [false, true]\n", workload);
    (
        judge_variant(&yaml, &file, "fix=false"),
        judge_variant(&yaml, &file, "fix=true"),
    )
}

/// The figures of each variant of a shipped scenario, in `vary` order.
pub fn judge_scenario(yaml: &str, file: &str) -> Vec<Figures> {
    let scenario = parsed(yaml, file);
    scenario
        .variants()
        .into_iter()
        .map(|v| figures(&run_variant(&scenario, &v).expect("runs"), file))
        .collect()
}

/// The integers at word `index` of each printed line whose first word is `tag`.
pub fn column(printed: &[String], tag: &str, index: usize) -> Vec<i64> {
    printed
        .iter()
        .filter(|l| l.split_whitespace().next() == Some(tag))
        .map(|l| {
            let word = l.split_whitespace().nth(index);
            word.and_then(|w| w.parse().ok())
                .unwrap_or_else(|| panic!("no integer at word {index} of {l:?}"))
        })
        .collect()
}

/// The differences between consecutive values.
pub fn steps(values: &[i64]) -> Vec<i64> {
    values.windows(2).map(|w| w[1] - w[0]).collect()
}

/// Reports whose every step keeps a fixed set of tensors, each with its fix: `(report,
/// printed tag, bytes kept per step as reported, with the fix, workload)`. The workload
/// branches on `fix` and prints `tag ... torch.cuda.memory_allocated()` once per step (the
/// allocation last). Each variant grows by exactly its bytes between every two printed
/// steps, its least-squares growth is the same, and neither runs out of memory.
pub fn assert_grows_per_step(rows: &[(&str, &str, i64, i64, &str)]) {
    for &(report, tag, reported, fixed_step, workload) in rows {
        let (buggy, fixed) = judge_fix(report, workload);
        for (run, step, variant) in [
            (&buggy, reported, "reported"),
            (&fixed, fixed_step, "fixed"),
        ] {
            let allocated: Vec<i64> = run
                .printed
                .iter()
                .filter(|l| l.split_whitespace().next() == Some(tag))
                .map(|l| l.rsplit(' ').next().and_then(|w| w.parse().ok()).expect(l))
                .collect();
            assert!(
                allocated.len() >= 6,
                "{report} {variant}: {:?}",
                run.printed
            );
            assert!(
                steps(&allocated).iter().all(|&d| d == step),
                "{report} {variant}: steps {:?}, expected {step}",
                steps(&allocated)
            );
            assert_eq!(run.growth, step, "{report} {variant}");
            assert!(!run.oom, "{report} {variant}");
        }
    }
}

/// Reports the model refuses: `(report, workload, the refusal's text, ":LINE:")`. Each must
/// fail with an error that names the feature and its place in `REPORT.yaml` (the inline
/// scenario's line: the workload's line + 4).
pub fn assert_refused(rows: &[(&str, &str, &str, &str)]) {
    for &(report, workload, feature, at) in rows {
        match try_judge(report, workload) {
            Ok(_) => panic!("{report}: ran; expected a refusal"),
            Err(e) => assert!(
                e.contains(feature) && e.contains(&format!("{report}.yaml{at}")),
                "{report}: {e}"
            ),
        }
    }
}
