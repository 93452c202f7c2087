//! Optimizers in the workload model: `state_dict()` / `load_state_dict()` and
//! `copy.deepcopy`, the per-parameter state each optimizer creates, and the step's
//! temporaries, checked with `torch.cuda.memory_allocated()` and `max_memory_allocated()`.

mod workload_runner;
use workload_runner::{ok, run};

fn fails_with(workload: &str, needle: &str) {
    match run(workload) {
        Ok(()) => panic!("expected an error containing {needle:?}"),
        Err(e) => assert!(e.contains(needle), "{e}"),
    }
}

/// One 4 MiB parameter with a gradient, and an Adam optimizer on it.
const ADAM: &str = "import copy
M = 1024 * 1024
w = torch.zeros(M, device='cuda', requires_grad=True)
w.grad = torch.zeros(M, device='cuda')
opt = torch.optim.Adam([w], lr=0.1)
opt.step()
base = torch.cuda.memory_allocated()
";

#[test]
fn state_dict_snapshots_share_the_live_state_tensors() {
    ok(&format!(
        "{ADAM}kept = []
for epoch in range(5):
    opt.step()
    kept.append(opt.state_dict())
assert torch.cuda.memory_allocated() == base
assert kept[0]['state'][0]['exp_avg'] is kept[4]['state'][0]['exp_avg']
assert kept[0]['state'][0] is kept[1]['state'][0]
assert kept[0] is not kept[1]
assert kept[0]['param_groups'][0]['params'] == [0]
"
    ));
}

#[test]
fn deepcopy_of_a_state_dict_copies_every_state_tensor() {
    ok(&format!(
        "{ADAM}best = []
for epoch in range(3):
    opt.step()
    best.append(copy.deepcopy(opt.state_dict()))
# exp_avg and exp_avg_sq (4 MiB each) per copy; `step` is a CPU tensor.
assert torch.cuda.memory_allocated() - base == 3 * 8 * M
assert best[0]['state'][0]['exp_avg'] is not best[1]['state'][0]['exp_avg']
best = None
assert torch.cuda.memory_allocated() == base
"
    ));
}

#[test]
fn load_state_dict_on_the_same_device_shares_the_loaded_tensors_and_frees_the_old_state() {
    ok(&format!(
        "{ADAM}snapshot = copy.deepcopy(opt.state_dict())
assert torch.cuda.memory_allocated() - base == 8 * M
opt.load_state_dict(snapshot)
# The optimizer now holds the snapshot's tensors; its own old state was freed.
assert torch.cuda.memory_allocated() - base == 8 * M - 8 * M
assert opt.state_dict()['state'][0]['exp_avg'] is snapshot['state'][0]['exp_avg']
snapshot = None
assert torch.cuda.memory_allocated() == base
opt.step()
assert torch.cuda.memory_allocated() == base
"
    ));
}

#[test]
fn load_state_dict_of_cpu_state_allocates_device_copies() {
    ok(&format!(
        "{ADAM}cpu_state = {{'state': {{0: {{'step': torch.tensor(3.0), 'exp_avg': torch.zeros(M), 'exp_avg_sq': torch.zeros(M)}}}}, 'param_groups': [{{'lr': 0.1, 'params': [0]}}]}}
opt.load_state_dict(cpu_state)
# The old device state (8 MiB) is freed, new device copies of the CPU tensors take its place.
assert torch.cuda.memory_allocated() == base
assert opt.state_dict()['state'][0]['exp_avg'] is not cpu_state['state'][0]['exp_avg']
assert opt.state_dict()['state'][0]['step'] is cpu_state['state'][0]['step']
cpu_state = None
assert torch.cuda.memory_allocated() == base
"
    ));
}

#[test]
fn load_state_dict_refuses_a_group_of_another_size() {
    fails_with(
        &format!(
            "{ADAM}sd = opt.state_dict()
sd['param_groups'][0]['params'] = [0, 1]
opt.load_state_dict(sd)
"
        ),
        "doesn't match the size of optimizer's group",
    );
}

