//! A library caller of `run::run_variant` gets the static pass's located refusal for a
//! construct the model cannot run, even in a branch that the variant being run skips, as
//! `cargo gpumem test` gives it when it loads the file (the run used to go ahead, and debug
//! builds then stopped on an internal assertion: "the model panicked").

use gpumem_harness::run::run_variant;
use gpumem_harness::scenario;

const YAML: &str = "name: t
device: { capacity: 8 GiB }
python: \"3.11\"
vary:
  fix: [false, true]
workload: |
  import os
  class Model:
      def __init__(self):
          if fix:
              os.system('true')
          else:
              self.func = self.step
      def step(self):
          return 1
  for i in range(3):
      m = Model()
";

#[test]
fn a_refused_construct_in_a_skipped_branch_is_a_located_refusal_for_every_variant() {
    let scenario = scenario::parse(YAML, "t.yaml").expect("scenario parses");
    let variants = scenario.variants();
    assert_eq!(variants.len(), 2);
    for variant in &variants {
        let error = run_variant(&scenario, variant).expect_err("os.system is refused");
        let text = error.to_string();
        assert!(
            text.contains("t.yaml:11:")
                && text.contains("unsupported")
                && text.contains("os.system"),
            "{text}"
        );
        assert!(!text.contains("panicked"), "{text}");
    }
}
