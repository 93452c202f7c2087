//! `nn.ModuleList`/`nn.ModuleDict` and the normalization layers in the workload model:
//! who holds the children and their parameters, and what `LayerNorm`/`BatchNorm` allocate
//! and save for backward, stated as `memory_allocated()` assertions inside workloads.

mod workload_runner;
use workload_runner::{ok, run};

/// `K`, `M`, `nn`, `F`.
const PRELUDE: &str = "K = 1024
M = 1024 * 1024
nn = torch.nn
F = torch.nn.functional
";

#[test]
fn module_list_children_are_registered_parameters() {
    ok(&format!(
        "{PRELUDE}class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(512, 512) for _ in range(3)])
        self.layers.append(nn.Linear(512, 256))
    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x
net = Net()
assert len(net.layers) == 4
assert len(list(net.parameters())) == 8
keys = list(net.state_dict().keys())
assert keys[0] == 'layers.0.weight' and keys[7] == 'layers.3.bias', keys
assert torch.cuda.memory_allocated() == 0
net.cuda()
# 3 x (1 MiB + 2 KiB) + 512 KiB + 1 KiB.
assert torch.cuda.memory_allocated() == 3 * (M + 2 * K) + 512 * K + K
x = torch.empty(64, 512, device='cuda')
net(x).sum().backward()
assert net.layers[-1].weight.grad is not None and net.layers[0].bias.grad is not None
net.zero_grad()
assert net.layers[0].weight.grad is None
"
    ));
}

#[test]
fn module_list_appended_each_step_keeps_every_layer_alive() {
    ok(&format!(
        "{PRELUDE}heads = nn.ModuleList()
for step in range(4):
    heads.append(nn.Linear(256, 1024, bias=False, device='cuda'))
    assert torch.cuda.memory_allocated() == (step + 1) * M
assert len(heads) == 4
del heads
assert torch.cuda.memory_allocated() == 0
"
    ));
}

#[test]
fn module_list_indexing_slicing_extend_and_insert_follow_list_order() {
    ok(&format!(
        "{PRELUDE}a, b, c = nn.Linear(1, 1), nn.ReLU(), nn.Linear(2, 2)
ml = nn.ModuleList([a])
ml.extend([c])
ml.insert(1, b)
assert ml[0] is a and ml[1] is b and ml[2] is c and ml[-1] is c
tail = ml[1:]
assert len(tail) == 2 and tail[0] is b
names = [n for n, _ in ml.named_children()]
assert names == ['0', '1', '2'], names
seq = nn.Sequential(a, b, c)
assert len(seq) == 3 and seq[-1] is c and len(seq[:2]) == 2
"
    ));
}

#[test]
fn module_list_refuses_what_is_not_a_module() {
    let e = run("ml = torch.nn.ModuleList()\nml.append(3)\n").unwrap_err();
    assert!(e.contains("int is not a Module subclass"), "{e}");
    let e = run("ml = torch.nn.ModuleList([torch.nn.ReLU()])\nm = ml[5]\n").unwrap_err();
    assert!(e.contains("IndexError"), "{e}");
}

#[test]
fn module_dict_children_are_found_by_key_and_by_parameters() {
    ok(&format!(
        "{PRELUDE}heads = nn.ModuleDict({{'cls': nn.Linear(256, 1024, bias=False, device='cuda')}})
heads.update([('box', nn.Linear(256, 512, bias=False, device='cuda'))])
heads['tmp'] = nn.ReLU()
assert len(heads) == 3
heads['tmp'] = nn.Identity()
assert len(heads) == 3
heads2 = nn.ModuleList([nn.ReLU()])
heads2[0] = nn.Linear(256, 1024, bias=False, device='cuda')
heads2[-1] = nn.Identity()
assert list(heads.keys()) == ['cls', 'box', 'tmp']
assert 'cls' in list(heads)
assert heads['box'].weight.shape[0] == 512
assert len(list(heads.parameters())) == 2
# The Linear first put into heads2 was replaced and freed.
assert torch.cuda.memory_allocated() == M + 512 * K
sd = heads.state_dict()
assert list(sd.keys()) == ['cls.weight', 'box.weight']
for name, head in heads.items():
    assert name == 'tmp' or head.weight.requires_grad
"
    ));
}

