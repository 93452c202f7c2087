//! A real GPU as a [`DeviceMemory`]: every segment the caching-allocator model obtains is a
//! `cuMemAlloc` of that size on the card, written once so that its pages are resident, and
//! every segment it returns is a `cuMemFree`. The driver's out-of-memory answer is the
//! model's "device refused", so the model's flush-and-retry path and its OOM event follow a
//! real refusal. At every iteration end the driver's free memory is sampled.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use cudarc::driver::{CudaContext, DriverError, result, sys};

use super::probe::{describe, unavailable};
use crate::allocator::DeviceMemory;
use crate::timeline::{DriverObservation, DriverSample};

/// What the driver showed during a run, shared between the device and whoever reads it
/// after the run (the device itself is owned by the allocator).
#[derive(Debug, Default)]
pub struct DriverLog {
    pub samples: Vec<DriverSample>,
    /// The first driver error that was not an out-of-memory answer: the run cannot be
    /// trusted after it.
    pub failure: Option<String>,
}

/// Device memory of one CUDA device, through the driver API.
pub struct CudaDriverMemory {
    ctx: Arc<CudaContext>,
    ordinal: u32,
    name: String,
    total: u64,
    used_before_run: u64,
    /// Live allocations (address → bytes), freed when the device is dropped so that a run
    /// that ends with segments reserved leaves nothing on the card.
    live: BTreeMap<u64, u64>,
    touch_pages: bool,
    log: Arc<Mutex<DriverLog>>,
}

impl CudaDriverMemory {
    /// Opens device `ordinal` (creates or retains its primary context). Fails with the
    /// reason when there is no usable driver or device; never panics.
    pub fn open(ordinal: u32) -> Result<CudaDriverMemory, String> {
        if let Some(reason) = unavailable(ordinal) {
            return Err(reason);
        }
        let ctx = CudaContext::new(ordinal as usize)
            .map_err(|e| format!("CUDA device {ordinal}: {}", describe(e)))?;
        let (free, total) = ctx
            .mem_get_info()
            .map_err(|e| format!("CUDA device {ordinal}: cuMemGetInfo: {}", describe(e)))?;
        let name = ctx.name().unwrap_or_else(describe);
        Ok(CudaDriverMemory {
            ctx,
            ordinal,
            name,
            total: total as u64,
            used_before_run: total.saturating_sub(free) as u64,
            live: BTreeMap::new(),
            touch_pages: true,
            log: Arc::default(),
        })
    }

    /// Whether each new allocation is written once (default: yes, so that its pages are
    /// resident as a framework's first use would make them).
    pub fn set_touch_pages(&mut self, touch: bool) {
        self.touch_pages = touch;
    }

    /// The driver's log of this device, to read after the device has been handed away.
    pub fn log(&self) -> Arc<Mutex<DriverLog>> {
        Arc::clone(&self.log)
    }

    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The run's driver observation as the timeline keeps it (samples taken from the log).
    pub fn observation(&self) -> DriverObservation {
        DriverObservation {
            ordinal: self.ordinal,
            device_name: self.name.clone(),
            total_bytes: self.total,
            used_before_run: self.used_before_run,
            samples: Vec::new(),
        }
    }

    /// Device memory in use according to the driver (total − free).
    pub fn driver_used(&self) -> Result<u64, String> {
        self.ctx
            .mem_get_info()
            .map(|(free, total)| total.saturating_sub(free) as u64)
            .map_err(|e| format!("cuMemGetInfo: {}", describe(e)))
    }

    fn fail(&self, call: &str, error: DriverError) {
        let mut log = self.log.lock().unwrap_or_else(PoisonError::into_inner);
        log.failure.get_or_insert_with(|| {
            format!("CUDA device {}: {call}: {}", self.ordinal, describe(error))
        });
    }

    fn fail_text(&self, text: String) {
        let mut log = self.log.lock().unwrap_or_else(PoisonError::into_inner);
        log.failure.get_or_insert(text);
    }
}

impl DeviceMemory for CudaDriverMemory {
    fn capacity(&self) -> u64 {
        self.total
    }

    /// The driver's free figure (other processes and the context included).
    fn free_bytes(&self) -> u64 {
        match self.ctx.mem_get_info() {
            Ok((free, _)) => free as u64,
            Err(error) => {
                self.fail("cuMemGetInfo", error);
                0
            }
        }
    }

    fn malloc(&mut self, size: u64) -> Option<u64> {
        if let Err(error) = self.ctx.bind_to_thread() {
            self.fail("cuCtxSetCurrent", error);
            return None;
        }
        let bytes = usize::try_from(size).ok()?;
        // SAFETY: a plain device allocation; the memory is only written through the driver.
        match unsafe { result::malloc_sync(bytes) } {
            Ok(address) => {
                if self.touch_pages {
                    // SAFETY: `address` is a live allocation of exactly `bytes` bytes.
                    if let Err(error) = unsafe { result::memset_d8_sync(address, 0, bytes) } {
                        self.fail("cuMemsetD8", error);
                        // SAFETY: allocated just above and not handed out.
                        let _ = unsafe { result::free_sync(address) };
                        return None;
                    }
                }
                self.live.insert(address, size);
                Some(address)
            }
            Err(DriverError(sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY)) => None,
            Err(error) => {
                self.fail("cuMemAlloc", error);
                None
            }
        }
    }

    fn free(&mut self, addr: u64, size: u64) {
        if self.live.get(&addr) != Some(&size) {
            self.fail_text(format!(
                "CUDA device {}: the model freed {addr:#x} ({size} bytes), which it never allocated",
                self.ordinal
            ));
            return;
        }
        self.live.remove(&addr);
        if let Err(error) = self.ctx.bind_to_thread() {
            self.fail("cuCtxSetCurrent", error);
            return;
        }
        // SAFETY: `addr` came from cuMemAlloc and is freed once (removed from `live`).
        if let Err(error) = unsafe { result::free_sync(addr) } {
            self.fail("cuMemFree", error);
        }
    }

    fn is_real(&self) -> bool {
        true
    }

    fn iteration_ended(&mut self, iteration: u32, model_reserved: u64) {
        match self.driver_used() {
            Ok(driver_used) => {
                let mut log = self.log.lock().unwrap_or_else(PoisonError::into_inner);
                log.samples.push(DriverSample {
                    iteration,
                    model_reserved,
                    driver_used,
                });
            }
            Err(text) => self.fail_text(format!("CUDA device {}: {text}", self.ordinal)),
        }
    }
}

impl Drop for CudaDriverMemory {
    fn drop(&mut self) {
        if self.ctx.bind_to_thread().is_err() {
            return;
        }
        for &address in self.live.keys() {
            // SAFETY: every address in `live` came from cuMemAlloc and was not freed yet.
            let _ = unsafe { result::free_sync(address) };
        }
    }
}
