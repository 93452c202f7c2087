//! Functional tests: the real `cargo-gpumem` binary, run as `cargo gpumem ...` (with the
//! binary first on `PATH`) inside temporary cargo workspaces. One binary, topic modules.
//!
//! Each test builds its own workspace with [`Project`], so tests run in parallel. The
//! environment is cleaned of `CI`, `INSTA_*` and colour settings so that results do not
//! depend on the machine that runs them; tests that need CI set it explicitly.

mod bad_input;
mod cargo_test;
#[cfg(feature = "cuda")]
mod cuda_device;
mod golden_workflow;
mod listing_and_filters;
mod no_cargo;
mod project;
mod review;
mod run_command;
mod run_failure_output;
mod schema;
mod snapshots;
mod untrusted_input;

pub use project::{Output, Project};

/// A small scenario with two variants that runs in milliseconds.
pub const SMALL_LOOP: &str = r#"name: small_loop
about: One tensor per iteration, freed by reference counting when the name is rebound.
device: { capacity: 1 GiB }
python: "3.11"
vary:
  size: [1024, 4096]
workload: |
  for i in range(4):
      a = torch.zeros(size, device="cuda")
expect:
  - oom: false
"#;

/// [`SMALL_LOOP`] with a second tensor per iteration: the timeline changes.
pub const SMALL_LOOP_CHANGED: &str = r#"name: small_loop
about: One tensor per iteration, freed by reference counting when the name is rebound.
device: { capacity: 1 GiB }
python: "3.11"
vary:
  size: [1024, 4096]
workload: |
  for i in range(4):
      a = torch.zeros(size, device="cuda")
      b = torch.zeros(size * 4, device="cuda")
expect:
  - oom: false
"#;

/// YAML that does not parse (an unclosed flow sequence on line 3).
pub const BROKEN_YAML: &str =
    "name: broken\nabout: a syntax error\nvary: { size: [1, 2\nworkload: |\n  x = 1\n";

/// Finds `<file>:<line>:<col>` in `text` and returns (line, col).
pub fn location_of(text: &str, file: &str) -> Option<(u32, u32)> {
    text.match_indices(&format!("{file}:")).find_map(|(at, m)| {
        let rest = &text[at + m.len()..];
        let mut parts = rest.splitn(3, ':');
        let line = parts.next()?.parse().ok()?;
        let col = parts
            .next()?
            .chars()
            .take_while(char::is_ascii_digit)
            .collect::<String>()
            .parse()
            .ok()?;
        Some((line, col))
    })
}
