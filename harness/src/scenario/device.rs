//! `device:` — a named preset or an explicit capacity.
//!
//! A preset's capacity is the total memory PyTorch reports for that card
//! (`torch.cuda.get_device_properties(0).total_memory`, the figure its OOM message prints as
//! "GPU 0 has a total capacity of X GiB"). It is *not* the total nvidia-smi shows: the driver
//! keeps a few hundred MiB for itself (nvidia-smi shows 40960 / 81920 / 81559 / 143771 MiB for
//! the four cards below, per Modal's public table of NVML totals), and the exact figure moves
//! by a few MiB between driver versions. PyTorch prints `total_memory` rounded down to whole
//! MiB, so every value below is a whole number of MiB and is exact only to that rounding.

use super::model::Device;
use super::parse::Context;
use super::yaml_tree::{Node, Value};
use crate::error::Error;
use crate::units::{MIB, parse_bytes};

/// A device preset: its name in scenario files and its capacity in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DevicePreset {
    pub name: &'static str,
    pub capacity: u64,
}

/// The presets, in the order messages list them.
pub const PRESETS: &[DevicePreset] = &[
    // A100-SXM4-40GB: `get_device_properties` prints total_memory=40536MB (several public
    // printouts agree); OOM messages on this card say "39.59 GiB total capacity", which
    // 40536 MiB reproduces.
    DevicePreset {
        name: "a100-40gb",
        capacity: 40_536 * MIB,
    },
    // A100-SXM4-80GB: OOM messages say "79.35 GiB total capacity" (the PCIe card says 79.15).
    // No exact MiB printout was found; 81251 MiB is a value inside the range that prints 79.35
    // GiB (81249..=81259 MiB), so this one is rounded to the two decimals of those messages.
    DevicePreset {
        name: "a100-80gb",
        capacity: 81_251 * MIB,
    },
    // H100 80GB HBM3 (SXM): a printout with torch 2.0.1 shows total_memory=81082MB, which prints
    // as "79.18 GiB", the figure most H100 OOM messages show. Other drivers give 81089/81090 MiB
    // (79.19 GiB) and some messages show 79.10 GiB.
    DevicePreset {
        name: "h100-80gb",
        capacity: 81_082 * MIB,
    },
    // H200 (SXM, 141 GB): a printout shows total_memory=143156MB, i.e. "139.80 GiB", which
    // matches OOM messages from H200 machines (139.80, sometimes 139.81 GiB).
    DevicePreset {
        name: "h200-141gb",
        capacity: 143_156 * MIB,
    },
];

/// The preset names, for messages.
pub fn preset_names() -> Vec<&'static str> {
    PRESETS.iter().map(|p| p.name).collect()
}

/// The preset called `name`, if there is one.
pub fn preset(name: &str) -> Option<Device> {
    PRESETS.iter().find(|p| p.name == name).map(|p| Device {
        preset: Some(p.name.to_string()),
        capacity: p.capacity,
        context: 0,
    })
}

/// What a real device is called in scenario files: `cuda` (ordinal 0) or `cuda:N`.
const REAL_DEVICE: &str = "cuda";

/// `cuda` → 0, `cuda:N` → N; `None` for anything else.
fn cuda_ordinal_of(name: &str) -> Option<u32> {
    match name.strip_prefix(REAL_DEVICE)? {
        "" => Some(0),
        rest => {
            let digits = rest.strip_prefix(':')?;
            // Digits only: no sign, no spaces (u32's parser would take "+1").
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            digits.parse().ok()
        }
    }
}

impl Device {
    /// A real GPU, `cuda:N`: the workload runs on the model and every segment the model
    /// reserves is allocated on that card. Its capacity is the card's, read from the driver
    /// when the run starts (0 here).
    pub fn cuda(ordinal: u32) -> Device {
        Device {
            preset: Some(if ordinal == 0 {
                REAL_DEVICE.to_string()
            } else {
                format!("{REAL_DEVICE}:{ordinal}")
            }),
            capacity: 0,
            context: 0,
        }
    }

