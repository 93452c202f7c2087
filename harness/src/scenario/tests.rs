//! Tests of the scenario reader as a whole: files in, `Scenario` or located errors out.

use super::*;
use crate::error::{Error, InputErrorKind};
use crate::units::{GIB, MIB};

const SIMPLE_CYCLE: &str = r#"name: simple_cycle
about: Two 256 MiB tensors per iteration held by a Node <-> Node reference cycle.
device: h100-80gb            # preset, or { capacity: 80GiB }
python: "3.11"
vary:
  gc_every: [0, 100]
workload: |
  class Node:
      def __init__(self, T):
          self.tensor = T
          self.link = None

  for i in range(30000):
      A = torch.zeros(2**26, device="cuda")
      B = torch.zeros(2**26, device="cuda")
      a, b = Node(A), Node(B)
      a.link, b.link = b, a
      if gc_every and i % gc_every == 0:
          gc.collect()
expect:
  - when: { gc_every: 0 }
    oom: true
  - when: { gc_every: 100 }
    oom: false
    peak_allocated: "<= 52 GiB"
  - steady_state: { warmup: 5, tolerance: "1 MiB" }
    leak_per_iteration: "<= 0 B"
    cycles: none
"#;

/// The error's kind, line, column and message; fails the test when parsing succeeds.
fn error_of(text: &str) -> (InputErrorKind, u32, u32, String) {
    match parse(text, "scenarios/t.yaml") {
        Ok(s) => panic!("expected an error, got {s:?}"),
        Err(Error::Input {
            kind,
            location,
            message,
        }) => {
            assert_eq!(location.file, "scenarios/t.yaml");
            (kind, location.line, location.column, message)
        }
        Err(other) => panic!("expected an input error, got {other}"),
    }
}

/// A minimal valid scenario with `extra` appended (top-level keys).
fn minimal(extra: &str) -> String {
    format!("name: t\ndevice: a100-40gb\npython: \"3.12\"\nworkload: |\n  x = 1\n{extra}")
}

#[test]
fn reads_the_design_example() {
    let s = parse(SIMPLE_CYCLE, "scenarios/simple_cycle.yaml").unwrap();
    assert_eq!(s.file, "scenarios/simple_cycle.yaml");
    assert_eq!(s.name, "simple_cycle");
    assert!(s.about.starts_with("Two 256 MiB tensors"));
    assert_eq!(s.device.preset.as_deref(), Some("h100-80gb"));
    assert_eq!(s.device.capacity, 81_082 * MIB);
    assert_eq!(s.python.version, PyVersion::minor(11));
    assert_eq!(
        s.python.start,
        GcStartState::after_import_torch(PyVersion::minor(11))
    );
    assert!(!s.python.start_given);
    assert_eq!(
        s.vary,
        vec![(
            "gc_every".to_string(),
            vec![VarValue::Int(0), VarValue::Int(100)]
        )]
    );
    assert!(
        s.workload
            .source
            .starts_with("class Node:\n    def __init__")
    );
    assert!(s.workload.source.ends_with("gc.collect()\n"));
    assert_eq!((s.workload.first_line, s.workload.indent), (8, 2));

    assert_eq!(s.expect.len(), 3);
    assert_eq!(
        s.expect[0].when,
        vec![("gc_every".into(), VarValue::Int(0))]
    );
    assert_eq!(
        s.expect[0].location.to_string(),
        "scenarios/simple_cycle.yaml:21:5"
    );
    let checks: Vec<&Check> = s
        .expect
        .iter()
        .flat_map(|b| &b.checks)
        .map(|e| &e.check)
        .collect();
    assert_eq!(
        checks,
        vec![
            &Check::Oom(true),
            &Check::Oom(false),
            &Check::PeakAllocated(ByteBound {
                op: Comparison::Le,
                bytes: 52 * GIB
            }),
            &Check::SteadyState {
                warmup: 5,
                tolerance: MIB
            },
            &Check::LeakPerIteration(ByteBound {
                op: Comparison::Le,
                bytes: 0
            }),
            &Check::CyclesNone,
        ]
    );
    // Each check points at its key.
    assert_eq!(
        s.expect[1].checks[1].location.to_string(),
        "scenarios/simple_cycle.yaml:25:5"
    );
}

