"""arraybench's Timer against timeit on NumPy operations of about 1 µs, 100 µs and 10 ms."""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import statistics  # noqa: E402
import timeit  # noqa: E402

import numpy as np  # noqa: E402

from arraybench.measure.timing import Timer, TimerConfig  # noqa: E402

ROUNDS = 7


def ops() -> dict[str, tuple]:
    rng = np.random.default_rng(0)
    small = rng.standard_normal(16)
    mid = rng.standard_normal(10_000)
    big = rng.standard_normal((600, 600))
    return {
        "~1 µs: np.add on 16 floats": (np.add, (small, small)),
        "~100 µs: np.sin on 10 000 floats": (np.sin, (mid,)),
        "~10 ms: 600×600 matmul (1 thread)": (np.matmul, (big, big)),
    }


def timeit_median(fn, args) -> float:
    # The statement as a string, so timeit's loop makes the same call arraybench's loop makes
    # (a lambda would add a Python call, ~70 ns, to every sample).
    t = timeit.Timer("fn(*args)", globals={"fn": fn, "args": args})
    number, _ = t.autorange()
    return statistics.median(x / number for x in t.repeat(repeat=15, number=number))


def main() -> None:
    cfg = TimerConfig(min_time=1.0, min_samples=15)
    print(f"{'operation':<38} {'arraybench':>12} {'timeit':>12} {'ratio':>7}")
    worst = 0.0
    for name, (fn, args) in ops().items():
        ratios, ours, theirs = [], [], []
        for _ in range(ROUNDS):
            a = Timer(fn, args, config=cfg).run().measurement.median
            b = timeit_median(fn, args)
            ours.append(a)
            theirs.append(b)
            ratios.append(a / b)
        r = statistics.median(ratios)
        print("   per round:", " ".join(f"{x:.3f}" for x in ratios))
        worst = max(worst, abs(r - 1))
        ours_us, theirs_us = statistics.median(ours) * 1e6, statistics.median(theirs) * 1e6
        print(f"{name:<38} {ours_us:>10.2f}µs {theirs_us:>10.2f}µs {r:>7.3f}")
    print(f"\nworst disagreement: {100 * worst:.1f}% (target ±5%)")


if __name__ == "__main__":
    main()
