//! Leak reports collected in round 17 whose memory grows per step: hooks that store
//! activations (Grad-CAM, feature extractors), a caught exception kept with its traceback,
//! `backward(create_graph=True)` on an input, inference loops that keep their inputs,
//! stacked frames in a replay buffer; and buffers bounded by a capacity (replay memories,
//! a meter's window). Rewritten in the users' shape (stand-in sizes; a `fix` branch for the
//! fix) and judged by the figures the model computes; each expected figure is derived from
//! the tensors the report keeps. Reports that do not grow, and the refused ones, are in
//! `user_reports_round17_retained.rs`.

#[allow(dead_code)] // each test file uses some of the helpers
mod reports_judge;

use reports_judge::{assert_grows_per_step, column, judge_fix, judge_scenario, steps};

const KIB: i64 = 1 << 10;
const MIB: i64 = 1 << 20;

/// Reports whose every step keeps a fixed set of tensors, and whose fix keeps a smaller
/// (or empty) set: `(report, printed tag, bytes kept per step as reported, with the fix,
/// workload)`. The printed line is `tag step... memory_allocated()` (the last word).
const GROWING: &[(&str, &str, i64, i64, &str)] = &[
    // jacobgil/pytorch-grad-cam#71: the hooks append each ReLU output (256 × 1024 float32,
    // 1 MiB) and its gradient (1 MiB) to lists that live as long as the CAM object; the
    // maintainers' fix starts the lists afresh on each call.
    (
        "gradcam_activation_lists",
        "image",
        2 * MIB,
        0,
        r#"
import torch
import torch.nn as nn

class ActivationsAndGradients:
    def __init__(self, model, target_layer):
        self.model = model
        self.gradients = []
        self.activations = []
        target_layer.register_forward_hook(self.save_activation)

    def save_activation(self, module, input, output):
        self.activations.append(output)
        output.register_hook(self.save_gradient)

    def save_gradient(self, grad):
        self.gradients = [grad] + self.gradients

    def __call__(self, x):
        if fix:
            self.gradients = []
            self.activations = []
        return self.model(x)

model = nn.Sequential(nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10)).cuda()
cam = ActivationsAndGradients(model, model[1])
for i in range(6):
    x = torch.randn(256, 1024, device="cuda")
    output = cam(x)
    model.zero_grad()
    output[:, 3].sum().backward()
    print("image", i, len(cam.activations), torch.cuda.memory_allocated())
"#,
    ),
    // Mikubill/sketch2img#7: a hooked UNet records the features of two layers at every
    // sampling step, under `torch.no_grad()` too (two 1 MiB outputs); the PR clears the list
    // each step (`apply_anti_gradient()`).
    (
        "hook_unet_features",
        "step",
        2 * MIB,
        0,
        r#"
import torch
import torch.nn as nn

class HookUNet:
    def __init__(self, unet, layers):
        self.unet = unet
        self.feature_blocks = []
        for layer in layers:
            layer.register_forward_hook(self.save_features)

    def save_features(self, module, input, output):
        self.feature_blocks.append(output)

    def apply_anti_gradient(self):
        self.feature_blocks = []

unet = nn.Sequential(nn.Linear(1024, 1024), nn.SiLU(), nn.Linear(1024, 1024), nn.SiLU(), nn.Linear(1024, 1024)).cuda()
hooked = HookUNet(unet, [unet[1], unet[3]])
latents = torch.randn(256, 1024, device="cuda")
for t in range(10):
    with torch.no_grad():
        noise_pred = unet(latents)
    latents = latents - 0.1 * noise_pred
    if fix:
        hooked.apply_anti_gradient()
    print("step", t, len(hooked.feature_blocks), torch.cuda.memory_allocated())
"#,
    ),
    // jacobgil/pytorch-grad-cam#132: a CAM object per image, deleted after use, whose
    // forward hook is never removed: every later forward runs every old hook. Their
    // `.detach()`ed copies are views of one output, so each forward keeps one 1 MiB
    // storage, not one per hook. `with GradCAM(...) as cam:` (#483) removes the hook.
    (
        "gradcam_instance_per_image",
        "instance",
        MIB,
        0,
        r#"
import torch
import torch.nn as nn

class ActivationsAndGradients:
    def __init__(self, model, target_layer):
        self.model = model
        self.activations = []
        self.handle = target_layer.register_forward_hook(self.save_activation)

    def save_activation(self, module, input, output):
        self.activations.append(output.detach())

    def release(self):
        self.handle.remove()

class GradCAM:
    def __init__(self, model, target_layer):
        self.model = model
        self.activations_and_grads = ActivationsAndGradients(model, target_layer)

    def __call__(self, input_tensor):
        return self.model(input_tensor)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_value, exc_tb):
        self.activations_and_grads.release()

