//! A test double of the CUDA driver for cargo-gpumem's tests (not published).
//!
//! The build script compiles `c/fake_cuda.c` into `libcuda.so.1`: the driver entry points the
//! backend and cudarc call, backed by host memory with a capacity set by environment variables
//! (see the C file). A process finds it through `LD_LIBRARY_PATH`, which the dynamic loader
//! reads only when the process starts: tests run a child process (the real CLI, or the test
//! binary itself) with [`library_dir`] on that path.

use std::path::Path;

/// The folder that holds `libcuda.so.1`.
pub fn library_dir() -> &'static Path {
    Path::new(env!("FAKE_CUDA_DRIVER_DIR"))
}

/// Environment variables that configure the fake driver.
pub mod env {
    /// Number of devices; 0 makes `cuInit` fail with `CUDA_ERROR_NO_DEVICE`.
    pub const DEVICES: &str = "GPUMEM_FAKE_CUDA_DEVICES";
    /// Bytes per device.
    pub const CAPACITY: &str = "GPUMEM_FAKE_CUDA_CAPACITY";
    /// Bytes a primary context takes from its device.
    pub const CONTEXT_BYTES: &str = "GPUMEM_FAKE_CUDA_CONTEXT_BYTES";
    /// A file that receives one line per allocation, free, memset and refusal.
    pub const LOG: &str = "GPUMEM_FAKE_CUDA_LOG";
    /// `host` (default): allocations are host memory; `none`: accounting only.
    pub const BACKING: &str = "GPUMEM_FAKE_CUDA_BACKING";
}

/// `LD_LIBRARY_PATH` with the fake driver's folder first.
pub fn ld_library_path() -> std::ffi::OsString {
    let mut paths = vec![library_dir().to_path_buf()];
    if let Some(existing) = std::env::var_os("LD_LIBRARY_PATH") {
        paths.extend(std::env::split_paths(&existing));
    }
    std::env::join_paths(paths).unwrap_or_else(|_| library_dir().as_os_str().to_owned())
}
