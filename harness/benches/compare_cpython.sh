#!/usr/bin/env bash
# Whole-process wall time of the model against CPython 3.11 on the same loop (issue 13, item 7):
# the blog's awaitable and simple workloads at 100k and 1M iterations. CPython runs the code
# with a `__slots__` stand-in tensor (torch.zeros / .view only); the model runs it with its
# collector, allocator model and timeline on. Runs alternate (model, CPython, model, ...) so
# that a noisy shared machine slows both alike; the median of ROUNDS is printed, and the
# ratio model/CPython (below 1 means the model is faster).
#
# Usage: harness/benches/compare_cpython.sh [ROUNDS]   (from the repository root)
# Needs: `cargo build --release -p gpumem-harness --example workload_speed` (done here if
# missing) and CPython 3.11 (pyenv or python3.11 on PATH; skipped with a reason otherwise).
set -euo pipefail
rounds=${1:-3}
target=${CARGO_TARGET_DIR:-target}
model=${MODEL_BIN:-$target/release/examples/workload_speed}
if [[ ! -x $model ]]; then
    cargo build --release -q -p gpumem-harness --example workload_speed
fi
python=$(command -v python3.11 || ls -d "$HOME"/.pyenv/versions/3.11*/bin/python 2>/dev/null | head -1 || true)
if [[ -z $python ]]; then
    echo "skipped: no CPython 3.11 (python3.11 on PATH or pyenv 3.11.x)"
    exit 0
fi
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

printf '%-10s %9s %10s %10s %8s\n' workload iterations model_s cpython_s ratio
for iterations in 100000 1000000; do
    for workload in awaitable simple; do
        script=$scratch/$workload-$iterations.py
        {
            cat <<'PY'
import gc
class StandInTensor:
    __slots__ = ("n", "base")
    def __init__(self, n, base=None):
        self.n = n
        self.base = base
    def view(self, *shape):
        return StandInTensor(self.n, self)
class torch:
    @staticmethod
    def zeros(n, device=None):
        return StandInTensor(n)
gc_every = 0
PY
            "$model" "$workload" "$iterations" --print-python
        } > "$script"
        : > "$scratch/m"; : > "$scratch/c"
        for _ in $(seq "$rounds"); do
            t0=$(now); "$model" "$workload" "$iterations" > /dev/null; t1=$(now)
            echo "$t1 - $t0" | bc >> "$scratch/m"
            t0=$(now); "$python" "$script"; t1=$(now)
            echo "$t1 - $t0" | bc >> "$scratch/c"
        done
        m=$(median < "$scratch/m"); c=$(median < "$scratch/c")
        printf '%-10s %9d %10.3f %10.3f %8.2f\n' "$workload" "$iterations" "$m" "$c" "$(echo "$m / $c" | bc -l)"
    done
done
