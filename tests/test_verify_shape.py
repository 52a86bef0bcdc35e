"""Verification of huge 1-D shapes runs on a smaller n that keeps the tiling's structure."""

from hypothesis import given, settings
from hypothesis import strategies as st

from autotile.hardware import load_profile
from autotile.kernels import _common as C
from autotile.kernels import global_sum as G
from autotile.kernels import weighted_sum as W
from autotile.tune import verify

HW = load_profile()


@settings(max_examples=300, deadline=None)
@given(n=st.integers(C.VERIFY_N + 1, 1 << 36), cores=st.integers(1, 48), tile=st.sampled_from([16, 48, 256, 4096, 32768]))
def test_reduced_n_keeps_cores_tails_and_two_tiles_per_core(n, cores, tile):
    small = C.verify_shape_1d({"n": n}, {"cores": cores, "tile_len": tile})["n"]
    before, after = C.split(n, cores, 16), C.split(small, cores, 16)
    assert small <= n
    assert [c for c, _, _ in before] == [c for c, _, _ in after]
    for (_, big, _), (_, little, _) in zip(before, after):
        assert little % tile == big % tile
        assert little >= 2 * tile or little == big


def test_small_shapes_run_as_given():
    assert C.verify_shape_1d({"n": C.VERIFY_N}, {"cores": 48, "tile_len": 16}) == {"n": C.VERIFY_N}


def test_a_billion_element_sum_verifies_on_a_reduced_shape():
    """n = 2**30 would need 16 GiB of float64 inputs; the gate runs a few hundred thousand."""
    n = 1 << 30
    p = {"tile_len": 4096, "buffer_num": 2, "cores": 48, "reduction": "tree", "acc_dtype": "fp32"}
    v = verify.verify_one(W, {"n": n}, p, "fp16", HW, unit="vector")
    assert v.passed and v.reduced and v.shape["n"] < 1_000_000
    g = verify.verify_one(G, {"n": n + 5}, {"tile_len": 8192, "buffer_num": 2, "cores": 24}, "fp32", HW, unit="cube")
    assert g.passed and g.reduced and g.shape["n"] % 16 == (n + 5) % 16


def test_a_shape_too_large_to_execute_fails_the_gate_without_running():
    from autotile.kernels import resize as R

    shape = {"n": 64, "c": 64, "h_in": 4096, "w_in": 4096, "h_out": 64, "w_out": 64}
    p = R.default_params(shape, "fp16", HW)
    v = verify.verify_one(R, shape, p, "fp16", HW)
    assert not v.passed and not v.executed and v.reason == v.unverified
    assert v.reason.startswith("too large to execute in verification: inputs and output hold 68,736,253,952")


def test_error_objective_of_a_huge_shape_is_measured_on_the_reduced_shape(write_spec):
    """A sigmoid study on [cycles, max_abs_error] at n = 2**30 executes a few million elements
    per configuration, and the errors match those of the reduced shape."""
    from autotile.kernels import sigmoid as S
    from autotile.space import load_spec
    from autotile.tune.evaluate import make_evaluator

    path = write_spec("op: sigmoid\nunits: [vector]\ndtypes: [fp16]\nshapes: [{n: 1073741824}]\n"
                      "params:\n  tile_len: {type: int, low: 256, high: 4096, pow2: true}\n"
                      "  buffer_num: {type: int, low: 1, high: 2}\n  cores: {type: int, low: 1, high: 48}\n"
                      "  variant: {type: categorical, choices: [exact, poly]}\n"
                      "objective: [cycles, max_abs_error]\n")
    spec = load_spec(path)
    ev = make_evaluator(spec.space(spec.shapes[0]), spec.objectives)
    p = {"tile_len": 1024, "buffer_num": 2, "cores": 48, "variant": "poly"}
    out = ev.score(p)
    assert out.feasible, out.reason
    small = S.verify_shape({"n": 1 << 30}, p)
    assert small["n"] < 1 << 20
    (x,) = S.make_inputs(small, "fp16", 0)
    ref = S.reference((x,), "fp16").astype("float64")
    got = S.execute((x,), p, "fp16", HW, unit="vector").astype("float64")
    assert out.values["max_abs_error"] == float(abs(got - ref).max())