    /// The ordinal of a real GPU (`device: cuda` or `cuda:N`); `None` for a modelled device.
    pub fn cuda_ordinal(&self) -> Option<u32> {
        self.preset.as_deref().and_then(cuda_ordinal_of)
    }
}

/// A preset name, `cuda` / `cuda:N`, or a byte quantity above zero; `None` for anything else.
pub fn device_from_str(text: &str) -> Option<Device> {
    if let Some(ordinal) = cuda_ordinal_of(text) {
        return Some(Device::cuda(ordinal));
    }
    preset(text).or_else(|| {
        parse_bytes(text)
            .ok()
            .filter(|&capacity| capacity > 0)
            .map(|capacity| Device {
                preset: None,
                capacity,
                context: 0,
            })
    })
}

/// `device: h100-80gb` or `device: { capacity: "80 GiB" }`. A string that is no preset but a
/// byte quantity is also taken as a capacity, so that `vary: { device: [a100-40gb, 24 GiB] }`
/// works.
pub(crate) fn parse_device(cx: &Context<'_>, node: &Node) -> Result<Device, Error> {
    match &node.value {
        Value::Str(name) => match device_from_str(name) {
            Some(device) => Ok(device),
            None if name.starts_with(REAL_DEVICE) => Err(cx.error(
                node.at,
                format!(
                    "unknown device {name:?}: a real GPU is `cuda` or `cuda:N`, N being the \
                     device's ordinal (0, 1, ...)"
                ),
            )),
            None => Err(cx.error(
                node.at,
                format!(
                    "unknown device {name:?}: expected a preset ({}), `cuda` / `cuda:N` for a \
                     real GPU, or `{{ capacity: \"80 GiB\" }}`",
                    preset_names().join(", ")
                ),
            )),
        },
        Value::Map(entries) => {
            let keys = cx.keys(entries, &["capacity", "preset", "context"], "`device`")?;
            let mut device = match (keys.get("preset"), keys.get("capacity")) {
                (Some(p), Some(_)) => {
                    return Err(cx.error(
                        p.at,
                        "`device` takes either `preset` or `capacity`, not both",
                    ));
                }
                (Some(preset_node), None) => parse_device(cx, preset_node)?,
                (None, Some(capacity_node)) => Device {
                    preset: None,
                    capacity: parse_capacity(cx, capacity_node)?,
                    context: 0,
                },
                (None, None) => {
                    return Err(cx.error(
                        node.at,
                        "missing `capacity` in `device`, e.g. `{ capacity: \"80 GiB\" }` (or \
                         `{ preset: h100-80gb, context: \"500 MiB\" }`)",
                    ));
                }
            };
            if let Some(context_node) = keys.get("context") {
                device.context = parse_context(cx, context_node, &device)?;
            }
            Ok(device)
        }
        other => Err(cx.expected(
            node,
            "device",
            &format!(
                "a preset name ({}) or `{{ capacity: \"80 GiB\" }}`",
                preset_names().join(", ")
            ),
            other,
        )),
    }
}

/// `device.capacity`: a byte quantity above zero.
fn parse_capacity(cx: &Context<'_>, capacity_node: &Node) -> Result<u64, Error> {
    let capacity = match &capacity_node.value {
        Value::Int(n) => {
            return Err(cx.error(
                capacity_node.at,
                format!(
                    "`device.capacity`: {}",
                    crate::units::missing_unit(&n.to_string())
                ),
            ));
        }
        Value::Str(text) => parse_bytes(text).map_err(|message| {
            cx.error(capacity_node.at, format!("`device.capacity`: {message}"))
        })?,
        other => {
            return Err(cx.expected(
                capacity_node,
                "device.capacity",
                "a byte quantity such as \"80 GiB\"",
                other,
            ));
        }
    };
    if capacity == 0 {
        return Err(cx.error(capacity_node.at, "`device.capacity` must be above 0"));
    }
    Ok(capacity)
}

