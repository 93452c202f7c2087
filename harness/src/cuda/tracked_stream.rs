//! Pass-through tracking of a cudarc program's own allocations: [`TrackedStream`] allocates
//! with cudarc exactly as the program would, and records each allocation (with the caller's
//! location and a label) and its free into a [`Tracker`].

use std::ops::{Deref, DerefMut};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use cudarc::driver::{
    CudaSlice, CudaStream, DeviceRepr, DriverError, HostSlice, ValidAsZeroBits, sys,
};

use super::probe::describe;
use crate::tracked::{Site, Tracker};

/// Addresses given to tracked allocations: distinct for every allocation of the process, so
/// that alloc and free events pair up. They are not the device pointers (reading those from
/// cudarc records a stream event), and reports never print addresses.
static NEXT_ADDRESS: AtomicU64 = AtomicU64::new(1 << 40);
/// The spacing of those addresses (torch's block granularity).
const ADDRESS_STEP: u64 = 512;

/// A cudarc stream whose allocations are recorded by a [`Tracker`].
#[derive(Clone)]
pub struct TrackedStream {
    stream: Arc<CudaStream>,
    tracker: Tracker,
}

impl TrackedStream {
    pub fn new(stream: Arc<CudaStream>, tracker: &Tracker) -> TrackedStream {
        TrackedStream {
            stream,
            tracker: tracker.clone(),
        }
    }

    /// The cudarc stream, for launches and copies.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    pub fn tracker(&self) -> &Tracker {
        &self.tracker
    }

    /// `CudaStream::alloc_zeros`, recorded at the caller's location.
    #[track_caller]
    pub fn alloc_zeros<T: DeviceRepr + ValidAsZeroBits>(
        &self,
        len: usize,
    ) -> Result<TrackedSlice<T>, DriverError> {
        let site = Site::caller(None);
        self.track(site, len, || self.stream.alloc_zeros(len))
    }

    /// [`TrackedStream::alloc_zeros`] with a label that reports print after the location.
    #[track_caller]
    pub fn alloc_zeros_labelled<T: DeviceRepr + ValidAsZeroBits>(
        &self,
        len: usize,
        label: &'static str,
    ) -> Result<TrackedSlice<T>, DriverError> {
        let site = Site::caller(Some(label));
        self.track(site, len, || self.stream.alloc_zeros(len))
    }

    /// `CudaStream::alloc`, recorded at the caller's location.
    ///
    /// # Safety
    /// As `CudaStream::alloc`: the memory is not initialised.
    #[track_caller]
    pub unsafe fn alloc<T: DeviceRepr>(&self, len: usize) -> Result<TrackedSlice<T>, DriverError> {
        let site = Site::caller(None);
        // SAFETY: forwarded to the caller.
        self.track(site, len, || unsafe { self.stream.alloc(len) })
    }

    /// `CudaStream::clone_htod`, recorded at the caller's location.
    #[track_caller]
    pub fn clone_htod<T: DeviceRepr, Src: HostSlice<T> + ?Sized>(
        &self,
        src: &Src,
    ) -> Result<TrackedSlice<T>, DriverError> {
        let site = Site::caller(None);
        self.track(site, src.len(), || self.stream.clone_htod(src))
    }

    fn track<T>(
        &self,
        site: Site,
        len: usize,
        allocate: impl FnOnce() -> Result<CudaSlice<T>, DriverError>,
    ) -> Result<TrackedSlice<T>, DriverError> {
        let bytes = (len as u64).saturating_mul(std::mem::size_of::<T>() as u64);
        match allocate() {
            Ok(slice) => {
                let addr = NEXT_ADDRESS.fetch_add(
                    bytes.max(1).next_multiple_of(ADDRESS_STEP),
                    Ordering::Relaxed,
                );
                self.tracker.record_pass_through_alloc(addr, bytes, site);
                Ok(TrackedSlice {
                    slice: Some(slice),
                    tracker: self.tracker.clone(),
                    addr,
                    site,
                })
            }
            Err(error) => {
                if error.0 == sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY {
                    let free = self
                        .stream
                        .context()
                        .mem_get_info()
                        .map(|(free, _)| free as u64)
                        .unwrap_or(0);
                    self.tracker.record_oom(
                        bytes,
                        format!("CUDA driver: {} allocating {bytes} bytes", describe(error)),
                        free,
                        site,
                    );
                }
                Err(error)
            }
        }
    }
}

/// A cudarc `CudaSlice` whose free is recorded when it is dropped. Derefs to the slice, so it
/// goes wherever the program passed the slice (`&*buf`, `&mut *buf`).
pub struct TrackedSlice<T> {
    slice: Option<CudaSlice<T>>,
    tracker: Tracker,
    addr: u64,
    site: Site,
}

impl<T> TrackedSlice<T> {
    /// Stops tracking and returns the cudarc slice (its free is then not recorded, so the
    /// timeline keeps it live).
    pub fn into_inner(mut self) -> CudaSlice<T> {
        self.slice.take().expect("present until dropped")
    }
}

impl<T> Deref for TrackedSlice<T> {
    type Target = CudaSlice<T>;
    fn deref(&self) -> &CudaSlice<T> {
        self.slice.as_ref().expect("present until dropped")
    }
}

impl<T> DerefMut for TrackedSlice<T> {
    fn deref_mut(&mut self) -> &mut CudaSlice<T> {
        self.slice.as_mut().expect("present until dropped")
    }
}

impl<T> Drop for TrackedSlice<T> {
    fn drop(&mut self) {
        if let Some(slice) = self.slice.take() {
            drop(slice);
            self.tracker.record_pass_through_free(self.addr, self.site);
        }
    }
}
