//! Runs every variant of a scenario file and prints its JSON report (a development aid;
//! `cargo gpumem run` is the user-facing command).
fn main() {
    let path = std::env::args().nth(1).expect("usage: run_scenario FILE");
    let scenario = match gpumem_harness::scenario::load(std::path::Path::new(&path), &path) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    for variant in scenario.variants() {
        match gpumem_harness::run::run_variant(&scenario, &variant) {
            Ok(t) => {
                let checks = scenario.expectations_for(&variant);
                let verdicts = gpumem_harness::check::evaluate(&checks, &t);
                println!(
                    "{}",
                    gpumem_harness::report::human_report(&scenario, &variant, &t, &verdicts)
                );
            }
            Err(e) => eprintln!("{e}"),
        }
    }
}
