//! Where a scenario run meets a real GPU (`device: cuda`, `run --device cuda`): whether this
//! machine can run such a variant, and the device the model then runs on. Built without the
//! `cuda` feature, every such variant is reported as needing it.

use crate::allocator::DeviceMemory;
use crate::error::Error;
use crate::scenario::Device;
use crate::timeline::Timeline;

/// Why `device` cannot be used on this machine (`None` for modelled devices, and for a real
/// device that is present). Decided without creating a CUDA context.
pub fn unavailable(device: &Device) -> Option<String> {
    let ordinal = device.cuda_ordinal()?;
    unavailable_ordinal(ordinal)
}

#[cfg(feature = "cuda")]
fn unavailable_ordinal(ordinal: u32) -> Option<String> {
    crate::cuda::unavailable(ordinal)
}

#[cfg(not(feature = "cuda"))]
fn unavailable_ordinal(_ordinal: u32) -> Option<String> {
    Some("needs a CUDA device: gpumem-harness was built without its `cuda` feature".to_string())
}

/// Held for the whole of a run on a real device: trials run on several threads, and two runs
/// sharing a card would see each other's memory (and run out of it at other iterations). Runs
/// in separate processes (nextest) are not serialised by this; see the README.
pub fn exclusive_use() -> std::sync::MutexGuard<'static, ()> {
    static REAL_DEVICE_IN_USE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    REAL_DEVICE_IN_USE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Called once the run is over (and the device released): adds the driver's observation to
/// the timeline, or fails with the driver error that made the run untrustworthy.
pub type FinishRun = Box<dyn FnOnce(&mut Timeline) -> Result<(), Error>>;

/// A real device opened for one run, and what reads its driver log afterwards.
pub struct OpenedDevice {
    pub memory: Box<dyn DeviceMemory>,
    pub finish: FinishRun,
}

/// Opens CUDA device `ordinal` for a run of `file` (the scenario, for messages).
#[cfg(feature = "cuda")]
pub fn open(ordinal: u32, file: &str) -> Result<OpenedDevice, Error> {
    use std::sync::PoisonError;
    let memory = crate::cuda::CudaDriverMemory::open(ordinal)
        .map_err(|reason| Error::Usage(format!("{file}: {reason}")))?;
    let log = memory.log();
    let mut observation = memory.observation();
    let file = file.to_string();
    let finish = move |timeline: &mut Timeline| {
        let mut log = log.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(failure) = log.failure.take() {
            return Err(Error::Usage(format!(
                "{file}: the run on the real device failed: {failure}"
            )));
        }
        observation.samples = std::mem::take(&mut log.samples);
        timeline.driver = Some(observation);
        timeline.approximations.push(
            "On a real device the model decides every segment and the driver provides it: the \
             model's reserved bytes are exact, while the driver's in-use figure also counts the \
             CUDA context and other processes (see the driver section of the report)."
                .to_string(),
        );
        Ok(())
    };
    Ok(OpenedDevice {
        memory: Box::new(memory),
        finish: Box::new(finish),
    })
}

#[cfg(not(feature = "cuda"))]
pub fn open(ordinal: u32, file: &str) -> Result<OpenedDevice, Error> {
    let reason = unavailable_ordinal(ordinal).unwrap_or_default();
    Err(Error::Usage(format!("{file}: {reason}")))
}
