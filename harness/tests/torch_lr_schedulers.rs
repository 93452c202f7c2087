//! `torch.optim.lr_scheduler` in the workload model: the learning rates each scheduler
//! writes into the optimizer's groups, step by step, the attributes it keeps, its
//! `state_dict()`, and PyTorch's errors.
//!
//! No PyTorch is installed here. Each expected rate is derived by hand from the formulas
//! of `torch/optim/lr_scheduler.py` (the chainable `get_lr()`: each step derives the new
//! rate from the group's current `lr`, so the floats are the recursive form's, not the
//! closed form's); the derivation is written next to the figures. The figures with many
//! digits are those formulas evaluated in CPython 3.11 in PyTorch's order of operations,
//! so they are the exact floats PyTorch produces.

mod workload_runner;
use workload_runner::{fails, ok};

/// One parameter (SGD, lr 0.1) and a helper that records the group's `lr` after each step.
const ONE_GROUP: &str = "w = torch.zeros(4, device='cuda', requires_grad=True)
opt = torch.optim.SGD([w], lr=0.1, momentum=0.9)
def rates(sched, steps):
    seen = [opt.param_groups[0]['lr']]
    for _ in range(steps):
        opt.step()
        sched.step()
        seen.append(opt.param_groups[0]['lr'])
    return seen
";

fn run_one_group(body: &str) {
    ok(&format!("{ONE_GROUP}{body}"));
}

#[test]
fn step_lr_multiplies_by_gamma_every_step_size_epochs() {
    // get_lr: epoch 0 or epoch % step_size != 0 keeps lr; else lr * gamma.
    // 0.1, 0.1, 0.1*0.5, 0.05, 0.05*0.5, 0.025, 0.025*0.5.
    run_one_group(
        "s = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
assert rates(s, 6) == [0.1, 0.1, 0.05, 0.05, 0.025, 0.025, 0.0125]
assert s.last_epoch == 6
assert s.get_last_lr() == [0.0125]
assert s.base_lrs == [0.1]
assert opt.param_groups[0]['initial_lr'] == 0.1
",
    );
}

#[test]
fn multistep_lr_counts_repeated_milestones() {
    // milestones = Counter([2, 2, 4]): at epoch 2 lr * 0.5 ** 2, at epoch 4 lr * 0.5.
    run_one_group(
        "s = torch.optim.lr_scheduler.MultiStepLR(opt, [2, 2, 4], gamma=0.5)
assert rates(s, 5) == [0.1, 0.1, 0.025, 0.025, 0.0125, 0.0125]
assert s.milestones[2] == 2
",
    );
}

#[test]
fn exponential_linear_and_constant_lr_follow_their_chainable_forms() {
    // ExponentialLR(0.9): lr * 0.9 each step: 0.1*0.9 = 0.09000000000000001, ...
    // LinearLR(0.25, 1.0, total_iters=3): epoch 0: 0.1 * 0.25 = 0.025; epoch e <= 3:
    // lr * (1 + 0.75 / (3 * 0.25 + (e - 1) * 0.75)): 0.025 * 2 = 0.05, 0.05 * 1.5 =
    // 0.07500000000000001, * (1 + 0.75/2.25) = 0.1; then unchanged.
    // ConstantLR(1/3, total_iters=2): 0.1 * (1/3), unchanged, at epoch 2 lr * (1 / (1/3)).
    run_one_group(
        "s = torch.optim.lr_scheduler.ExponentialLR(opt, gamma=0.9)
assert rates(s, 4) == [0.1, 0.09000000000000001, 0.08100000000000002, 0.07290000000000002, 0.06561000000000002]
opt.param_groups[0]['lr'] = 0.1
opt.param_groups[0].pop('initial_lr')
s = torch.optim.lr_scheduler.LinearLR(opt, start_factor=0.25, total_iters=3)
assert rates(s, 5) == [0.025, 0.05, 0.07500000000000001, 0.1, 0.1, 0.1]
opt.param_groups[0]['lr'] = 0.1
s = torch.optim.lr_scheduler.ConstantLR(opt, factor=1 / 3, total_iters=2)
assert rates(s, 3) == [0.03333333333333333, 0.03333333333333333, 0.1, 0.1]
",
    );
}

#[test]
fn multiplicative_and_lambda_lr() {
    // MultiplicativeLR: lr * f(epoch) from epoch 1 (the initial step keeps lr):
    // 0.1 * 0.5 = 0.05, * 0.5, ... LambdaLR: base_lr * f(epoch) = 0.1 * epoch.
    run_one_group(
        "s = torch.optim.lr_scheduler.MultiplicativeLR(opt, lambda e: 0.5)
assert rates(s, 3) == [0.1, 0.05, 0.025, 0.0125]
assert s.base_lrs == [0.1]
s = torch.optim.lr_scheduler.LambdaLR(opt, lambda e: e)
assert opt.param_groups[0]['lr'] == 0.0
assert rates(s, 2) == [0.0, 0.1, 0.2]
",
    );
}

