"""The unit selector's cycles hold between its training sizes, not only at them.

Trees are flat between training sizes, and a power of two (whole core slices, tiles, repeats)
costs less than the sizes beside it: a selector learnt on log2 cycles gave 65 or 257 the cycles
of 64 or 256, 20-24% low (sigmoid). Trained here on a small sweep (16..1024, fp16: seconds).
"""

from __future__ import annotations

import json

import pytest

from autotile.models import dataset as D
from autotile.models import store
from autotile.models.selector import UnitSelector


@pytest.fixture(scope="module")
def sigmoid(hw):
    return UnitSelector("sigmoid", hw=hw).fit(D.unit_rows("sigmoid", ("fp16",), hw, sizes=D.sweep_sizes(16, 1024)))


def test_predicted_cycles_hold_beside_powers_of_two(sigmoid, hw):
    """decide's figure is each unit at its best tiling: worst 2.2% here (it was 23.5%, gm n=125)."""
    sizes = [2 ** k + d for k in range(5, 10) for d in (1, -3)] + [100, 300, 1000]
    errors = {}
    for data in ("on_chip", "gm"):
        for n in sizes:
            for unit, cycles in sigmoid.predict_cycles({"n": n}, "fp16", data).items():
                sim, _ = D.best_of_unit("sigmoid", unit, {"n": n}, "fp16", hw, data)
                errors[(data, n, unit)] = abs(cycles / sim - 1)
    worst = max(errors, key=errors.get)
    assert errors[worst] < 0.10, (worst, errors[worst])


def test_a_selector_file_without_its_work_fit_is_refused_in_one_line(tmp_path, sigmoid, hw):
    """A model saved before the selector fitted cycles on the padded work would be read as if
    its trees predicted whole cycles."""
    from autotile.errors import InputError

    path = store.save_selector(sigmoid, hw, D.fingerprint(hw), tmp_path)
    state = {k: v for k, v in sigmoid.state().items() if k != "base"}
    store.save(path, kind="units", op="sigmoid", hw_hash=hw.content_hash(), fingerprint=D.fingerprint(hw),
               state=state, models=sigmoid.models)
    with pytest.raises(InputError, match=r"unusable model file \(state.base .*autotile train --ops sigmoid"):
        store.load_selector("sigmoid", hw, tmp_path)
    bad = json.loads(json.dumps(sigmoid.state()))
    bad["base"]["vector"]["gm"][0] = -1.0
    store.save(path, kind="units", op="sigmoid", hw_hash=hw.content_hash(), fingerprint=D.fingerprint(hw),
               state=bad, models=sigmoid.models)
    with pytest.raises(InputError, match=r"state.base.vector.gm .* not \d+ non-negative coefficients"):
        store.load_selector("sigmoid", hw, tmp_path)


def test_step_sizes_pin_both_sides_of_a_change_of_unit():
    """A winner that changes between two sweep sizes (1,040 and 1,296) is bisected down to one
    16-element block, and the gap gets its lane multiples: weighted_sum's Vector steps up at 1,153."""
    def run(n):
        seen.append(n)
        return {"vector": 49.4 if n <= 1152 else 55.4, "cube": 53.1 if n <= 1280 else 54.1}

    seen: list[int] = []
    D.step_sizes(run, [1040, 1296], 128)
    assert {1152, 1168, 1280} <= set(seen)
    seen.clear()
    D.step_sizes(lambda n: seen.append(n) or {"vector": 1.0, "cube": 2.0}, [1040, 1296], 128)
    assert seen == [1040, 1296]  # a clear winner at both ends: nothing added


def test_the_training_sweep_resolves_the_on_chip_vector_step(hw, monkeypatch):
    """weighted_sum on chip: the sweep had nothing between 1,040 and 1,296, where the Vector's
    cycles step up at 1,153 (9 x 128 lanes + 1), and decide picked it up to n = 1,280 (4.3% slower)."""
    monkeypatch.setitem(D.PLACEMENTS, "on_chip", (1024, 2048))
    rows = D.unit_rows("weighted_sum", ("fp16",), hw, placements=("on_chip",))
    sizes = {r.shape["n"] for r in rows}
    assert {1152, 1168} <= sizes
    won = {n: min((r for r in rows if r.shape["n"] == n), key=lambda r: r.cycles).unit for n in (1152, 1168)}
    assert won == {1152: "vector", 1168: "cube"}
