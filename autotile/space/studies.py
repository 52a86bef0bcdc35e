"""The study specs shipped in the package (``autotile/studies/``), reachable by name.

A pip install puts them in site-packages, where ``studies/matmul.yaml`` (relative to wherever the
user is) does not reach them: ``autotile tune studies/matmul.yaml`` was ``file not found``. As
``hardware: ascend910b2`` names a bundled profile, a bare name (``matmul`` or ``matmul.yaml``)
names a bundled study when no file of that name exists.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from autotile.errors import InputError
from autotile.yamlsrc import suggest


def _folder() -> Path:
    return Path(str(resources.files("autotile").joinpath("studies")))


def bundled_studies() -> list[str]:
    """Names of the study specs shipped in this package."""
    return sorted(p.stem for p in _folder().glob("*.yaml"))


def spec_file(ref: str | Path) -> Path:
    """The spec file ``ref`` names: the file itself when it exists, else the bundled study of a
    bare name; a missing file is one line naming the bundled studies."""
    path = Path(ref)
    if path.is_file():
        return path
    text = str(ref)
    bare = "/" not in text and "\\" not in text
    name = path.stem if path.suffix in (".yaml", ".yml") else path.name
    names = bundled_studies()
    if bare and name in names:
        return _folder() / f"{name}.yaml"
    if path.exists():
        return path  # a folder, say: reading it says what it is
    if name in names:
        hint = f"; for the bundled study, give its name alone: {name}"
    else:
        hint = f"; bundled studies, by name: {', '.join(names)}" + suggest(name, names)
    raise InputError(f"file not found{hint}", file=text)