#[test]
fn cosine_annealing_uses_the_recursive_form_and_restarts() {
    // T_max 4, eta_min 0.001. Epoch e: lr = (1 + cos(pi e / 4)) / (1 + cos(pi (e-1) / 4))
    // * (lr - 0.001) + 0.001, except where (e - 1 - 4) % 8 == 0 (e = 5): lr + (0.1 - 0.001)
    // * (1 - cos(pi / 4)) / 2. The recursion's floats differ from the closed form's in the
    // last digits (epoch 5: 0.015498214331265896, closed form 0.01549821433126589).
    run_one_group(
        "s = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=4, eta_min=0.001)
assert rates(s, 10) == [0.1, 0.0855017856687341, 0.0505, 0.0154982143312659, 0.001, 0.015498214331265896, 0.05050000000000001, 0.08550178566873413, 0.10000000000000003, 0.08550178566873413, 0.05050000000000003]
",
    );
}

#[test]
fn step_with_an_epoch_uses_the_closed_form() {
    // StepLR closed form: base_lr * gamma ** (epoch // step_size) = 0.1 * 0.5 ** 3.
    run_one_group(
        "s = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
s.step(7)
assert s.last_epoch == 7
assert opt.param_groups[0]['lr'] == 0.0125
",
    );
}

#[test]
fn one_cycle_anneals_lr_and_cycles_momentum() {
    // max_lr 0.1, total 10, pct_start 0.3: initial_lr = 0.1 / 25, min_lr = initial / 1e4;
    // phase 1 ends at float(0.3 * 10) - 1 = 2.0, phase 2 at 9. Cosine anneal:
    // end + (start - end) / 2.0 * (cos(pi * pct) + 1) with pct = (step - start) / (end -
    // start); momentum the same from 0.95 to 0.85 and back. Step 10 (= total) is allowed.
    run_one_group(
        "s = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=10)
g = opt.param_groups[0]
assert g['max_lr'] == 0.1 and g['initial_lr'] == 0.004 and g['min_lr'] == 4e-07
ms = [g['momentum']]
seen = [g['lr']]
for _ in range(10):
    s.step()
    seen.append(g['lr'])
    ms.append(g['momentum'])
assert seen == [0.0040000000000000036, 0.052000000000000005, 0.1, 0.09504846320134738, 0.0811745653949763, 0.06112620219362893, 0.03887419780637107, 0.0188258346050237, 0.004951936798652629, 4e-07, 0.004951936798652624]
assert ms == [0.95, 0.8999999999999999, 0.85, 0.854951556604879, 0.8688255099070633, 0.8888739533021842, 0.9111260466978157, 0.9311744900929366, 0.945048443395121, 0.95, 0.945048443395121]
assert s.total_steps == 10
assert s._schedule_phases[0]['end_step'] == 2.0
",
    );
}

#[test]
fn one_cycle_linear_with_adam_cycles_beta1_and_three_phase() {
    // Linear anneal (end - start) * pct + start; pct_start 0.5 of 6 steps: phase 1 ends at
    // 2.0. betas[0] cycles, betas[1] stays. Three phases (max_lr 1.0, pct 0.3, 10 steps):
    // up to 2.0, down to initial_lr by float(2 * 0.3 * 10) - 2 = 4.0, then to min_lr at 9.
    ok("w = torch.zeros(4, device='cuda', requires_grad=True)
opt = torch.optim.Adam([w], lr=0.1)
s = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.01, epochs=2, steps_per_epoch=3, pct_start=0.5, anneal_strategy='linear')
g = opt.param_groups[0]
seen = [g['lr']]
b1 = [g['betas'][0]]
for _ in range(6):
    s.step()
    seen.append(g['lr'])
    b1.append(g['betas'][0])
    assert g['betas'][1] == 0.999
assert seen == [0.0004, 0.005200000000000001, 0.01, 0.00666668, 0.0033333600000000005, 3.999999999976245e-08, -0.0033332799999999992]
assert b1 == [0.95, 0.8999999999999999, 0.85, 0.8833333333333333, 0.9166666666666666, 0.95, 0.9833333333333333]
opt2 = torch.optim.SGD([w], lr=0.1)
s = torch.optim.lr_scheduler.OneCycleLR(opt2, max_lr=1.0, total_steps=10, three_phase=True, cycle_momentum=False)
seen = [opt2.param_groups[0]['lr']]
for _ in range(10):
    s.step()
    seen.append(opt2.param_groups[0]['lr'])
assert seen == [0.040000000000000036, 0.52, 1.0, 0.52, 0.04, 0.0361807218535102, 0.0261817218535102, 0.013822278146489805, 0.0038232781464898036, 4e-06, 0.0038232781464897993]
");
}

