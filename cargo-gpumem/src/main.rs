//! `cargo gpumem`: GPU memory regression tests for PyTorch workloads. All logic lives in the
//! `gpumem-harness` library; this binary only parses the command line.

mod accept;
mod check;
mod cli;
mod devices;
mod diff;
mod pager;
mod printed;
mod reject;
mod review;
mod run;
mod test;

fn main() -> std::process::ExitCode {
    cli::main()
}
