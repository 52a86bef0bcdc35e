"""bench/decide_agreement.py weighs each pick against the simulated best at that very n: the
Scalar's cycles differ within a 16-element block, so a block's top does not stand for it."""

from __future__ import annotations

from autotile.models import dataset as D
from bench import decide_agreement as A

UNITS = ("scalar", "vector", "cube")


class _AlwaysScalar:
    """A stand-in selector that picks the Scalar everywhere (and has no ``confidence``)."""

    units = list(UNITS)

    def predict_many(self, problems):
        return [{"scalar": 1.0, "vector": 2.0, "cube": 3.0} for _ in problems]


def test_every_size_is_weighed_at_its_own_cycles(hw):
    """weighted_sum on chip: the Scalar takes 34, 48 and 64 cycles at n = 17, 24 and 32; the bench
    took 64 for all three (each block's top), so a pick of the Scalar at n = 17 cost it double."""
    lo, hi = 1, 40
    true = {n: {u: D.best_of_unit("weighted_sum", u, {"n": n}, "fp16", hw, "on_chip")[0] for u in UNITS}
            for n in range(lo, hi + 1)}
    assert len({true[n]["scalar"] for n in (17, 24, 32)}) == 3
    out = A.agreement("weighted_sum", "fp16", "on_chip", hw, _AlwaysScalar(), lo, hi)
    extra = sum(t["scalar"] - min(t.values()) for t in true.values())
    assert out["regret_pct"] == round(100 * extra / sum(min(t.values()) for t in true.values()), 4)
    assert out["mis_picked"] == sum(min(t, key=t.get) != "scalar" for t in true.values())
    assert out["cube_windows_simulated"] == A._windows(range(lo, hi + 1),
                                                       [true[n]["cube"] < true[n]["vector"] for n in true])
    # the Vector and the Cube cost the same across each block: two sizes a block (1-16, 17-32, 33-48)
    assert out["simulated_sizes"]["vector"] == out["simulated_sizes"]["cube"] == 6
    assert out["simulated_sizes"]["scalar"] >= hi - lo + 1
