//! What the machine offers: is a CUDA driver loadable, which version, which devices with how
//! much memory. Answers without panicking.
//!
//! cudarc resolves `libcuda` on the first driver call and panics when it cannot (inside a
//! `OnceLock`), and resolves each entry point on its first call, panicking when the symbol is
//! missing. So before cudarc is called at all, the library is opened here under the same
//! names, in the same order, and every entry point this crate calls is looked up: a machine
//! without a driver, or with a driver too old or incomplete, gets a reason instead of a panic.

use std::sync::OnceLock;

use cudarc::driver::{CudaContext, DriverError, result, sys};

/// Driver entry points this crate (and the cudarc calls it makes) use.
pub const REQUIRED_ENTRY_POINTS: &[&str] = &[
    "cuInit",
    "cuDriverGetVersion",
    "cuDeviceGetCount",
    "cuDeviceGet",
    "cuDeviceGetName",
    "cuDeviceTotalMem_v2",
    "cuDeviceGetAttribute",
    "cuDevicePrimaryCtxRetain",
    "cuDevicePrimaryCtxRelease_v2",
    "cuCtxGetCurrent",
    "cuCtxSetCurrent",
    "cuCtxSynchronize",
    "cuMemGetInfo_v2",
    "cuMemAlloc_v2",
    "cuMemFree_v2",
    "cuMemsetD8_v2",
    "cuGetErrorName",
    "cuGetErrorString",
];

/// The line printed when no driver library can be opened.
pub const NO_DRIVER: &str = "no CUDA driver found (libcuda.so.1 not loadable)";

/// One device as the driver describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceInfo {
    pub ordinal: u32,
    pub name: String,
    pub total_bytes: u64,
    /// Free memory right after this process's context was created on the device (so the
    /// context's own memory is already taken), or why it could not be read.
    pub free_bytes: Result<u64, String>,
}

/// The outcome of probing the driver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DriverProbe {
    /// No usable driver library: why (see [`NO_DRIVER`]).
    NoDriver(String),
    /// The driver loaded. `devices` is empty when it reports none; `init_error` says why
    /// `cuInit` or the device count failed (e.g. `CUDA_ERROR_NO_DEVICE`).
    Driver {
        /// As `cuDriverGetVersion` reports it: 12080 is CUDA 12.8.
        version: Option<i32>,
        devices: Vec<DeviceInfo>,
        init_error: Option<String>,
    },
}

/// Why device `ordinal` cannot be used on this machine, or `None` when it can. Decided from
/// the driver library and its device count only (no context is created), once per process.
pub fn unavailable(ordinal: u32) -> Option<String> {
    static COUNT: OnceLock<Result<u32, String>> = OnceLock::new();
    let count = COUNT.get_or_init(|| match driver_loadable() {
        Err(reason) if reason == NO_DRIVER => Err("no driver found".to_string()),
        Err(reason) => Err(reason),
        Ok(()) => CudaContext::device_count()
            .map(|n| n.max(0) as u32)
            .map_err(describe),
    });
    match count {
        Err(reason) => Some(format!("needs a CUDA device: {reason}")),
        Ok(0) => Some("needs a CUDA device: the driver reports no device".to_string()),
        Ok(n) if ordinal >= *n => Some(format!(
            "needs CUDA device {ordinal}: the driver reports {n} device{}",
            if *n == 1 { "" } else { "s" }
        )),
        Ok(_) => None,
    }
}

/// The driver's version as text: 12080 → "12.8".
pub fn version_text(version: i32) -> String {
    format!("{}.{}", version / 1000, (version % 1000) / 10)
}

/// A driver error as its name and the driver's text, e.g.
/// `CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)`.
pub fn describe(error: DriverError) -> String {
    let name = error
        .error_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|_| format!("CUDA error {}", error.0 as i32));
    match error.error_string() {
        Ok(text) => format!("{name} ({})", text.to_string_lossy()),
        Err(_) => name,
    }
}

/// Whether the driver library can be opened and has every entry point this crate calls;
/// decided once per process (the library a process loads does not change).
pub fn driver_loadable() -> Result<(), String> {
    static LOADABLE: OnceLock<Result<(), String>> = OnceLock::new();
    LOADABLE.get_or_init(check_library).clone()
}

fn check_library() -> Result<(), String> {
    // The names cudarc's loader tries, in its order; the first that opens is the one it uses.
    let names = cudarc::get_lib_name_candidates("cuda");
    // SAFETY: opening a shared library runs its initialisers; libcuda's are the driver's own,
    // which every CUDA program runs in the same way.
    let opened = names.iter().find_map(|name| {
        unsafe { libloading::Library::new(name) }
            .ok()
            .map(|l| (name, l))
    });
    let Some((name, library)) = opened else {
        return Err(NO_DRIVER.to_string());
    };
    let missing: Vec<&str> = REQUIRED_ENTRY_POINTS
        .iter()
        .copied()
        // SAFETY: the symbol is only looked up, never called, so its type does not matter.
        .filter(|symbol| unsafe { library.get::<*const ()>(symbol.as_bytes()) }.is_err())
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "the CUDA driver library {name} lacks {} (a driver for CUDA 11 or newer is needed)",
            missing.join(", ")
        ))
    }
}

/// Probes the driver and every device; never panics.
pub fn probe() -> DriverProbe {
    if let Err(reason) = driver_loadable() {
        return DriverProbe::NoDriver(reason);
    }
    let mut version = 0;
    // SAFETY: the library and the symbol were checked above; the pointer is valid.
    let version = unsafe { sys::cuDriverGetVersion(&mut version) }
        .result()
        .ok()
        .map(|()| version);
    let count = match CudaContext::device_count() {
        Ok(count) => count,
        Err(error) => {
            return DriverProbe::Driver {
                version,
                devices: Vec::new(),
                init_error: Some(describe(error)),
            };
        }
    };
    let devices = (0..count.max(0) as u32).map(device_info).collect();
    DriverProbe::Driver {
        version,
        devices,
        init_error: None,
    }
}

/// Name, total and free memory of one device. Reading the free memory needs a context, so
/// this creates (retains) the device's primary context.
fn device_info(ordinal: u32) -> DeviceInfo {
    let device = result::device::get(ordinal as i32);
    let name = device
        .and_then(result::device::get_name)
        .unwrap_or_else(|e| format!("(name unavailable: {})", describe(e)));
    // SAFETY: `device` came from cuDeviceGet.
    let total_bytes = device
        .and_then(|d| unsafe { result::device::total_mem(d) })
        .map(|b| b as u64)
        .unwrap_or(0);
    let free_bytes = CudaContext::new(ordinal as usize)
        .and_then(|ctx| ctx.mem_get_info())
        .map(|(free, _)| free as u64)
        .map_err(describe);
    DeviceInfo {
        ordinal,
        name,
        total_bytes,
        free_bytes,
    }
}
