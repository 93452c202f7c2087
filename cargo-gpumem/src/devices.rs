//! `cargo gpumem devices`: the CUDA driver and devices of this machine, as `--device cuda`
//! would find them. Never fails: a machine without a driver gets a line saying so.

#[cfg(feature = "cuda")]
pub fn devices() -> Result<i32, gpumem_harness::error::Error> {
    use gpumem_harness::cuda::{DriverProbe, probe};
    use gpumem_harness::units::Bytes;
    match probe::probe() {
        DriverProbe::NoDriver(reason) => println!("{reason}"),
        DriverProbe::Driver {
            version,
            devices,
            init_error,
        } => {
            match version {
                Some(v) => println!("CUDA driver {} ({v})", probe::version_text(v)),
                None => println!("CUDA driver (version unavailable)"),
            }
            if let Some(error) = init_error {
                println!("no usable device: {error}");
            } else if devices.is_empty() {
                println!("no CUDA device");
            }
            for device in devices {
                let free = match device.free_bytes {
                    Ok(free) => format!("{} free", Bytes(free)),
                    Err(error) => format!("free memory unavailable: {error}"),
                };
                println!(
                    "cuda:{}  {}  {} total, {free}",
                    device.ordinal,
                    device.name,
                    Bytes(device.total_bytes)
                );
            }
        }
    }
    Ok(gpumem_harness::exit_code::SUCCESS)
}

#[cfg(not(feature = "cuda"))]
pub fn devices() -> Result<i32, gpumem_harness::error::Error> {
    println!("cargo-gpumem was built without its `cuda` feature: no CUDA support");
    Ok(gpumem_harness::exit_code::SUCCESS)
}