#[test]
fn checks_are_selected_per_variant() {
    let s = parse(SIMPLE_CYCLE, "s.yaml").unwrap();
    let variants = s.variants();
    assert_eq!(variants.len(), 2);
    let never = s.expectations_for(&variants[0]);
    let every_100 = s.expectations_for(&variants[1]);
    let kinds = |v: &[&Expectation]| v.iter().map(|e| e.check.clone()).collect::<Vec<_>>();
    assert_eq!(kinds(&never)[0], Check::Oom(true));
    assert_eq!(never.len(), 4); // oom: true + the three unconditional checks
    assert_eq!(
        kinds(&every_100)[..2],
        [
            Check::Oom(false),
            Check::PeakAllocated(ByteBound {
                op: Comparison::Le,
                bytes: 52 * GIB
            })
        ]
    );
    assert_eq!(every_100.len(), 5);
}

#[test]
fn vary_expands_first_variable_slowest() {
    let s = parse(
        &minimal("vary:\n  gc_every: [0, 100]\n  python: [\"3.10\", \"3.11\", \"3.13\"]\n"),
        "t.yaml",
    )
    .unwrap();
    let names: Vec<String> = s.variants().iter().map(Variant::name).collect();
    assert_eq!(
        names,
        [
            "gc_every=0,python=3.10",
            "gc_every=0,python=3.11",
            "gc_every=0,python=3.13",
            "gc_every=100,python=3.10",
            "gc_every=100,python=3.11",
            "gc_every=100,python=3.13",
        ]
    );
    // The varied python overrides the top-level one, which the unvaried device keeps.
    let versions: Vec<u8> = s
        .variants()
        .iter()
        .map(|v| v.python.version.minor)
        .collect();
    assert_eq!(versions, [10, 11, 13, 10, 11, 13]);
    assert!(
        s.variants()
            .iter()
            .all(|v| v.device.preset.as_deref() == Some("a100-40gb"))
    );
}

#[test]
fn no_vary_gives_one_unnamed_variant() {
    let s = parse(&minimal(""), "t.yaml").unwrap();
    let variants = s.variants();
    assert_eq!(variants.len(), 1);
    assert_eq!(variants[0].name(), "");
    assert_eq!(variants[0].device, s.device);
    assert_eq!(variants[0].python, s.python);
}

#[test]
fn device_and_python_may_come_from_vary_alone() {
    let text = "name: t\nvary:\n  device: [a100-40gb, h200-141gb, \"24 GiB\"]\n  python: [\"3.8\"]\nworkload: x = 1\n";
    let s = parse(text, "t.yaml").unwrap();
    let devices: Vec<(Option<String>, u64)> = s
        .variants()
        .into_iter()
        .map(|v| (v.device.preset, v.device.capacity))
        .collect();
    assert_eq!(
        devices,
        [
            (Some("a100-40gb".to_string()), 40_536 * MIB),
            (Some("h200-141gb".to_string()), 143_156 * MIB),
            (None, 24 * GIB),
        ]
    );
    assert_eq!(s.variants()[2].name(), "device=24 GiB,python=3.8");
    assert!(s.variants().iter().all(|v| v.python.version.minor == 8));
}

#[test]
fn python_start_state_may_be_given() {
    let text = "name: t\ndevice: { capacity: \"80 GiB\" }\npython:\n  version: \"3.13\"\n  start: { counts: [12, 0, 0], long_lived_total: 1000 }\nvary:\n  python: [\"3.9\", \"3.12\"]\nworkload: x = 1\n";
    let s = parse(text, "t.yaml").unwrap();
    assert_eq!(
        s.device,
        Device {
            preset: None,
            capacity: 80 * GIB,
            context: 0,
        }
    );
    assert!(s.python.start_given);
    let expected_start = GcStartState {
        counts: [12, 0, 0],
        long_lived_total: 1000,
        free_lists_full: false,
        count_below_zero: 0,
        gc_callbacks: 0,
    };
    for (variant, minor) in s.variants().iter().zip([9, 12]) {
        assert_eq!(variant.python.version.minor, minor);
        assert_eq!(
            variant.python.start, expected_start,
            "vary keeps the given start state"
        );
        assert!(variant.python.start_given);
    }
}

