//! How many malloc + free pairs per second the allocator model sustains on a training-like
//! mix: many small tensors (biases, scalars, norms), activations of a few MiB, and a few
//! large buffers, with frees in mostly-LIFO but shuffled order and ~2000 live allocations.
//!
//! Run with `cargo run --release --example allocator_throughput`.

use std::time::Instant;

use gpumem_harness::allocator::{AllocatorConfig, CachingAllocator, SimulatedDevice};
use gpumem_harness::units::{GIB, MIB};

const PAIRS: u64 = 5_000_000;
const TARGET_LIVE: usize = 2_000;

struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn request_size(rng: &mut XorShift) -> u64 {
    match rng.next() % 100 {
        0..=59 => 4 + rng.next() % (64 * 1024),
        60..=89 => 256 * 1024 + rng.next() % (8 * MIB),
        90..=98 => 8 * MIB + rng.next() % (64 * MIB),
        _ => 64 * MIB + rng.next() % (256 * MIB),
    }
}

fn main() {
    let mut allocator =
        CachingAllocator::new(SimulatedDevice::new(80 * GIB), AllocatorConfig::default());
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    let sizes: Vec<u64> = (0..1 << 16).map(|_| request_size(&mut rng)).collect();
    let mut live: Vec<u64> = Vec::with_capacity(TARGET_LIVE * 2);
    let mut events = Vec::with_capacity(64);
    let (mut mallocs, mut frees, mut ooms) = (0u64, 0u64, 0u64);

    let start = Instant::now();
    while frees < PAIRS {
        let grow = live.len() < TARGET_LIVE / 2
            || (live.len() < TARGET_LIVE && rng.next().is_multiple_of(2));
        events.clear();
        if grow {
            let size = sizes[(mallocs as usize) & (sizes.len() - 1)];
            match allocator.malloc(size, 0, &mut events) {
                Ok(addr) => live.push(addr),
                Err(_) => ooms += 1,
            }
            mallocs += 1;
        } else {
            // Mostly the newest allocation (temporaries), sometimes an older one.
            let index = if rng.next().is_multiple_of(4) {
                (rng.next() % live.len() as u64) as usize
            } else {
                live.len() - 1
            };
            let addr = live.swap_remove(index);
            if allocator.free(addr, &mut events).is_err() {
                eprintln!("unexpected: {addr:#x} was not live");
                return;
            }
            frees += 1;
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    let stats = allocator.stats();
    println!(
        "{frees} malloc+free pairs ({mallocs} mallocs, {ooms} OOMs) in {seconds:.3} s: {:.2} M pairs/s",
        frees as f64 / seconds / 1e6
    );
    println!(
        "peak allocated {:.2} GiB, peak reserved {:.2} GiB, {} segments obtained, {} retries",
        stats.peak_allocated_bytes as f64 / GIB as f64,
        stats.peak_reserved_bytes as f64 / GIB as f64,
        stats.num_device_alloc,
        stats.num_alloc_retries,
    );
}
