"""A custom hardware profile is named by its file and its content everywhere a user reads or runs
it: an edited copy that keeps the name ``ascend910b2`` is neither shown as the shipped chip nor
run as it, and a custom name (``mychip``) is never passed as ``--hw``."""

from __future__ import annotations

import re
from pathlib import Path

from autotile.hardware.profile import bundled_path

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = bundled_path("ascend910b2").read_text()


def _profile(folder: Path, name: str = "ascend910b2", file: str = "half.yaml") -> Path:
    """The 910B2 profile with half its cores (12 cube / 24 vector), called ``name``."""
    text = SHIPPED.replace("cube_cores: {value: 24", "cube_cores: {value: 12")
    text = text.replace("vector_cores: {value: 48", "vector_cores: {value: 24")
    text = re.sub(r'(?m)^name: .*$', f'name: "{name}"', text, count=1)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / file).write_text(text)
    return folder / file


def test_simulate_says_no_value_of_a_param_fits_the_profiles_buffers(tmp_path, run_cli):
    """It said `infeasible: base_n=64 outside its domain (empty)`."""
    tiny = _profile(tmp_path / "p", file="tiny.yaml")
    tiny.write_text(tiny.read_text().replace("l0c_bytes: {value: 131072", "l0c_bytes: {value: 512"))
    text = (ROOT / "studies" / "matmul.yaml").read_text()
    spec = tmp_path / "mm.yaml"
    spec.write_text(re.sub(r"(?m)^hardware: .*$", "hardware: p/tiny.yaml", text, count=1))
    code, out, _ = run_cli("simulate", str(spec), "--shape", "m=64,n=64,k=64")
    assert code == 0 and out.startswith("infeasible: base_n: no value fits the profile's buffers (its domain is "
                                        "empty: low 16, high ")
    assert "hw.l0c_bytes=512" in out and "(empty)" not in out