// ----- errors: each names the file, line and column, and says what was expected -----

#[test]
fn broken_yaml_is_a_located_yaml_error() {
    // The unclosed `[` swallows the next line, whose `:` is then out of place.
    let (kind, line, col, message) = error_of("name: t\nvary:\n  gc_every: [0, 100\nworkload: x\n");
    assert_eq!((kind, line, col), (InputErrorKind::Yaml, 4, 9));
    assert_eq!(message, "illegal placement of ':' indicator");
    let (kind, line, col, message) = error_of("name: t\n  about: x\n");
    assert_eq!((kind, line), (InputErrorKind::Yaml, 2), "{col}: {message}");
    let err = parse("name: t\nname: u\n", "t.yaml").unwrap_err();
    assert!(err.to_string().starts_with("t.yaml:"), "{err}");
    assert!(err.to_string().contains("duplicate"), "{err}");
}

#[test]
fn unknown_key_lists_the_known_ones() {
    let (kind, line, col, message) = error_of(&minimal("expected:\n  - oom: true\n"));
    assert_eq!((kind, line, col), (InputErrorKind::Schema, 6, 1));
    assert_eq!(
        message,
        "unknown key `expected` in a scenario: did you mean `expect`? (expected one of: name, about, device, python, vary, workload, replay, expect, limits, allocator)"
    );
    let (_, line, col, message) =
        error_of(&minimal("expect:\n  - oom: true\n    peak: \"<= 1 GiB\"\n"));
    assert_eq!((line, col), (8, 5));
    assert!(
        message.starts_with(
            "unknown key `peak` in an `expect` block; expected one of: when, oom, peak_allocated"
        ),
        "{message}"
    );
}

#[test]
fn wrong_types_say_what_was_expected() {
    let (kind, line, col, message) = error_of(&minimal("expect:\n  - oom: yes\n"));
    assert_eq!((kind, line, col), (InputErrorKind::Schema, 7, 10));
    assert_eq!(
        message,
        "`oom`: expected true or false, found the string \"yes\""
    );
    let (_, line, col, message) = error_of(&minimal("vary:\n  gc_every: 100\n"));
    assert_eq!((line, col), (7, 13));
    assert_eq!(
        message,
        "`vary.gc_every`: expected a non-empty list of values, found the integer 100"
    );
    let (_, _, _, message) = error_of("name: [a]\n");
    assert_eq!(message, "`name`: expected a string, found a list");
}

#[test]
fn missing_required_keys_are_reported() {
    let (kind, line, col, message) =
        error_of("about: x\ndevice: a100-40gb\npython: \"3.11\"\nworkload: x = 1\n");
    assert_eq!((kind, line, col), (InputErrorKind::Schema, 1, 1));
    assert!(message.starts_with("missing `name`"), "{message}");
    let (_, _, _, message) = error_of("name: t\npython: \"3.11\"\nworkload: x = 1\n");
    assert!(
        message.starts_with(
            "missing `device`: name a preset (a100-40gb, a100-80gb, h100-80gb, h200-141gb)"
        ),
        "{message}"
    );
    let (_, _, _, message) = error_of("name: t\ndevice: a100-40gb\nworkload: x = 1\n");
    assert!(
        message.starts_with("missing `python`: a scenario must say which CPython collector"),
        "{message}"
    );
    let (_, _, _, message) = error_of("name: t\ndevice: a100-40gb\npython: \"3.11\"\n");
    assert!(message.starts_with("missing `workload`"), "{message}");
    let (_, _, _, message) = error_of("");
    assert!(message.starts_with("the file is empty"), "{message}");
}

#[test]
fn bad_names_are_rejected() {
    let (_, line, col, message) = error_of("name: \"two words\"\n");
    assert_eq!((line, col), (1, 7));
    assert!(message.contains("must start with a letter"), "{message}");
}

