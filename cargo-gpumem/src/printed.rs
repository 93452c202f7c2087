//! The workload's `print` output in `cargo gpumem run`'s human report: users debug leaks with
//! prints of `torch.cuda.memory_allocated()`, and seeing them beside the model's figures
//! shows where the two agree. Not part of `--json`, golden files or `cargo gpumem test`.

use gpumem_harness::python::Printed;

/// Lines shown when `--print-lines` is not given.
pub const DEFAULT_LINES: usize = 20;

/// The section for `printed`, at most `limit` lines (none when it is empty or `limit` is 0).
pub fn section(printed: &Printed, limit: usize) -> String {
    titled_section(printed, limit, "printed by the workload")
}

/// A run that stopped with an error: what the workload printed up to it (on stdout, as
/// after a report), then the error's Python traceback located in the scenario file (on
/// stderr, where CPython prints it; the error line itself follows it there). The model
/// builds traceback entries only while a handler is active, so an exception raised with no
/// `try` around it shows its located error line alone.
pub fn show_failure(failure: &gpumem_harness::run::Failure, limit: usize) {
    print!(
        "{}",
        titled_section(
            &failure.printed,
            limit,
            "printed by the workload before the error"
        )
    );
    for line in &failure.traceback {
        eprintln!("{line}");
    }
}

fn titled_section(printed: &Printed, limit: usize, title: &str) -> String {
    if printed.is_empty() || limit == 0 {
        return String::new();
    }
    let lines: Vec<&str> = printed.all_lines().collect();
    let total = lines.len() as u64 + printed.dropped_lines;
    let mut out = format!(
        "{title} ({total} line{}):\n",
        if total == 1 { "" } else { "s" }
    );
    for line in lines.iter().take(limit) {
        out.push_str("  | ");
        out.push_str(line);
        out.push('\n');
    }
    let hidden = total - lines.len().min(limit) as u64;
    if hidden > 0 {
        out.push_str(&format!(
            "  … {hidden} more line{} (--print-lines N shows more; 0 hides this section)\n",
            if hidden == 1 { "" } else { "s" }
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_past_the_limit_are_counted() {
        let mut printed = Printed::default();
        printed.write("a\nb\nc\n");
        assert_eq!(
            section(&printed, 2),
            "printed by the workload (3 lines):\n  | a\n  | b\n  … 1 more line (--print-lines N shows more; 0 hides this section)\n"
        );
        assert_eq!(section(&printed, 0), "");
        assert_eq!(section(&Printed::default(), 5), "");
    }
}