model = nn.Sequential(nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10)).cuda()
input = torch.randn(256, 1024, device="cuda")
for i in range(6):
    if fix:
        with GradCAM(model=model, target_layer=model[1]) as cam:
            grad = cam(input)
    else:
        cam = GradCAM(model=model, target_layer=model[1])
        grad = cam(input)
    del cam, grad
    print("instance", i, torch.cuda.memory_allocated())
"#,
    ),
    // pytorch/pytorch#182980 (for #167906): `stored = e` in the handler keeps the
    // exception, its traceback the raising frame, the frame its two 4 MiB locals; the PR
    // sets `e.__traceback__ = None` after storing it.
    (
        "stored_exception_traceback",
        "candidate",
        8 * MIB,
        0,
        r#"
import torch

def compile_candidate(i):
    workspace = torch.empty(1024, 1024, device="cuda")
    scratch = torch.empty(1024, 1024, device="cuda")
    raise RuntimeError("candidate %d failed" % i)

errors = []
for i in range(8):
    try:
        compile_candidate(i)
    except RuntimeError as e:
        stored = e
        if fix:
            e.__traceback__ = None
        errors.append(stored)
    print("candidate", i, len(errors), torch.cuda.memory_allocated())
"#,
    ),
    // pytorch/pytorch#4661: `backward(create_graph=True)` on a batch that requires grad,
    // then a second backward of `batch.grad`: the gradient's graph refers back to the
    // batch, so each repetition's batch (10 × 4096 float32, 160 KiB) and its gradient
    // (160 KiB) stay. Resetting `.grad` to `None` (PyTorch's warning) breaks it.
    (
        "create_graph_on_input",
        "rep",
        320 * KIB,
        0,
        r#"
import torch

net = torch.nn.Linear(4096, 1).cuda()
data = torch.ones(100, 4096, device="cuda")
for rep in range(6):
    batch = data[0:10].clone().requires_grad_(True)
    net(batch).norm(2).backward(create_graph=True)
    batch.grad.norm(2).backward()
    if fix:
        batch.grad = None
        for p in net.parameters():
            p.grad = None
    print("rep", rep, torch.cuda.memory_allocated())
"#,
    ),
    // muellerzr/fastinference#7: `get_preds` keeps every input batch on the device
    // (256 × 3072 float32, 3 MiB) next to the predictions (10 KiB); the fix keeps inputs only
    // when they are decoded.
    (
        "get_preds_keeps_inputs",
        "batch",
        3 * MIB + 10 * KIB,
        10 * KIB,
        r#"
import torch
import torch.nn as nn

model = nn.Sequential(nn.Linear(3072, 1024), nn.ReLU(), nn.Linear(1024, 10)).cuda()
model.eval()

def get_preds(batches, fully_decoded=False):
    inps, outs = [], []
    with torch.no_grad():
        for b in range(batches):
            batch = torch.randn(256, 3072, device="cuda")
            if not fix or fully_decoded:
                inps.append(batch)
            outs.append(model(batch))
            print("batch", b, torch.cuda.memory_allocated())
    return inps, outs

inps, outs = get_preds(10)
"#,
    ),
    // cpnota/autonomous-learning-library#144: frames stacked into a new tensor before the
    // replay buffer stores the state, so each state is a 4 MiB copy of four 1 MiB frames;
    // stacking lazily (a list of the frame tensors) keeps each frame once, 1 MiB per step.
    (
        "stacked_frames_in_replay",
        "step",
        4 * MIB,
        MIB,
        r#"
from collections import deque
import torch

class FrameStack:
    def __init__(self, size):
        self.frames = deque(maxlen=size)

    def push(self, frame):
        self.frames.append(frame)
        if fix:
            return list(self.frames)
        return torch.cat(list(self.frames), dim=0)

replay_buffer = []
stack = FrameStack(4)
for i in range(4):
    stack.push(torch.zeros(1, 256, 1024, device="cuda"))
for step in range(12):  # gpumem: measure
    frame = torch.randn(1, 256, 1024, device="cuda")
    state = stack.push(frame)
    replay_buffer.append(state)
    print("step", step, torch.cuda.memory_allocated())
"#,
    ),
];

