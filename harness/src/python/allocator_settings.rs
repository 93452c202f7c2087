//! `torch.cuda.memory._set_allocator_settings("max_split_size_mb:128,...")`: the
//! `PYTORCH_CUDA_ALLOC_CONF` options the allocator model implements, with PyTorch's checks
//! (`CUDAAllocatorConfig::parseArgs`) and its messages for bad values.

use super::interp::{Interpreter, R};
use crate::allocator::AllocatorConfig;

const MIB: u64 = 1024 * 1024;

/// Applies a settings string to `config`, or says what PyTorch would refuse.
fn apply(config: &mut AllocatorConfig, text: &str) -> Result<(), String> {
    for option in text.split(',').map(str::trim).filter(|o| !o.is_empty()) {
        let Some((key, value)) = option.split_once(':') else {
            return Err(format!(
                "RuntimeError: Error parsing backend configuration: expected `key:value`, found '{option}'"
            ));
        };
        let (key, value) = (key.trim(), value.trim());
        match key {
            "max_split_size_mb" => {
                let mb: u64 = value.parse().map_err(|_| {
                    format!("RuntimeError: max_split_size_mb expects an integer, found '{value}'")
                })?;
                if mb <= 20 {
                    return Err(
                        "RuntimeError: CachingAllocator option max_split_size_mb too small, must be > 20"
                            .into(),
                    );
                }
                config.max_split_size = mb.saturating_mul(MIB);
            }
            "garbage_collection_threshold" => {
                let t: f64 = value.parse().map_err(|_| {
                    format!(
                        "RuntimeError: garbage_collection_threshold expects a number, found '{value}'"
                    )
                })?;
                if t <= 0.0 {
                    return Err(
                        "RuntimeError: garbage_collect_threshold too small, set it 0.0~1.0".into(),
                    );
                }
                if t >= 1.0 {
                    return Err(
                        "RuntimeError: garbage_collect_threshold too big, set it 0.0~1.0".into(),
                    );
                }
                config.garbage_collection_threshold = t;
            }
            "roundup_power2_divisions" => {
                let d: u64 = value.parse().map_err(|_| {
                    format!(
                        "RuntimeError: roundup_power2_divisions expects an integer (the per-interval list form is not supported by the workload model), found '{value}'"
                    )
                })?;
                if d != 0 && !d.is_power_of_two() {
                    return Err(
                        "RuntimeError: For roundups, the divisons has to be power of 2 ".into(),
                    );
                }
                config.roundup_power2_divisions.fill(d);
            }
            "expandable_segments" => match value {
                "False" | "false" => {}
                "True" | "true" => {
                    return Err("unsupported:expandable_segments".into());
                }
                _ => {
                    return Err(format!(
                        "RuntimeError: Expected a single True/False argument for expandable_segments, found '{value}'"
                    ));
                }
            },
            other => {
                return Err(format!(
                    "RuntimeError: Unrecognized CachingAllocator option: {other}"
                ));
            }
        }
    }
    Ok(())
}

/// Checks one `key:value` setting of a scenario file's `allocator:` as PyTorch checks it.
/// `Err` holds PyTorch's message, or `unsupported:...` for `expandable_segments:True`.
pub(crate) fn check_setting(text: &str) -> Result<(), String> {
    apply(&mut AllocatorConfig::default(), text)
}

impl Interpreter<'_> {
    /// The scenario's `allocator:` settings, before the workload's first statement (they
    /// were checked when the file was read, so they apply).
    pub fn configure_allocator(&mut self, text: &str) -> Result<(), String> {
        apply(self.allocator.config_mut(), text)
    }

    /// `torch.cuda.memory._set_allocator_settings(text)`.
    pub(super) fn set_allocator_settings(&mut self, text: &str) -> R<()> {
        let mut config = self.allocator.config().clone();
        match apply(&mut config, text) {
            Ok(()) => {
                *self.allocator.config_mut() = config;
                Ok(())
            }
            Err(e) if e.starts_with("unsupported:") => self.unsupported(
                "`expandable_segments:True` (segments that grow by mapping pages are not modelled; the default `False` is)",
            ),
            Err(e) => self.error(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_are_checked_like_pytorch() {
        let mut c = AllocatorConfig::default();
        apply(
            &mut c,
            "max_split_size_mb:128, garbage_collection_threshold:0.8",
        )
        .unwrap();
        assert_eq!(c.max_split_size, 128 * MIB);
        assert_eq!(c.garbage_collection_threshold, 0.8);
        apply(
            &mut c,
            "roundup_power2_divisions:4,expandable_segments:False",
        )
        .unwrap();
        assert_eq!(c.roundup_power2_divisions[3], 4);
        assert!(
            apply(&mut c, "max_split_size_mb:20")
                .unwrap_err()
                .contains("must be > 20")
        );
        assert!(
            apply(&mut c, "garbage_collection_threshold:1.5")
                .unwrap_err()
                .contains("too big")
        );
        assert!(
            apply(&mut c, "roundup_power2_divisions:3")
                .unwrap_err()
                .contains("power of 2")
        );
        assert!(
            apply(&mut c, "bogus:1")
                .unwrap_err()
                .contains("Unrecognized CachingAllocator option: bogus")
        );
        assert!(
            apply(&mut c, "expandable_segments:True")
                .unwrap_err()
                .starts_with("unsupported:")
        );
    }
}
