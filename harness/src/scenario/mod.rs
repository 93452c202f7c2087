//! Scenario files: schema, `vary` expansion, validation with located errors.

mod model;

pub use model::*;
