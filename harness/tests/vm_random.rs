//! `random` is CPython's Mersenne Twister: after `random.seed(n)` the model draws the
//! numbers, picks the items and shuffles the lists CPython 3.8 – 3.13 does (the expected
//! values below were printed by those interpreters, identical on all six; the script runs on
//! the model and on every installed CPython). Without a seed the model starts as after
//! `random.seed(0)`.

#[allow(dead_code)] // this file uses its own checks
mod probes;

use probes::{agrees_with_cpython, run};

const SCRIPT: &str = "
import random
random.seed(1234)
assert [random.random() for _ in range(3)] == [0.9664535356921388, 0.4407325991753527, 0.007491470058587191]
assert [random.randint(1, 6) for _ in range(8)] == [5, 1, 6, 6, 1, 1, 3, 2]
assert random.randint(0, 2**40) == 64499362338
xs = list(range(10))
random.shuffle(xs)
assert xs == [6, 2, 8, 9, 1, 3, 4, 7, 5, 0]
assert random.choice(['a', 'b', 'c', 'd']) == 'a'
assert random.uniform(2, 5) == 3.5092510615308177
assert random.sample(range(100), 5) == [31, 8, 85, 69, 59]
assert random.sample(list(range(10)), 10) == [1, 9, 0, 2, 4, 7, 6, 8, 3, 5]
assert random.sample(range(1000), 3) == [255, 671, 955]
random.seed(-7)
assert random.random() == 0.32383276483316237
random.seed(2**40 + 3)
assert random.random() == 0.21978710637116716
";

#[test]
fn seeded_draws_are_cpythons() {
    for python in ["3.8", "3.9", "3.10", "3.11", "3.12", "3.13"] {
        if let Err(e) = run(python, SCRIPT) {
            panic!("on {python}: {e}");
        }
    }
    agrees_with_cpython("", 13, SCRIPT);
}

#[test]
fn an_unseeded_run_starts_as_after_seed_0() {
    run(
        "3.11",
        "import random\nassert random.random() == 0.8444218515250481\n",
    )
    .expect("the documented default seed");
}

#[test]
fn a_string_seed_is_refused_located() {
    let err = run("3.11", "import random\nrandom.seed('abc')\n").expect_err("refused");
    let text = err.to_string();
    assert!(text.contains("t.yaml:6:"), "{text}");
    assert!(text.contains("random.seed()"), "{text}");
}