#[test]
fn layer_norm_saves_input_mean_and_rstd_until_backward() {
    // x: [4096, 256] float32 (4 MiB); mean and rstd: 4096 float32 each (16 KiB).
    ok(&format!(
        "{PRELUDE}ln = nn.LayerNorm(256, device='cuda')
params = torch.cuda.memory_allocated()
assert params == 2 * K
x = torch.empty(4096, 256, device='cuda', requires_grad=True)
y = ln(x)
assert y.grad_fn is not None
assert torch.cuda.memory_allocated() == params + 8 * M + 32 * K
del x
# NativeLayerNormBackward0 holds the input, mean and rstd.
assert torch.cuda.memory_allocated() == params + 8 * M + 32 * K
loss = y.sum()
del y
assert torch.cuda.memory_allocated() == params + 4 * M + 32 * K + 512
loss.backward()
# Mean and rstd released. The graph's AccumulateGrad still holds x (deleted by name,
# 4 MiB), which now has a 4 MiB gradient, until the loss and its graph go.
assert torch.cuda.memory_allocated() == 2 * params + 8 * M + 512
assert ln.weight.grad is not None
del loss
assert torch.cuda.memory_allocated() == 2 * params
"
    ));
}

#[test]
fn layer_norm_statistics_use_float32_for_half_inputs_and_vanish_without_grad() {
    ok(&format!(
        "{PRELUDE}x = torch.empty(4096, 256, device='cuda', dtype=torch.float16, requires_grad=True)
y = F.layer_norm(x, (256,))
# Output 2 MiB; mean and rstd are float32 (16 KiB each), not half.
assert torch.cuda.memory_allocated() == 4 * M + 32 * K
del y
with torch.no_grad():
    z = F.layer_norm(x, [256])
assert z.grad_fn is None
assert torch.cuda.memory_allocated() == 4 * M
"
    ));
}

#[test]
fn layer_norm_checks_the_normalized_shape() {
    let e = run("ln = torch.nn.LayerNorm(4)\ny = ln(torch.zeros(2, 3))\n").unwrap_err();
    assert!(
        e.contains("Given normalized_shape=[4], expected input with shape [*, 4], but got input of size[2, 3]"),
        "{e}"
    );
}

#[test]
fn batch_norm_registers_running_stats_as_buffers() {
    ok(&format!(
        "{PRELUDE}bn = nn.BatchNorm1d(1024)
names = [n for n, _ in bn.named_buffers()]
assert names == ['running_mean', 'running_var', 'num_batches_tracked'], names
assert list(bn.state_dict().keys()) == ['weight', 'bias', 'running_mean', 'running_var', 'num_batches_tracked']
assert torch.cuda.memory_allocated() == 0
bn.cuda()
# weight, bias, running_mean, running_var (4 KiB each) and the int64 counter (one block).
assert torch.cuda.memory_allocated() == 16 * K + 512
assert bn.num_batches_tracked.dtype == torch.int64
bn.half()
assert torch.cuda.memory_allocated() == 8 * K + 512
"
    ));
}

#[test]
fn batch_norm_in_training_saves_input_and_batch_statistics_eval_saves_no_statistics() {
    // x: [256, 1024] float32 (1 MiB); save_mean / save_invstd: [1024] float32 (4 KiB each).
    ok(&format!(
        "{PRELUDE}bn = nn.BatchNorm1d(1024, device='cuda')
params = torch.cuda.memory_allocated()
x = torch.empty(256, 1024, device='cuda')
y = bn(x)
assert y.grad_fn is not None
assert torch.cuda.memory_allocated() == params + 2 * M + 8 * K
del x
assert torch.cuda.memory_allocated() == params + 2 * M + 8 * K
y.sum().backward()
assert bn.weight.grad is not None
del y
# The saved input and statistics are gone; the two parameter gradients remain.
assert torch.cuda.memory_allocated() == params + 8 * K
bn.eval()
x = torch.empty(256, 1024, device='cuda')
y = bn(x)
# Eval normalizes with the running statistics: save_mean / save_invstd are empty.
assert torch.cuda.memory_allocated() == params + 8 * K + 2 * M
"
    ));
}

