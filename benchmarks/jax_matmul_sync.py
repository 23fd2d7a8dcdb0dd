"""A jitted JAX 2000×2000 matmul: arraybench vs a hand loop that blocks on every call."""

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import statistics  # noqa: E402
import time  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from arraybench.measure.timing import Timer, TimerConfig  # noqa: E402

ROUNDS = 5
N = 2000


def hand_loop(f, a, b, calls: int = 15) -> float:
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        f(a, b).block_until_ready()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def dispatch_only(f, a, b, calls: int = 15) -> float:
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        out = f(a, b)
        times.append(time.perf_counter() - t0)
        out.block_until_ready()
    return statistics.median(times)


def main() -> None:
    rng = np.random.default_rng(0)
    a = jax.device_put(rng.standard_normal((N, N), dtype=np.float32))
    b = jax.device_put(rng.standard_normal((N, N), dtype=np.float32))
    f = jax.jit(jnp.matmul)
    f(a, b).block_until_ready()
    cfg = TimerConfig(min_time=1.0, min_samples=10)
    ours, hands, dispatch = [], [], []
    for _ in range(ROUNDS):
        ours.append(Timer(f, (a, b), sync=jax.block_until_ready, config=cfg).run().measurement.median)
        hands.append(hand_loop(f, a, b))
        dispatch.append(dispatch_only(f, a, b))
    ratio = statistics.median(o / h for o, h in zip(ours, hands, strict=True))
    print(f"arraybench median     {statistics.median(ours) * 1e3:8.2f} ms")
    print(f"hand loop (blocking)  {statistics.median(hands) * 1e3:8.2f} ms")
    print(f"dispatch only         {statistics.median(dispatch) * 1e3:8.2f} ms   (what an unsynced timer reports)")
    print(f"ratio arraybench / hand loop: {ratio:.3f} (target within ±10%)")


if __name__ == "__main__":
    main()