#[test]
fn one_cycle_errors_are_pytorchs() {
    let setup = "w = torch.zeros(4, device='cuda', requires_grad=True)
opt = torch.optim.SGD([w], lr=0.1, momentum=0.9)
";
    let e = fails(&format!(
        "{setup}s = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1)\n"
    ));
    assert!(
        e.contains(
            "ValueError: You must define either total_steps OR (epochs AND steps_per_epoch)"
        ),
        "{e}"
    );
    let e = fails(&format!(
        "{setup}s = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=2)
for _ in range(3):
    s.step()
"
    ));
    assert!(
        e.contains("ValueError: Tried to step 3 times. The specified number of total steps is 2"),
        "{e}"
    );
    let e = fails(&format!(
        "{setup}s = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=5, anneal_strategy='exp')\n"
    ));
    assert!(
        e.contains("anneal_strategy must be one of 'cos' or 'linear', instead got exp"),
        "{e}"
    );
    let e = fails(&format!(
        "{setup}s = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=[0.1, 0.2], total_steps=5)\n"
    ));
    assert!(
        e.contains("max_lr must have the same length as optimizer.param_groups. max_lr has 2 values, param_groups has 1."),
        "{e}"
    );
    let e = fails(
        "w = torch.zeros(4, device='cuda', requires_grad=True)
opt = torch.optim.Adagrad([w], lr=0.1)
s = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=5)
",
    );
    assert!(
        e.contains("optimizer must support momentum or beta1 with `cycle_momentum` option enabled"),
        "{e}"
    );
}

#[test]
fn reduce_on_plateau_waits_patience_then_cools_down() {
    // mode min, rel threshold 1e-4: better when metric < best * (1 - 1e-4). patience 1:
    // the second bad epoch in a row reduces lr (0.1 * 0.5); cooldown 1 then ignores the
    // next epoch's bad count. min_lr 0.03 stops 0.05 * 0.5 = 0.025 at 0.03.
    run_one_group(
        "s = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=0.5, patience=1, cooldown=1, min_lr=0.03)
assert s.best == s.mode_worse and s.mode_worse > 1e308
seen = []
for metric in [1.0, 0.5, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6]:
    s.step(metric)
    seen.append(opt.param_groups[0]['lr'])
assert seen == [0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.03, 0.03, 0.03]
assert s.best == 0.5
assert s.last_epoch == 9
assert s.get_last_lr() == [0.03]
assert 'initial_lr' not in opt.param_groups[0]
",
    );
    // max mode, abs threshold: 0.5 is not better than 0.45 + 0.1.
    run_one_group(
        "s = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, 'max', patience=0, threshold=0.1, threshold_mode='abs')
s.step(0.45)
s.step(0.5)
assert opt.param_groups[0]['lr'] == 0.010000000000000002
# A 0-d tensor metric goes through float(t) (the model's tensor values are not PyTorch's).
s.step(torch.tensor(0.45))
assert s.last_epoch == 3
",
    );
    let e = fails(&format!(
        "{ONE_GROUP}s = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, mode='lowest')\n"
    ));
    assert!(e.contains("ValueError: mode lowest is unknown!"), "{e}");
    let e = fails(&format!(
        "{ONE_GROUP}s = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=1.0)\n"
    ));
    assert!(e.contains("ValueError: Factor should be < 1.0."), "{e}");
    let e = fails(&format!(
        "{ONE_GROUP}s = torch.optim.lr_scheduler.ReduceLROnPlateau(opt)\ns.step()\n"
    ));
    assert!(
        e.contains("missing 1 required positional argument: 'metrics'"),
        "{e}"
    );
}

#[test]
fn state_dict_holds_every_attribute_but_the_optimizer_and_the_lambdas() {
    // LambdaLR.state_dict: lr_lambdas is [None] per plain function; a callable object's
    // entry is a copy of its __dict__. load_state_dict updates __dict__ (and the objects').
    run_one_group(
        "class Warmup:
    def __init__(self, n):
        self.n = n
    def __call__(self, e):
        return min(1.0, (e + 1) / self.n)
s = torch.optim.lr_scheduler.LambdaLR(opt, Warmup(4))
rates(s, 2)
sd = s.state_dict()
assert 'optimizer' not in sd
assert sd['last_epoch'] == 2 and sd['_step_count'] == 3
assert sd['base_lrs'] == [0.1]
assert sd['_last_lr'] is s._last_lr
assert sd['lr_lambdas'] == [{'n': 4}]
s2 = torch.optim.lr_scheduler.LambdaLR(opt, lambda e: 1.0)
assert s2.state_dict()['lr_lambdas'] == [None]
s3 = torch.optim.lr_scheduler.LambdaLR(opt, Warmup(10))
s3.load_state_dict(sd)
assert s3.last_epoch == 2
assert s3.lr_lambdas[0].n == 4
s3.step()
assert opt.param_groups[0]['lr'] == 0.1
s = torch.optim.lr_scheduler.StepLR(opt, step_size=3)
sd = s.state_dict()
assert sorted(sd.keys()) == ['_get_lr_called_within_step', '_is_initial', '_last_lr', '_step_count', 'base_lrs', 'gamma', 'last_epoch', 'step_size']
",
    );
}