/// Each report keeps the same bytes at every step, as reported and with its fix; the
/// least-squares growth of the measured loop is that step.
#[test]
fn reports_keeping_tensors_per_step_grow_by_what_they_keep() {
    assert_grows_per_step(GROWING);
}

/// Buffers with a capacity: `(report, tag, capacity as reported, with the fix, bytes per
/// entry, workload)`. The printed line is `tag step len(buffer) memory_allocated()`.
const BOUNDED: &[(&str, &str, i64, i64, i64, &str)] = &[
    // pytorch/tutorials#2381 (the Mario tutorial): `deque(maxlen=100000)` of transitions
    // whose two states (1 MiB each here) were moved to the GPU; the PR lowers `maxlen`. The
    // states are CPU tensors here: the tutorial's `torch.tensor(state, ...)` of a Tensor is
    // refused (see the refusal test), `torch.as_tensor` copies the same way.
    (
        "mario_replay_deque",
        "step",
        60,
        12,
        2 * MIB + 1536,
        r#"
from collections import deque
import torch

class Mario:
    def __init__(self, state_dim):
        self.state_dim = state_dim
        self.memory = deque(maxlen=12 if fix else 60)
        self.batch_size = 4

    def cache(self, state, next_state, action, reward, done):
        state = torch.as_tensor(state, device="cuda")
        next_state = torch.as_tensor(next_state, device="cuda")
        action = torch.tensor([action], device="cuda")
        reward = torch.tensor([reward], device="cuda")
        done = torch.tensor([done], device="cuda")
        self.memory.append((state, next_state, action, reward, done))

mario = Mario((4, 64, 64))
for e in range(40):
    state = torch.randn(64, 64, 64)
    next_state = torch.randn(64, 64, 64)
    mario.cache(state, next_state, 1, 0.5, False)
    print("step", e, len(mario.memory), torch.cuda.memory_allocated())
"#,
    ),
    // ikostrikov/pytorch-ddpg-naf#14: a list-backed `ReplayMemory` overwriting by position
    // once full; each transition's `state` is the previous one's `next_state`, so a step
    // adds one 1 MiB state and three 512 B blocks, until the capacity.
    (
        "ddpg_replay_memory",
        "step",
        60,
        12,
        MIB + 1536,
        r#"
import random
from collections import namedtuple
import torch

Transition = namedtuple("Transition", ("state", "action", "mask", "next_state", "reward"))

class ReplayMemory:
    def __init__(self, capacity):
        self.capacity = capacity
        self.memory = []
        self.position = 0

    def push(self, *args):
        if len(self.memory) < self.capacity:
            self.memory.append(None)
        self.memory[self.position] = Transition(*args)
        self.position = (self.position + 1) % self.capacity

    def __len__(self):
        return len(self.memory)

memory = ReplayMemory(12 if fix else 60)
state = torch.randn(64, 64, 64, device="cuda")
for total_numsteps in range(40):
    next_state = torch.randn(64, 64, 64, device="cuda")
    action = torch.randn(1, 6, device="cuda")
    mask = torch.tensor([1.0], device="cuda")
    reward = torch.tensor([0.5], device="cuda")
    memory.push(state, action, mask, next_state, reward)
    state = next_state
    print("step", total_numsteps, len(memory), torch.cuda.memory_allocated())
"#,
    ),
];

/// A buffer grows by one entry per step until it holds its capacity, then stays: the 40
/// steps outgrow the reported capacity 60 nowhere, so the reported run still grows at its
/// end, and the fixed one (12) is flat from its 12th step. The reported OOM is this growth
/// at the users' capacities (100 000 and 1 000 000 entries).
#[test]
fn replay_buffers_grow_until_their_capacity() {
    for &(report, tag, capacity, fixed_capacity, entry, workload) in BOUNDED {
        let (buggy, fixed) = judge_fix(report, workload);
        for (run, cap) in [(&buggy, capacity), (&fixed, fixed_capacity)] {
            let lens = column(&run.printed, tag, 2);
            let allocated = column(&run.printed, tag, 3);
            assert_eq!(lens.len(), 40, "{report}");
            for (i, d) in steps(&allocated).into_iter().enumerate() {
                let expected = if lens[i + 1] > lens[i] { entry } else { 0 };
                assert_eq!(d, expected, "{report} capacity {cap}: step {}", i + 1);
            }
            assert_eq!(*lens.iter().max().unwrap(), cap.min(40), "{report}");
        }
        let end = |run: &reports_judge::Figures| *column(&run.printed, tag, 3).last().unwrap();
        assert_eq!(end(&buggy) - end(&fixed), 28 * entry, "{report}");
        assert_eq!(
            fixed.growth.signum(),
            1,
            "{report}: the first 12 steps grow"
        );
    }
}

