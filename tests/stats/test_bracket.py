"""Crossover bracketing: measured points in, the next sizes to measure and the verdict out."""

import math
from dataclasses import replace

import pytest

from arraybench.stats import bracket
from arraybench.stats.bracket import BRACKETED, OPEN, TIE, Point, brackets, proposals


def series(fn, sizes, noise=0.02):
    """Points whose interval is ±noise around fn(size)."""
    return {s: Point(s, fn(s), fn(s) * (1 - noise), fn(s) * (1 + noise)) for s in sizes}


def linear(s):
    return 1e-6 * s  # grows with size


def flat(s):
    return 1e-3  # a fixed per-call cost: it overtakes `linear` at size 1000


def test_two_far_apart_sizes_are_open_and_propose_their_geometric_middle():
    (br,) = brackets("numpy", series(linear, [10, 100_000]), "jax", series(flat, [10, 100_000]))
    assert br.state == OPEN and br.next_size == 1000
    assert (br.faster_below, br.faster_above) == ("numpy", "jax")
    assert br.estimate == pytest.approx(1000.0)


def test_bisection_reaches_a_bracket_at_most_twice_apart_with_separated_intervals():
    """Drive the proposals as the run layer would, with a crossing at 1000 that no size hits."""
    sizes = {10, 100_000}
    true_crossing = 1234.5

    def slow(s):
        return 1e-6 * s

    def fixed(s):
        return 1e-6 * true_crossing

    rounds = 0
    while True:
        measured = {"numpy": series(slow, sorted(sizes)), "jax": series(fixed, sorted(sizes))}
        nxt = proposals(measured)
        if not nxt:
            break
        assert all(labels == {"numpy", "jax"} for labels in nxt.values())
        sizes |= set(nxt)
        rounds += 1
        assert rounds < 12, "bisection does not converge"
    (br,) = brackets("numpy", measured["numpy"], "jax", measured["jax"])
    assert br.state == BRACKETED
    assert br.lo < true_crossing < br.hi and br.hi / br.lo <= 2.0
    assert br.estimate == pytest.approx(true_crossing, rel=1e-6)  # both lines are straight on log-log
    assert rounds <= 6 and len(sizes) <= 10  # a 10 000× range costs a handful of extra sizes


def test_overlapping_intervals_between_close_sizes_are_a_tie_not_a_crossover():
    sizes = [100, 180, 300, 500, 900]
    a = series(lambda s: 1e-3, sizes, noise=0.1)
    # b wins at the ends by 3 % only (inside the noise) and loses by 3 % in between
    b = series(lambda s: 1e-3 * (0.97 if s in (100, 900) else 1.03), sizes, noise=0.1)
    found = brackets("a", a, "b", b)
    assert found and all(br.state == TIE for br in found)
    assert proposals({"a": a, "b": b}) == {}


def test_no_change_of_order_gives_nothing_to_measure():
    sizes = [10, 100, 1000]
    assert brackets("a", series(linear, sizes), "b", series(lambda s: 2e-6 * s, sizes)) == []
    assert proposals({"a": series(linear, sizes), "b": series(lambda s: 2e-6 * s, sizes)}) == {}


def test_adjacent_integers_are_a_bracket_even_when_more_than_twice_apart():
    a = {1: Point(1, 1.0, 0.99, 1.01), 2: Point(2, 3.0, 2.9, 3.1)}
    b = {1: Point(1, 2.0, 1.9, 2.1), 2: Point(2, 2.0, 1.9, 2.1)}
    (br,) = brackets("a", a, "b", b)
    assert br.state == BRACKETED and (br.lo, br.hi) == (1, 2) and br.next_size is None


def test_sizes_measured_for_only_one_side_are_not_compared():
    a = series(linear, [10, 1000, 100_000])
    b = series(flat, [10, 100_000])
    (br,) = brackets("a", a, "b", b)
    assert (br.lo, br.hi) == (10, 100_000)  # 1000 is a's alone: the bracket still needs b there
    assert proposals({"a": a, "b": b}) == {1000: {"a", "b"}}


