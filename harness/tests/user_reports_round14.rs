//! Leak reports collected in round 14: out-of-memory recovery in `try`/`except`, metrics
//! and meters accumulated as tensors, list states and callbacks kept across steps, module-level
//! caches, autocast's weight cache in a `no_grad` region, optimizer state, checkpointing with
//! varying input sizes, best-model copies, gradient accumulation, and the reports the model
//! refuses (named by the feature). Rewritten as the users wrote them (stand-in sizes, a `fix`
//! branch for the fix, edits noted beside each) and judged by the figures the model computes;
//! each expected figure is derived from the tensors the report keeps (noted beside it).

#[allow(dead_code)] // each test file uses some of the helpers
mod reports_judge;

use reports_judge::list_states::list_state_metric;
use reports_judge::{Figures, judge, judge_fix, judge_fix_on, try_judge};

const KIB: i64 = 1 << 10;
const MIB: i64 = 1 << 20;

/// A report on a 1 GiB card, its fix branch as in [`judge_fix`]; both variants recover (no
/// out-of-memory error ends them).
fn judge_fix_on_1gib(name: &str, workload: &str) -> (Figures, Figures) {
    let (buggy, fixed) = judge_fix_on(name, "{ capacity: 1 GiB }", workload);
    assert!(!buggy.oom && !fixed.oom, "{name}: recovered");
    (buggy, fixed)
}

/// The numbers a workload printed on its line `index` (words that parse as integers).
fn numbers(printed: &[String], index: usize) -> Vec<i64> {
    printed[index]
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect()
}

/// pytorch/pytorch#48365: batches that run out of memory are skipped with `except
/// RuntimeError as e: if "out of memory" in str(e): zero_grad(); gc.collect();
/// empty_cache(); continue`. Two 131072-row batches (512 MiB each; their 512 MiB output
/// does not fit beside them on a 1 GiB card) are skipped; `e` is deleted when the handler
/// ends and the batch is rebound, so the run recovers: at the end only the weights
/// (Linear(1024, 1024): 4 MiB + a 4 KiB bias) and the last 256-row batch (1 MiB) are held.
/// (The `fix` variable is unused: the report is a working pattern.)
#[test]
fn out_of_memory_batches_are_skipped_and_freed() {
    let (run, _) = judge_fix_on_1gib(
        "oom_skip_batch",
        r#"
import gc
import torch
model = torch.nn.Linear(1024, 1024).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
def do_iteration(sample):
    out = model(sample)
    loss = out.sum()
    loss.backward()
    optimizer.step()
    return loss.item()
rows = [256, 256, 131072, 256, 256, 131072, 256, 256]
skipped = 0
for n in rows:
    sample = torch.randn(n, 1024, device="cuda")
    try:
        out = do_iteration(sample)
    except RuntimeError as e:
        if "out of memory" in str(e):
            optimizer.zero_grad()
            gc.collect()
            torch.cuda.empty_cache()
            skipped += 1
            continue
        raise
    optimizer.zero_grad()
print("skipped", skipped, "allocated", torch.cuda.memory_allocated())
"#,
    );
    assert_eq!(
        run.printed,
        [format!("skipped 2 allocated {}", 4 * MIB + 4 * KIB + MIB)]
    );
    assert_eq!(run.iterations, 8);
    assert_eq!(run.collector_freed, 0);
}

