//! A run that stopped with an error, with what the workload showed before it: users debug
//! leaks with `print`, and a workload that raises after printing should not lose the lines
//! that say how far it got. `cargo gpumem run` shows them before the error.

use crate::error::Error;
use crate::python::Printed;

/// Why a variant's run stopped, and what the workload printed before.
#[derive(Debug)]
pub struct Failure {
    pub error: Error,
    /// The workload's `print` output up to the error (empty when it never ran).
    pub printed: Printed,
    /// The Python traceback of an uncaught exception, located in the scenario file
    /// (`Traceback (most recent call last):` then one `File "...", line N, in NAME` line per
    /// frame, outermost first); empty for model errors (an unsupported construct, a budget).
    pub traceback: Vec<String>,
}

/// Boxed where it is returned, so that `Result`s carrying it stay small.
impl From<Error> for Box<Failure> {
    fn from(error: Error) -> Self {
        Box::new(Failure {
            error,
            printed: Printed::default(),
            traceback: Vec::new(),
        })
    }
}