#[test]
fn unsupported_python_versions_are_rejected() {
    let (kind, line, col, message) = error_of("name: t\npython: \"3.7\"\n");
    assert_eq!((kind, line, col), (InputErrorKind::Schema, 2, 9));
    assert!(
        message.starts_with(
            "unsupported Python version \"3.7\": the collector model covers \"3.8\" to \"3.15\""
        ),
        "{message}"
    );
    for listed in [
        "\"3.14.0\" to \"3.14.4\"",
        "\"3.13t\"",
        "\"3.14t\"",
        "python: all",
    ] {
        assert!(message.contains(listed), "{message}");
    }
    for bad in ["3.16", "3.12t", "3.15t", "3.14.x", "3.14.", "4.0", "3.13tt"] {
        let (_, line, col, message) = error_of(&format!("name: t\npython: \"{bad}\"\n"));
        assert_eq!((line, col), (2, 9), "{bad}");
        assert!(
            message.starts_with("unsupported Python version"),
            "{bad}: {message}"
        );
    }
    let (_, line, col, message) = error_of("name: t\npython: 3.10\n");
    assert_eq!((line, col), (2, 9));
    assert_eq!(
        message,
        "the Python version must be a quoted string, found the number 3.1 \
         (YAML reads 3.10 as the number 3.1); write it in quotes: \"3.10\""
    );
    let (_, _, _, message) = error_of("name: t\npython: 3.11\n");
    assert!(
        message.contains("write it in quotes: \"3.11\""),
        "{message}"
    );
    let (_, line, col, message) = error_of(&minimal("vary:\n  python: [\"3.11\", 3.12]\n"));
    assert_eq!((line, col), (7, 20));
    assert!(message.contains("found the number 3.12"), "{message}");
}

#[test]
fn bad_bounds_name_the_unit() {
    let (kind, line, col, message) =
        error_of(&minimal("expect:\n  - peak_allocated: \"<= 52 parsecs\"\n"));
    assert_eq!((kind, line, col), (InputErrorKind::Schema, 7, 21));
    assert!(
        message
            .starts_with("`peak_allocated`: in bound \"<= 52 parsecs\": unknown unit \"parsecs\""),
        "{message}"
    );
    let (_, _, _, message) = error_of(&minimal("expect:\n  - peak_reserved: 52 GiB\n"));
    assert!(message.contains("one of <, <=, >, >=, =="), "{message}");
}

#[test]
fn when_must_name_a_vary_variable() {
    let text =
        minimal("vary:\n  gc_every: [0, 100]\nexpect:\n  - when: { gc_evry: 0 }\n    oom: true\n");
    let (kind, line, col, message) = error_of(&text);
    assert_eq!((kind, line, col), (InputErrorKind::Schema, 9, 13));
    assert_eq!(
        message,
        "`when` names the string \"gc_evry\", which is not a `vary` variable; the `vary` variables are: gc_every"
    );
}

#[test]
fn when_value_must_be_among_the_values() {
    let text = minimal(
        "vary:\n  gc_every: [0, 100]\nexpect:\n  - when: { gc_every: 50 }\n    oom: true\n",
    );
    let (kind, line, col, message) = error_of(&text);
    assert_eq!((kind, line, col), (InputErrorKind::Schema, 9, 23));
    assert_eq!(
        message,
        "`when.gc_every` is 50, which is not among its `vary` values: 0, 100"
    );
}