/// discuss.pytorch.org/t/11891 ("the best way to handle exception out of memory"): a step
/// that runs out of memory is retried with an eighth of the batch. Retrying inside the
/// `except` clause runs while the exception's traceback keeps `train_step`'s frame with its
/// 98304-row input and output (384 MiB each); retrying after the clause (a flag set in the
/// handler, the fix given in the thread) frees them first. Both recover with the same
/// memory held after each step; the retry inside the handler runs on top of the two tensors.
#[test]
fn oom_retry_inside_the_handler_keeps_the_failed_frame() {
    let (buggy, fixed) = judge_fix_on_1gib(
        "oom_retry_in_handler",
        r#"
import torch
model = torch.nn.Linear(1024, 1024).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
def train_step(batch_size):
    x = torch.randn(batch_size, 1024, device="cuda")
    out = model(x)
    loss = out.pow(2).mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
sizes = [16384, 16384, 98304, 16384]
for step in range(4):
    oom = False
    try:
        train_step(sizes[step])
    except torch.cuda.OutOfMemoryError:
        if fix:
            oom = True
        else:
            optimizer.zero_grad()
            train_step(sizes[step] // 8)
    if oom:
        optimizer.zero_grad()
        train_step(sizes[step] // 8)
    print(step, torch.cuda.memory_allocated(), torch.cuda.max_memory_allocated())
"#,
    );
    let after = |f: &Figures| {
        (0..4)
            .map(|i| numbers(&f.printed, i)[1])
            .collect::<Vec<_>>()
    };
    assert_eq!(after(&buggy), after(&fixed));
    let peak_of_step_2 = |f: &Figures| numbers(&f.printed, 2)[2];
    assert_eq!(peak_of_step_2(&buggy), buggy.peak as i64);
    // Fixed: the peak is the failed attempt (the weights, its input and output); the retry
    // runs after they are freed.
    assert_eq!(fixed.peak as i64, 4 * MIB + 4 * KIB + 2 * 384 * MIB);
    // In the handler the retry's input, output and square (48 MiB each) come on top.
    assert!(
        buggy.peak >= fixed.peak + 3 * 48 * MIB as u64,
        "{} vs {}",
        buggy.peak,
        fixed.peak
    );
}

/// pytorch/pytorch#101921: `checkpoint` per conv block with a different image size every
/// batch. The allocated bytes follow the batch (each batch's tensors are freed when the next
/// is bound) and the caching allocator's reserve stops growing once the largest batch has
/// run: no leak, as the maintainers asked the reporter to show one.
#[test]
fn checkpointed_blocks_with_varying_sizes_reach_a_steady_reserve() {
    let run = judge(
        "checkpoint_varying_sizes",
        r#"
import random
import torch
from torch import nn
import torch.utils.checkpoint as cp
class FullyConvNet(nn.Module):
    def __init__(self):
        super(FullyConvNet, self).__init__()
        self.conv1 = nn.Conv2d(in_channels=3, out_channels=16, kernel_size=3, padding=1)
        self.conv2 = nn.Conv2d(in_channels=16, out_channels=32, kernel_size=3, padding=1)
        self.fc3 = nn.Conv2d(in_channels=32, out_channels=2, kernel_size=3, padding=1)
    def forward(self, x):
        x = cp.checkpoint(self.conv1, x)
        x = nn.functional.relu(x, inplace=True)
        x = nn.functional.max_pool2d(x, 2)
        x = cp.checkpoint(self.conv2, x)
        x = nn.functional.relu(x, inplace=True)
        x = self.fc3(x)
        return x
model = FullyConvNet().cuda()
sizes = [64, 96, 128, 80, 112, 64, 128, 96, 72, 120]
for i in range(10):
    h = sizes[i]
    x = torch.randn(4, 3, h, h, device="cuda", requires_grad=True)
    y = model(x)
    y.sum().backward()
    print(i, torch.cuda.memory_allocated(), torch.cuda.memory_reserved())
"#,
    );
    let reserved: Vec<i64> = (0..10).map(|i| numbers(&run.printed, i)[2]).collect();
    assert!(
        reserved[2..].iter().all(|&r| r == reserved[1]),
        "{reserved:?}"
    );
    assert_eq!(run.peak_reserved as i64, reserved[1]);
    // Batch 2 (128 × 128) is the largest; batch 5 repeats batch 0's size and its bytes.
    assert_eq!(numbers(&run.printed, 5)[1], numbers(&run.printed, 0)[1]);
    assert_eq!(run.collector_freed, 0);
}

/// Lightning-AI/pytorch-lightning#5735: the evaluation loop's `outputs` keep every
/// validation step's returned tensors until the next validation epoch starts, through the
/// whole training epoch. Bounded (one epoch's outputs), not growing: each epoch ends holding
/// four 256×1024 outputs (1 MiB each) and their loss scalars (512 B blocks) more than the
/// fix, which clears them at the end of the epoch (Lightning-AI/pytorch-lightning#16520).
#[test]
fn evaluation_outputs_are_held_until_the_next_validation() {
    let (buggy, fixed) = judge_fix(
        "lightning_eval_outputs_kept",
        r#"
import torch
layer = torch.nn.Linear(1024, 1024).cuda()
class EvaluationLoop:
    def __init__(self):
        self.outputs = []
    def run(self, batches):
        if not fix:
            self.outputs = []
        with torch.no_grad():
            for batch in batches:
                out = layer(batch)
                self.outputs.append({"loss": out.mean(), "out": out})
        if fix:
            self.outputs.clear()
loop = EvaluationLoop()
for epoch in range(6):
    for step in range(4):
        x = torch.randn(256, 1024, device="cuda")
        layer(x).sum().backward()
    loop.run([torch.randn(256, 1024, device="cuda") for _ in range(4)])
    print(epoch, torch.cuda.memory_allocated())
"#,
    );
    assert_eq!((buggy.growth, fixed.growth), (0, 0));
    let held = |f: &Figures| numbers(&f.printed, 5)[1];
    assert_eq!(held(&buggy) - held(&fixed), 4 * (MIB + 512));
}

/// Lightning-AI/torchmetrics#2921: `compute()` concatenates the list states without clearing
/// them, so a metric computed every step keeps every batch's predictions and targets
/// (262144 floats each, 1 MiB): +2 MiB per step; clearing the lists after concatenating
/// (the reporter's fix) is flat. Shipped as `scenarios/reports/metric_list_states_without_reset.yaml`.
#[test]
fn metric_list_states_keep_every_batch() {
    let (buggy, fixed) = judge_fix(
        "metric_list_states_compute",
        &[
            "import torch\n",
            &list_state_metric(
                "BinaryPrecisionRecallCurve",
                "update",
                "",
                "    def compute(self):
        state = (torch.cat(self.preds), torch.cat(self.target))
        if fix:
            self.preds.clear()
            self.target.clear()
        return state[0].sum() / state[1].sum()",
            ),
            r#"metric = BinaryPrecisionRecallCurve()
for i in range(10):
    preds = torch.rand(262144, device="cuda")
    target = torch.rand(262144, device="cuda")
    metric.update(preds, target)
    score = metric.compute()
"#,
        ]
        .concat(),
    );
    assert_eq!(buggy.growth, 2 * MIB);
    assert_eq!(buggy.collector_freed, 0);
    assert_eq!(fixed.growth, 0);
}

/// rabbityl/lepard#12: an `AverageMeter` fed the loss tensor (`self.sum += val * n`) keeps a
/// chain of autograd nodes, one per step, reaching every earlier loss. After each
/// `backward()` the nodes' saved tensors are freed, so the GPU stays flat either way (the
/// report's growth is host memory, which the model does not measure); the kept chain shows
/// as `meter.sum.grad_fn`. Detaching the value (the fix) keeps no graph.
#[test]
fn average_meter_of_loss_tensors_keeps_a_graph_chain() {
    let (buggy, fixed) = judge_fix(
        "average_meter_keeps_graph",
        r#"
import torch
class AverageMeter(object):
    def __init__(self):
        self.reset()
    def reset(self):
        self.val = 0
        self.avg = 0
        self.sum = 0
        self.count = 0
    def update(self, val, n=1):
        if fix:
            val = val.detach()
        self.val = val
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count
model = torch.nn.Sequential(torch.nn.Linear(1024, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1))
model = model.cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
meter = AverageMeter()
for i in range(10):
    x = torch.randn(256, 1024, device="cuda")
    loss = model(x).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    meter.update(loss, 256)
print(meter.sum.grad_fn is None, torch.cuda.memory_allocated())
"#,
    );
    assert_eq!((buggy.growth, fixed.growth), (0, 0));
    assert!(
        buggy.printed[0].starts_with("False "),
        "{:?}",
        buggy.printed
    );
    assert!(fixed.printed[0].starts_with("True "), "{:?}", fixed.printed);
}

/// TylerYep/torchinfo#369: a module-level `_cached_forward_pass` dict keyed by the model's
/// class name keeps the summary's layer records, and through them the model, after `del`.
/// One model per class name is held (replaced by the next): Linear(1024, 1024) and
/// Linear(1024, 10), 4 MiB + 4 KiB + 40 KiB + a 512 B bias block. Edit: `type(model)`
/// for the report's `model.__class__` (not modelled on modules).
#[test]
fn module_level_summary_cache_keeps_the_last_model() {
    let (buggy, fixed) = judge_fix(
        "summary_cache_keeps_model",
        r#"
import torch
import torch.nn as nn
_cached_forward_pass = {}
class LayerInfo:
    def __init__(self, module, depth):
        self.module = module
        self.depth = depth
def summary(model, x):
    summary_list = []
    for m in model.modules():
        summary_list.append(LayerInfo(m, 0))
    model(x)
    if not fix:
        _cached_forward_pass[type(model).__name__] = summary_list
    return len(summary_list)
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(1024, 1024)
        self.fc2 = nn.Linear(1024, 10)
    def forward(self, x):
        return self.fc2(self.fc1(x))
for i in range(5):
    net = Net().cuda()
    n = summary(net, torch.randn(8, 1024, device="cuda"))
    del net
    print(i, torch.cuda.memory_allocated())
"#,
    );
    let model = 4 * MIB + 4 * KIB + 40 * KIB + 512;
    assert_eq!(numbers(&buggy.printed, 4), [4, model]);
    assert_eq!(buggy.growth, 0);
    assert_eq!(numbers(&fixed.printed, 4), [4, 0]);
}

/// Stonesjtu/pytorch_memlab#17: the reporter's `tensor_device` dict is keyed by the tensors
/// themselves, so every collected activation (two 1 MiB tensors per step) stays; keying by
/// `id` and clearing after the report (the fix) holds none.
#[test]
fn mem_reporter_dict_keyed_by_tensors_keeps_them() {
    let (buggy, fixed) = judge_fix(
        "mem_reporter_mapping",
        r#"
import torch
class MemReporter:
    def __init__(self):
        self.tensor_name = {}
        self.tensor_device = {}
    def collect_tensor(self, tensors):
        for i, t in enumerate(tensors):
            self.tensor_name[id(t)] = "t%d" % i
            if fix:
                self.tensor_device[id(t)] = str(t.device)
            else:
                self.tensor_device[t] = t.device
    def report(self):
        total = len(self.tensor_name)
        if fix:
            self.tensor_name.clear()
            self.tensor_device.clear()
        return total
reporter = MemReporter()
for i in range(10):
    acts = [torch.randn(256, 1024, device="cuda") for _ in range(2)]
    reporter.collect_tensor(acts)
    reporter.report()
"#,
    );
    assert_eq!(buggy.growth, 2 * MIB);
    assert_eq!(fixed.growth, 0);
}

/// ecmwf/anemoi-core#134: in a `no_grad` region inside `autocast`, every layer's float16
/// copy of its weight stays (autocast caches casts of leaf tensors that require grad until
/// the outermost region exits): +2 MiB + a 2 KiB bias per Linear(1024, 1024) as the blocks
/// run, freed at the exit. The reporter's second fix, `requires_grad=False` on the weights,
/// caches nothing (`cache_enabled=False`, the first, is refused: see the refusals below).
#[test]
fn autocast_keeps_each_layers_half_weight_until_the_region_exits() {
    let (buggy, fixed) = judge_fix(
        "autocast_no_grad_weight_cache",
        r#"
import torch
import torch.nn as nn
blocks = nn.ModuleList([nn.Linear(1024, 1024) for _ in range(8)]).cuda()
if fix:
    for p in blocks.parameters():
        p.requires_grad_(False)
x = torch.randn(64, 1024, device="cuda")
for step in range(4):
    with torch.no_grad():
        with torch.autocast(device_type="cuda", dtype=torch.float16):
            h = x
            for block in blocks:
                h = block(h)
                print(step, torch.cuda.memory_allocated())
"#,
    );
    let per_layer = 2 * MIB + 2 * KIB;
    let first = numbers(&buggy.printed, 0)[1];
    for layer in 1..8 {
        assert_eq!(
            numbers(&buggy.printed, layer)[1],
            first + layer as i64 * per_layer
        );
    }
    // Every step starts from the same bytes: the copies were freed at the region's exit.
    assert_eq!(numbers(&buggy.printed, 8)[1], first);
    let fixed_first = numbers(&fixed.printed, 0)[1];
    assert!((1..8).all(|l| numbers(&fixed.printed, l)[1] == fixed_first));
    assert!(buggy.peak >= fixed.peak + 7 * per_layer as u64);
}

/// pytorch/pytorch#9439: Adam runs out of memory where SGD with momentum fits. Adam keeps
/// two moments per parameter, SGD one momentum buffer: after each step Adam holds one more
/// copy of the parameters (2048×2048 + 2048 + 2048×10 + 10 floats: 16 MiB + 8 KiB +
/// 80 KiB + a 512 B block), and its step's temporaries raise the peak further.
#[test]
fn adam_holds_one_more_parameter_copy_than_sgd_momentum() {
    let (adam, sgd) = judge_fix(
        "adam_vs_sgd_state",
        r#"
import torch
import torch.nn as nn
model = nn.Sequential(nn.Linear(2048, 2048), nn.ReLU(), nn.Linear(2048, 10)).cuda()
criterion = nn.CrossEntropyLoss()
if fix:
    optimizer = torch.optim.SGD(model.parameters(), lr=0.001, momentum=0.9)
else:
    optimizer = torch.optim.Adam(model.parameters())
for i in range(6):
    images = torch.randn(64, 2048, device="cuda")
    labels_ = torch.randint(0, 10, (64,), device="cuda")
    optimizer.zero_grad()
    output = model(images)
    loss = criterion(output, labels_)
    loss.backward()
    optimizer.step()
    print(i, torch.cuda.memory_allocated())
"#,
    );
    let params = 16 * MIB + 8 * KIB + 80 * KIB + 512;
    assert_eq!(
        numbers(&adam.printed, 5)[1] - numbers(&sgd.printed, 5)[1],
        params
    );
    assert_eq!((adam.growth, sgd.growth), (0, 0));
    assert!(adam.peak >= sgd.peak + params as u64);
}

/// pytorch/pytorch#31039: an `IterableDataset` that moves each batch to the GPU in its
/// generator (`v.cuda(non_blocking=True)`), through a `DataLoader` with `batch_size=None`:
/// each batch is freed when the next is bound, so the loop holds one batch at most. Edit:
/// `super().__init__()` for the report's `super(CustomIterableDataset).__init__()` (the
/// one-argument form is not modelled).
#[test]
fn iterable_dataset_moving_batches_to_the_gpu_holds_one_batch() {
    let run = judge(
        "iterable_dataset_yield_cuda",
        r#"
import torch
from torch.utils.data import DataLoader, IterableDataset
class CustomIterableDataset(IterableDataset):
    def __init__(self, batch_size=32, maxlen=128):
        super().__init__()
        self.batch_size = batch_size
        self.maxlen = maxlen
    def patch(self, v):
        v = v.cuda(non_blocking=True)
        return v
    def __iter__(self):
        for i in range(10):
            length = 64 + (i * 37) % self.maxlen
            token_ids = torch.zeros(self.batch_size, length, dtype=torch.int64)
            yield self.patch(token_ids), i
loader = DataLoader(CustomIterableDataset(), batch_size=None)
for batch, i in loader:
    n = batch.shape[1]
"#,
    );
    // The longest batch: 32 × 175 int64 = 44800 B; at most it and its neighbour are held.
    assert!(run.peak <= 2 * 44_800, "{}", run.peak);
    assert_eq!(run.collector_freed, 0);
}

/// pytorch/pytorch#15563: "out of memory after 140 batches" with a running average built
/// from `loss.data`. `loss.data` has no graph, so the loop is flat: the model agrees with
/// the reply that the training loop itself keeps nothing.
#[test]
fn running_average_of_loss_data_keeps_nothing() {
    let run = judge(
        "loss_data_running_average",
        r#"
import torch
import torch.nn as nn
model_scratch = nn.Sequential(nn.Linear(1024, 512), nn.ReLU(), nn.Linear(512, 10)).cuda()
criterion_scratch = nn.CrossEntropyLoss()
optimizer_scratch = torch.optim.SGD(model_scratch.parameters(), lr=0.01)
train_loss = 0.0
model_scratch.train()
for batch_idx in range(10):
    image = torch.randn(64, 1024, device="cuda")
    label = torch.randint(0, 10, (64,), device="cuda")
    optimizer_scratch.zero_grad()
    output = model_scratch(image)
    loss = criterion_scratch(output, label)
    loss.backward()
    optimizer_scratch.step()
    train_loss = train_loss + ((1 / (batch_idx + 1)) * (loss.data - train_loss))
"#,
    );
    assert_eq!(run.growth, 0);
    assert_eq!(run.collector_freed, 0);
}

/// discuss.pytorch.org/t/55955: gradient accumulation with `loss / accumulation_steps` and
/// `backward()` every step (the article's form, the fix branch) against summing the losses
/// and calling `backward()` once per accumulation: the sum keeps four steps' graphs (their
/// inputs and activations) alive until the backward, a higher peak, no growth.
#[test]
fn summed_losses_keep_every_accumulated_graph_until_backward() {
    let (summed, per_step) = judge_fix(
        "accumulated_loss_single_backward",
        r#"
import torch
import torch.nn as nn
model = nn.Sequential(nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10)).cuda()
loss_function = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
accumulation_steps = 4
model.zero_grad()
total = 0
for i in range(16):
    inputs = torch.randn(256, 1024, device="cuda")
    labels = torch.randint(0, 10, (256,), device="cuda")
    predictions = model(inputs)
    loss = loss_function(predictions, labels)
    loss = loss / accumulation_steps
    if fix:
        loss.backward()
    else:
        total = total + loss
    if (i + 1) % accumulation_steps == 0:
        if not fix:
            total.backward()
            total = 0
        optimizer.step()
        model.zero_grad()
"#,
    );
    // Three more graphs at the peak, each with its 256×1024 input and hidden layer (1 MiB each).
    assert!(
        summed.peak >= per_step.peak + 4 * MIB as u64,
        "{} vs {}",
        summed.peak,
        per_step.peak
    );
    assert_eq!((summed.collector_freed, per_step.collector_freed), (0, 0));
}

/// cdtools-developers/cdtools#87: each inspection registers a plotting callback closing over
/// the tensor it shows, and the callbacks are kept: +1 MiB (one 256×1024 probe) per
/// iteration; releasing them after each iteration (the fix) keeps none. Shipped as
/// `scenarios/reports/callbacks_close_over_probes.yaml`.
#[test]
fn callbacks_closing_over_probes_keep_each_one() {
    let (buggy, fixed) = judge_fix(
        "callbacks_close_over_tensors",
        r#"
import torch
class Model:
    def __init__(self):
        self.callbacks = []
    def inspect(self, obj):
        def update_panel():
            return obj.sum()
        self.callbacks.append(update_panel)
    def release_callbacks(self):
        self.callbacks = []
model = Model()
for i in range(10):
    probe = torch.randn(256, 1024, device="cuda")
    model.inspect(probe)
    for cb in model.callbacks:
        cb()
    if fix:
        model.release_callbacks()
"#,
    );
    assert_eq!(buggy.growth, MIB);
    assert_eq!(fixed.growth, 0);
}

/// asappresearch/flambe#168: the best model's `copy.deepcopy(model.state_dict())` stays on
/// the GPU (two Linear(1024, 1024): 2 × (4 MiB + 4 KiB)), and while a new best is copied the
/// old copy is still held; the fix keeps the best weights on the CPU.
#[test]
fn best_model_deepcopy_stays_on_the_gpu() {
    let (buggy, fixed) = judge_fix(
        "best_model_deepcopy_on_gpu",
        r#"
import copy
import torch
import torch.nn as nn
model = nn.Sequential(nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 1024)).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
best_metric = None
best_model = None
scores = [0.5, 0.6, 0.55, 0.7, 0.65, 0.8]
for epoch in range(6):
    x = torch.randn(64, 1024, device="cuda")
    loss = model(x).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    val_metric = scores[epoch]
    if best_metric is None or val_metric > best_metric:
        best_metric = val_metric
        if fix:
            best_model = {k: t.cpu().detach() for k, t in model.state_dict().items()}
        else:
            best_model = copy.deepcopy(model.state_dict())
    print(epoch, torch.cuda.memory_allocated())
"#,
    );
    let model = 2 * (4 * MIB + 4 * KIB);
    for epoch in 0..6 {
        assert_eq!(
            numbers(&buggy.printed, epoch)[1] - numbers(&fixed.printed, epoch)[1],
            model
        );
    }
    assert!(buggy.peak >= fixed.peak + 2 * model as u64 - MIB as u64);
}

