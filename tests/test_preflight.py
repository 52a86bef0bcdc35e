"""A profile lacking a cost one of a study's configurations needs is refused before the tune
writes anything, located in the profile (it failed at trial 0, inside Optuna, with a traceback
and a journal holding one failed trial)."""

from __future__ import annotations

from autotile.cli import run as cli
from tests.conftest import ROOT


def _profile_without_vcadd_fp16(tmp_path):
    """The default profile less VCADD fp16_fp16, which only an fp16 accumulator uses (the
    weighted_sum default accumulates in fp32); fp32_fp32 follows it, so it is unhooked."""
    lines = []
    for line in (ROOT / "autotile/hardware/ascend910b2.yaml").read_text().splitlines():
        if line.strip().startswith("fp16_fp16: {startup: 0.0966"):
            continue
        lines.append(line.replace(', derived: {from: "vector.ops.vcadd.fp16_fp16"}', ""))
    path = tmp_path / "hw.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def _spec(tmp_path, hw):
    text = (ROOT / "studies/weighted_sum.yaml").read_text()
    text = text.replace("hardware: ascend910b2", f"hardware: {hw}").replace("units: [vector, cube, scalar]", "units: [vector]")
    text = text.replace("dtypes: [fp16, fp32, bf16]", "dtypes: [fp16]")
    text = text.replace("shapes: [{grid: {n: [64, 512, 4096, 65536, 1048576]}}]", "shapes: [{n: 4096}]")
    spec = tmp_path / "ws.yaml"
    spec.write_text(text)
    return spec


def test_a_cost_only_a_choice_needs_is_refused_before_anything_is_written(tmp_path, capsys):
    hw = _profile_without_vcadd_fp16(tmp_path)
    out = tmp_path / "out"
    code = cli(["tune", str(_spec(tmp_path, hw)), "--out", str(out), "--trials", "3", "--quiet"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err and "Traceback" not in err, err
    assert f"{hw}:" in err and "vcadd in fp16_fp16" in err and "vector.ops.vcadd" in err, err
    line = int(err.split(f"{hw}:")[1].split(":")[0])
    assert hw.read_text().splitlines()[line - 1].strip().startswith("fp32_fp32:"), err  # vcadd's signatures
    assert not out.exists()


def test_the_bundled_profile_passes_the_check(tmp_path, capsys):
    spec = _spec(tmp_path, "ascend910b2")
    code = cli(["tune", str(spec), "--out", str(tmp_path / "out"), "--trials", "2", "--quiet"])
    assert code == 0, capsys.readouterr().err


def test_a_cost_only_two_choices_together_need_is_refused_too(tmp_path, capsys):
    """VMLA fp16_fp16_fp16 is needed by reduction=vmla with acc_dtype=fp16 only; the check tried
    one-choice changes of the default (tree, fp32), so a random search met it at trial 18, with a
    traceback and a journal holding one failed trial."""
    text = (ROOT / "autotile/hardware/ascend910b2.yaml").read_text().splitlines()
    hw = tmp_path / "hw.yaml"
    hw.write_text("\n".join(t for t in text if not t.strip().startswith("fp16_fp16_fp16: {startup: 0.0323")) + "\n")
    out = tmp_path / "out"
    code = cli(["tune", str(_spec(tmp_path, hw)), "--out", str(out), "--trials", "3", "--quiet"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err and "vmla in fp16_fp16_fp16" in err and f"{hw}:" in err, err
    assert not out.exists()