#[test]
fn other_schema_errors_are_located() {
    let cases = [
        (minimal("vary:\n  class: [1]\n"), (7, 3), "expected an identifier"),
        (minimal("vary:\n  n: [1, 1]\n"), (7, 10), "lists the value 1 twice"),
        (minimal("vary:\n  device: [a100-40gb, tpu]\n"), (7, 23), "unknown device \"tpu\""),
        (minimal("expect:\n  - when: {}\n"), (7, 5), "has no checks"),
        (minimal("expect:\n  - cycles: some\n"), (7, 13), "expected `none`"),
        (minimal("expect:\n  - steady_state: false\n"), (7, 19), "checks nothing"),
        (minimal("expect:\n  - steady_state: { warmup: -1 }\n"), (7, 29), "whole number"),
        ("name: t\npython: \"3.8\"\ndevice: { capacity: \"80 parsecs\" }\n".to_string(), (3, 21), "unknown unit"),
        ("name: t\npython: \"3.8\"\ndevice: { size: 1 }\n".to_string(), (3, 11), "expected one of: capacity"),
        ("name: t\npython: \"3.8\"\ndevice: a100\n".to_string(), (3, 9), "unknown device \"a100\""),
        ("name: t\ndevice: a100-40gb\npython: { version: \"3.11\", start: { counts: [1, 2] } }\n".to_string(), (3, 45), "a list of three whole numbers"),
    ];
    for (text, (line, col), needle) in cases {
        let (kind, l, c, message) = error_of(&text);
        assert_eq!(kind, InputErrorKind::Schema, "{text}");
        assert_eq!((l, c), (line, col), "{text}\n{message}");
        assert!(message.contains(needle), "{text}\n{message}");
    }
}

// ----- the workload and its positions in the file -----

/// Checks that every line of the workload is found at `file_position` in the file text.
fn assert_positions_map_back(text: &str, w: &Workload) {
    let file_lines: Vec<&str> = text.split('\n').collect();
    for (i, line) in w.source.lines().enumerate() {
        if line.is_empty() {
            continue;
        }
        let (file_line, file_col) = w.file_position(i as u32 + 1, 1);
        let in_file: String = file_lines[file_line as usize - 1]
            .chars()
            .skip(file_col as usize - 1)
            .collect();
        assert!(
            in_file.starts_with(line),
            "line {i}: {in_file:?} does not start with {line:?}\n{text}"
        );
    }
}

#[test]
fn workload_positions_map_to_the_file() {
    // The third workload line has `+ +` at column 11; in the file that is line 7, column 15.
    let text = "name: t\ndevice: a100-40gb\npython: \"3.11\"\nworkload: |\n    for i in range(3):\n        x = i\n        y = x + + 1\nexpect:\n  - oom: false\n";
    let w = parse(text, "t.yaml").unwrap().workload;
    let third = w.source.lines().nth(2).unwrap();
    let column = third.find("+ +").unwrap() as u32 + 1;
    assert_eq!(column, 11);
    assert_eq!(w.file_position(3, column), (7, 15));
    let file_line = text.lines().nth(6).unwrap();
    assert_eq!(file_line.find("+ +").unwrap() + 1, 15);
    assert_positions_map_back(text, &w);
}

#[test]
fn workload_styles_map_exactly() {
    let cases = [
        ("workload: |\n  a = 1\n  b = 2\n", "a = 1\nb = 2\n", (5, 2)),
        ("workload: |-\n  a = 1\n", "a = 1", (5, 2)),
        ("workload: |+\n  a = 1\n\n", "a = 1\n\n", (5, 2)),
        (
            "workload: |  # a comment\n\n\n    a = 1\n",
            "\n\na = 1\n",
            (5, 4),
        ),
        ("workload: |2\n    a = 1\n", "  a = 1\n", (5, 2)),
        ("workload: |-4\n      a = 1\n", "  a = 1", (5, 4)),
        ("workload: &code |\n  a = 1\n", "a = 1\n", (5, 2)),
        ("workload:\n  |\n   a = 1\n", "a = 1\n", (6, 3)),
        ("workload:   a = 1\n", "a = 1", (4, 12)),
        ("workload: \"a = 'x'\"\n", "a = 'x'", (4, 11)),
        ("workload: 'a = 1'\n", "a = 1", (4, 11)),
    ];
    for (tail, source, (first_line, indent)) in cases {
        let text = format!("name: t\ndevice: a100-40gb\npython: \"3.11\"\n{tail}");
        let w = parse(&text, "t.yaml")
            .unwrap_or_else(|e| panic!("{tail:?}: {e}"))
            .workload;
        assert_eq!(w.source, source, "{tail:?}");
        assert_eq!((w.first_line, w.indent), (first_line, indent), "{tail:?}");
        assert_positions_map_back(&text, &w);
    }
}