/// cornellius-gp/gpytorch#2734: a prediction strategy registers a hook on its cached mean's
/// `grad_fn` that closes over the strategy (`functools.partial(clear_cache_hook, self)`), and
/// the strategy's cache holds the mean: strategy → cache → mean → its node → the node's hook
/// dict → partial → strategy. The node's hooks live in C++, where the collector cannot see
/// them, so `del` leaves the whole cycle: each iteration keeps the mean (1024 float32: 4 KiB)
/// and, through the graph's `AccumulateGrad`, the 256 × 1024 leaf (1 MiB). The project's fix
/// (the hook holds a `weakref` to the strategy) leaves nothing.
#[test]
fn grad_fn_hook_closing_over_its_owner_keeps_the_graph() {
    let (buggy, fixed) = judge_fix(
        "grad_fn_hook_cycle",
        r#"
import functools
import weakref
import torch
def clear_cache_hook(module, *args, **kwargs):
    module._memoize_cache = {}
class PredictionStrategy:
    def __init__(self, train):
        self.train = train
        self._memoize_cache = {}
    def mean_cache(self):
        mean_cache = (self.train * 2).sum(0)
        self._memoize_cache["mean"] = mean_cache
        if fix:
            ref = weakref.ref(self)
            def hook(*args):
                s = ref()
                if s is not None:
                    clear_cache_hook(s)
            mean_cache.grad_fn.register_hook(hook)
        else:
            wrapper = functools.partial(clear_cache_hook, self)
            mean_cache.grad_fn.register_hook(wrapper)
        return mean_cache
for i in range(10):
    train = torch.randn(256, 1024, device="cuda", requires_grad=True)
    strategy = PredictionStrategy(train)
    m = strategy.mean_cache()
    del strategy, m, train
"#,
    );
    assert_eq!(buggy.growth, MIB + 4096);
    assert_eq!(buggy.collector_freed, 0);
    assert_eq!(fixed.growth, 0);
}

