//! PyTorch memory snapshots (`torch.cuda.memory._dump_snapshot` pickles): read them safely,
//! turn them into Timelines, replay them through the allocator model, and write Timelines back
//! as snapshots that PyTorch's viewers open.

pub mod pickle;
