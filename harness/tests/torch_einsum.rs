//! `torch.einsum` as ATen decomposes it (`python/einsum.rs`): per operand an `unsqueeze`
//! for each label it lacks and a `permute`; then `sumproduct_pair`'s permutes, 3-D reshapes
//! (views where the strides allow, else a copy), one `bmm`, and views back. No PyTorch is
//! installed here: every figure is worked out by hand from `aten/src/ATen/native/Linear.cpp`
//! (which ops run, which reshape copies) and `derivatives.yaml` (`bmm` saves each operand
//! when the other requires grad); the allocator rounds blocks up to 512 bytes.

mod workload_runner;
use workload_runner::{fails, ok};

/// The matmul-like forms of row-major operands: every reshape is a view, so the forward
/// allocates only the `bmm` output (the result is a view of it): the peak is the operands
/// plus the result. `BmmBackward0` keeps views of both operands (each requires grad); with
/// the result dropped only they and `z` stay; backward adds one gradient per operand.
#[test]
fn matmul_like_forms_allocate_only_the_bmm_output() {
    // (equation, a's shape, b's shape, MiB of a, b, result).
    let cases: &[(&str, &str, &str, u32, u32, u32)] = &[
        // [1024, 512] x [512, 2048]: 2 MiB, 4 MiB -> [1024, 2048] 8 MiB.
        ("ij,jk->ik", "1024, 512", "512, 2048", 2, 4, 8),
        // [8, 256, 128] x [8, 128, 512]: 1 MiB, 2 MiB -> [8, 256, 512] 4 MiB.
        ("bij,bjk->bik", "8, 256, 128", "8, 128, 512", 1, 2, 4),
        // q, k [4, 8, 256, 64]: 2 MiB each -> scores [4, 8, 256, 256] 8 MiB. k's
        // `[B, H, D, K]` permute merges B and H as a view (transposed for bmm), no copy.
        ("bhqd,bhkd->bhqk", "4, 8, 256, 64", "4, 8, 256, 64", 2, 2, 8),
    ];
    for (eq, sa, sb, ma, mb, my) in cases {
        ok(&format!(
            "import torch
M = 1024 * 1024
a = torch.empty({sa}, device='cuda', requires_grad=True)
b = torch.empty({sb}, device='cuda', requires_grad=True)
torch.cuda.reset_peak_memory_stats()
y = torch.einsum('{eq}', a, b)
assert torch.cuda.memory_allocated() == ({ma} + {mb} + {my}) * M, '{eq}'
assert torch.cuda.max_memory_allocated() == ({ma} + {mb} + {my}) * M, '{eq}'
# The result is a view (contracted dims dropped) of the permuted view of the bmm output.
assert y.grad_fn.name() == 'ViewBackward0', y.grad_fn.name()
assert y._base is not None
z = y.sum()
del y
assert torch.cuda.memory_allocated() == ({ma} + {mb}) * M + 512, '{eq}'
z.backward()
assert torch.cuda.memory_allocated() == 2 * ({ma} + {mb}) * M + 512, '{eq}'
"
        ));
    }
}

/// `torch.einsum(eq, [a, b])` (one list of operands) is the same call; the result's shape
/// follows the output subscripts, the implicit output is the labels seen once, in order.
#[test]
fn operand_lists_and_implicit_outputs() {
    ok("import torch
a = torch.empty(6, 4, device='cuda')
b = torch.empty(4, 5, device='cuda')
assert tuple(torch.einsum('ij,jk->ik', [a, b]).shape) == (6, 5)
assert tuple(torch.einsum('ij,jk', a, b).shape) == (6, 5)
assert tuple(torch.einsum('ij,jk->ki', a, b).shape) == (5, 6)
# Nothing contracted: the product is a broadcast `mul`.
assert tuple(torch.einsum('i,j->ij', a[0], b[0]).shape) == (4, 5)
# One operand, a permutation only.
assert tuple(torch.einsum('ij->ji', a).shape) == (4, 6)
# No operand requires grad: no node.
assert torch.einsum('ij,jk->ik', a, b).grad_fn is None
");
}

/// A reshape the strides do not allow copies: in `hbd,bhd->bh` the left operand, aligned to
/// `[B, H, D]` with strides `(D, B*D, 1)`, cannot merge `B` and `H` as a view, so
/// `sumproduct_pair` clones it (4 MiB, `CloneBackward0` under `UnsafeViewBackward0`) and
/// `BmmBackward0` keeps that copy (b requires grad) until backward releases it.
#[test]
fn a_reshape_the_strides_forbid_copies_and_backward_keeps_the_copy() {
    ok("import torch
M = 1024 * 1024
a = torch.empty(64, 32, 512, device='cuda', requires_grad=True)
b = torch.empty(32, 64, 512, device='cuda', requires_grad=True)
y = torch.einsum('hbd,bhd->bh', a, b)
assert tuple(y.shape) == (32, 64)
# a, b, the copy of a (4 MiB each) and the bmm output [2048, 1, 1] (8 KiB).
assert torch.cuda.memory_allocated() == 12 * M + 8192, torch.cuda.memory_allocated()
z = y.sum()
del y
# The bmm output dies with y; the copy stays, saved by BmmBackward0.
assert torch.cuda.memory_allocated() == 12 * M + 512, torch.cuda.memory_allocated()
z.backward()
# The copy is released; a.grad and b.grad (4 MiB each) are added.
assert torch.cuda.memory_allocated() == 16 * M + 512, torch.cuda.memory_allocated()
");
}

/// What the model does not run is refused at the call; equations PyTorch rejects get its
/// errors.
#[test]
fn refusals_and_errors_are_located() {
    let pre = "import torch\na = torch.empty(4, 4, device='cuda')\nb = torch.empty(4, 4, device='cuda')\n";
    for (call, expected) in [
        (
            "torch.einsum('ii->i', a)",
            "unsupported: torch.einsum with subscript i repeated",
        ),
        (
            "torch.einsum('...ij,jk->...ik', a, b)",
            "unsupported: torch.einsum with an ellipsis",
        ),
        (
            "torch.einsum('ij,jk,kl->il', a, b, a)",
            "unsupported: torch.einsum of three or more operands",
        ),
        (
            "torch.einsum('ij->i', a)",
            "unsupported: torch.einsum of one operand that sums",
        ),
        (
            "torch.einsum('ij,jk->il', a, b)",
            "einsum(): output subscript l does not appear in the equation for any input operand",
        ),
        (
            "torch.einsum('ijk,jk->ik', a, b)",
            "einsum(): the number of subscripts in the equation (3) does not match the number of dimensions (2) for operand 0",
        ),
        (
            "torch.einsum('ij,jk->ik', a)",
            "einsum(): fewer operands were provided than specified",
        ),
        (
            "torch.einsum('ij->ij', a, b)",
            "einsum(): more operands were provided than specified",
        ),
        (
            "torch.einsum('ij,jk->ik', a, torch.empty(5, 4, device='cuda'))",
            "einsum(): subscript j has size 5 for operand 1 which does not broadcast with previously seen size 4",
        ),
    ] {
        let e = fails(&format!("{pre}y = {call}\n"));
        assert!(e.contains(expected), "{call}: {e}");
        // Line 4 of the workload is line 8 of the scenario file.
        assert!(e.contains("t.yaml:8:"), "{call}: located: {e}");
    }
}
