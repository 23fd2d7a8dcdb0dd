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
# OUT_DIR/gpu_check.log. Runs from a source tree: PYTHON (default python3) needs numpy,
# psutil, threadpoolctl, scipy, pandas, matplotlib and the GPU frameworks; nvidia-ml-py for clocks.
# Sampling is shortened (--min-time 0.2, --max-time 2) and each case runs in PROCESSES (default 1)
# worker processes, so the check fits the short calls a lent GPU allows; PROCESSES=3 gives the
# intervals a plain `arraybench run` gives, at three times the cost.
set -uo pipefail
out=${1:-benchmark_results/gpu-check}
py=${PYTHON:-python3}
processes=${PROCESSES:-1}
here=$(cd "$(dirname "$0")/.." && pwd)
export PYTHONPATH="$here/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
mkdir -p "$out"
status=0
exec > >(tee "$out/gpu_check.log") 2>&1
date -u
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv
"$py" -m arraybench env || status=1
"$py" -m arraybench run --backends numpy,cupy,torch,jax --devices cpu,gpu --dtype float32 \
    --min-time 0.2 --max-time 2 --processes "$processes" --no-store --output-dir "$out/float32" || status=1
"$py" "$here/benchmarks/gpu_timing.py" --json "$out/gpu_timing.json" || status=1
"$py" -m arraybench run --backends numpy,cupy,torch,jax --devices cpu,gpu --dtype float64 --sizes small --workloads matmul,elementwise_add,elementwise_sin,fft,sort,poly,selu,grad,linreg,transfer_to_host \
    --min-time 0.1 --max-time 1 --processes "$processes" --no-store --output-dir "$out/float64" || status=1
# The large-size set (issue 20), twice: what the harness spends per process, and an A/A compare on
# the GPU (nothing found), then the same pair with sort's samples made 10 % slower (sort found).
"$py" "$here/benchmarks/harness_cost.py" --devices gpu --out "$out/harness" --json "$out/harness_cost.json" || status=1
for k in 1 2; do
    for wl_size in elementwise_sin:100000000 sort:100000000 fft:16777216 matmul:8192; do
        "$py" -m arraybench run --workloads "${wl_size%%:*}" --sizes "${wl_size##*:}" --backends cupy,torch,jax \
            --devices gpu --dtype float32 --processes 3 --refine 0 --no-store --seed "$k" \
            --output-dir "$out/large$k/${wl_size%%:*}" || status=1
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
"$py" -m arraybench run --suite vmap --backends numpy,cupy,torch,jax --devices cpu,gpu --dtype float32 \
    --min-time 0.1 --max-time 1 --processes "$processes" --refine 0 --no-store --output-dir "$out/vmap" || status=1
gpus=$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)
devices=gpu
[ "$gpus" -ge 2 ] && devices=gpu,gpu:2,gpu:all
"$py" -m arraybench run --workloads dp_matmul,dp_grad,dp_grad_pmap,allreduce,device_copy --sizes small,large \
    --backends cupy,torch,jax --devices "$devices" --dtype float32 --min-time 0.1 --max-time 1 \
    --processes "$processes" --refine 0 --no-store --output-dir "$out/devices" || status=1
date -u
exit $status
