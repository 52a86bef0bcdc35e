"""The lines `autotile tune` prints for a finished run."""

from pathlib import Path

from autotile.cli.tune import format_summary


def _summary(**row) -> dict:
    base = {"shape": {"m": 16, "n": 11008, "k": 4096}, "dtype": "fp16", "unit": "cube", "cycles": 114728.0,
            "pct_of_peak": 6.4, "speedup_vs_baseline": 1.07, "verified": True, "infeasible": 0,
            "unique_configs": 150}
    return {"op": "matmul", "hw": "ascend910b2", "sampler": "portfolio", "budget": 150, "seed": 0,
            "elapsed_s": 1.0, "results": [{**base, **row}]}


def test_a_memory_bound_result_names_its_share_of_hbm_bandwidth():
    """16 x 11008 x 4096 printed '6.4% of peak' alone, where the report bands it by its roof:
    94.5% of HBM bandwidth (a shape left of the ridge point has the larger share of bandwidth)."""
    text = format_summary(_summary(pct_of_bandwidth=94.5, bound="memory:gm_l1"), Path("out"))
    assert "6.4% of peak (94.5% of HBM bandwidth, its roof)" in text


def test_a_compute_bound_result_prints_its_share_of_peak_alone():
    text = format_summary(_summary(pct_of_peak=72.5, pct_of_bandwidth=30.0, bound="compute:cube"), Path("out"))
    assert "72.5% of peak," in text and "bandwidth" not in text
