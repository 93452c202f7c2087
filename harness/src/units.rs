//! Byte quantities as users write them ("52 GiB", "512 MiB", "80GB", "1024") and as
//! PyTorch prints them (`format_size`).

use std::fmt;

pub const KIB: u64 = 1 << 10;
pub const MIB: u64 = 1 << 20;
pub const GIB: u64 = 1 << 30;

/// Parses a byte quantity. Binary units (KiB, MiB, GiB, TiB) are powers of 1024, decimal
/// units (kB, MB, GB, TB) powers of 1000, `B` is bytes. The unit is required: a bare "256"
/// reads as bytes to some and as MiB to others, so it is refused with a suggestion.
/// Fractions are allowed ("1.5 GiB") and rounded down to a whole byte.
pub fn parse_bytes(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let num: String = num.chars().filter(|&c| c != '_').collect();
    if num.is_empty() {
        if t.starts_with('-') {
            return Err(format!(
                "a byte quantity cannot be negative, found {t:?}; bounds compare sizes, so \
                 write a size of 0 B or more"
            ));
        }
        return Err(format!(
            "expected a byte quantity such as \"52 GiB\", found {t:?}"
        ));
    }
    let value: f64 = num
        .parse()
        .map_err(|_| format!("expected a number before the unit, found {num:?}"))?;
    let scale: u64 = match unit.trim() {
        "" => return Err(missing_unit(&num)),
        "B" | "bytes" => 1,
        "KiB" => KIB,
        "MiB" => MIB,
        "GiB" => GIB,
        "TiB" => 1 << 40,
        "kB" | "KB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        "TB" => 1_000_000_000_000,
        other => {
            return Err(format!(
                "unknown unit {other:?}: expected B, KiB, MiB, GiB, TiB, kB, MB, GB or TB"
            ));
        }
    };
    let bytes = value * scale as f64;
    if !bytes.is_finite() || bytes < 0.0 || bytes > u64::MAX as f64 {
        return Err(format!("byte quantity {text:?} is out of range"));
    }
    Ok(bytes as u64)
}

/// The message for a number written without a unit.
pub fn missing_unit(number: &str) -> String {
    format!(
        "{number:?} has no unit: write \"{number} B\" for bytes (or KiB, MiB, GiB, TiB, kB, MB, \
         GB, TB)"
    )
}

/// Formats bytes exactly like PyTorch's `format_size` (used in its OOM message):
/// up to 1024 as "N bytes", then KiB / MiB / GiB with two decimals.
pub fn torch_format_size(bytes: u64) -> String {
    if bytes <= 1024 {
        format!("{bytes} bytes")
    } else if bytes <= MIB {
        format!("{:.2} KiB", bytes as f64 / KIB as f64)
    } else if bytes <= GIB {
        format!("{:.2} MiB", bytes as f64 / MIB as f64)
    } else {
        format!("{:.2} GiB", bytes as f64 / GIB as f64)
    }
}

/// A byte count shown to humans in reports: exact when it is a whole number of a binary unit,
/// otherwise two decimals in the largest unit that keeps the value at least 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Bytes(pub u64);

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        let units = [
            (1u64 << 40, "TiB"),
            (GIB, "GiB"),
            (MIB, "MiB"),
            (KIB, "KiB"),
        ];
        for (scale, name) in units {
            if b >= scale {
                return if b.is_multiple_of(scale) {
                    write!(f, "{} {name}", b / scale)
                } else {
                    write!(f, "{:.2} {name}", b as f64 / scale as f64)
                };
            }
        }
        write!(f, "{b} B")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_binary_and_decimal_units() {
        assert_eq!(parse_bytes("52 GiB").unwrap(), 52 * GIB);
        assert_eq!(parse_bytes("80GB").unwrap(), 80_000_000_000);
        assert_eq!(parse_bytes("1.5 MiB").unwrap(), 3 * MIB / 2);
        assert_eq!(parse_bytes("4096 B").unwrap(), 4096);
        let negative = parse_bytes(" -1 KiB").unwrap_err();
        assert!(
            negative.starts_with("a byte quantity cannot be negative, found \"-1 KiB\""),
            "{negative}"
        );
        let bare = parse_bytes("4096").unwrap_err();
        assert!(bare.contains("has no unit: write \"4096 B\""), "{bare}");
        assert_eq!(parse_bytes("1_024 KiB").unwrap(), MIB);
        assert!(
            parse_bytes("12 parsecs")
                .unwrap_err()
                .contains("unknown unit")
        );
        assert!(parse_bytes("GiB").is_err());
    }

    #[test]
    fn formats_like_torch() {
        assert_eq!(torch_format_size(512), "512 bytes");
        assert_eq!(torch_format_size(1536), "1.50 KiB");
        assert_eq!(torch_format_size(20 * MIB), "20.00 MiB");
        assert_eq!(torch_format_size(80 * GIB), "80.00 GiB");
    }

    #[test]
    fn displays_exact_units_when_whole() {
        assert_eq!(Bytes(256 * MIB).to_string(), "256 MiB");
        assert_eq!(Bytes(3 * GIB / 2).to_string(), "1.50 GiB");
        assert_eq!(Bytes(100).to_string(), "100 B");
    }
}
