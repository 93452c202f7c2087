//! A deterministic mutation test of scenario files (the stable stand-in for the
//! `scenario_file` fuzz target): the shipped scenarios, cut, spliced and sprinkled with
//! hostile fragments, either load with a located error or run under small budgets to a
//! timeline or a located error. A panic in the model would surface as an "internal error".

use gpumem_harness::error::Error;
use gpumem_harness::harness::engine::run_trial;
use gpumem_harness::scenario::{self, Limits};
use std::path::Path;

/// Fragments that have broken the reader or the interpreter before, or could.
const FRAGMENTS: &[&str] = &[
    "\n  while True:\n      pass\n",
    "\n  x = []\n  x.append(x)\n  y = x == [x]\n",
    "\n  a = (-9223372036854775807 - 1) // -1\n",
    "\n  for i in range(0, 10, 2**62):\n      pass\n",
    "\n  s = 'ab'\n  for i in range(60):\n      s = s + s\n",
    "\n  x = [0] * 10**8\n",
    "\nlimits: { steps: 0 }\n",
    "\nvary: { q: [1, \"1\"] }\n",
    "\n  return 1\n",
    "\n  t = torch.tensor([[[[[[1]]]]]])\n",
    "[[[[[[[[[[[[[[[[",
    "lambda: lambda: lambda: ",
    "\u{0}",
    "\t",
    ": :",
    "*",
    "- ",
];

/// xorshift64*: a fixed sequence, so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn mutate(text: &str, rng: &mut Rng) -> String {
    let mut bytes = text.as_bytes().to_vec();
    for _ in 0..=rng.below(3) {
        let at = rng.below(bytes.len() + 1);
        match rng.below(4) {
            0 => bytes
                .splice(at..at, FRAGMENTS[rng.below(FRAGMENTS.len())].bytes())
                .for_each(drop),
            1 => {
                let end = (at + rng.below(40)).min(bytes.len());
                bytes.drain(at..end);
            }
            2 if !bytes.is_empty() => {
                let i = rng.below(bytes.len());
                const PUNCTUATION: &[u8] = b"0123456789[]{}:,-'\"\n #()=*";
                bytes[i] = PUNCTUATION[rng.below(PUNCTUATION.len())];
            }
            _ => {
                let from = rng.below(bytes.len());
                let len = rng.below(60).min(bytes.len() - from);
                let copy = bytes[from..from + len].to_vec();
                bytes.splice(at..at, copy).for_each(drop);
            }
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

fn check(text: &str) {
    let mut scenario = match scenario::parse(text, "mutant.yaml") {
        Ok(s) => s,
        Err(e) => {
            assert!(e.location().is_some(), "unlocated error {e} for:\n{text}");
            return;
        }
    };
    if scenario.replay.is_some() {
        return;
    }
    scenario.limits = Limits {
        steps: Some(20_000),
        memory: Some(64 << 20),
        seconds: Some(5.0),
        records: None,
    };
    for variant in scenario.variants().iter().take(2) {
        match run_trial(&scenario, variant) {
            Ok(_) => {}
            Err(e @ Error::Input { .. }) => assert!(e.location().is_some()),
            Err(e) => panic!("{e} for:\n{text}"),
        }
    }
}

#[test]
fn mutated_scenario_files_never_panic_hang_or_blow_up() {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let mut seeds: Vec<String> = Vec::new();
    for dir in [folder.clone(), folder.join("pitfalls")] {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut paths: Vec<_> = entries.flatten().map(|e| e.path()).collect();
        paths.sort();
        for path in paths {
            if path.extension().is_some_and(|e| e == "yaml") {
                seeds.push(std::fs::read_to_string(&path).unwrap());
            }
        }
    }
    assert!(
        !seeds.is_empty(),
        "no shipped scenarios found in {}",
        folder.display()
    );
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for round in 0..600 {
        let seed = &seeds[round % seeds.len()];
        check(&mutate(seed, &mut rng));
    }
}