#[test]
fn get_last_lr_is_the_kept_list_and_each_step_makes_a_new_one() {
    // `get_last_lr()` returns `self._last_lr` itself; `_update_lr` rebinds it to a new list
    // comprehension each step (the old list dies unless someone holds it).
    run_one_group(
        "s = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
a = s.get_last_lr()
assert a is s.get_last_lr()
s.step()
b = s.get_last_lr()
assert a is not b
assert a == [0.1] and b == [0.05]
",
    );
}

#[test]
fn resuming_needs_initial_lr_and_unknown_keywords_are_located() {
    let e = fails(&format!(
        "{ONE_GROUP}s = torch.optim.lr_scheduler.StepLR(opt, step_size=3, last_epoch=5)\n"
    ));
    assert!(
        e.contains("KeyError: \"param 'initial_lr' is not specified in param_groups[0] when resuming an optimizer\""),
        "{e}"
    );
    let e = fails(&format!(
        "{ONE_GROUP}s = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=3, bogus=1)\n"
    ));
    assert!(e.contains("bogus"), "{e}");
    // The workload's line 10 (after the 9 setup lines): the scenario's line 14.
    assert!(e.starts_with("t.yaml:14:"), "{e}");
    let e = fails(&format!(
        "{ONE_GROUP}s = torch.optim.lr_scheduler.StepLR(w, step_size=3)\n"
    ));
    assert!(e.contains("is not an Optimizer"), "{e}");
    let e = fails(&format!(
        "{ONE_GROUP}s = torch.optim.lr_scheduler.LinearLR(opt, start_factor=0)\n"
    ));
    assert!(
        e.contains(
            "Starting multiplicative factor expected to be greater than 0 and less or equal to 1."
        ),
        "{e}"
    );
}

#[test]
fn a_scheduler_holds_its_optimizer_until_it_goes() {
    // The scheduler's `optimizer` attribute keeps the optimizer, its groups and through
    // them the parameter: dropping the workload's own names frees nothing; dropping the
    // scheduler frees it all by reference counting (no cycle, no collection needed).
    for construct in [
        "torch.optim.lr_scheduler.StepLR(opt, 2)",
        "torch.optim.lr_scheduler.LambdaLR(opt, lambda e: 1.0)",
        "torch.optim.lr_scheduler.OneCycleLR(opt, 0.1, total_steps=5)",
        "torch.optim.lr_scheduler.CosineAnnealingLR(opt, 5)",
        "torch.optim.lr_scheduler.ReduceLROnPlateau(opt)",
        "torch.optim.lr_scheduler.MultiplicativeLR(opt, [lambda e: 0.9])",
    ] {
        ok(&format!(
            "import gc
gc.disable()
w = torch.zeros(1024 * 1024, device='cuda', requires_grad=True)
opt = torch.optim.SGD([w], lr=0.1, momentum=0.9)
s = {construct}
for _ in range(3):
    if isinstance(s, torch.optim.lr_scheduler.ReduceLROnPlateau):
        s.step(1.0)
    else:
        s.step()
kept = s.get_last_lr()
del w, opt
assert torch.cuda.memory_allocated() == 4 * 1024 * 1024
del s
assert torch.cuda.memory_allocated() == 0
assert len(kept) == 1
"
        ));
    }
}

