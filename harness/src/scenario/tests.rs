//! Tests of the scenario reader as a whole: files in, `Scenario` or located errors out.
