//! `torch.nn.parallel.DistributedDataParallel` in one process (`python/ddp.rs`): the
//! construction's broadcast temporaries and the reducer's bucket buffers, worked out by hand
//! from `torch/nn/parallel/distributed.py` (`_sync_module_states`, `_ddp_init_helper`) and
//! `torch/csrc/distributed/c10d/reducer.cpp` (`compute_bucket_assignment_by_size`,
//! `initialize_buckets`). No PyTorch is installed here.

mod workload_runner;
use workload_runner::{fails, ok};

/// Two `Linear(1024, 1024)`: weights of 4 MiB, biases of 4 KiB; 8396800 bytes of
/// parameters in all, each a 512-byte multiple.
const MODEL: &str = "import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
nn = torch.nn
M = 1024 * 1024
P = 2 * (4 * M + 4096)
model = nn.Sequential(nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 1024)).cuda()
assert torch.cuda.memory_allocated() == P
";

#[test]
fn ddp_needs_a_process_group() {
    let e = fails(&(MODEL.to_string() + "ddp = DDP(model)\n"));
    assert!(
        e.contains("Default process group has not been initialized"),
        "{e}"
    );
}

#[test]
fn default_ddp_holds_one_bucket_of_all_parameters_and_broadcasts_through_a_flat_copy() {
    // find_unused_parameters=False: limits [sys.maxsize], one float32 CUDA bucket of all
    // four parameters (P bytes), allocated after the broadcast's flat copy (P bytes, four
    // tensors in one 250 MiB group) is freed. Peak P + P, then P + P held.
    ok(&(MODEL.to_string()
        + "dist.init_process_group('nccl', rank=0, world_size=1)
assert dist.is_initialized()
torch.cuda.reset_peak_memory_stats()
ddp = DDP(model, device_ids=[0])
assert torch.cuda.max_memory_allocated() == 2 * P
assert torch.cuda.memory_allocated() == 2 * P
assert torch.cuda.memory_stats()['allocation.all.current'] == 5
assert ddp.module is model
assert len(list(ddp.parameters())) == 4
x = torch.randn(256, 1024, device='cuda')
out = ddp(x)
assert tuple(out.shape) == (256, 1024)
out.sum().backward()
# The reducer copies each gradient into its bucket and back in place: the gradients (P)
# are the only new bytes beside x and out.
del out
assert torch.cuda.memory_allocated() == 3 * P + M
with ddp.no_sync():
    ddp(x).sum().backward()
assert torch.cuda.memory_allocated() == 3 * P + M
dist.all_reduce(x)
assert torch.cuda.memory_allocated() == 3 * P + M
# The buckets go with the DDP object (its reducer).
del ddp
assert torch.cuda.memory_allocated() == 2 * P + M
"));
}

#[test]
fn find_unused_parameters_splits_a_first_small_bucket() {
    // Limits [1 MiB, 25 MiB] in registration order: weight 0 (4 MiB) closes the first
    // bucket; biases and weight 1 share the second. Reversed: [b0, w1, b1] (4 MiB + 8 KiB)
    // is allocated first, then [w0]: two buffers of P bytes in all.
    ok(&(MODEL.to_string()
        + "dist.init_process_group('nccl', rank=0, world_size=1)
ddp = DDP(model, find_unused_parameters=True)
assert torch.cuda.memory_allocated() == 2 * P
assert torch.cuda.memory_stats()['allocation.all.current'] == 6
"));
    // static_graph keeps one bucket; bucket_cap_mb alone (no first bucket) with 1 MiB
    // closes a bucket at each weight: [w0], [b0, w1], [b1].
    ok(&(MODEL.to_string()
        + "dist.init_process_group('nccl', rank=0, world_size=1)
ddp = DDP(model, find_unused_parameters=True, static_graph=True)
assert torch.cuda.memory_stats()['allocation.all.current'] == 5
ddp2 = DDP(model, find_unused_parameters=True, bucket_cap_mb=1)
assert torch.cuda.memory_stats()['allocation.all.current'] == 8
assert torch.cuda.memory_allocated() == 3 * P
"));
}

#[test]
fn the_broadcast_keeps_at_most_two_flat_groups_in_flight() {
    // Nine 100 MiB weights: 250 MiB groups of three (300 MiB each, closed at the third).
    // The third group's flattening waits for the first to finish: at most nine weights
    // and two copies are allocated at once (1500 MiB), then the nine weights and the one
    // 900 MiB bucket (1800 MiB, ten blocks). All three copies at once would be 12 blocks.
    ok("import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
nn = torch.nn
M = 1024 * 1024
layers = [nn.Linear(5120, 5120, bias=False) for _ in range(9)]
model = nn.Sequential(*layers).cuda()
assert torch.cuda.memory_allocated() == 900 * M
dist.init_process_group('nccl', rank=0, world_size=1)
torch.cuda.reset_peak_memory_stats()
ddp = DDP(model)
assert torch.cuda.max_memory_allocated() == 1800 * M
assert torch.cuda.memory_stats()['allocation.all.peak'] == 11
assert torch.cuda.memory_allocated() == 1800 * M
");
}

#[test]
fn gradient_as_bucket_view_is_refused_where_it_is_asked_for() {
    let e = fails(
        &(MODEL.to_string()
            + "dist.init_process_group('nccl', rank=0, world_size=1)\nddp = DDP(model, gradient_as_bucket_view=True)\n"),
    );
    assert!(
        e.contains("unsupported") && e.contains("gradient_as_bucket_view"),
        "{e}"
    );
    let e = fails(
        "import torch.distributed as dist\nfrom torch.nn.parallel import DistributedDataParallel as DDP\ndist.init_process_group('nccl', rank=0, world_size=1)\nDDP(torch.nn.ReLU())\n",
    );
    assert!(e.contains("DistributedDataParallel is not needed"), "{e}");
}