def test_a_crossover_whose_medians_flip_back_and_forth_is_placed_from_its_separated_ends():
    """numpy ahead beyond noise at 10, jax at 100 000, and in between the two within ±30 % noise,
    their medians taking turns: the estimate comes from the ends (the lines cross at 1000), not
    from the first flip of the noise at 20–40."""
    sizes = [10, 20, 40, 80, 160, 320, 640, 100_000]
    wobble = {s: (1.05 if i % 2 else 0.95) for i, s in enumerate(sizes)}
    a = {s: Point(s, linear(s) * wobble[s], linear(s) * wobble[s] * 0.7, linear(s) * wobble[s] * 1.3) for s in sizes}
    b = {s: Point(s, linear(s) / wobble[s], linear(s) / wobble[s] * 0.7, linear(s) / wobble[s] * 1.3)
         for s in sizes}
    a[10], b[10] = Point(10, 1e-5, 0.9e-5, 1.1e-5), Point(10, 1e-3, 0.9e-3, 1.1e-3)
    a[100_000], b[100_000] = Point(100_000, 1e-1, 0.09, 0.11), Point(100_000, 1e-3, 0.9e-3, 1.1e-3)
    found = brackets("numpy", a, "jax", b)
    (br,) = found  # the noise's flips inside are one crossover
    assert (br.lo, br.hi) == (10, 100_000) and br.state == OPEN  # 640 to 100 000 is still a wide gap
    assert br.estimate == pytest.approx(1000.0, rel=0.01)


def test_pairing_never_unorders_two_cases_whose_own_intervals_lie_apart():
    """TensorFlow's jitted poly at n = 3000 (0.96 and 1.66 ms) against Numba's (14.4 and 9.9 ms) in the same
    two rounds of one run: the two rounds' ratios differ in size, and paired they say nothing at one degree
    of freedom; their own intervals lie 6.6× apart and every round agrees, so those order them. Where the
    intervals overlap too, or a round puts them the other way, nothing does."""
    import math

    from arraybench.stats import bracket
    from arraybench.stats.paired import Pairing
    from arraybench.stats.pooling import NO_PRIOR

    run = Pairing("run", NO_PRIOR)
    tf = Point(3000, 1.262e-3, 1.060e-3, 1.502e-3, ((0, math.log(0.9636e-3)), (1, math.log(1.6629e-3))), run)
    nb = Point(3000, 11.09e-3, 9.93e-3, 12.40e-3, ((0, math.log(14.443e-3)), (1, math.log(9.8805e-3))), run)
    assert bracket.paired(tf, nb) is None  # two rounds: a paired order needs MIN_RIVAL_ROUNDS
    found = bracket.paired(tf, nb, least=2)
    assert found is not None and found.df == pytest.approx(1) and found.ci95[0] < 1 < found.ci95[1]
    assert bracket.side(tf, nb) == -1 and bracket.side(nb, tf) == 1
    wide = Point(3000, 11.09e-3, 1.2e-3, 30e-3, nb.rounds, run)
    assert bracket.side(tf, wide) == 0
    # A round that puts them the other way (Numba's second process in a fast mode, 0.5 ms) leaves it open.
    mixed = Point(3000, 11.09e-3, 9.93e-3, 12.40e-3, ((0, math.log(14.443e-3)), (1, math.log(0.5e-3))), run)
    assert bracket.side(tf, mixed) == 0 and not bracket.one_way(tf, mixed) and bracket.one_way(tf, nb)