#[test]
fn batch_norm_checks_rank_and_batch_size() {
    let e = run("bn = torch.nn.BatchNorm2d(3)\ny = bn(torch.zeros(2, 3, 4))\n").unwrap_err();
    assert!(e.contains("expected 4D input (got 3D input)"), "{e}");
    let e = run("bn = torch.nn.BatchNorm1d(3)\ny = bn(torch.zeros(1, 3))\n").unwrap_err();
    assert!(
        e.contains("Expected more than 1 value per channel when training"),
        "{e}"
    );
    // In eval a single sample is fine.
    run("bn = torch.nn.BatchNorm1d(3)\nbn.eval()\ny = bn(torch.zeros(1, 3))\n").unwrap();
}

#[test]
fn checkpoint_sequential_keeps_only_segment_boundaries_of_checkpointed_segments() {
    // Four Linear(1024, 1024) layers; x: [256, 1024] (1 MiB), each activation 1 MiB.
    ok(&format!(
        "{PRELUDE}from torch.utils.checkpoint import checkpoint_sequential
model = nn.Sequential(*[nn.Linear(1024, 1024, device='cuda') for _ in range(4)])
x = torch.empty(256, 1024, device='cuda', requires_grad=True)
before = torch.cuda.memory_allocated()
plain = model(x)
# AddmmBackward0 keeps every layer's input: x, h1, h2, h3, and the output h4.
assert torch.cuda.memory_allocated() == before + 4 * M
del plain
y = checkpoint_sequential(model, 2, x, use_reentrant=True)
# The first segment keeps only its output h2; the second (run normally) keeps h2, h3 and h4.
assert torch.cuda.memory_allocated() == before + 3 * M
y.sum().backward()
assert model[0].weight.grad is not None and model[3].weight.grad is not None
del y
z = checkpoint_sequential(model, 4, x, use_reentrant=False)
# The gradients (4 x (4 MiB + 4 KiB) and x's 1 MiB) stay. Each checkpointed segment keeps
# its input; the last layer keeps its input and output: h1, h2, h3 and h4.
assert torch.cuda.memory_allocated() == before + 4 * (4 * M + 4 * K) + M + 4 * M
"
    ));
}

/// Four bias-free 1024x1024 layers (4 MiB each) in a `ModuleList`.
const FOUR: &str =
    "layers = nn.ModuleList([nn.Linear(1024, 1024, bias=False, device='cuda') for _ in range(4)])
";

#[test]
fn deleting_from_a_module_list_frees_the_dropped_layers_and_renumbers_the_rest() {
    ok(&format!(
        "{PRELUDE}{FOUR}kept = layers[2]
del layers[1]
assert torch.cuda.memory_allocated() == 3 * 4 * M
assert len(layers) == 3 and layers[1] is kept
assert list(layers.state_dict().keys()) == ['0.weight', '1.weight', '2.weight']
del layers[0:2]
# `kept` still holds its layer.
assert len(layers) == 1
assert torch.cuda.memory_allocated() == 2 * 4 * M
del kept
assert torch.cuda.memory_allocated() == 4 * M
last = layers.pop(-1)
assert len(layers) == 0 and torch.cuda.memory_allocated() == 4 * M
del last
assert torch.cuda.memory_allocated() == 0
"
    ));
}

#[test]
fn sequential_del_pop_and_module_dict_del_pop_clear_drop_their_children() {
    ok(&format!(
        "{PRELUDE}seq = nn.Sequential(*[nn.Linear(1024, 1024, bias=False, device='cuda') for _ in range(3)])
seq.pop(0)
assert len(seq) == 2 and torch.cuda.memory_allocated() == 2 * 4 * M
del seq[-1]
assert list(seq.state_dict().keys()) == ['0.weight']
seq.append(nn.Linear(1024, 1024, bias=False, device='cuda'))
seq.insert(0, nn.Linear(1024, 1024, bias=False, device='cuda'))
assert list(seq.state_dict().keys()) == ['0.weight', '1.weight', '2.weight']
del seq
assert torch.cuda.memory_allocated() == 0
d = nn.ModuleDict({{'a': nn.Linear(1024, 1024, bias=False, device='cuda'), 'b': nn.Linear(1024, 1024, bias=False, device='cuda'), 'c': nn.Linear(1024, 1024, bias=False, device='cuda')}})
del d['b']
assert list(d.keys()) == ['a', 'c'] and torch.cuda.memory_allocated() == 2 * 4 * M
a = d.pop('a')
assert list(d.keys()) == ['c'] and torch.cuda.memory_allocated() == 2 * 4 * M
del a
assert torch.cuda.memory_allocated() == 4 * M
d.clear()
assert len(d) == 0 and torch.cuda.memory_allocated() == 0
"
    ));
}

