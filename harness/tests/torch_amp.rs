//! `torch.autocast` regions: which inputs the lower-precision and float32 ops cast, what the
//! cast cache keeps alive until the outermost region exits, stated as `memory_allocated()`
//! assertions inside workloads.

use gpumem_harness::run::run_variant;
use gpumem_harness::scenario;

fn run(workload: &str) -> Result<(), String> {
    let body: String = workload.lines().map(|l| format!("  {l}\n")).collect();
    let text = format!("name: t\ndevice: h100-80gb\npython: \"3.11\"\nworkload: |\n{body}");
    let s = scenario::parse(&text, "t.yaml").map_err(|e| e.to_string())?;
    for v in s.variants() {
        run_variant(&s, &v).map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn ok(workload: &str) {
    if let Err(e) = run(workload) {
        panic!("{e}");
    }
}

/// `K`, `M`; `lin` is a float32 `Linear(1024, 1024)` (4 MiB weight, 4 KiB bias) and `x` a
/// `[1024, 1024]` float32 input (4 MiB) that needs no grad; `base` is what they take.
const PRELUDE: &str = "K = 1024
M = 1024 * 1024
lin = torch.nn.Linear(1024, 1024, device='cuda')
x = torch.empty(1024, 1024, device='cuda')
base = 8 * M + 4 * K
assert torch.cuda.memory_allocated() == base
";

#[test]
fn linear_in_autocast_runs_in_half_and_caches_the_weight_casts_until_exit() {
    ok(&format!(
        "{PRELUDE}with torch.autocast(device_type='cuda', dtype=torch.float16):
    out = lin(x)
    assert out.dtype == torch.float16
    # fp16 copies of x (saved by AddmmBackward0), of the weight and bias (cached), and
    # the fp16 output.
    assert torch.cuda.memory_allocated() == base + 2 * M + 2 * M + 2 * K + 2 * M
# The cache is cleared: the weight's copy was not saved (x needs no grad), so it goes.
assert torch.cuda.memory_allocated() == base + 2 * M + 2 * M
out.sum().backward()
assert lin.weight.grad.dtype == torch.float32
"
    ));
}

#[test]
fn the_cached_weight_cast_is_shared_by_every_use_in_the_region() {
    ok(&format!(
        "{PRELUDE}with torch.cuda.amp.autocast():
    a = lin(x)
    after_one = torch.cuda.memory_allocated()
    b = lin(x)
    # A second fp16 copy of x and a second output; the weight's copy is reused.
    assert torch.cuda.memory_allocated() == after_one + 2 * M + 2 * M
"
    ));
}

#[test]
fn nested_regions_keep_the_cache_until_the_outermost_exits() {
    ok(&format!(
        "{PRELUDE}with torch.autocast('cuda', dtype=torch.bfloat16):
    with torch.autocast('cuda', dtype=torch.bfloat16):
        out = lin(x)
    assert out.dtype == torch.bfloat16
    assert torch.cuda.memory_allocated() == base + 6 * M + 2 * K
    with torch.autocast('cuda', enabled=False):
        full = lin(x)
        assert full.dtype == torch.float32
assert torch.cuda.memory_allocated() == base + 4 * M + 4 * M
"
    ));
}

#[test]
fn a_disabled_region_casts_nothing() {
    ok(&format!(
        "{PRELUDE}with torch.amp.autocast('cuda', enabled=False):
    out = lin(x)
assert out.dtype == torch.float32
assert torch.cuda.memory_allocated() == base + 4 * M
"
    ));
}

#[test]
fn a_weight_cast_saved_for_backward_outlives_the_region() {
    ok(&format!(
        "{PRELUDE}x.requires_grad_()
with torch.autocast('cuda'):
    out = lin(x)
    assert torch.cuda.memory_allocated() == base + 6 * M + 2 * K
# AddmmBackward0 saved both fp16 operands; only the bias copy goes with the cache.
assert torch.cuda.memory_allocated() == base + 6 * M
"
    ));
}

#[test]
fn float32_ops_cast_half_inputs_up() {
    ok(&format!(
        "{PRELUDE}y = torch.empty(1024, 1024, device='cuda')
with torch.autocast('cuda'):
    out = lin(x)
    before = torch.cuda.memory_allocated()
    loss = torch.nn.functional.mse_loss(out, y)
    assert loss.dtype == torch.float32
    # MseLossBackward0 keeps the float32 copy of `out` (a ToCopyBackward0 output) and y.
    assert torch.cuda.memory_allocated() == before + 4 * M + 512
    del out
    # Nothing saved the fp16 output itself.
    assert torch.cuda.memory_allocated() == before + 2 * M + 512
loss.backward()
assert lin.weight.grad is not None
"
    ));
}

#[test]
fn autocast_rejects_an_unsupported_dtype_with_a_located_error() {
    let e = run("with torch.autocast('cuda', dtype=torch.float32):\n    pass\n").unwrap_err();
    assert!(e.contains("target dtype is not supported"), "{e}");
    assert!(e.contains("t.yaml:"), "{e}");
}

#[test]
fn matmul_casts_both_operands_and_caches_the_leaf() {
    ok(&format!(
        "{PRELUDE}w = torch.empty(1024, 1024, device='cuda', requires_grad=True)
before = torch.cuda.memory_allocated()
with torch.autocast('cuda'):
    h = x @ w
    assert h.dtype == torch.float16
    # x's fp16 copy (saved: w needs grad), w's cached copy, the output.
    assert torch.cuda.memory_allocated() == before + 6 * M
    h2 = torch.matmul(x, w)
    assert torch.cuda.memory_allocated() == before + 10 * M
assert torch.cuda.memory_allocated() == before + 8 * M
"
    ));
}

#[test]
fn a_region_inside_a_generator_is_exited_when_the_generator_resumes_past_it() {
    ok(&format!(
        "{PRELUDE}def steps():
    with torch.autocast('cuda'):
        out = lin(x)
        yield out
    yield None
g = steps()
out = next(g)
assert out.dtype == torch.float16
# Suspended inside the region: the weight and bias casts are still cached.
assert torch.cuda.memory_allocated() == base + 6 * M + 2 * K
next(g)
assert torch.cuda.memory_allocated() == base + 4 * M
del out, g
assert torch.cuda.memory_allocated() == base
"
    ));
}

#[test]
fn autocast_imported_from_torch_cuda_amp_takes_enabled_first() {
    ok(&format!(
        "{PRELUDE}from torch.cuda.amp import autocast
with autocast(False):
    out = lin(x)
assert out.dtype == torch.float32
with autocast(True, torch.bfloat16):
    out = lin(x)
assert out.dtype == torch.bfloat16
"
    ));
}

/// The AMP recipe's pieces: a model, SGD, a scaler, an input and a target (4 MiB each).
const RECIPE: &str = "K = 1024
M = 1024 * 1024
F = torch.nn.functional
model = torch.nn.Linear(1024, 1024, device='cuda')
opt = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = torch.cuda.amp.GradScaler()
x = torch.empty(1024, 1024, device='cuda')
y = torch.empty(1024, 1024, device='cuda')
";

#[test]
fn grad_scaler_creates_its_tensors_at_the_first_scale() {
    ok(&format!(
        "{RECIPE}with torch.autocast('cuda'):
    out = model(x)
    loss = F.mse_loss(out, y)
before = torch.cuda.memory_allocated()
scaled = scaler.scale(loss)
# _scale (float32) and _growth_tracker (int32), one block each, and the scaled loss.
assert torch.cuda.memory_allocated() == before + 3 * 512
assert scaled.grad_fn is not None
again = scaler.scale(loss)
assert torch.cuda.memory_allocated() == before + 4 * 512
"
    ));
}

#[test]
fn unscale_keeps_found_inf_until_update_and_peaks_on_the_inverse_scale() {
    ok(&format!(
        "{RECIPE}with torch.autocast('cuda'):
    loss = F.mse_loss(model(x), y)
scaler.scale(loss).backward()
del loss
after_backward = torch.cuda.memory_allocated()
torch.cuda.reset_peak_memory_stats()
scaler.unscale_(opt)
# found_inf stays; the float64 copy, its reciprocal and inv_scale came and went, at most
# two at a time.
assert torch.cuda.memory_allocated() == after_backward + 512
assert torch.cuda.max_memory_allocated() == after_backward + 2 * 512
scaler.step(opt)
stepped = torch.cuda.memory_allocated()
scaler.update()
assert torch.cuda.memory_allocated() == stepped - 512
opt.zero_grad()
"
    ));
}

#[test]
fn the_amp_recipe_loop_holds_steady_memory() {
    ok(&format!(
        "{RECIPE}levels = []
for i in range(3):
    with torch.autocast('cuda'):
        out = model(x)
        loss = F.mse_loss(out, y)
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    opt.zero_grad()
    del out, loss
    levels.append(torch.cuda.memory_allocated())
assert levels[0] == levels[1] == levels[2]
# Parameters, x, y and the scaler's two tensors.
assert levels[2] == 12 * M + 4 * K + 2 * 512
"
    ));
}

#[test]
fn grad_scaler_misuse_raises_pytorchs_errors() {
    let e = run(&format!("{RECIPE}scaler.unscale_(opt)\n")).unwrap_err();
    assert!(e.contains("_scale is None"), "{e}");
    let e = run(&format!(
        "{RECIPE}scaler.scale(F.mse_loss(model(x), y)).backward()\nscaler.unscale_(opt)\nscaler.unscale_(opt)\n"
    ))
    .unwrap_err();
    assert!(e.contains("already been called on this optimizer"), "{e}");
    let e = run(&format!(
        "{RECIPE}scaler.scale(F.mse_loss(model(x), y))\nscaler.update()\n"
    ))
    .unwrap_err();
    assert!(e.contains("No inf checks were recorded"), "{e}");
}

#[test]
fn torch_amp_grad_scaler_takes_its_device_and_refuses_fp16_gradients() {
    ok(&format!(
        "{RECIPE}s2 = torch.amp.GradScaler('cuda', init_scale=1024.0)
s3 = torch.amp.GradScaler(device='cuda', growth_interval=100)
"
    ));
    let e = run(&format!(
        "{RECIPE}model.half()
scaler.scale(model(x.half()).sum()).backward()
scaler.step(opt)
"
    ))
    .unwrap_err();
    assert!(e.contains("Attempting to unscale FP16 gradients"), "{e}");
}

#[test]
fn a_disabled_grad_scaler_passes_everything_through_and_makes_no_tensor() {
    ok(&format!(
        "{RECIPE}off = torch.amp.GradScaler('cuda', enabled=False)
assert not off.is_enabled()
loss = F.mse_loss(model(x), y)
before = torch.cuda.memory_allocated()
assert off.scale(loss) is loss
assert torch.cuda.memory_allocated() == before
loss.backward()
off.unscale_(opt)
off.step(opt)
off.update()
assert off.get_scale() == 1.0
assert off.state_dict() == {{}}
off.load_state_dict({{}})
# Only the gradients (4 MiB + 4 KiB) were added; no _scale, _growth_tracker or found_inf.
del loss
assert torch.cuda.memory_allocated() == 12 * M + 4 * K + 4 * M + 4 * K
"
    ));
}

#[test]
fn grad_scaler_state_dict_is_numbers_and_load_state_dict_fills_in_place() {
    ok(&format!(
        "{RECIPE}s = torch.amp.GradScaler('cuda', init_scale=1024.0, growth_interval=2)
assert s.get_scale() == 1024.0
sd = s.state_dict()
assert sd == {{'scale': 1024.0, 'growth_factor': 2.0, 'backoff_factor': 0.5, 'growth_interval': 2, '_growth_tracker': 0}}, sd
for i in range(3):
    with torch.autocast('cuda'):
        loss = F.mse_loss(model(x), y)
    s.scale(loss).backward()
    s.step(opt)
    s.update()
    opt.zero_grad()
    del loss
# No inf is ever found: the scale doubled after two updates, the tracker counts one.
assert s.get_scale() == 2048.0
assert s.state_dict()['_growth_tracker'] == 1
before = torch.cuda.memory_allocated()
fresh = torch.amp.GradScaler('cuda')
fresh.load_state_dict(s.state_dict())
assert fresh.get_scale() == 2048.0
assert torch.cuda.memory_allocated() == before
"
    ));
    let e = run(&format!(
        "{RECIPE}scaler.load_state_dict(torch.amp.GradScaler('cuda', enabled=False).state_dict())\n"
    ))
    .unwrap_err();
    assert!(e.contains("The source state dict is empty"), "{e}");
    let e = run(&format!(
        "{RECIPE}torch.amp.GradScaler('cuda', growth_factor=0.5)\n"
    ))
    .unwrap_err();
    assert!(e.contains("The growth factor must be > 1.0."), "{e}");
}

#[test]
fn scaling_a_list_or_tuple_of_outputs_scales_each_tensor_with_one_scale() {
    ok(&format!(
        "{RECIPE}a = torch.empty(1024, device='cuda')
b = torch.empty(2048, device='cuda')
before = torch.cuda.memory_allocated()
out = scaler.scale([a, (b, a)])
assert isinstance(out, list) and isinstance(out[1], tuple) and len(out[1]) == 2
# _scale and _growth_tracker (512 B each), then one product per tensor: 4, 8 and 4 KiB.
assert torch.cuda.memory_allocated() == before + 2 * 512 + 4 * K + 8 * K + 4 * K
"
    ));
    let e = run(&format!("{RECIPE}scaler.scale(3)\n")).unwrap_err();
    assert!(
        e.contains("outputs must be a Tensor or an iterable of Tensors"),
        "{e}"
    );
}

#[test]
fn float32_list_ops_cast_half_inputs_up_and_softmax_widens_without_a_copy() {
    ok("K = 1024
M = 1024 * 1024
x = torch.empty(1024, 1024, device='cuda', dtype=torch.float16)
base = torch.cuda.memory_allocated()
torch.cuda.reset_peak_memory_stats()
with torch.autocast('cuda'):
    # fp32_set_opt_dtype: a float32 result read from the half input, no cast copy.
    s = x.softmax(1)
    assert s.dtype == torch.float32
    assert torch.cuda.max_memory_allocated() == base + 4 * M
    # fp32 list: a float32 copy of x (freed after the op, x needs no grad), then exp.
    e = x.exp()
    assert e.dtype == torch.float32
    assert torch.cuda.memory_allocated() == base + 4 * M + 4 * M
    assert torch.cuda.max_memory_allocated() == base + 4 * M + 4 * M + 4 * M
del s, e
xg = torch.zeros(1024, 1024, device='cuda', dtype=torch.float16, requires_grad=True)
base = torch.cuda.memory_allocated()
with torch.autocast('cuda'):
    # `log` saves its input: the float32 copy lives with the graph.
    l = xg.log()
assert l.dtype == torch.float32
assert torch.cuda.memory_allocated() == base + 4 * M + 4 * M
del l
assert torch.cuda.memory_allocated() == base
# Outside a region nothing is cast.
e = x.exp()
assert e.dtype == torch.float16
");
}

#[test]
fn conv2d_in_autocast_runs_in_half() {
    ok("K = 1024
M = 1024 * 1024
conv = torch.nn.Conv2d(16, 16, 3, padding=1, device='cuda')
inp = torch.empty(8, 16, 64, 64, device='cuda')
base = torch.cuda.memory_allocated()
with torch.autocast('cuda'):
    out = conv(inp)
    assert out.dtype == torch.float16
    # The half input (saved for the weight's gradient), the cached half weight (4.5 KiB)
    # and bias (one 512-byte block), and the half output.
    assert torch.cuda.memory_allocated() == base + M + 4608 + 512 + M, torch.cuda.memory_allocated() - base
assert torch.cuda.memory_allocated() == base + M + 4608 + M, torch.cuda.memory_allocated() - base
out.float().sum().backward()
assert conv.weight.grad.dtype == torch.float32
");
}

#[test]
fn cat_and_stack_promote_to_the_widest_input_type() {
    // autocast_mode.cpp `promote`: the region's dtype promoted with each eligible input's;
    // the narrower inputs are cast (a fresh copy, freed after the op when no grad needs it).
    ok("M = 1024 * 1024
h = torch.empty(1024, 1024, device='cuda', dtype=torch.float16)
f = torch.empty(1024, 1024, device='cuda')
b = torch.empty(1024, 1024, device='cuda', dtype=torch.bfloat16)
base = torch.cuda.memory_allocated()
torch.cuda.reset_peak_memory_stats()
with torch.autocast('cuda'):
    c = torch.cat([h, f])
    assert c.dtype == torch.float32
    # The 8 MiB result; h's float32 copy (4 MiB) existed during the op.
    assert torch.cuda.memory_allocated() == base + 8 * M
    assert torch.cuda.max_memory_allocated() == base + 4 * M + 8 * M
    del c
    # All half: nothing is cast.
    s = torch.stack([h, h])
    assert s.dtype == torch.float16
    assert torch.cuda.memory_allocated() == base + 4 * M
    del s
with torch.autocast('cuda', dtype=torch.bfloat16):
    # float16 with a bfloat16 region: at::promote_types gives float32.
    c = torch.cat([h, b])
    assert c.dtype == torch.float32
# Outside a region: no autocast (ordinary type promotion of the model).
c = torch.cat([h, h])
assert c.dtype == torch.float16
");
}

#[test]
fn sum_pow_layer_norm_and_the_losses_follow_their_lists() {
    // `sum`: fp32_set_opt_dtype (float32 result); `mean` is on no list. `pow`,
    // `layer_norm`, `l1_loss`, `smooth_l1_loss`, `binary_cross_entropy_with_logits`,
    // `nll_loss`: the fp32 list (half inputs cast up, float32 results).
    ok("F = torch.nn.functional
x = torch.empty(64, 32, device='cuda', dtype=torch.float16)
y = torch.empty(64, 32, device='cuda', dtype=torch.float16)
t = torch.zeros(64, device='cuda', dtype=torch.long)
with torch.autocast('cuda'):
    assert x.sum().dtype == torch.float32
    assert x.sum(1).dtype == torch.float32
    assert torch.sum(x).dtype == torch.float32
    assert x.mean().dtype == torch.float16
    assert (x ** 2).dtype == torch.float32
    assert x.pow(2).dtype == torch.float32
    assert F.layer_norm(x, (32,)).dtype == torch.float32
    assert F.l1_loss(x, y).dtype == torch.float32
    assert F.smooth_l1_loss(x, y).dtype == torch.float32
    assert F.binary_cross_entropy_with_logits(x, y).dtype == torch.float32
    assert F.nll_loss(x, t).dtype == torch.float32
    assert torch.nn.LayerNorm(32, device='cuda')(x).dtype == torch.float32
assert x.sum().dtype == torch.float16
assert (x ** 2).dtype == torch.float16
assert F.l1_loss(x, y).dtype == torch.float16
");
}

#[test]
fn binary_cross_entropy_is_banned_in_an_autocast_region() {
    let e = run("x = torch.rand(8, device='cuda')
y = torch.rand(8, device='cuda')
ok = torch.nn.functional.binary_cross_entropy(x, y)
with torch.autocast('cuda'):
    torch.nn.functional.binary_cross_entropy(x, y)
")
    .unwrap_err();
    assert!(
        e.contains("binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast"),
        "{e}"
    );
    assert!(e.starts_with("t.yaml:9:"), "{e}");
}
