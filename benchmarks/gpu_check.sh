#!/usr/bin/env bash
# The catalogue on a CUDA GPU, NumPy on the CPU beside it for the ratios, then the timing checks.
# NumPy runs on no GPU (asked only for one, it is `unavailable`), so the runs with NumPy ask for
# `cpu,gpu`: torch and JAX are measured on the CPU too.
#
#   benchmarks/gpu_check.sh [OUT_DIR]      (default benchmark_results/gpu-check)
#
# Writes OUT_DIR/float32/ (every built-in workload at its default sizes on cupy, torch and jax,
# eager and jit, with results.jsonl and the report), OUT_DIR/float64/ (ten workloads' small sizes in float64),
# OUT_DIR/gpu_timing.json (benchmarks/gpu_timing.py: CUDA events, dispatch cost, TF32, JAX copies)
# OUT_DIR/vmap/ and OUT_DIR/devices/ (issue 21: the vmap family, the multi-device workloads), and
# OUT_DIR/gpu_check.log, and OUT_DIR.tgz (all of it but caches and plots: small enough to copy back from a lent
# machine). Runs from a source tree: PYTHON (default python3) needs numpy,
# psutil, threadpoolctl, scipy, pandas, matplotlib and the GPU frameworks; nvidia-ml-py for clocks.
# Sampling is shortened (--min-time 0.2, --max-time 2) and each case runs in PROCESSES (default 1)
# worker processes, so the check fits the short calls a lent GPU allows; PROCESSES=3 gives the
# intervals a plain `arraybench run` gives, at three times the cost.
#
# LIMIT (seconds, default 540) bounds the whole check, so that it fits one call of a lent GPU (600 s at most): each
# step gets its share of it (the catalogue 40 %) and no more than is left, and a step cut short stops
# as Ctrl-C stops a run (its finished cases kept, its report drawn from them, "cut" in the log), so
# the steps after it still run. Measured on an H200 (16 cores, 2026-11-26): the float32 catalogue at
# PROCESSES=3 is 1044 processes, 443 of them in 9 min; the whole of it takes about 21 min, and at
# PROCESSES=1 about 7. Do not cut the script from outside with `timeout`: bash passes the signal to
# none of the runs, which go on until the machine is taken back.
set -uo pipefail
out=${1:-benchmark_results/gpu-check}
py=${PYTHON:-python3}
processes=${PROCESSES:-1}
limit=${LIMIT:-540}
here=$(cd "$(dirname "$0")/.." && pwd)
export PYTHONPATH="$here/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
mkdir -p "$out"
status=0
exec > >(tee "$out/gpu_check.log") 2>&1
start=$SECONDS
# step PERCENT CMD...: CMD with at most PERCENT % of LIMIT and no more than is left of it, stopped
# with SIGINT (a run keeps its finished cases) and then killed 20 s later if it has not ended.
step() {
    local share=$(( limit * $1 / 100 )) left=$(( limit - (SECONDS - start) )); shift
    [ "$share" -gt "$left" ] && share=$left
    if [ "$share" -lt 10 ]; then echo "gpu_check: skipped (${share} s left for it): $*"; status=1; return; fi
    timeout -s INT -k 20 "$share" "$@"
    local rc=$?
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 130 ]; then echo "gpu_check: cut after ${share} s: $*"; status=1
    elif [ "$rc" -ne 0 ]; then status=1; fi
}
# report DIR: the report of a run, drawn again where the run was cut before drawing it.
report() { [ -f "$1/report.md" ] || [ ! -f "$1/results.jsonl" ] || "$py" -m arraybench report "$1" >/dev/null || status=1; }
date -u
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv
step 3 "$py" -m arraybench env
step 37 "$py" -m arraybench run --backends numpy,cupy,torch,jax --devices cpu,gpu --dtype float32 \
    --min-time 0.2 --max-time 2 --processes "$processes" --no-store --output-dir "$out/float32"
report "$out/float32"
step 8 "$py" "$here/benchmarks/gpu_timing.py" --json "$out/gpu_timing.json"
step 8 "$py" -m arraybench run --backends numpy,cupy,torch,jax --devices cpu,gpu --dtype float64 --sizes small --workloads matmul,elementwise_add,elementwise_sin,fft,sort,poly,selu,grad,linreg,transfer_to_host \
    --min-time 0.1 --max-time 1 --processes "$processes" --no-store --output-dir "$out/float64"
report "$out/float64"
# The large-size set (issue 20), twice: what the harness spends per process, and an A/A compare on
# the GPU (nothing found), then the same pair with sort's samples made 10 % slower (sort found).
step 8 "$py" "$here/benchmarks/harness_cost.py" --devices gpu --out "$out/harness" --json "$out/harness_cost.json"
for k in 1 2; do
    for wl_size in elementwise_sin:100000000 sort:100000000 fft:16777216 matmul:8192; do
        step 3 "$py" -m arraybench run --workloads "${wl_size%%:*}" --sizes "${wl_size##*:}" --backends cupy,torch,jax \
            --devices gpu --dtype float32 --processes 3 --refine 0 --no-store --seed "$k" \
            --output-dir "$out/large$k/${wl_size%%:*}"
    done
done
for wl in elementwise_sin sort fft matmul; do
    "$py" -m arraybench compare "$out/large1/$wl" "$out/large2/$wl" || status=1
done
"$py" "$here/benchmarks/reproducibility.py" scale "$out/large2/sort" "$out/large2-sort-slower" 1.10 sort
"$py" -m arraybench compare "$out/large1/sort" "$out/large2-sort-slower" || true
# Issue 21: the vmap family (loop, vmap, hand-batched over the batch sweep) and the multi-device
# workloads on one GPU (their single-device path: the baseline of a scaling over several GPUs);
# with two or more GPUs, the same workloads over gpu:2 and gpu:all, and the GPUs' links (env).
step 8 "$py" -m arraybench run --suite vmap --backends numpy,cupy,torch,jax --devices cpu,gpu --dtype float32 \
    --min-time 0.1 --max-time 1 --processes "$processes" --refine 0 --no-store --output-dir "$out/vmap"
report "$out/vmap"
gpus=$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)
devices=gpu
[ "$gpus" -ge 2 ] && devices=gpu,gpu:2,gpu:all
step 6 "$py" -m arraybench run --workloads dp_matmul,dp_grad,dp_grad_pmap,allreduce,device_copy --sizes small,large \
    --backends cupy,torch,jax --devices "$devices" --dtype float32 --min-time 0.1 --max-time 1 \
    --processes "$processes" --refine 0 --no-store --output-dir "$out/devices"
report "$out/devices"
# What a lent machine can send back (files of at most 16 MiB): every run's results, report.md and
# worker logs (a cut run's names what its worker in flight was doing, and the log holds its threads'
# stacks), without the caches and plots.
tar czf "$out.tgz" --exclude=cache --exclude=plots --exclude='*.html' -C "$(dirname "$out")" "$(basename "$out")"
ls -l "$out.tgz"
date -u
exit $status