#[test]
fn crlf_files_and_non_ascii_text_map_exactly() {
    let text = "name: t\r\ndevice: a100-40gb\r\npython: \"3.11\"\r\nabout: \"ü\"\r\nworkload: |\r\n   ä = 1\r\n   b = ä\r\n";
    let w = parse(text, "t.yaml").unwrap().workload;
    assert_eq!(w.source, "ä = 1\nb = ä\n");
    assert_eq!((w.first_line, w.indent), (6, 3));
    assert_positions_map_back(text, &w);
    let text = "name: t\ndevice: a100-40gb\npython: \"3.11\"\nworkload: \"ä = 'é'\"\n";
    let w = parse(text, "t.yaml").unwrap().workload;
    assert_eq!((w.first_line, w.indent), (4, 11));
    assert_positions_map_back(text, &w);
}

#[test]
fn an_aliased_workload_maps_to_its_definition() {
    let text = "name: t\ndevice: a100-40gb\npython: \"3.11\"\nabout: &code |\n    a = 1\nworkload: *code\n";
    let w = parse(text, "t.yaml").unwrap().workload;
    assert_eq!((w.first_line, w.indent), (5, 4));
    assert_positions_map_back(text, &w);
}

#[test]
fn workloads_that_lose_line_breaks_are_rejected() {
    let head = "name: t\ndevice: a100-40gb\npython: \"3.11\"\n";
    let cases = [
        (
            "workload: >\n  a = 1\n  b = 2\n",
            (5, 3),
            "folded `>` block",
        ),
        ("workload: >-\n  a = 1\n", (5, 3), "folded `>` block"),
        (
            "workload: a = 1\n  b = 2\n",
            (4, 11),
            "plain workload must fit on one line",
        ),
        (
            "workload: \"a = 1\\nb = 2\"\n",
            (4, 11),
            "quoted workload must fit on one line",
        ),
        (
            "workload: |\n\nexpect: []\n",
            (4, 1),
            "the workload is empty",
        ),
        ("workload: 12\n", (4, 11), "expected Python source"),
    ];
    for (tail, (line, col), needle) in cases {
        let (kind, l, c, message) = error_of(&format!("{head}{tail}"));
        assert_eq!(kind, InputErrorKind::Schema, "{tail:?}");
        assert!(message.contains(needle), "{tail:?}: {message}");
        assert_eq!((l, c), (line, col), "{tail:?}: {message}");
    }
}

#[test]
fn load_reads_a_file_and_names_it_as_given() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.yaml");
    std::fs::write(&path, SIMPLE_CYCLE).unwrap();
    assert_eq!(
        load(&path, "scenarios/s.yaml").unwrap().name,
        "simple_cycle"
    );
    std::fs::write(&path, "name: t\npython: \"3.6\"\n").unwrap();
    let err = load(&path, "scenarios/s.yaml").unwrap_err();
    assert!(
        err.to_string()
            .starts_with("scenarios/s.yaml:2:9: scenario error:"),
        "{err}"
    );
    let missing = load(&dir.path().join("none.yaml"), "none.yaml").unwrap_err();
    assert!(matches!(missing, Error::Io { .. }), "{missing}");
    assert!(missing.to_string().starts_with("none.yaml: "), "{missing}");
}

// ----- robustness: no input makes the reader panic -----