#[test]
fn deepcopy_copies_a_views_whole_storage_once_and_refuses_non_leaves() {
    ok("import copy
M = 1024 * 1024
base = torch.zeros(4 * M, device='cuda')
a = base[:M]
b = base[M:2 * M]
start = torch.cuda.memory_allocated()
pair = copy.deepcopy([a, b])
# Both views point into one storage: one 16 MiB copy, shared by the two copies.
assert torch.cuda.memory_allocated() - start == 16 * M
pair = None
assert torch.cuda.memory_allocated() == start
");
    fails_with(
        "import copy
x = torch.zeros(4, device='cuda', requires_grad=True)
y = x * 2.0
z = copy.deepcopy(y)
",
        "Only Tensors created explicitly by the user (graph leaves)",
    );
}

#[test]
fn deepcopy_of_a_model_copies_parameters_but_not_their_gradients() {
    ok("import copy
M = 1024 * 1024
model = torch.nn.Linear(1024, 1024, bias=False, device='cuda')
model(torch.zeros(1, 1024, device='cuda')).sum().backward()
start = torch.cuda.memory_allocated()
best = copy.deepcopy(model)
# `Parameter.__deepcopy__` clones the data and leaves `.grad` behind.
assert torch.cuda.memory_allocated() - start == 4 * M
assert best.weight is not model.weight
assert best.weight.grad is None
y = best(torch.zeros(1, 1024, device='cuda'))
");
}

/// Four 4 MiB parameters with gradients; `OPT` is replaced by the optimizer expression.
const FOUR_PARAMS: &str = "M = 1024 * 1024
ps = [torch.zeros(M, device='cuda', requires_grad=True) for i in range(4)]
for p in ps:
    p.grad = torch.zeros(M, device='cuda')
before_opt = torch.cuda.memory_allocated()
";

/// The device bytes of state after the first step, and the peak above the steady level
/// during a later step, for one optimizer construction.
fn state_and_step_peak(construct: &str, state_mib: f64, peak_mib: f64) {
    ok(&format!(
        "{FOUR_PARAMS}opt = {construct}
opt.step()
state = torch.cuda.memory_allocated() - before_opt
assert state == {state} * M / 1, (state, {state} * M)
steady = torch.cuda.memory_allocated()
torch.cuda.reset_peak_memory_stats()
opt.step()
peak = torch.cuda.max_memory_allocated() - steady
assert peak == {peak} * M / 1, (peak, {peak} * M)
assert torch.cuda.memory_allocated() == steady
",
        state = state_mib,
        peak = peak_mib,
    ));
}

#[test]
fn adam_state_and_its_foreach_denominator() {
    // exp_avg + exp_avg_sq per parameter; `_foreach_sqrt(exp_avg_sqs)` for all four at once.
    state_and_step_peak("torch.optim.Adam(ps, lr=0.1)", 32.0, 16.0);
    // amsgrad adds `max_exp_avg_sq`; the denominator is built from it (same size).
    state_and_step_peak("torch.optim.Adam(ps, amsgrad=True)", 48.0, 16.0);
    // Weight decay's new gradient list is deleted before the denominator is built.
    state_and_step_peak("torch.optim.Adam(ps, weight_decay=0.01)", 32.0, 16.0);
    // AdamW decays the parameters in place.
    state_and_step_peak("torch.optim.AdamW(ps, weight_decay=0.01)", 32.0, 16.0);
}

#[test]
fn foreach_false_and_fused_change_the_step_peak() {
    // The single-tensor path: `sqrt` and `denom` of one parameter at a time.
    state_and_step_peak("torch.optim.Adam(ps, foreach=False)", 32.0, 8.0);
    // One fused kernel: no temporaries; `step` lives on the device (512-byte blocks).
    state_and_step_peak(
        "torch.optim.Adam(ps, fused=True)",
        32.0 + 4.0 * 512.0 / (1024.0 * 1024.0),
        0.0,
    );
    // `differentiable=True` disables foreach.
    state_and_step_peak("torch.optim.Adam(ps, differentiable=True)", 32.0, 8.0);
}

#[test]
fn capturable_adam_keeps_step_on_the_device_and_builds_bias_corrections_there() {
    let block = 4.0 * 512.0 / (1024.0 * 1024.0);
    state_and_step_peak(
        "torch.optim.Adam(ps, capturable=True)",
        32.0 + block,
        16.0 + 2.0 * block,
    );
}

#[test]
fn sgd_temporaries_follow_weight_decay_and_maximize() {
    state_and_step_peak("torch.optim.SGD(ps, lr=0.1)", 0.0, 0.0);
    state_and_step_peak("torch.optim.SGD(ps, lr=0.1, momentum=0.9)", 16.0, 0.0);
    state_and_step_peak("torch.optim.SGD(ps, lr=0.1, weight_decay=0.1)", 0.0, 16.0);
    state_and_step_peak("torch.optim.SGD(ps, lr=0.1, maximize=True)", 0.0, 16.0);
}

#[test]
fn rmsprop_state_is_lazy_and_follows_momentum_and_centered() {
    ok(&format!(
        "{FOUR_PARAMS}opt = torch.optim.RMSprop(ps, lr=0.01)
assert torch.cuda.memory_allocated() == before_opt
"
    ));
    state_and_step_peak("torch.optim.RMSprop(ps, lr=0.01)", 16.0, 16.0);
    state_and_step_peak(
        "torch.optim.RMSprop(ps, lr=0.01, momentum=0.9, centered=True)",
        48.0,
        16.0,
    );
    // The decayed gradients and the denominator are alive together.
    state_and_step_peak("torch.optim.RMSprop(ps, weight_decay=0.1)", 16.0, 32.0);
    fails_with(
        &format!("{FOUR_PARAMS}opt = torch.optim.RMSprop(ps, fused=True)\n"),
        "RMSprop() got an unexpected keyword argument 'fused'",
    );
}

#[test]
fn adagrad_creates_its_sums_at_construction() {
    ok(&format!(
        "{FOUR_PARAMS}opt = torch.optim.Adagrad(ps, lr=0.01, initial_accumulator_value=0.1)
assert torch.cuda.memory_allocated() - before_opt == 16 * M
assert len(opt.state_dict()['state']) == 4
"
    ));
    // `std` and `numerator` lists.
    state_and_step_peak("torch.optim.Adagrad(ps)", 16.0, 32.0);
    // Groups given to the constructor get their sums; one added later has none, and the
    // step fails as PyTorch's does (pytorch/pytorch#53712).
    ok(&format!(
        "{FOUR_PARAMS}opt = torch.optim.Adagrad([{{'params': ps[:1]}}, {{'params': ps[1:2], 'lr': 0.1}}])
assert torch.cuda.memory_allocated() - before_opt == 8 * M
opt.add_param_group({{'params': ps[2:]}})
assert torch.cuda.memory_allocated() - before_opt == 8 * M
assert len(opt.state) == 2
"
    ));
    fails_with(
        &format!(
            "{FOUR_PARAMS}opt = torch.optim.Adagrad(ps[:2])\nopt.add_param_group({{'params': ps[2:]}})\nopt.step()\n"
        ),
        "KeyError: 'sum'",
    );
    // With weight decay the decayed gradients become the numerator: still two lists.
    state_and_step_peak("torch.optim.Adagrad(ps, weight_decay=0.1)", 16.0, 32.0);
}

#[test]
fn load_state_dict_takes_the_saved_groups_capturable_and_moves_step_to_the_device() {
    ok(&format!(
        "{ADAM}sd = copy.deepcopy(opt.state_dict())
sd['param_groups'][0]['capturable'] = True
opt.load_state_dict(sd)
# The snapshot's exp_avg/exp_avg_sq are shared (old state freed); `step` was cast to a
# new 0-d float32 tensor on the device (one 512-byte block).
assert torch.cuda.memory_allocated() - base == 512
assert opt.state_dict()['param_groups'][0]['capturable']
assert opt.state_dict()['state'][0]['step'] is not sd['state'][0]['step']
"
    ));
}

#[test]
fn fused_and_foreach_cannot_both_be_true() {
    fails_with(
        &format!("{FOUR_PARAMS}opt = torch.optim.Adam(ps, fused=True, foreach=True)\n"),
        "`fused` and `foreach` cannot be `True` together",
    );
}

#[test]
fn copy_copy_of_a_tensor_shares_its_storage() {
    ok("import copy
M = 1024 * 1024
t = torch.zeros(M, device='cuda', requires_grad=True)
start = torch.cuda.memory_allocated()
c = copy.copy(t)
assert c is not t
assert c.requires_grad
assert torch.cuda.memory_allocated() == start
t = None
assert torch.cuda.memory_allocated() == start
c = None
assert torch.cuda.memory_allocated() == start - 4 * M
");
}

#[test]
fn two_groups_create_state_and_temporaries_as_each_group_says() {
    // Only the momentum group gets `momentum_buffer`s (2 x 4 MiB); only the decaying group
    // allocates the decayed-gradient list (2 x 4 MiB) during the step.
    state_and_step_peak(
        "torch.optim.SGD([{'params': ps[:2], 'momentum': 0.9}, {'params': ps[2:], 'weight_decay': 0.1}], lr=0.1)",
        8.0,
        8.0,
    );
    // The group that asks for `amsgrad` keeps three tensors per parameter, the other two;
    // each group's foreach denominator is freed before the next group steps.
    state_and_step_peak(
        "torch.optim.Adam([{'params': ps[:2], 'amsgrad': True}, {'params': ps[2:]}], lr=0.1)",
        24.0 + 16.0,
        8.0,
    );
    // A group overriding the constructor's `momentum=0.9` with 0 creates no buffers.
    state_and_step_peak(
        "torch.optim.SGD([{'params': ps[:1]}, {'params': ps[1:], 'momentum': 0}], lr=0.1, momentum=0.9)",
        4.0,
        0.0,
    );
}

#[test]
fn param_groups_are_dicts_user_code_reads_and_writes() {
    ok(&format!(
        "{FOUR_PARAMS}opt = torch.optim.Adam([{{'params': ps[:2]}}, {{'params': ps[2:], 'lr': 1e-3}}], lr=0.1)
assert len(opt.param_groups) == 2
assert opt.param_groups[0]['lr'] == 0.1
assert opt.param_groups[1]['lr'] == 1e-3
assert opt.param_groups[1]['betas'] == (0.9, 0.999)
assert opt.param_groups[0]['params'][1] is ps[1]
assert opt.defaults['lr'] == 0.1
opt.step()
steady = torch.cuda.memory_allocated()
for g in opt.param_groups:
    g['lr'] = g['lr'] * 0.5
assert opt.param_groups[0]['lr'] == 0.05
assert opt.state_dict()['param_groups'][1]['lr'] == 5e-4
opt.step()
assert torch.cuda.memory_allocated() == steady
# Switching a group's `amsgrad` on later changes nothing for state that already exists.
opt.param_groups[0]['amsgrad'] = True
opt.step()
assert torch.cuda.memory_allocated() == steady
"
    ));
}

#[test]
fn add_param_group_every_epoch_grows_the_state() {
    ok("M = 1024 * 1024
w0 = torch.zeros(M, device='cuda', requires_grad=True)
w0.grad = torch.zeros(M, device='cuda')
opt = torch.optim.Adam([w0], lr=0.1)
opt.step()
start = torch.cuda.memory_allocated()
for epoch in range(3):
    w = torch.zeros(M, device='cuda', requires_grad=True)
    w.grad = torch.zeros(M, device='cuda')
    opt.add_param_group({'params': w})
    opt.step()
    del w
# Each epoch: the new parameter and its gradient, kept by the optimizer's group, and its
# exp_avg/exp_avg_sq: 16 MiB that no `del` in the loop frees.
assert torch.cuda.memory_allocated() - start == 3 * 16 * M
assert len(opt.param_groups) == 4
assert len(opt.state) == 4
assert opt.param_groups[3]['lr'] == 0.1
");
}

#[test]
fn optimizer_state_is_a_dict_keyed_by_the_parameters() {
    ok(&format!(
        "{ADAM}assert w in opt.state
assert len(opt.state) == 1
s = opt.state[w]
assert s['exp_avg'].shape == w.shape
assert s['exp_avg'] is opt.state_dict()['state'][0]['exp_avg']
for p, st in opt.state.items():
    assert p is w
# The state holds device bytes until the optimizer goes.
s = st = None
opt = None
assert base - torch.cuda.memory_allocated() == 8 * M
"
    ));
}

#[test]
fn state_dict_numbers_parameters_across_groups_and_loads_them_back() {
    ok(&format!(
        "{FOUR_PARAMS}opt = torch.optim.Adam([{{'params': ps[:1]}}, {{'params': ps[1:], 'lr': 0.5}}], lr=0.1)
opt.step()
sd = opt.state_dict()
assert sd['param_groups'][0]['params'] == [0]
assert sd['param_groups'][1]['params'] == [1, 2, 3]
assert sorted(sd['state'].keys()) == [0, 1, 2, 3]
assert sd['state'][2] is opt.state[ps[2]]
steady = torch.cuda.memory_allocated()
other = torch.optim.Adam([{{'params': ps[:1]}}, {{'params': ps[1:]}}], lr=0.9)
other.load_state_dict(sd)
# The same device: the loaded tensors are shared, no new state bytes.
assert torch.cuda.memory_allocated() == steady
assert other.state[ps[3]]['exp_avg'] is opt.state[ps[3]]['exp_avg']
assert other.param_groups[1]['lr'] == 0.5
assert other.param_groups[1]['params'][0] is ps[1]
"
        ),
    );
}

#[test]
fn zero_grad_clears_every_group() {
    ok(&format!(
        "{FOUR_PARAMS}opt = torch.optim.SGD([{{'params': ps[:1]}}, {{'params': ps[1:]}}], lr=0.1)
opt.zero_grad()
assert before_opt - torch.cuda.memory_allocated() == 16 * M
assert all(p.grad is None for p in ps)
"
    ));
}

#[test]
fn lambda_lr_schedules_every_group() {
    ok(&format!(
        "{FOUR_PARAMS}opt = torch.optim.SGD([{{'params': ps[:2]}}, {{'params': ps[2:], 'lr': 0.01}}], lr=1.0)
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda epoch: 0.5 ** epoch)
assert sched.base_lrs == [1.0, 0.01]
assert opt.param_groups[1]['initial_lr'] == 0.01
sched.step()
sched.step()
assert opt.param_groups[0]['lr'] == 0.25
assert opt.param_groups[1]['lr'] == 0.0025
assert sched.get_last_lr() == [0.25, 0.0025]
"
    ));
    fails_with(
        &format!(
            "{FOUR_PARAMS}opt = torch.optim.SGD([{{'params': ps[:2]}}, {{'params': ps[2:]}}], lr=1.0)
sched = torch.optim.lr_scheduler.LambdaLR(opt, [lambda e: 1.0])
"
        ),
        "Expected 2 lr_lambdas, but got 1",
    );
}

#[test]
fn parameter_group_errors_use_pytorchs_text_and_the_workload_line() {
    let e = workload_runner::fails(&format!(
        "{FOUR_PARAMS}opt = torch.optim.SGD(ps[:2], lr=0.1)
opt.add_param_group({{'params': ps[1:]}})
"
    ));
    assert!(
        e.contains("ValueError: some parameters appear in more than one parameter group"),
        "{e}"
    );
    // The workload starts on line 5 of the scenario; `add_param_group` is its line 7.
    assert!(
        e.starts_with("t.yaml:11:"),
        "the error names the add_param_group line: {e}"
    );
    fails_with(
        &format!(
            "{FOUR_PARAMS}opt = torch.optim.SGD([{{'params': ps[:2]}}, {{'params': ps[1:]}}])\n"
        ),
        "some parameters appear in more than one parameter group",
    );
    fails_with(
        "opt = torch.optim.SGD([], lr=0.1)\n",
        "ValueError: optimizer got an empty parameter list",
    );
    fails_with(
        &format!("{FOUR_PARAMS}opt = torch.optim.SGD(ps, lr=0.1)\nopt.add_param_group(ps[0])\n"),
        "TypeError: param_group must be a dict, but got Tensor",
    );
    fails_with(
        &format!(
            "{FOUR_PARAMS}opt = torch.optim.SGD(ps, lr=0.1)\nopt.add_param_group({{'params': {{ps[0]}}}})\n"
        ),
        "ordering of tensors in sets will change between runs",
    );
    fails_with(
        &format!("{FOUR_PARAMS}opt = torch.optim.SGD([{{'params': [ps[0] * 2]}}])\n"),
        "ValueError: can't optimize a non-leaf Tensor",
    );
    fails_with(
        &format!(
            "{FOUR_PARAMS}opt = torch.optim.SGD([{{'params': ps[:2]}}, {{'params': ps[2:]}}], lr=1.0)
sd = opt.state_dict()
one = torch.optim.SGD(ps, lr=0.1)
one.load_state_dict(sd)
"
        ),
        "loaded state dict has a different number of parameter groups",
    );
}

#[test]
fn optimizer_state_is_a_defaultdict_of_dicts() {
    // `Optimizer.__init__`: `self.state = defaultdict(dict)`; `load_state_dict` builds a new
    // `defaultdict(dict)`. Reading the state of a parameter without state makes `{}` and
    // stores it (what `_init_group`'s `self.state[p]` relies on).
    ok(&format!(
        "{FOUR_PARAMS}opt = torch.optim.SGD(ps[:2], lr=0.1)
assert len(opt.state) == 0
s = opt.state[ps[0]]
assert s == {{}}
assert len(opt.state) == 1
assert opt.state[ps[0]] is s
assert ps[1] not in opt.state
assert opt.state.get(ps[1]) is None
s['custom'] = 1
sd = opt.state_dict()
assert sd['state'] == {{0: {{'custom': 1}}}}
# `state_dict()['state']` is a plain dict.
try:
    sd['state'][1]
    assert False
except KeyError:
    pass
other = torch.optim.SGD(ps[:2], lr=0.1)
other.load_state_dict(sd)
assert other.state[ps[0]]['custom'] == 1
assert other.state[ps[1]] == {{}}
assert len(other.state) == 2
"
    ));
}
