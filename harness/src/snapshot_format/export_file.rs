//! Where `run --export-snapshot` writes, and how: variant names come from scenario files
//! (untrusted), so they become safe file-name components, and an existing file is replaced
//! only when it is a regular file holding a pickle (what an earlier export wrote), never a
//! link, a folder or a device.

use crate::error::Error;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Longest variant part of an export's file name, in bytes; longer names are shortened and
/// end with a hash of the full name so that distinct variants keep distinct files.
const MAX_COMPONENT_BYTES: usize = 120;

/// `out.pickle` with variant `size=1024` → `out.size=1024.pickle` (`out` → `out.size=1024`),
/// always in `file`'s folder.
pub fn variant_export_path(file: &Path, variant: &str) -> PathBuf {
    let stem = file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let variant = safe_component(variant);
    let name = match file.extension() {
        Some(ext) => format!("{stem}.{variant}.{}", ext.to_string_lossy()),
        None => format!("{stem}.{variant}"),
    };
    file.with_file_name(name)
}

/// `name` as one file-name component: no separators, NUL, control characters or leading
/// dots; at most [`MAX_COMPONENT_BYTES`] bytes (a stable hash replaces the tail).
pub fn safe_component(name: &str) -> String {
    let mut safe: String = name
        .chars()
        .map(|c| {
            if c == '/' || c == '\\' || c.is_control() {
                '_'
            } else {
                c
            }
        })
        .collect();
    if safe.starts_with('.') {
        safe.replace_range(..1, "_");
    }
    if safe.is_empty() {
        safe.push('_');
    }
    if safe.len() > MAX_COMPONENT_BYTES {
        let mut cut = MAX_COMPONENT_BYTES - 17;
        while !safe.is_char_boundary(cut) {
            cut -= 1;
        }
        safe.truncate(cut);
        safe.push_str(&format!("-{:016x}", fnv1a(name.as_bytes())));
    }
    safe
}

/// FNV-1a, 64 bits: stable across Rust versions and platforms (unlike `DefaultHasher`).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// Writes an exported snapshot to `path`, creating its folder; an existing `path` must be a
/// regular file that starts like a pickle (protocol 2 or later), else nothing is written.
pub fn write_export(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() || !meta.is_file() => {
            return Err(Error::Usage(format!(
                "{}: exists and is not a regular file; not replaced (remove it or choose another name)",
                path.display()
            )));
        }
        Ok(_) => {
            let mut head = [0u8; 1];
            let read = std::fs::File::open(path)
                .and_then(|mut f| f.read(&mut head))
                .map_err(|e| Error::io(path, e))?;
            if read > 0 && head[0] != 0x80 {
                return Err(Error::Usage(format!(
                    "{}: exists and is not a snapshot pickle; not replaced (remove it or choose another name)",
                    path.display()
                )));
            }
        }
        Err(_) => {}
    }
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
    }
    std::fs::write(path, bytes).map_err(|e| Error::io(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variant_names_stay_one_component_in_the_requested_folder() {
        let out = Path::new("out/run.pickle");
        assert_eq!(
            variant_export_path(out, "size=1024"),
            PathBuf::from("out/run.size=1024.pickle")
        );
        for hostile in ["a=../../etc/x", "a=/abs", "..", "a=b\0c", "a=\u{1b}[2J", ""] {
            let path = variant_export_path(out, hostile);
            assert_eq!(path.parent(), Some(Path::new("out")), "{hostile:?}");
            let name = path.file_name().unwrap().to_str().unwrap();
            assert!(!name.contains(['/', '\\', '\0', '\u{1b}']), "{name:?}");
            assert!(!name.starts_with('.'), "{name:?}");
        }
        assert_eq!(safe_component(".."), "_.");
    }

    #[test]
    fn long_names_are_shortened_with_a_stable_hash() {
        let a = format!("x={}", "a".repeat(400));
        let b = format!("x={}b", "a".repeat(399));
        let (sa, sb) = (safe_component(&a), safe_component(&b));
        assert!(sa.len() <= MAX_COMPONENT_BYTES, "{}", sa.len());
        assert_ne!(sa, sb);
        assert_eq!(sa, safe_component(&a), "stable");
        // The hash is FNV-1a of the full name: fixed for a given input on every platform.
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        let multibyte = "é".repeat(200);
        assert!(safe_component(&multibyte).len() <= MAX_COMPONENT_BYTES);
    }

    #[cfg(unix)]
    #[test]
    fn only_regular_pickle_files_are_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("victim.txt");
        std::fs::write(&target, "keep me").unwrap();
        let link = dir.path().join("out.pickle");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(write_export(&link, b"\x80\x04.").is_err());
        assert!(write_export(&target, b"\x80\x04.").is_err(), "not a pickle");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me");
        assert!(write_export(dir.path(), b"\x80\x04.").is_err(), "a folder");
        let fresh = dir.path().join("sub/new.pickle");
        write_export(&fresh, b"\x80\x04.").unwrap();
        write_export(&fresh, b"\x80\x04N.").unwrap();
        assert_eq!(std::fs::read(&fresh).unwrap(), b"\x80\x04N.");
    }
}
