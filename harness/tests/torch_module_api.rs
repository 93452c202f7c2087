//! `nn.Module`'s hooks, buffers, named parameters, children, `train`/`eval` and
//! `state_dict` in the workload model: what each holds, checked with
//! `torch.cuda.memory_allocated()` and the collector.

mod workload_runner;
use workload_runner::ok;

const NET: &str = "M = 1024 * 1024
class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(1024, 1024, device='cuda')
        self.register_buffer('running', torch.zeros(1024 * 1024, device='cuda'))
        self.register_buffer('scratch', torch.zeros(1024, device='cuda'), persistent=False)
    def forward(self, x):
        return self.fc(x)
";

#[test]
fn forward_hooks_run_in_order_and_can_replace_the_output() {
    ok(&format!(
        "{NET}net = Net()
seen = []
def pre(module, args):
    seen.append('pre')
def post(module, args, out):
    seen.append('post')
    return out * 2.0
h1 = net.register_forward_pre_hook(pre)
h2 = net.register_forward_hook(post)
y = net(torch.zeros(1, 1024, device='cuda'))
assert len(seen) == 2
assert seen[0] == 'pre'
h1.remove()
h2.remove()
y = net(torch.zeros(1, 1024, device='cuda'))
assert len(seen) == 2
"
    ));
}

#[test]
fn a_hook_that_closes_over_the_module_is_a_cycle_only_the_collector_frees() {
    ok(&format!(
        "{NET}base = torch.cuda.memory_allocated()
def build():
    net = Net()
    acts = []
    net.register_forward_hook(lambda m, inp, out: acts.append(net))
for i in range(3):
    build()
# Each Net (4 MiB weight + 4 MiB buffer + small) is held by its own hook's closure.
assert torch.cuda.memory_allocated() - base >= 24 * M
gc.collect()
assert torch.cuda.memory_allocated() - base < 9 * M
"
    ));
}

#[test]
fn buffers_parameters_children_and_state_dict() {
    ok(&format!(
        "{NET}net = Net()
assert len(net.buffers()) == 2
names = [n for n, p in net.named_parameters()]
assert names == ['fc.weight', 'fc.bias']
assert len(net.children()) == 1
assert len(net.modules()) == 2
before = torch.cuda.memory_allocated()
sd = net.state_dict()
# Detached tensors on the same storages: no device memory.
assert torch.cuda.memory_allocated() == before
assert len(sd) == 3
net.eval()
assert not net.fc.training
net.train()
assert net.training
cpu = Net().cpu()
before = torch.cuda.memory_allocated()
cpu.cuda()
# The weight, bias and both buffers move.
assert torch.cuda.memory_allocated() - before >= 8 * M
p = torch.nn.Parameter(torch.zeros(4))
assert p.requires_grad
assert p.is_leaf
"
    ));
}

#[test]
fn lambda_lr_holds_its_optimizer_and_calls_its_lambda() {
    ok("M = 1024 * 1024
class Trainer:
    def __init__(self):
        self.model = torch.nn.Linear(1024, 1024, device='cuda')
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
        self.warmup = 10
        self.calls = []
        self.sched = torch.optim.lr_scheduler.LambdaLR(self.opt, lambda e: self.lr_factor(e))
    def lr_factor(self, epoch):
        self.calls.append(epoch)
        return min(1.0, (epoch + 1) / self.warmup)
t = Trainer()
t.sched.step()
t.sched.step()
assert len(t.calls) == 3
s = torch.optim.lr_scheduler.StepLR(t.opt, step_size=10, gamma=0.5)
del s
del t
# The lambda reads `self`: trainer -> scheduler -> lr_lambdas -> lambda -> trainer.
assert torch.cuda.memory_allocated() >= 4 * M
gc.collect()
assert torch.cuda.memory_allocated() == 0
");
}

#[test]
fn legacy_constructors_linspace_and_eye_allocate_their_shapes() {
    ok("M = 1024 * 1024
a = torch.cuda.FloatTensor(1024, 1024)
assert torch.cuda.memory_allocated() == 4 * M
b = torch.FloatTensor([[1.0, 2.0], [3.0, 4.0]])
assert b.shape[0] == 2
c = torch.Tensor(3, 4)
assert c.dtype == torch.float32
d = torch.linspace(0, 1, steps=1024 * 1024, device='cuda')
e = torch.eye(1024, device='cuda', dtype=torch.float16)
assert torch.cuda.memory_allocated() == 10 * M
");
}

/// Weight-initialisation loops and gradient-clipping helpers test their values with
/// `isinstance(v, torch.Tensor)` / `nn.Parameter` / a legacy type: each compares what
/// PyTorch compares (any tensor; a parameter; dtype and device).
#[test]
fn isinstance_with_tensor_parameter_and_legacy_types() {
    ok(&format!(
        "{NET}net = Net()
w = net.fc.weight
x = torch.zeros(4, 4)
h = torch.zeros(4, 4, device='cuda').half()
assert isinstance(x, torch.Tensor)
assert isinstance(w, torch.Tensor)
assert not isinstance(3, torch.Tensor)
assert not isinstance(net, torch.Tensor)
assert isinstance(w, torch.nn.Parameter)
assert not isinstance(x, torch.nn.Parameter)
assert isinstance(torch.nn.Parameter(x), torch.nn.Parameter)
assert isinstance(x, torch.FloatTensor)
assert not isinstance(h, torch.FloatTensor)
assert isinstance(h, torch.cuda.HalfTensor)
assert not isinstance(h, torch.cuda.FloatTensor)
assert isinstance(w, (int, torch.Tensor))
kept = [v for v in [1, x, 'a', w] if isinstance(v, torch.Tensor)]
assert len(kept) == 2
t = torch.Tensor(2, 3)
assert t.dtype == torch.float32
assert tuple(t.shape) == (2, 3)
"
    ));
}
