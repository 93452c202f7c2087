//! `obj.__class__` on an `nn.Module` instance, and `torch.autocast(..., cache_enabled=False)`:
//! no weight cast is cached in the region, so each op's float16 copy of a weight dies with
//! the op (unless its graph saves it).

#[allow(dead_code)] // each test file uses some of the helpers
mod reports_judge;

use reports_judge::judge_fix;

/// Linear(1024, 1024) weight 4 MiB + bias 4 KiB, input 256x1024 float32 1 MiB. Inside the
/// region, `y = m(t)` casts `t` (512 KiB half, saved by `addmm` for the weight's gradient)
/// and the weight and bias (2 MiB + 2 KiB half) and makes `y` (512 KiB half). With the cache
/// (the default) those copies stay until the region exits; with `cache_enabled=False` they are not
/// saved (`t` needs no gradient) and die after the op: 2 MiB + 2 KiB less inside the region, the
/// same after it.
#[test]
fn autocast_without_cache_frees_each_weight_cast() {
    let (cached, uncached) = judge_fix(
        "autocast_cache_enabled",
        r#"
import torch
m = torch.nn.Linear(1024, 1024).cuda()
print(m.__class__.__name__, m.__class__ is torch.nn.Linear)
t = torch.randn(256, 1024, device="cuda")
for step in range(3):
    with torch.autocast("cuda", cache_enabled=not fix):
        y = m(t)
        print(y.dtype, torch.cuda.memory_allocated())
    print(torch.cuda.memory_allocated())
"#,
    );
    let n = |p: &[String], i: usize| -> i64 {
        p[i].split_whitespace().last().unwrap().parse().unwrap()
    };
    // weight + bias + t + half t (saved) + y
    let held = (4 << 20) + 4096 + (1 << 20) + (512 << 10) + (512 << 10);
    for run in [&cached, &uncached] {
        assert_eq!(run.printed[0], "Linear True");
        assert_eq!(run.growth, 0);
        for step in 0..3 {
            assert!(run.printed[1 + 2 * step].starts_with("torch.float16"));
            assert_eq!(n(&run.printed, 2 + 2 * step), held);
        }
    }
    for step in 0..3 {
        assert_eq!(n(&uncached.printed, 1 + 2 * step), held);
        // the cached half weight (2 MiB) and half bias (2 KiB)
        assert_eq!(n(&cached.printed, 1 + 2 * step), held + (2 << 20) + 2048);
    }
}
