//! Untrusted workloads: budgets, deep and self-referential data, and integer edge cases each
//! end with a located error (exit code 2), never a hang, an abort, a panic or a wrong value.

use gpumem_harness::error::{Error, InputErrorKind};
use gpumem_harness::run::run_variant;
use gpumem_harness::scenario;
use gpumem_harness::timeline::Timeline;

fn run_with(limits: &str, workload: &str) -> Result<Timeline, Error> {
    let body: String = workload.lines().map(|l| format!("  {l}\n")).collect();
    let yaml = format!(
        "name: t\ndevice: {{ capacity: 1 GiB }}\npython: \"3.11\"\n{limits}workload: |\n{body}"
    );
    let scenario = scenario::parse(&yaml, "t.yaml").expect("scenario parses");
    let variant = scenario.variants().remove(0);
    run_variant(&scenario, &variant)
}

fn run(workload: &str) -> Result<Timeline, Error> {
    run_with("", workload)
}

/// The error's kind and its `file:line:col: kind: message` text.
fn error(result: Result<Timeline, Error>) -> (InputErrorKind, String) {
    match result {
        Err(e @ Error::Input { kind, .. }) => {
            assert_eq!(e.exit_code(), 2);
            (kind, e.to_string())
        }
        Err(other) => panic!("expected an input error, got {other}"),
        Ok(_) => panic!("expected an error, the workload completed"),
    }
}

#[test]
fn an_endless_loop_ends_at_its_step_budget_with_its_place_and_iteration() {
    let (kind, message) = error(run_with(
        "limits: { steps: 100000 }\n",
        "while True:\n    x = 1",
    ));
    assert_eq!(kind, InputErrorKind::Budget);
    assert!(
        message.starts_with("t.yaml:7:7: budget: 100,000 steps exceeded in iteration "),
        "{message}"
    );
    assert!(
        message.ends_with("raise limits.steps if this is intended"),
        "{message}"
    );
}

#[test]
fn nested_loops_and_comprehensions_count_steps() {
    let limits = "limits: { steps: 50000 }\n";
    let nested = "for i in range(10**18):\n    for j in range(10**18):\n        pass";
    assert_eq!(error(run_with(limits, nested)).0, InputErrorKind::Budget);
    let comprehension = "x = [i for i in range(10**18)]";
    assert_eq!(
        error(run_with(limits, comprehension)).0,
        InputErrorKind::Budget
    );
    // Under the budget, the same constructs run.
    run_with(limits, "x = [i for i in range(1000)]").expect("fits the budget");
}

#[test]
fn generator_expressions_streamed_into_a_consumer_count_steps() {
    // Nothing is materialised and no statement runs: only the comprehension's own passes
    // can stop these.
    let limits = "limits: { steps: 50000 }\n";
    for consumer in [
        "s = sum(i for i in range(10**18))",
        "a = any(i < 0 for i in range(10**18))",
        "d = {i: i for i in range(10**18) if i < 0}",
    ] {
        assert_eq!(
            error(run_with(limits, consumer)).0,
            InputErrorKind::Budget,
            "{consumer}"
        );
    }
}

#[test]
fn huge_materialisations_are_refused_before_they_happen() {
    for workload in [
        "x = list(range(10**9))",
        "x = []\nx.extend(range(10**9))",
        "x = [0] * 10**8 * 3",
        "s = 'ab'\nfor i in range(40):\n    s = s + s",
    ] {
        let (kind, message) = error(run_with("limits: { memory: 64 MiB }\n", workload));
        assert_eq!(kind, InputErrorKind::Budget, "{workload}: {message}");
        assert!(
            message.contains("64 MiB of the model's memory exceeded"),
            "{message}"
        );
        assert!(message.contains("raise limits.memory"), "{message}");
    }
}

#[test]
fn growing_a_list_one_item_at_a_time_meets_the_memory_budget() {
    let (kind, message) = error(run_with(
        "limits: { memory: 16 MiB, steps: 100000000 }\n",
        "x = []\nwhile True:\n    x.append([1, 2, 3])",
    ));
    assert_eq!(kind, InputErrorKind::Budget, "{message}");
}

#[test]
fn limits_are_validated_where_they_are_written() {
    let yaml = "name: t\npython: \"3.11\"\ndevice: { capacity: 1 GiB }\nlimits: { steps: -1 }\nworkload: |\n  pass\n";
    let err = scenario::parse(yaml, "t.yaml").unwrap_err().to_string();
    assert!(
        err.starts_with("t.yaml:4:18: scenario error: limits.steps"),
        "{err}"
    );
    let yaml = "name: t\npython: \"3.11\"\ndevice: { capacity: 1 GiB }\nlimits: { stepz: 1 }\nworkload: |\n  pass\n";
    let err = scenario::parse(yaml, "t.yaml").unwrap_err().to_string();
    assert!(err.contains("unknown key `stepz`"), "{err}");
}