/// Reports the model refuses, each naming the feature it lacks (the gaps listed in the
/// round's notes): torchmetrics (Lightning-AI/torchmetrics#1738), `@torch.no_grad()` on a
/// generator function (pytorch/pytorch#31497). (`DistributedDataParallel`, pytorch/pytorch#40073,
/// is modelled now: `tests/torch_ddp.rs`.)
#[test]
fn refused_reports_name_the_missing_feature() {
    for (report, workload, feature) in [
        (
            "torchmetrics_accuracy_per_step",
            r#"
import torch
from torchmetrics import Accuracy
preds = torch.randint(0, 10, (8, 512), device="cuda")
y = torch.randint(0, 10, (8, 512), device="cuda")
for i in range(10):
    acc = Accuracy(task="multiclass", num_classes=10).to("cuda")
    a = acc(preds, y)
"#,
            "torchmetrics",
        ),
        (
            "no_grad_generator_predict",
            r#"
import torch
model = torch.nn.Sequential(torch.nn.Linear(1024, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 16)).cuda()
@torch.no_grad()
def predict(batches):
    for b in batches:
        yield model(b)
def predict_plain(batches):
    for b in batches:
        yield model(b)
batches = [torch.randn(512, 1024, device="cuda") for _ in range(8)]
outputs = []
gen = predict(batches)
for step, out in enumerate(gen):
    outputs.append(out)
print(outputs[0].requires_grad, torch.cuda.memory_allocated())
"#,
            "generator function",
        ),
    ] {
        match try_judge(report, workload) {
            Ok(_) => panic!("{report}: ran; expected a refusal"),
            Err(e) => assert!(
                e.contains("unsupported") && e.contains(feature),
                "{report}: {e}"
            ),
        }
    }
}