def test_two_rounds_that_agree_order_no_pair_of_rivals():
    """Beside the neighbour, PyTorch's jitted FFT of 10⁶ floats paired with its eager twin in two kept
    rounds, −23 % and −19 %, and its run's prior (0.00084 on 1.09 degrees of freedom) ordered it ahead;
    four identical runs put it 8-15 % behind. Two rounds that agree are one degree of freedom, and one
    state of the host both happened to fall in: a paired order rests on MIN_RIVAL_ROUNDS, or on two whose
    interval lies beyond FEW_ROUNDS_MARGIN (10× here), and else their own intervals (which overlap here)
    decide. A third round that agrees orders them."""
    run = _run(0.00084, 1.09)
    eager = Point(1e6, 6.45e-3, 5.28e-3, 7.88e-3, _logs({1: 6.618e-3, 3: 6.291e-3}), run,
                  slowed=_logs({0: 15.74e-3, 2: 7.907e-3}))
    jit = Point(1e6, 5.11e-3, 3.61e-3, 7.25e-3, _logs({0: 6.651e-3, 1: 5.114e-3, 3: 5.093e-3}), run,
                slowed=_logs({2: 16.06e-3}))
    two = bracket.paired(jit, eager, least=2)
    assert two is not None and two.ci95[0] > 1  # read as before: jit ahead
    assert bracket.paired(jit, eager) is None
    assert bracket.side(jit, eager) == bracket.side(eager, jit) == 0
    assert not bracket.ahead_though_slowed(jit, eager)  # its slowed round pairs with none of eager's kept ones
    # Two rounds still order a pair whose paired interval lies beyond FEW_ROUNDS_MARGIN: not this one.
    assert bracket.paired_side(jit, eager) == 0
    far = replace(eager, rounds=_logs({1: 6.618e-2, 3: 6.291e-2}))
    assert bracket.paired_side(jit, far) == -1 and bracket.side(far, jit) == 1
    third = replace(eager, rounds=_logs({1: 6.618e-3, 3: 6.291e-3, 4: 6.4e-3}))
    jit3 = replace(jit, rounds=_logs({0: 6.651e-3, 1: 5.114e-3, 3: 5.093e-3, 4: 5.05e-3}))
    assert bracket.side(jit3, third) == -1 and bracket.side(third, jit3) == 1


def test_a_case_that_may_have_run_faster_by_its_reach_is_behind_only_beyond_it():
    """A point's `reach` (stats/pools.reach): a case behind by less than it is open; ahead, it stays ahead."""
    jax = bracket.Point(100, 15e-6, 14.5e-6, 15.5e-6)
    numpy = bracket.Point(100, 31e-6, 30e-6, 32e-6, reach=2.4)
    assert bracket.side(jax, numpy) == bracket.side(numpy, jax) == 0
    assert bracket.held(jax, numpy) and bracket.held(numpy, jax)
    slow = bracket.Point(100, 90e-6, 88e-6, 92e-6, reach=2.4)  # 6× behind: beyond any reach
    assert bracket.side(jax, slow) == -1 and not bracket.held(jax, slow)
    ahead = bracket.Point(100, 10e-6, 9.8e-6, 10.2e-6, reach=2.4)  # ahead though slowed
    assert bracket.side(ahead, jax) == -1 and bracket.side(jax, ahead) == 1
    assert bracket.side(jax, bracket.Point(100, 31e-6, 30e-6, 32e-6)) == -1  # no reach: ordered as measured
    assert numpy.times(2.0).reach == 2.4


def _run(variance: float, df: float):
    from arraybench.stats.paired import Pairing
    from arraybench.stats.pooling import VariancePrior

    return Pairing("run", VariancePrior(variance, df, 100))


def _logs(by_round: dict[int, float]) -> tuple[tuple[int, float], ...]:
    import math

    return tuple((k, math.log(x)) for k, x in sorted(by_round.items()))