#[test]
fn container_deletion_errors_follow_pytorch() {
    let e = run(&format!("{PRELUDE}{FOUR}del layers[4]\n")).unwrap_err();
    assert!(e.contains("IndexError: index 4 is out of range"), "{e}");
    let e = run(&format!(
        "{PRELUDE}d = nn.ModuleDict({{'a': nn.ReLU()}})\nd.pop('b')\n"
    ))
    .unwrap_err();
    assert!(e.contains("KeyError: 'b'"), "{e}");
}

#[test]
fn parameter_list_entries_are_registered_and_reached_by_module_methods() {
    ok(&format!(
        "{PRELUDE}class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.plist = nn.ParameterList([nn.Parameter(torch.zeros(256, K)) for _ in range(2)])
        self.plist.append(torch.zeros(256, K))
        self.plist.extend([nn.Parameter(torch.zeros(512, K))])
    def forward(self, x):
        for p in self.plist:
            x = x + p.sum()
        return x
net = Net()
assert len(net.plist) == 4
assert len(list(net.parameters())) == 4
names = [n for n, _ in net.named_parameters()]
assert names == ['plist.0', 'plist.1', 'plist.2', 'plist.3'], names
keys = list(net.state_dict().keys())
assert keys == names, keys
assert torch.cuda.memory_allocated() == 0
net.to('cuda')
# 3 x 1 MiB + 2 MiB of float32 parameters moved to the device.
assert torch.cuda.memory_allocated() == 5 * M
assert net.plist[-1].shape == (512, K) and net.plist[-4] is net.plist[0]
net(torch.ones(1, device='cuda')).sum().backward()
assert net.plist[2].grad is not None
assert torch.cuda.memory_allocated() == 10 * M
net.zero_grad()
assert net.plist[2].grad is None
assert torch.cuda.memory_allocated() == 5 * M
"
    ));
}

#[test]
fn parameter_list_wraps_a_plain_tensor_into_a_parameter_on_the_same_storage() {
    ok(&format!(
        "{PRELUDE}t = torch.zeros(M, device='cuda')
plist = nn.ParameterList()
plist.append(t)
p = plist[0]
assert p is not t and p.requires_grad and not t.requires_grad
# One storage: wrapping allocates nothing.
assert torch.cuda.memory_allocated() == 4 * M
q = nn.Parameter(torch.zeros(M, device='cuda'))
plist[0] = q
assert plist[0] is q and q in plist and p not in plist
assert len(plist[0:]) == 1 and plist[0:][0] is q
gen = nn.ParameterList(values=(torch.zeros(4), torch.zeros(4)))
assert len(gen) == 2 and all(e.requires_grad for e in gen)
md = nn.ModuleDict({{'a': nn.ReLU()}})
assert 'a' in md and 'b' not in md
del t, p
assert torch.cuda.memory_allocated() == 4 * M
"
    ));
}

#[test]
fn parameter_list_entries_get_optimizer_state() {
    ok(&format!(
        "{PRELUDE}plist = nn.ParameterList([torch.zeros(M, device='cuda') for _ in range(3)])
for p in plist:
    p.grad = torch.zeros(M, device='cuda')
base = torch.cuda.memory_allocated()
assert base == 3 * 4 * M * 2
opt = torch.optim.Adam(plist.parameters(), lr=0.1)
opt.step()
# exp_avg and exp_avg_sq for each of the 3 parameters, 4 MiB each.
assert torch.cuda.memory_allocated() == base + 3 * 2 * 4 * M
assert len(opt.state) == 3
"
    ));
}

#[test]
fn parameter_list_grown_every_step_keeps_every_tensor_until_deleted() {
    ok(&format!(
        "{PRELUDE}class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.extra = nn.ParameterList()
net = Net()
for step in range(4):
    net.extra.append(torch.zeros(256, K, device='cuda'))
    assert torch.cuda.memory_allocated() == (step + 1) * M
assert len(list(net.parameters())) == 4
del net.extra
assert torch.cuda.memory_allocated() == 0
"
    ));
}