#[test]
fn sequential_lr_switches_scheduler_at_each_milestone() {
    // SequentialLR(ConstantLR(0.1, total_iters=2), ExponentialLR(0.9), milestones=[2]), lr
    // 0.05: each member's construction stepped once; SequentialLR resets lr to initial_lr,
    // undoes those steps (last_epoch - 1) and re-runs the first one's initial step: 0.05 *
    // 0.1. Step 1: ConstantLR epoch 1 (unchanged). Step 2 = milestone: ExponentialLR
    // `_update_lr(0)`, its closed form 0.05 * 0.9 ** 0. Then lr * 0.9 per step.
    ok("w = torch.zeros(4, device='cuda', requires_grad=True)
opt = torch.optim.SGD([w], lr=0.05)
a = torch.optim.lr_scheduler.ConstantLR(opt, factor=0.1, total_iters=2)
b = torch.optim.lr_scheduler.ExponentialLR(opt, gamma=0.9)
scheds = [a, b]
s = torch.optim.lr_scheduler.SequentialLR(opt, schedulers=scheds, milestones=[2])
assert s._schedulers is scheds
seen = [opt.param_groups[0]['lr']]
for _ in range(4):
    s.step()
    seen.append(opt.param_groups[0]['lr'])
assert seen == [0.005000000000000001, 0.005000000000000001, 0.05, 0.045000000000000005, 0.04050000000000001]
assert s.last_epoch == 4
assert s.get_last_lr() is b.get_last_lr()
sd = s.state_dict()
assert sd['_milestones'] == [2]
assert sd['_schedulers'][1]['last_epoch'] == 2
assert 'optimizer' not in sd
");
}

#[test]
fn chained_scheduler_steps_every_member() {
    // ChainedScheduler([ConstantLR(0.1, 2), ExponentialLR(0.9)]): each step runs both in
    // order. Init 0.05 * 0.1; step 1: * 0.9; step 2: * (1.0 / 0.1) then * 0.9; step 3: * 0.9.
    ok("w = torch.zeros(4, device='cuda', requires_grad=True)
opt = torch.optim.SGD([w], lr=0.05)
c = torch.optim.lr_scheduler.ChainedScheduler([torch.optim.lr_scheduler.ConstantLR(opt, factor=0.1, total_iters=2), torch.optim.lr_scheduler.ExponentialLR(opt, gamma=0.9)])
seen = [opt.param_groups[0]['lr']]
for _ in range(3):
    c.step()
    seen.append(opt.param_groups[0]['lr'])
assert seen == [0.005000000000000001, 0.004500000000000001, 0.040500000000000015, 0.03645000000000002]
assert c.get_last_lr() == [0.03645000000000002]
sd = c.state_dict()
assert len(sd['_schedulers']) == 2
c.load_state_dict(sd)
");
    let e = fails(
        "w = torch.zeros(4, device='cuda', requires_grad=True)
opt = torch.optim.SGD([w], lr=0.05)
p = torch.optim.lr_scheduler.ReduceLROnPlateau(opt)
c = torch.optim.lr_scheduler.ChainedScheduler([p])
",
    );
    assert!(
        e.contains("ChainedScheduler does not support `ReduceLROnPlateau` scheduler"),
        "{e}"
    );
    let e = fails(
        "w = torch.zeros(4, device='cuda', requires_grad=True)
opt = torch.optim.SGD([w], lr=0.05)
a = torch.optim.lr_scheduler.ConstantLR(opt)
s = torch.optim.lr_scheduler.SequentialLR(opt, [a], milestones=[3])
",
    );
    assert!(
        e.contains("expects number of schedulers provided to be one more than the number of milestone points"),
        "{e}"
    );
}

#[test]
fn cyclic_lr_triangular_cycles_lr_and_momentum() {
    // CyclicLR.get_lr (torch/optim/lr_scheduler.py, pytorch 008f727): cycle = floor(1 + t /
    // total_size), x = 1.0 + t / total_size - cycle, scale = x / step_ratio while rising,
    // else (x - 1) / (step_ratio - 1); lr = base + (max - base) * scale * scale_fn(cycle);
    // momentum = max_m - (max_m - base_m) * scale * scale_fn(cycle). step_size_up=2,
    // step_size_down=4: total 6.0, ratio 1/3. Figures: those formulas in CPython 3.11.
    run_one_group(
        "s = torch.optim.lr_scheduler.CyclicLR(opt, base_lr=0.01, max_lr=0.1, step_size_up=2, step_size_down=4)
moms = [opt.param_groups[0]['momentum']]
seen = [opt.param_groups[0]['lr']]
for _ in range(8):
    opt.step()
    s.step()
    seen.append(opt.param_groups[0]['lr'])
    moms.append(opt.param_groups[0]['momentum'])
assert seen == [0.01, 0.05500000000000003, 0.09999999999999999, 0.0775, 0.055000000000000014, 0.03249999999999998, 0.01, 0.05500000000000009, 0.09999999999999992], seen
assert moms == [0.9, 0.85, 0.8, 0.8250000000000001, 0.85, 0.875, 0.9, 0.85, 0.8000000000000002], moms
assert s.base_lrs == [0.01] and s.max_lrs == [0.1]
assert s.total_size == 6.0 and s.step_ratio == 1 / 3
assert s.scale_mode == 'cycle' and s.use_beta1 == False
assert s.base_momentums == [0.8] and s.max_momentums == [0.9]
assert opt.param_groups[0]['initial_lr'] == 0.01
assert opt.param_groups[0]['max_momentum'] == 0.9 and opt.param_groups[0]['base_momentum'] == 0.8
",
    );
}

#[test]
fn cyclic_lr_triangular2_halves_and_exp_range_scales_by_iteration() {
    // triangular2: scale_fn(cycle) = 1 / (2.0 ** (cycle - 1)); exp_range: a partial of
    // gamma ** t with scale_mode 'iterations'. Adam: betas[0] is cycled (a new tuple).
    run_one_group(
        "s = torch.optim.lr_scheduler.CyclicLR(opt, 0.01, 0.1, step_size_up=2, mode='triangular2')
assert rates(s, 9) == [0.01, 0.05500000000000001, 0.1, 0.05500000000000001, 0.01, 0.0325, 0.05500000000000001, 0.0325, 0.01, 0.02125]
opt2 = torch.optim.Adam([w], lr=0.1, betas=(0.9, 0.99))
s = torch.optim.lr_scheduler.CyclicLR(opt2, 0.01, 0.1, step_size_up=2, mode='exp_range', gamma=0.5)
assert s.scale_mode == 'iterations' and s.use_beta1
seen = [opt2.param_groups[0]['lr']]
betas = [opt2.param_groups[0]['betas']]
for _ in range(5):
    s.step()
    seen.append(opt2.param_groups[0]['lr'])
    betas.append(opt2.param_groups[0]['betas'])
assert seen == [0.01, 0.0325, 0.0325, 0.015625, 0.01, 0.01140625], seen
assert [b[0] for b in betas] == [0.9, 0.875, 0.875, 0.89375, 0.9, 0.8984375]
assert all(b[1] == 0.99 for b in betas)
",
    );
}

#[test]
fn cyclic_lr_custom_scale_fn_state_dict_and_errors() {
    // A custom scale_fn is called with the cycle number (scale_mode 'cycle') once per
    // group for the rate and once for the momentum; state_dict() leaves out the optimizer
    // and `_scale_fn_ref`, saves `_scale_fn_custom` (moved last) as None for a function;
    // load_state_dict pops that key from the dict it is given.
    run_one_group(
        "calls = []
def half(c):
    calls.append(c)
    return 0.5
s = torch.optim.lr_scheduler.CyclicLR(opt, 0.0, 0.2, step_size_up=1, scale_fn=half)
assert calls == [1, 1]
s.step()
assert opt.param_groups[0]['lr'] == 0.1
assert calls == [1, 1, 1, 1]
assert not hasattr(s, '_scale_fn_ref')
sd = s.state_dict()
keys = list(sd)
assert keys[-1] == '_scale_fn_custom' and sd['_scale_fn_custom'] is None
assert 'optimizer' not in sd and '_scale_fn_ref' not in sd
assert sd['last_epoch'] == 1
s2 = torch.optim.lr_scheduler.CyclicLR(opt, 0.0, 0.2, step_size_up=1)
s2.load_state_dict(sd)
assert '_scale_fn_custom' not in sd
assert s2.last_epoch == 1 and s2._scale_fn_custom is None
",
    );
    let e = fails(&format!(
        "{ONE_GROUP}s = torch.optim.lr_scheduler.CyclicLR(opt, 0.01, 0.1, mode='square')\n"
    ));
    assert!(
        e.contains("ValueError: mode is invalid and scale_fn is None"),
        "{e}"
    );
    let e = fails(
        "w = torch.zeros(4, device='cuda', requires_grad=True)
opt = torch.optim.Adagrad([w], lr=0.1)
s = torch.optim.lr_scheduler.CyclicLR(opt, 0.01, 0.1)
",
    );
    assert!(
        e.contains("optimizer must support momentum or beta1 with `cycle_momentum` option enabled"),
        "{e}"
    );
}

#[test]
fn cyclic_lr_initial_step_uses_an_existing_initial_lr() {
    // `LRScheduler.__init__` runs the initial step with base_lrs = the groups'
    // `initial_lr` (setdefault keeps one left by an earlier scheduler); CyclicLR replaces
    // base_lrs by its own base_lr only afterwards, so the first rate is the old
    // initial_lr (0.1), the next ones use base_lr 0.01.
    run_one_group(
        "first = torch.optim.lr_scheduler.StepLR(opt, 10)
s = torch.optim.lr_scheduler.CyclicLR(opt, 0.01, 0.1, step_size_up=2, cycle_momentum=False)
assert opt.param_groups[0]['lr'] == 0.1
assert s.base_lrs == [0.01]
s.step()
assert opt.param_groups[0]['lr'] == 0.05500000000000001
",
    );
}

#[test]
fn polynomial_lr_decays_by_the_chainable_factor_and_closed_form() {
    // get_lr: lr * ((1.0 - t / T) / (1.0 - (t - 1) / T)) ** power until t > T; closed
    // form (step(epoch)): base * (1.0 - min(T, t) / T) ** power. T=4, power=2.0.
    run_one_group(
        "s = torch.optim.lr_scheduler.PolynomialLR(opt, total_iters=4, power=2.0)
assert rates(s, 6) == [0.1, 0.05625, 0.024999999999999998, 0.0062499999999999995, 0.0, 0.0, 0.0]
assert s.total_iters == 4 and s.power == 2.0
opt.param_groups[0]['lr'] = 0.1
s = torch.optim.lr_scheduler.PolynomialLR(opt, total_iters=4, power=2.0)
s.step(1)
assert opt.param_groups[0]['lr'] == 0.05625
s.step(3)
assert opt.param_groups[0]['lr'] == 0.00625
s.step(7)
assert opt.param_groups[0]['lr'] == 0.0
sd = s.state_dict()
assert sd['total_iters'] == 4 and sd['power'] == 2.0 and sd['last_epoch'] == 7
",
    );
}

#[test]
fn cosine_warm_restarts_restart_grow_and_take_fractional_epochs() {
    // step(): T_cur += 1; at T_cur >= T_i: T_cur %= T_i, T_i *= T_mult; lr = eta_min +
    // (base - eta_min) * (1 + cos(pi * T_cur / T_i)) / 2. Its own step never touches
    // _step_count. step(epoch): T_mult > 1: n = int(log(epoch / T_0 * (T_mult - 1) + 1,
    // T_mult)), T_cur = epoch - T_0 * (T_mult ** n - 1) / (T_mult - 1), T_i = T_0 *
    // T_mult ** n; last_epoch = floor(epoch). Figures: CPython 3.11.
    run_one_group(
        "s = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=2, eta_min=0.001)
assert rates(s, 7) == [0.1, 0.0505, 0.1, 0.0855017856687341, 0.0505, 0.0154982143312659, 0.1, 0.0962320368593087]
assert (s.T_i, s.T_cur, s.last_epoch, s._step_count) == (8, 1, 7, 0)
s.step(2.5)
assert opt.param_groups[0]['lr'] == 0.0962320368593087
assert (s.T_i, s.T_cur, s.last_epoch) == (4, 0.5, 2)
s.step(7.25)
assert opt.param_groups[0]['lr'] == 0.09415510258524358
assert (s.T_i, s.T_cur, s.last_epoch) == (8, 1.25, 7)
s.step()
assert s.last_epoch == 8 and s.T_cur == 2.25
s = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, 3)
s.step(4.5)
assert opt.param_groups[0]['lr'] == 0.05 and s.T_cur == 1.5
sd = s.state_dict()
assert sd['T_0'] == 3 and sd['T_mult'] == 1 and sd['T_cur'] == 1.5 and 'optimizer' not in sd
",
    );
    for (args, message) in [
        (
            "T_0=0",
            "ValueError: Expected positive integer T_0, but got 0",
        ),
        (
            "T_0=2.5",
            "ValueError: Expected positive integer T_0, but got 2.5",
        ),
        (
            "2, T_mult=0",
            "ValueError: Expected integer T_mult >= 1, but got 0",
        ),
        (
            "2, eta_min='a'",
            "ValueError: Expected float or int eta_min, but got a of type <class 'str'>",
        ),
    ] {
        let e = fails(&format!(
            "{ONE_GROUP}s = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, {args})\n"
        ));
        assert!(e.contains(message), "{args}: {e}");
    }
    let e = fails(&format!(
        "{ONE_GROUP}s = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, 2)\ns.step(-1)\n"
    ));
    assert!(
        e.contains("ValueError: Expected non-negative epoch, but got -1"),
        "{e}"
    );
}

#[test]
fn new_schedulers_hold_their_optimizer_and_free_without_a_collection() {
    // In the source read (pytorch 008f727) `_scale_fn_ref` is a static function or a
    // partial of one: no bound method of the scheduler, no cycle; dropping any of these
    // schedulers frees the optimizer and its parameter by reference counting.
    for construct in [
        "torch.optim.lr_scheduler.CyclicLR(opt, 0.01, 0.1, step_size_up=2)",
        "torch.optim.lr_scheduler.CyclicLR(opt, 0.01, 0.1, mode='exp_range', gamma=0.9)",
        "torch.optim.lr_scheduler.PolynomialLR(opt, 4)",
        "torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, 2)",
    ] {
        ok(&format!(
            "import gc
gc.disable()
w = torch.zeros(1024 * 1024, device='cuda', requires_grad=True)
opt = torch.optim.SGD([w], lr=0.1, momentum=0.9)
s = {construct}
for _ in range(3):
    s.step()
del w, opt
assert torch.cuda.memory_allocated() == 4 * 1024 * 1024
del s
assert torch.cuda.memory_allocated() == 0
"
        ));
    }
}

/// Runs a workload (CPython 3.11, modelled H100) and returns its timeline, to read the
/// warnings the model records among its approximations.
fn timeline_of(workload: &str) -> gpumem_harness::timeline::Timeline {
    let body: String = workload.lines().map(|l| format!("  {l}\n")).collect();
    let text = format!("name: t\ndevice: h100-80gb\npython: \"3.11\"\nworkload: |\n{body}");
    let s = gpumem_harness::scenario::parse(&text, "t.yaml").expect("scenario parses");
    let v = s.variants().into_iter().next().expect("one variant");
    gpumem_harness::run::run_variant(&s, &v).unwrap_or_else(|e| panic!("{e}"))
}

fn warned(t: &gpumem_harness::timeline::Timeline, needle: &str) -> usize {
    t.approximations
        .iter()
        .filter(|n| n.contains(needle))
        .count()
}

const ORDER: &str = "Detected call of `lr_scheduler.step()` before `optimizer.step()`";
const OVERRIDDEN: &str = "Seems like `optimizer.step()` has been overridden";

#[test]
fn the_first_scheduler_wraps_optimizer_step_and_later_ones_reuse_the_wrapper() {
    // LRScheduler.__init__ (pytorch 008f727, patch_track_step_called): the first scheduler
    // on an optimizer stores a `wrapper` function in the optimizer's __dict__ (closure of
    // two cells: the class's step and a weakref.ref to the optimizer; its __dict__ from
    // functools.wraps): lasting GC objects, of which the wrapper, its two cells and the
    // weak reference always count (the closure tuple and the dict may come from CPython's
    // free lists, which do not count them). A scheduler rebuilt each epoch finds
    // `_wrapped_by_lr_sched` and keeps nothing new; each wrapped step sets `_opt_called`.
    ok(&format!(
        "{ONE_GROUP}import gc
gc.disable()
assert not hasattr(opt, '_opt_called')
def build():
    s = torch.optim.lr_scheduler.StepLR(opt, 2)
    del s
c0 = gc.get_count()[0]
build()
c1 = gc.get_count()[0]
wrapper = opt.step
build()
assert opt.step is wrapper
c2 = gc.get_count()[0]
build()
c3 = gc.get_count()[0]
assert c1 - c0 >= c2 - c1 + 4, f'{{c0}} {{c1}} {{c2}} {{c3}}'
assert c3 - c2 == c2 - c1
opt.step()
assert opt._opt_called is True
"
    ));
}

#[test]
fn the_step_wrapper_holds_the_optimizer_weakly() {
    // The wrapper reaches the optimizer through `opt_ref = weakref.ref(optimizer)`: the
    // optimizer -> __dict__ -> wrapper chain makes no cycle, so dropping the optimizer
    // frees it and its parameter by reference counting, with the collector off.
    ok("import gc, weakref
gc.disable()
w = torch.zeros(1024 * 1024, device='cuda', requires_grad=True)
opt = torch.optim.SGD([w], lr=0.1, momentum=0.9)
s = torch.optim.lr_scheduler.StepLR(opt, 2)
w.grad = torch.ones_like(w)
opt.step()
s.step()
r = weakref.ref(opt)
del s, w
assert torch.cuda.memory_allocated() == 3 * 4 * 1024 * 1024
del opt
assert r() is None
assert torch.cuda.memory_allocated() == 0
");
}

#[test]
fn stepping_the_scheduler_before_the_optimizer_warns_once() {
    // LRScheduler.step at _step_count == 1: the optimizer has not stepped through the
    // wrapper (`_opt_called` unset) -> the order warning; the `default` warnings filter
    // prints it once per process.
    let t = timeline_of(&format!(
        "{ONE_GROUP}s = torch.optim.lr_scheduler.StepLR(opt, 2)
s.step()
s2 = torch.optim.lr_scheduler.StepLR(opt, 2)
s2.step()
"
    ));
    assert_eq!(warned(&t, ORDER), 1, "{:?}", t.approximations);
    let t = timeline_of(&format!(
        "{ONE_GROUP}s = torch.optim.lr_scheduler.StepLR(opt, 2)
opt.step()
s.step()
s.step()
"
    ));
    assert_eq!(warned(&t, ORDER), 0, "{:?}", t.approximations);
    // `_opt_called` lives on the optimizer: a scheduler rebuilt after the optimizer has
    // stepped does not warn even if it steps first.
    let t = timeline_of(&format!(
        "{ONE_GROUP}s = torch.optim.lr_scheduler.StepLR(opt, 2)
opt.step()
s = torch.optim.lr_scheduler.StepLR(opt, 2)
s.step()
"
    ));
    assert_eq!(warned(&t, ORDER), 0, "{:?}", t.approximations);
    // Replacing `opt.step` after the scheduler was built gives the other warning.
    let t = timeline_of(&format!(
        "{ONE_GROUP}s = torch.optim.lr_scheduler.StepLR(opt, 2)
opt.step = lambda: None
opt.step()
s.step()
"
    ));
    assert_eq!(warned(&t, OVERRIDDEN), 1, "{:?}", t.approximations);
    assert_eq!(warned(&t, ORDER), 0, "{:?}", t.approximations);
}

#[test]
fn step_with_an_epoch_gives_the_deprecation_warning_once_per_site() {
    // LRScheduler.step and ReduceLROnPlateau.step warn EPOCH_DEPRECATION_WARNING when an
    // epoch is given (each from its own line: the default filter prints each once);
    // CosineAnnealingWarmRestarts.step replaces LRScheduler.step and does not warn.
    let needle = "The epoch parameter in `scheduler.step()` was not necessary";
    let t = timeline_of(&format!(
        "{ONE_GROUP}s = torch.optim.lr_scheduler.StepLR(opt, 2)
opt.step()
s.step()
s.step(3)
s.step(4)
p = torch.optim.lr_scheduler.ReduceLROnPlateau(opt)
p.step(1.0, 5)
"
    ));
    assert_eq!(warned(&t, needle), 2, "{:?}", t.approximations);
    let t = timeline_of(&format!(
        "{ONE_GROUP}s = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, 2)
opt.step()
s.step(1.5)
s2 = torch.optim.lr_scheduler.StepLR(opt, 2)
s2.step()
"
    ));
    assert_eq!(warned(&t, needle), 0, "{:?}", t.approximations);
}