/// facebookresearch/mmf#560: the meter's update dict took the loss tensors themselves;
/// each `SmoothedValue` keeps a `deque(maxlen=20)` window and a running total. Both 0-d
/// losses (512 B blocks) stay per step until the window is full, then the oldest goes as
/// the newest comes: +1 KiB per step for 20 steps, then flat (the graphs the losses keep
/// are host memory; `backward()` freed their saved tensors). The PR stores `.item()`.
#[test]
fn meter_window_of_loss_tensors_is_bounded_by_its_length() {
    let (buggy, fixed) = judge_fix(
        "mmf_meter_window",
        r#"
from collections import deque
import torch
import torch.nn as nn

class SmoothedValue:
    def __init__(self, window_size=20):
        self.deque = deque(maxlen=window_size)
        self.total = 0.0
        self.count = 0

    def update(self, value, n=1):
        self.deque.append(value * n)
        self.count += n
        self.total += value * n

class Meter:
    def __init__(self):
        self.meters = {}

    def update(self, update_dict):
        for k, v in update_dict.items():
            if k not in self.meters:
                self.meters[k] = SmoothedValue()
            self.meters[k].update(v)

model = nn.Sequential(nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 1024)).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
meter = Meter()
for step in range(30):
    x = torch.randn(256, 1024, device="cuda")
    out = model(x)
    reduced_loss_dict = {"loss_mse": out.pow(2).mean(), "loss_l1": out.abs().mean()}
    loss = sum(reduced_loss_dict.values())
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    meter_update_dict = {}
    if fix:
        for key in reduced_loss_dict:
            meter_update_dict[key] = reduced_loss_dict[key].item()
    else:
        meter_update_dict.update(reduced_loss_dict)
    meter.update(meter_update_dict)
    print("step", step, torch.cuda.memory_allocated())
"#,
    );
    let buggy_steps = steps(&column(&buggy.printed, "step", 2));
    let grown = buggy_steps.iter().filter(|&&d| d == KIB).count();
    assert!(buggy_steps.iter().all(|&d| d == KIB || d == 0));
    assert_eq!(grown, 19);
    assert!(buggy_steps[19..].iter().all(|&d| d == 0));
    assert!(
        steps(&column(&fixed.printed, "step", 2))
            .iter()
            .all(|&d| d == 0)
    );
    assert_eq!(fixed.growth, 0);
}

/// The shipped scenarios (`scenarios/reports/`), reported variant first: the replay deque
/// of `maxlen=60` runs out of a 64 MiB card after 31 transitions (31 × (2 MiB + 1.5 KiB)
/// plus the next state), `maxlen=12` completes flat after its 12th step; a Grad-CAM object
/// per image grows by one 1 MiB output per image, the `with` form is flat; a stored
/// exception keeps 8 MiB per failure, with its traceback cleared none.
#[test]
fn shipped_scenarios_hold_the_reported_and_fixed_figures() {
    let replay = judge_scenario(
        include_str!("../../scenarios/reports/replay_deque_maxlen.yaml"),
        "replay_deque_maxlen.yaml",
    );
    assert!(replay[0].oom && replay[0].iterations == 31);
    assert!(!replay[1].oom && replay[1].iterations == 40);
    assert!(replay[1].peak >= 12 * (2 * MIB as u64 + 1536) && replay[1].peak < 64 * MIB as u64);
    let cam = judge_scenario(
        include_str!("../../scenarios/reports/gradcam_hook_per_instance.yaml"),
        "gradcam_hook_per_instance.yaml",
    );
    assert_eq!((cam[0].growth, cam[1].growth), (MIB, 0));
    let stored = judge_scenario(
        include_str!("../../scenarios/reports/stored_exception_traceback.yaml"),
        "stored_exception_traceback.yaml",
    );
    assert_eq!((stored[0].growth, stored[1].growth), (8 * MIB, 0));
    assert_eq!(stored[0].collector_freed, 0);
}
