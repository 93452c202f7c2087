//! User subclasses of `TensorDataset` / `Subset` / `Dataset` calling `super().__init__`:
//! the base initialiser runs on the instance (`torch/utils/data/dataset.py`: `TensorDataset`
//! stores `self.tensors`, `Subset` `self.dataset` and `self.indices`), so the dataset keeps
//! its tensors and indexing and `DataLoader` see them.
//!
//! No PyTorch is installed here: the figures are worked out by hand. `A` is one `[8, 256]`
//! float32 tensor, 8 KiB; `b` an `[8]` float32 tensor, one 512-byte block.

mod workload_runner;
use workload_runner::{fails, ok};

const PRELUDE: &str = "from torch.utils.data import Dataset, TensorDataset, Subset, DataLoader
A = 8 * 256 * 4
a = torch.empty(8, 256, device='cuda')
b = torch.empty(8, device='cuda')
base = torch.cuda.memory_allocated()
class Pairs(TensorDataset):
    def __init__(self, a, b):
        super().__init__(a, b)
        self.extra = 1
";

#[test]
fn a_tensor_dataset_subclass_keeps_its_tensors() {
    ok(&format!(
        "{PRELUDE}ds = Pairs(a, b)
assert len(ds) == 8
assert len(ds.tensors) == 2 and ds.tensors[0] is a
x, y = ds[0]
assert list(x.shape) == [256]
del a, b, x, y
# The dataset's tuple holds both tensors.
assert torch.cuda.memory_allocated() == base
del ds
assert torch.cuda.memory_allocated() == base - A - 512
"
    ));
}

#[test]
fn subset_and_dataset_subclasses_and_a_loader_over_them() {
    ok(&format!(
        "{PRELUDE}class Half(Subset):
    def __init__(self, ds):
        super().__init__(ds, [0, 1, 2, 3])
class Plain(Dataset):
    def __init__(self):
        super().__init__()
        self.n = 3
    def __len__(self):
        return self.n
    def __getitem__(self, i):
        return i
h = Half(Pairs(a, b))
assert len(h) == 4 and h.indices == [0, 1, 2, 3]
batches = 0
for xb, yb in DataLoader(h, batch_size=2):
    assert list(xb.shape) == [2, 256]
    batches += 1
assert batches == 2
assert len(Plain()) == 3
"
    ));
}

#[test]
fn the_base_checks_run_for_a_subclass_too() {
    let e = fails(&format!(
        "{PRELUDE}ds = Pairs(a, torch.empty(7, device='cuda'))\n"
    ));
    assert!(e.contains("Size mismatch between tensors"), "{e}");
}
