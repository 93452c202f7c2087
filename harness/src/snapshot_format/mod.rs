//! PyTorch memory snapshots (`torch.cuda.memory._dump_snapshot` pickles): read them safely,
//! turn them into Timelines, replay them through the allocator model, and write Timelines back
//! as snapshots that PyTorch's viewers open.

pub mod model;
pub mod pickle;
pub mod read;

pub use model::Snapshot;
pub use read::{ImportedTimeline, read_snapshot, read_snapshot_file, to_timeline};
pub use write::{encode_snapshot, export_timeline, timeline_to_snapshot};

pub mod check;
#[cfg(test)]
pub(crate) mod corpus;
pub mod diff;
pub mod export_file;
pub mod replay;
pub mod write;