#[test]
fn comparing_self_referential_lists_is_a_located_recursion_error() {
    let (kind, message) = error(run("x = []\nx.append(x)\ny = []\ny.append(y)\nz = x == y"));
    assert_eq!(kind, InputErrorKind::Runtime);
    assert!(
        message.starts_with("t.yaml:9:7: workload error: RecursionError: maximum recursion depth exceeded in comparison"),
        "{message}"
    );
    // CPython's identity shortcut: a list equals itself without recursing.
    run("x = []\nx.append(x)\nassert x == x").expect("identity holds");
    // Deep but finite nesting below the limit compares by value.
    run("a = []\nb = []\nfor i in range(500):\n    a = [a]\n    b = [b]\nassert a == b")
        .expect("500 levels compare");
}

#[test]
fn integer_edge_cases_follow_cpython_or_are_refused() {
    let min = "(-9223372036854775807 - 1)";
    // Results CPython gives that fit in 64 bits.
    run(&format!(
        "assert {min} % -1 == 0\nassert {min} // 1 == {min}\nassert -1 >> 100 == -1\nassert 0 << 100 == 0\nassert int(-2.5) == -2\nn = 0\nfor i in range(0, 10, 2**62):\n    n += 1\nassert n == 1\nassert len(range(0, 10, 2**62)) == 1"
    ))
    .expect("CPython's results");
    // Results beyond 64 bits: refused, never wrapped.
    for workload in [
        format!("a = {min} // -1"),
        format!("a = abs({min})"),
        "a = int(1e300)".to_string(),
        "a = 1 << 64".to_string(),
        "a = 3 ** 41".to_string(),
    ] {
        let (kind, message) = error(run(&workload));
        assert_eq!(kind, InputErrorKind::Unsupported, "{workload}: {message}");
        assert!(message.contains("integers beyond 64 bits"), "{message}");
    }
    // CPython's own errors.
    for (workload, expected) in [
        ("a = 1 >> -1", "ValueError: negative shift count"),
        ("a = 1 << -1", "ValueError: negative shift count"),
        (
            "a = 0 ** -1",
            "ZeroDivisionError: 0.0 cannot be raised to a negative power",
        ),
        (
            "a = int(1e400)",
            "OverflowError: cannot convert float infinity to integer",
        ),
        (
            "a = int(1e400 - 1e400)",
            "ValueError: cannot convert float NaN to integer",
        ),
    ] {
        let (kind, message) = error(run(workload));
        assert_eq!(kind, InputErrorKind::Runtime, "{workload}: {message}");
        assert!(message.starts_with("t.yaml:5:7: "), "{message}");
        assert!(message.ends_with(expected), "{workload}: {message}");
    }
}

#[test]
fn tensors_of_self_referential_or_too_deep_lists_raise_torchs_value_error() {
    let (_, message) = error(run("x = []\nx.append(x)\nt = torch.tensor(x)"));
    assert!(
        message.starts_with("t.yaml:7:7: workload error: ValueError: too many dimensions 'list'"),
        "{message}"
    );
    let deep = "x = 1\nfor i in range(1000000):\n    x = [x]\nt = torch.tensor(x)";
    let (_, message) = error(run_with("limits: { steps: 100000000 }\n", deep));
    assert!(
        message.ends_with("ValueError: too many dimensions 'list'"),
        "{message}"
    );
    // torch accepts up to 128 dimensions.
    run("x = 1\nfor i in range(128):\n    x = [x]\nt = torch.tensor(x)").expect("128 dims");
}

#[test]
fn deeply_nested_lambdas_are_analysed_in_linear_time() {
    let workload = format!("x = {}1", "lambda: ".repeat(40_000));
    let started = std::time::Instant::now();
    run(&workload).expect("runs");
    // Quadratic scope analysis took 13 s and 6 GB here; linear takes well under a second.
    let elapsed = started.elapsed();
    assert!(elapsed.as_secs_f64() < 5.0, "took {elapsed:?}");
}

#[test]
fn statements_cpython_refuses_to_compile_are_located_syntax_errors() {
    for (workload, expected) in [
        (
            "x = 1\nreturn x",
            "t.yaml:6:3: Python syntax error: SyntaxError: 'return' outside function",
        ),
        (
            "break",
            "t.yaml:5:3: Python syntax error: SyntaxError: 'break' outside loop",
        ),
        (
            "for i in range(2):\n    def f():\n        continue",
            "t.yaml:7:11: Python syntax error: SyntaxError: 'continue' not properly in loop",
        ),
        (
            "nonlocal x",
            "t.yaml:5:3: Python syntax error: SyntaxError: nonlocal declaration not allowed at module level",
        ),
    ] {
        let (kind, message) = error(run(workload));
        assert_eq!(kind, InputErrorKind::PythonSyntax, "{message}");
        assert_eq!(message, expected);
    }
}