def test_a_case_ahead_of_its_rival_with_its_slowed_rounds_read_at_what_they_took_is_ahead():
    """Beside a neighbour (benchmarks/noisy.py), NumPy's sort of 1000 floats kept one process of three
    (6.3 µs); a spell covered the other two (8.0 and 8.1 µs over all their samples). PyTorch's kept two
    (13.3 and 14.1 µs), a spell covered its third (20.4 µs). Read from the kept processes alone the two
    paired in one round and were left unordered 2.2× apart; a spell only slows, so NumPy is ahead, once
    MIN_RIVAL_ROUNDS rounds hold both (here a fourth, which the stop rule gives a question still open).
    Only the faster side's slowed rounds count: PyTorch's would make it look slower than it is."""
    run = _run(0.0031, 1.28)
    numpy = Point(1000, 6.34e-6, 3.71e-6, 10.8e-6, _logs({1: 6.339e-6}), run, slowed=_logs({0: 7.988e-6, 2: 8.113e-6}))
    torch = Point(1000, 13.7e-6, 10.6e-6, 17.8e-6, _logs({0: 1.33e-5, 1: 1.413e-5}), run,
                  slowed=_logs({2: 2.039e-5}))
    assert bracket.side(numpy, torch) == 0  # two rounds hold both, slowed or not: too few to order
    numpy = replace(numpy, rounds=_logs({1: 6.339e-6, 3: 6.5e-6}))
    torch = replace(torch, rounds=_logs({0: 1.33e-5, 1: 1.413e-5, 3: 1.39e-5}))
    assert bracket._held_side(numpy, torch) == 0  # as the kept processes alone read them: two rounds
    assert bracket.ahead_though_slowed(numpy, torch) and not bracket.ahead_though_slowed(torch, numpy)
    assert bracket.side(numpy, torch) == -1 and bracket.side(torch, numpy) == 1
    # A rival within its slowed rounds' reach is no claim: NumPy at 7 µs kept against those 8 µs.
    close = Point(1000, 7.0e-6, 6.8e-6, 7.2e-6, _logs({0: 7.0e-6, 1: 7.1e-6, 2: 6.9e-6}), run)
    assert bracket.side(numpy, close) == 0
    # Scaled, the slowed rounds move with the point.
    assert numpy.times(2.0).slowed == _logs({0: 2 * 7.988e-6, 2: 2 * 8.113e-6})


def test_a_case_a_spell_covered_in_every_round_is_behind_only_beyond_what_a_spell_did_in_its_run():
    """Two identical runs beside the neighbour (spells in 85 % of processes). In the second, a spell covered
    every process of Numba's 2-thread add of 10⁶ floats (155 µs, 1.36 ms, 7.8 ms: its pool stalled), and
    JAX's jitted add kept two of four (270 and 249 µs); read by its interval, Numba was behind, where the
    first run had it ahead (100-112 µs kept against 292-295). What a covered case took is only a bound
    from above: the run's covered processes read up to 45× their case's kept ones (its `reach`,
    results.reading.spell_reach), so it is behind a rival only beyond that, and ahead as its bounds allow."""
    run = _run(0.0187, 1.57)
    numba = Point(1e6, 1.36e-3, 5.44e-4, 3.41e-3, (), run, slowed=_logs({0: 155.5e-6, 1: 1.36e-3, 2: 7.81e-3}))
    jax = Point(1e6, 2.59e-4, 1.44e-4, 4.68e-4, _logs({2: 270.0e-6, 3: 249.3e-6}), run,
                slowed=_logs({0: 570.7e-6, 1: 335.4e-6}))
    assert bracket.side(jax, numba) == -1  # at its numbers: the order the runs disagreed on
    numba = replace(numba, reach=45.3)
    assert bracket.side(jax, numba) == bracket.side(numba, jax) == 0
    far = Point(1e6, 2e-6, 1.9e-6, 2.1e-6, _logs({0: 2e-6, 1: 2.1e-6, 2: 1.9e-6}), run)
    assert bracket.side(far, numba) == -1  # 270× ahead of its bounds: ahead of any spell's reach
    # Ahead it can be: its bounds under a rival's kept rounds, paired in enough of them.
    slow = Point(1e6, 30e-3, 28e-3, 32e-3, _logs({0: 30e-3, 1: 29e-3, 2: 31e-3}), run)
    assert bracket.side(numba, slow) == -1 and bracket.side(slow, numba) == 1