#[test]
fn parameter_dict_entries_are_registered_by_key() {
    ok(&format!(
        "{PRELUDE}class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.pd = nn.ParameterDict({{'right': torch.zeros(256, K), 'left': nn.Parameter(torch.zeros(256, K))}})
        self.pd['mid'] = torch.zeros(512, K)
        self.pd.update([('tail', torch.zeros(256, K))])
net = Net().cuda()
# A plain dict is taken in sorted key order, as PyTorch's update does.
assert list(net.pd.keys()) == ['left', 'right', 'mid', 'tail'], list(net.pd.keys())
assert [k for k in net.pd] == list(net.pd.keys())
assert len(net.pd) == 4 and 'mid' in net.pd and 'nope' not in net.pd
names = [n for n, _ in net.named_parameters()]
assert names == ['pd.left', 'pd.right', 'pd.mid', 'pd.tail'], names
assert list(net.state_dict().keys()) == names
assert all(p.requires_grad for p in net.pd.values())
assert [k for k, _ in net.pd.items()] == ['left', 'right', 'mid', 'tail']
assert torch.cuda.memory_allocated() == 5 * M
assert net.pd.get('nope') is None and net.pd.get('mid') is net.pd['mid']
"
    ));
}

#[test]
fn parameter_dict_del_and_pop_free_the_parameters() {
    ok(&format!(
        "{PRELUDE}pd = nn.ParameterDict()
pd['a'] = torch.zeros(M, device='cuda')
pd['b'] = torch.zeros(M, device='cuda')
pd['c'] = torch.zeros(M, device='cuda')
assert torch.cuda.memory_allocated() == 12 * M
del pd['a']
assert torch.cuda.memory_allocated() == 8 * M
p = pd.pop('b')
assert torch.cuda.memory_allocated() == 8 * M and len(pd) == 1
del p
assert torch.cuda.memory_allocated() == 4 * M
assert [n for n, _ in pd.named_parameters()] == ['c']
opt = torch.optim.SGD(pd.parameters(), lr=0.1, momentum=0.9)
pd['c'].grad = torch.zeros(M, device='cuda')
opt.step()
# The gradient and one momentum buffer.
assert torch.cuda.memory_allocated() == 12 * M
"
    ));
}

#[test]
fn parameter_containers_refuse_wrong_types_with_pytorchs_text() {
    let e = run("pl = torch.nn.ParameterList()\npl.extend(torch.zeros(2))\n").unwrap_err();
    assert!(
        e.contains("ParameterList.extend should be called with an iterable, but got Tensor"),
        "{e}"
    );
    let e = run("pl = torch.nn.ParameterList(3)\n").unwrap_err();
    assert!(
        e.contains("ParameterList.extend should be called with an iterable, but got int"),
        "{e}"
    );
    let e = run("pd = torch.nn.ParameterDict()\npd[0] = torch.zeros(2)\n").unwrap_err();
    assert!(
        e.contains("Index given to ParameterDict cannot be used as a key as it is not a string (type is 'int')"),
        "{e}"
    );
    let e = run("pd = torch.nn.ParameterDict(5)\n").unwrap_err();
    assert!(
        e.contains("ParametersDict.update should be called with an iterable of key/value pairs, but got int"),
        "{e}"
    );
    let e = run("pd = torch.nn.ParameterDict([('a', torch.zeros(2), 1)])\n").unwrap_err();
    assert!(
        e.contains(
            "ValueError: ParameterDict update sequence element #0 has length 3; 2 is required"
        ),
        "{e}"
    );
    let e = run("pl = torch.nn.ParameterList([torch.zeros(2)])\ndel pl[0]\n").unwrap_err();
    assert!(
        e.contains("'ParameterList' object doesn't support item deletion"),
        "{e}"
    );
    let e = run("pl = torch.nn.ParameterList([torch.zeros(2)])\npl[1]\n").unwrap_err();
    assert!(e.contains("IndexError: index 1 is out of range"), "{e}");
    let e = run("pd = torch.nn.ParameterDict()\npd['x']\n").unwrap_err();
    assert!(e.contains("KeyError: 'x'"), "{e}");
}
