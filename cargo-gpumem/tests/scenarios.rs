//! The project's shipped scenarios, run by `cargo test` and `cargo nextest run` through the
//! same entry point users put in their own `harness = false` targets.

fn main() -> std::process::ExitCode {
    gpumem_harness::main()
}