/// `device.context`: the CUDA context's bytes, taken from the device before the workload
/// (what `nvidia-smi` shows a process holding before its first allocation). It must leave
/// room below the capacity, and a real GPU (`cuda`) has its own.
fn parse_context(cx: &Context<'_>, context_node: &Node, device: &Device) -> Result<u64, Error> {
    if device.cuda_ordinal().is_some() {
        return Err(cx.error(
            context_node.at,
            "`device.context` applies to a modelled device; a real GPU's context is its own",
        ));
    }
    let context = match &context_node.value {
        Value::Int(n) => {
            return Err(cx.error(
                context_node.at,
                format!(
                    "`device.context`: {}",
                    crate::units::missing_unit(&n.to_string())
                ),
            ));
        }
        Value::Str(text) => parse_bytes(text)
            .map_err(|message| cx.error(context_node.at, format!("`device.context`: {message}")))?,
        other => {
            return Err(cx.expected(
                context_node,
                "device.context",
                "a byte quantity such as \"530 MiB\"",
                other,
            ));
        }
    };
    if context >= device.capacity {
        return Err(cx.error(
            context_node.at,
            format!(
                "`device.context` ({}) must be below the device's capacity ({})",
                crate::units::Bytes(context),
                crate::units::Bytes(device.capacity)
            ),
        ));
    }
    Ok(context)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::torch_format_size;

    #[test]
    fn cuda_names_a_real_device_by_ordinal() {
        let ordinal = |text: &str| device_from_str(text).and_then(|d| d.cuda_ordinal());
        assert_eq!(ordinal("cuda"), Some(0));
        assert_eq!(ordinal("cuda:0"), Some(0));
        assert_eq!(ordinal("cuda:3"), Some(3));
        for bad in [
            "cuda:",
            "cuda:+1",
            "cuda: 1",
            "cuda:x",
            "cudax",
            "cuda:99999999999",
        ] {
            assert_eq!(device_from_str(bad), None, "{bad}");
        }
        assert_eq!(device_from_str("h100-80gb").unwrap().cuda_ordinal(), None);
        assert_eq!(Device::cuda(2).preset.as_deref(), Some("cuda:2"));
    }

    fn scenario_with(device_lines: &str) -> Result<crate::scenario::Scenario, Error> {
        let text = format!("name: t\npython: \"3.11\"\n{device_lines}workload: |\n  x = 1\n");
        crate::scenario::parse(&text, "s.yaml")
    }

    #[test]
    fn scenario_files_name_real_devices_like_any_device() {
        let scenario = scenario_with("device: cuda:1\n").unwrap();
        assert_eq!(scenario.device.cuda_ordinal(), Some(1));
        let varied =
            scenario_with("device: h100-80gb\nvary:\n  device: [h100-80gb, cuda]\n").unwrap();
        let ordinals: Vec<_> = varied
            .variants()
            .iter()
            .map(|v| v.device.cuda_ordinal())
            .collect();
        assert_eq!(ordinals, vec![None, Some(0)]);
        let error = scenario_with("device: cuda:one\n").unwrap_err().to_string();
        assert!(
            error.starts_with("s.yaml:3:9:") && error.contains("`cuda` or `cuda:N`"),
            "{error}"
        );
    }

    /// The capacities print as the "total capacity" figures seen in real OOM messages.
    #[test]
    fn presets_print_like_the_oom_messages_of_those_cards() {
        let printed: Vec<(&str, String)> = PRESETS
            .iter()
            .map(|p| (p.name, torch_format_size(p.capacity)))
            .collect();
        assert_eq!(
            printed,
            vec![
                ("a100-40gb", "39.59 GiB".to_string()),
                ("a100-80gb", "79.35 GiB".to_string()),
                ("h100-80gb", "79.18 GiB".to_string()),
                ("h200-141gb", "139.80 GiB".to_string()),
            ]
        );
    }
}