#[test]
fn every_truncation_and_corruption_returns_without_panicking() {
    let mut inputs: Vec<String> = Vec::new();
    for end in 0..=SIMPLE_CYCLE.len() {
        if SIMPLE_CYCLE.is_char_boundary(end) {
            inputs.push(SIMPLE_CYCLE[..end].to_string());
        }
    }
    // Replace single characters with YAML's structural ones, at a stride across the file.
    for (i, replacement) in (0..SIMPLE_CYCLE.len())
        .step_by(7)
        .zip("[]{}:-|>&*!#'\"\t\n ".chars().cycle())
    {
        if SIMPLE_CYCLE.is_char_boundary(i) && SIMPLE_CYCLE.is_char_boundary(i + 1) {
            let mut s = SIMPLE_CYCLE.to_string();
            s.replace_range(i..i + 1, &replacement.to_string());
            inputs.push(s);
        }
    }
    inputs.extend(
        [
            "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
            "a: &a [*a]",
            "- 1\n- 2",
            "name: t\n---\nname: u\n",
            "\u{feff}name: t",
            "name: !!binary aGVsbG8=",
            "name: t\ndevice: { capacity: 99999999999999999999999 }",
            "name: t\ndevice: { capacity: \"1e300 GiB\" }",
            "name: t\ndevice: a100-40gb\npython: \"3.11\"\nworkload: |\n  é = 1\n  ü = 2\n",
            "name: t\ndevice: a100-40gb\npython: \"3.11\"\nworkload: \"é\"\n",
            "? [a]\n: b",
        ]
        .map(String::from),
    );
    // Nesting deeper than the parser's budget allows, in block and in flow style.
    let deep_block: String = (0..200)
        .map(|depth| format!("{}k:\n", "  ".repeat(depth)))
        .collect();
    inputs.push(deep_block);
    inputs.push(format!("a: {}1{}", "[".repeat(300), "]".repeat(300)));
    assert!(inputs.len() > 300, "{} inputs", inputs.len());
    let mut ok = 0;
    for input in &inputs {
        let result =
            std::panic::catch_unwind(|| parse(input, "t.yaml").map(|s| s.variants().len()));
        match result {
            Ok(Ok(_)) => ok += 1,
            Ok(Err(e)) => assert!(e.location().is_some(), "{input:?}: {e}"),
            Err(_) => panic!("parse panicked on {input:?}"),
        }
    }
    // The complete file and truncations after its last key parse; most others are errors.
    assert!(ok >= 1);
}
#[test]
fn deep_nesting_is_refused_before_it_can_exhaust_the_stack() {
    for depth in [25usize, 100, 1000] {
        let block: String = (0..depth)
            .map(|d| format!("{}k:\n", "  ".repeat(d)))
            .collect();
        let flow = format!("a: {}1{}", "[".repeat(depth), "]".repeat(depth));
        for text in [block, flow] {
            let err = parse(&text, "t.yaml").unwrap_err();
            let Error::Input { kind, message, .. } = &err else {
                panic!("{err}")
            };
            assert_eq!(*kind, InputErrorKind::Yaml, "{err}");
            assert!(
                message.contains("Depth") || message.contains("recursion limit"),
                "{message}"
            );
        }
    }
}

#[test]
fn patch_releases_and_free_threaded_builds_are_versions() {
    use crate::heap::{Collector, GcProfile};
    let collector = |text: &str| {
        let yaml = format!("name: t\ndevice: a100-40gb\npython: \"{text}\"\nworkload: x = 1\n");
        let s = parse(&yaml, "t.yaml").expect("parses");
        assert_eq!(s.python.version.to_string(), text);
        GcProfile::for_version(s.python.version).collector
    };
    assert_eq!(collector("3.14"), Collector::Generational);
    assert_eq!(collector("3.14.5"), Collector::Generational);
    assert_eq!(collector("3.15"), Collector::Generational);
    for patch in 0..=4 {
        assert_eq!(collector(&format!("3.14.{patch}")), Collector::Incremental);
    }
    let free_threaded = |fixed| Collector::FreeThreaded {
        negative_count_fixed: fixed,
    };
    assert_eq!(collector("3.13t"), free_threaded(true));
    assert_eq!(collector("3.13.5t"), free_threaded(false));
    assert_eq!(collector("3.13.10t"), free_threaded(false));
    assert_eq!(collector("3.13.11t"), free_threaded(true));
    assert_eq!(collector("3.14.1t"), free_threaded(false));
    assert_eq!(collector("3.14.2t"), free_threaded(true));
    assert_eq!(collector("3.14t"), free_threaded(true));
}

#[test]
fn vary_python_all_runs_one_variant_per_collector_behaviour() {
    let s = parse(&minimal("vary:\n  python: all\n"), "t.yaml").expect("parses");
    let versions: Vec<String> = s
        .variants()
        .iter()
        .map(|v| v.python.version.to_string())
        .collect();
    assert_eq!(versions, crate::scenario::VERSION_MATRIX);
    let (_, line, col, message) = error_of(&minimal("vary:\n  python: every\n"));
    assert_eq!((line, col), (7, 11), "{message}");
}