def test_a_case_is_ahead_of_a_rival_whose_covered_rounds_are_read_at_what_they_took_over_a_spells_reach():
    """Beside the neighbour (pairR, run 2), PyTorch's eager sort of 10⁶ floats kept one process of four
    (108.7 ms; the covered ones 111-114 ms) and JAX's jitted sort one of three (305 ms; the covered ones 342
    and 387 ms). Read apart, one kept process each, their intervals overlap 2.8× apart, and no two kept
    rounds pair them. A spell the reference saw slowed no case of that run more than 2.37× (JAX's
    `spell`), so its covered rounds took at least 144 and 163 ms: paired with PyTorch's rounds at what
    they took (at most), in four rounds, PyTorch is ahead."""
    run = _run(0.0612, 60.0)
    torch = Point(1e6, 108.68e-3, 52.00e-3, 227.12e-3, _logs({1: 108.679e-3}), run,
                  slowed=_logs({0: 113.618e-3, 2: 111.161e-3, 3: 111.623e-3}), spell=50.27)
    jax = Point(1e6, 305.03e-3, 145.96e-3, 637.45e-3, _logs({0: 305.032e-3}), run,
                slowed=_logs({1: 387.488e-3, 2: 341.58e-3}), spell=2.369)
    assert torch.high > jax.low and bracket._held_side(torch, jax) == 0
    assert bracket.side(torch, jax) == -1 and bracket.side(jax, torch) == 1
    # Where how far a spell went is unknown, or as far as a stalled pool's (50×), they bound nothing.
    for spell in (math.inf, 50.27):
        assert bracket.side(torch, replace(jax, spell=spell)) == bracket.side(replace(jax, spell=spell), torch) == 0
    # A bound is a second reading, not one that replaces the first: `b`'s covered rounds 3-5, read at 59-63
    # ms or more, half of the six, leave the pair open; its three kept rounds against `a`'s bounds order it.
    tight = _run(0.001, 60.0)
    a = Point(1e6, 101e-3, 80e-3, 125e-3, _logs({0: 100e-3, 1: 101e-3}), tight,
              slowed=_logs({2: 104e-3, 3: 105e-3, 4: 103e-3, 5: 104e-3}))
    b = Point(1e6, 130e-3, 110e-3, 150e-3, _logs({0: 130e-3, 1: 131e-3, 2: 129e-3}), tight,
              slowed=_logs({3: 140e-3, 4: 150e-3, 5: 145e-3}), spell=2.369)
    floors = {k: x - math.log(b.spell) for k, x in b.slowed}
    upper = replace(a, rounds=tuple(sorted({**dict(a.slowed), **dict(a.rounds)}.items())), slowed=())
    assert bracket.paired_side(upper, replace(b, rounds=tuple(sorted({**floors, **dict(b.rounds)}.items())))) == 0
    assert bracket._held_side(a, b) == 0 and bracket.side(a, b) == -1 and bracket.side(b, a) == 1


def test_a_case_that_was_ahead_in_a_round_a_spell_covered_is_behind_nowhere():
    """Two identical runs beside a neighbour. In the first, Numba's jitted 2000² matmul kept processes of
    111 and 91 ms and one a spell covered at 80 ms; PyTorch's eager one read 92, 82 and 84 ms in those rounds.
    Paired in the kept rounds Numba was behind (×1.17), yet in the covered round it was ahead even slowed; in
    the second run Numba was ahead (78-85 ms against 89-104). The first run leaves the pair open. (Its run's
    prior, 0.0023 on 2.05 degrees of freedom, was weak, and now lends the kept rounds no narrowness, which
    alone leaves them open: pooling.VariancePrior.weak. The rule is shown here at a prior that orders them.)"""
    numba = Point(2000, 0.1006, 0.0726, 0.1395, _logs({0: 0.1113, 2: 0.09103, 3: 0.0990}), _run(0.0023, 8.0),
                  slowed=_logs({1: 0.0803}))
    torch = Point(2000, 0.0859, 0.0773, 0.0954, _logs({0: 0.09202, 1: 0.0816, 2: 0.08362, 3: 0.08589, 4: 0.09176}),
                  numba.pairing)
    assert bracket._held_side(numba, torch) == 1  # behind, as the kept rounds read it
    assert bracket.ahead_in_a_slowed_round(numba, torch)
    assert bracket.side(numba, torch) == bracket.side(torch, numba) == 0
    assert not bracket.held(numba, torch)  # open by the slowed round, not by a thread pool's reach
    second = _run(0.0025, 1.45)
    numba2 = Point(2000, 0.0786, 0.0648, 0.0953, _logs({0: 0.07784, 1: 0.07934}), second,
                   slowed=_logs({2: 0.08129, 3: 0.0847}))
    torch2 = Point(2000, 0.1032, 0.0837, 0.1272, _logs({1: 0.1039, 2: 0.1032, 3: 0.08908}), second,
                   slowed=_logs({0: 0.1057}))
    assert bracket.side(numba2, torch2) == -1
