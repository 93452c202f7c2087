//! `torch.utils.data` with `num_workers=0`: `TensorDataset`, user `Dataset` and
//! `IterableDataset` subclasses, `Subset`, `random_split`, `DataLoader` batching with the
//! default collate. Live bytes are asserted inside the workloads with
//! `torch.cuda.memory_allocated()` and worked out by hand in the comments (the caching
//! allocator rounds every block up to 512 bytes).

mod inline_workload;
use inline_workload::peak_allocated as run;

/// A `TensorDataset` of CUDA tensors batched by 4: the samples are views (no bytes), each
/// batch is a new stacked tensor per field, and the loop variable keeps the previous batch
/// while the next one is stacked.
/// Dataset: x `[10, 256]` float32 = 10240 B, y `[10]` int64 = 80 B → 512 B: 10752 B.
/// A full batch: x `[4, 256]` = 4096 B, y `[4]` = 32 B → 512 B: 4608 B; the last one
/// (2 samples): 2048 + 512 = 2560 B.
/// Peak: during the second `next`, dataset + old batch + new batch = 10752 + 2 · 4608 = 19968 B.
#[test]
fn tensor_dataset_batches_are_stacked_and_the_previous_batch_lives_until_rebound() {
    let peak = run(r#"import torch
from torch.utils.data import TensorDataset, DataLoader
x = torch.randn(10, 256, device="cuda")
y = torch.zeros(10, dtype=torch.long, device="cuda")
ds = TensorDataset(x, y)
assert len(ds) == 10
sx, sy = ds[3]
assert sx.shape == (256,) and sy.shape == () and sx.is_cuda
del sx, sy
loader = DataLoader(ds, batch_size=4)
assert len(loader) == 3
assert len(DataLoader(ds, batch_size=4, drop_last=True)) == 2
sizes = []
for batch in loader:
    assert isinstance(batch, list) and len(batch) == 2
    xb, yb = batch
    sizes.append(xb.shape[0])
    assert xb.shape[1] == 256 and yb.dtype == torch.int64 and xb.is_cuda
    del xb, yb
    if len(sizes) < 3:
        assert torch.cuda.memory_allocated() == 10752 + 4608
    else:
        assert torch.cuda.memory_allocated() == 10752 + 2560
assert sizes == [4, 4, 2]
# The loop variable keeps the last batch after the loop, as in CPython.
assert torch.cuda.memory_allocated() == 10752 + 2560
del batch
assert torch.cuda.memory_allocated() == 10752
"#)
    .unwrap();
    assert_eq!(peak, 10752 + 2 * 4608);
}

/// A user `Dataset` whose `__getitem__` makes a 1 KiB CUDA tensor (256 float32): the four
/// samples of a batch live in the fetcher's list until `torch.stack` has made the 4096 B
/// batch. Peak during the second `next`: old batch 4096 + samples 4096 + new batch 4096 =
/// 12288 B. Between batches only the batch is live: 4096 B.
#[test]
fn user_dataset_samples_live_until_collated() {
    let peak = run(r#"import torch
from torch.utils.data import Dataset, DataLoader
class Squares(Dataset):
    def __init__(self, n):
        super().__init__()
        self.n = n
    def __len__(self):
        return self.n
    def __getitem__(self, i):
        return torch.ones(256, device="cuda")
ds = Squares(8)
assert len(ds) == 8 and ds[0].shape == (256,)
loader = DataLoader(ds, batch_size=4, shuffle=False)
assert len(loader) == 2
n = 0
for b in loader:
    assert b.shape == (4, 256)
    assert torch.cuda.memory_allocated() == 4096
    n += 1
assert n == 2
"#)
    .unwrap();
    assert_eq!(peak, 3 * 4096);
}

/// Each `iter(loader)` is a new `_SingleProcessDataLoaderIter` that holds the dataset but
/// not the batch: a batch taken with `next` and deleted frees its 4096 B while the iterator
/// lives; the iterator is freed with its last reference; two epochs give two full passes.
#[test]
fn each_epoch_gets_a_fresh_iterator_that_does_not_hold_the_batch() {
    run(r#"import torch, weakref, gc
from torch.utils.data import TensorDataset, DataLoader
x = torch.randn(8, 256, device="cuda")
loader = DataLoader(TensorDataset(x), batch_size=4)
it = iter(loader)
assert it is not iter(loader)
r = weakref.ref(it)
b = next(it)
assert torch.cuda.memory_allocated() == 8192 + 4096
del b
assert torch.cuda.memory_allocated() == 8192
del it
assert r() is None
batches = 0
for epoch in range(2):
    for (xb,) in loader:
        batches += 1
assert batches == 4
"#)
    .unwrap();
}

/// Default collate by sample type: a dict of a tensor and an int gives a dict of a
/// stacked tensor and an int64 host tensor; a float gives float64; a nested tuple gives
/// a list whose string column stays the `zip` tuple (`collate` returns a batch of
/// strings as it is). A user `collate_fn` gets the list of samples.
#[test]
fn default_collate_follows_the_sample_structure() {
    run(r#"import torch
from torch.utils.data import Dataset, DataLoader
class Pairs(Dataset):
    def __len__(self):
        return 6
    def __getitem__(self, i):
        return {"x": torch.zeros(8, device="cuda"), "label": i, "w": 0.5, "meta": (torch.zeros(2, device="cuda"), "name")}
batch = next(iter(DataLoader(Pairs(), batch_size=3)))
assert isinstance(batch, dict)
assert batch["x"].shape == (3, 8) and batch["x"].is_cuda
assert batch["label"].dtype == torch.int64 and batch["label"].shape == (3,)
assert batch["w"].dtype == torch.float64
m, names = batch["meta"]
assert m.shape == (3, 2) and names == ("name", "name", "name")
seen = []
def keep_lengths(samples):
    seen.append(len(samples))
    return samples
for s in DataLoader(Pairs(), batch_size=4, collate_fn=keep_lengths):
    assert isinstance(s, list)
assert seen == [4, 2]
"#)
    .unwrap();
}

/// An `IterableDataset` whose generator yields 1 KiB tensors: the loader's iterator keeps
/// the dataset's iterator (the fetcher's `dataset_iter`); 7 items in batches of 3 give
/// 3, 3, 1 (and 3, 3 with `drop_last`); `batch_size=None` yields the items themselves.
#[test]
fn iterable_dataset_batches_what_its_iterator_yields() {
    run(r#"import torch
from torch.utils.data import IterableDataset, DataLoader
class Stream(IterableDataset):
    def __iter__(self):
        for i in range(7):
            yield torch.ones(256, device="cuda")
sizes = [b.shape[0] for b in DataLoader(Stream(), batch_size=3)]
assert sizes == [3, 3, 1]
assert [b.shape[0] for b in DataLoader(Stream(), batch_size=3, drop_last=True)] == [3, 3]
assert [b.shape for b in DataLoader(Stream(), batch_size=None)][0] == (256,)
assert torch.cuda.memory_allocated() == 0
"#)
    .unwrap();
}

/// `Subset` and `random_split`: lengths by count or by fraction (floor, the remainder
/// handed out round-robin), each subset indexing through to the dataset's views; a loader
/// over a subset batches only its samples.
#[test]
fn subsets_and_random_split() {
    run(r#"import torch
from torch.utils.data import TensorDataset, DataLoader, Subset, random_split
ds = TensorDataset(torch.randn(10, 4, device="cuda"))
train, val = random_split(ds, [7, 3])
assert len(train) == 7 and len(val) == 3
a, b, c = random_split(ds, [0.4, 0.3, 0.3])
assert (len(a), len(b), len(c)) == (4, 3, 3)
s = Subset(ds, [1, 3, 5])
assert len(s) == 3 and s[2][0].shape == (4,)
assert [xb.shape[0] for (xb,) in DataLoader(train, batch_size=4)] == [4, 3]
"#)
    .unwrap();
    let e = run(r#"import torch
from torch.utils.data import TensorDataset, random_split
random_split(TensorDataset(torch.zeros(10, 2)), [6, 3])
"#)
    .unwrap_err();
    assert!(e.contains("Sum of input lengths does not equal"), "{e}");
}

/// Samples that require grad are stacked with a `StackBackward0` node, so the batch's
/// backward reaches the dataset's leaf.
#[test]
fn stacked_samples_keep_their_graph() {
    run(r#"import torch
from torch.utils.data import TensorDataset, DataLoader
w = torch.randn(6, 3, device="cuda", requires_grad=True)
(xb,) = next(iter(DataLoader(TensorDataset(w), batch_size=6)))
assert xb.grad_fn.name() == "StackBackward0"
xb.sum().backward()
assert w.grad.shape == (6, 3)
"#)
    .unwrap();
}

/// What the model refuses or rejects as PyTorch does.
#[test]
fn loader_errors() {
    let e = run(r#"import torch
from torch.utils.data import TensorDataset, DataLoader
DataLoader(TensorDataset(torch.zeros(4, 2)), batch_size=2, num_workers=2)
"#)
    .unwrap_err();
    assert!(e.contains("num_workers > 0"), "{e}");
    let e = run(r#"import torch
from torch.utils.data import TensorDataset, DataLoader
DataLoader(TensorDataset(torch.zeros(4, 2)), batch_size=0)
"#)
    .unwrap_err();
    assert!(e.contains("batch_size should be a positive integer"), "{e}");
    let e = run(r#"import torch
from torch.utils.data import IterableDataset, DataLoader
class S(IterableDataset):
    def __iter__(self):
        yield 1
DataLoader(S(), shuffle=True)
"#)
    .unwrap_err();
    assert!(e.contains("expected unspecified shuffle option"), "{e}");
    let e = run(r#"import torch
from torch.utils.data import TensorDataset
TensorDataset(torch.zeros(4, 2), torch.zeros(5))
"#)
    .unwrap_err();
    assert!(e.contains("Size mismatch between tensors"), "{e}");
}

/// A `Dataset` subclass without `__getitem__` is PyTorch's `NotImplementedError` when the
/// loader fetches from it.
#[test]
fn a_dataset_without_getitem_is_refused_at_the_fetch() {
    let e = run(r#"import torch
from torch.utils.data import Dataset, DataLoader
class Empty(Dataset):
    def __len__(self):
        return 3
loader = DataLoader(Empty())
assert len(loader) == 3
next(iter(loader))
"#)
    .unwrap_err();
    assert!(
        e.contains("Subclasses of Dataset should implement __getitem__"),
        "{e}"
    );
}
