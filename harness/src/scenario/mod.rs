//! Scenario files: schema, `vary` expansion, validation with located errors.
//!
//! [`load`] and [`parse`] read a file into a [`Scenario`]; [`Scenario::variants`] expands `vary`
//! and [`Scenario::expectations_for`] gives the checks of one variant. Every problem is an
//! [`crate::error::Error::Input`] located at the offending node.

mod allocator;
mod device;
mod expect;
mod limits;
mod model;
mod parse;
mod python_profile;
mod replay;
mod vary;
mod workload;
mod yaml_tree;

pub use allocator::ALLOCATOR_KEYS;
pub use device::{DevicePreset, PRESETS, device_from_str, preset};
pub use expect::{BLOCK_KEYS, parse_bound};
pub use limits::{LIMIT_KEYS, Limits};
pub use model::*;
pub use parse::{TOP_LEVEL_KEYS, load, parse};
pub use python_profile::{
    SUPPORTED_MINORS, VERSION_MATRIX, supported_versions_text, version_from_str,
};
pub use vary::MAX_VARIANTS;

#[cfg(test)]
mod tests;