/// pytorch/pytorch#161186: a custom `torch.autograd.Function` whose `forward` returns two
/// tensors gets one gradient per output in `backward(ctx, dA, dB)`. Only `a` reaches the
/// loss, so `dB` is materialized as zeros of `b`'s shape (256x1024 float32: 1 MiB,
/// allocated during backward); after `ctx.set_materialize_grads(False)` (the fix branch)
/// it is `None`, 1 MiB less inside `backward`. Each step's graph dies with `a`, `b` and
/// `loss` rebound: no growth, nothing for the collector.
#[test]
fn custom_function_with_two_outputs_gets_a_gradient_per_output() {
    let (buggy, fixed) = judge_fix(
        "custom_function_two_outputs",
        r#"
import torch
class TwoOut(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w):
        if fix:
            ctx.set_materialize_grads(False)
        ctx.save_for_backward(x, w)
        return x.mm(w), x * 2
    @staticmethod
    def backward(ctx, dA, dB):
        x, w = ctx.saved_tensors
        print(dB is None, torch.cuda.memory_allocated())
        return None, x.t().mm(dA)
x = torch.randn(256, 1024, device="cuda")
w = torch.randn(1024, 1024, device="cuda", requires_grad=True)
for step in range(4):
    a, b = TwoOut.apply(x, w)
    loss = a.sum()
    loss.backward()
print(w.grad.shape == w.shape, torch.cuda.memory_allocated())
"#,
    );
    for step in 0..4 {
        assert!(
            buggy.printed[step].starts_with("False"),
            "{:?}",
            buggy.printed
        );
        assert!(
            fixed.printed[step].starts_with("True"),
            "{:?}",
            fixed.printed
        );
        assert_eq!(
            numbers(&buggy.printed, step)[0] - numbers(&fixed.printed, step)[0],
            MIB
        );
    }
    for run in [&buggy, &fixed] {
        assert!(run.printed[4].starts_with("True"));
        assert_eq!(run.growth, 0);
        assert_eq!(run.collector_freed, 0);
    }
}
