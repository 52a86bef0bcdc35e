"""The examples in the package's docstrings run and print what they show (none was run before: a
C-string example had read its own escapes wrongly, and one was not even parseable)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import autotile

MODULES = sorted(m.name for m in pkgutil.walk_packages(autotile.__path__, "autotile.")
                 if m.name != "autotile.__main__")  # __main__ runs the command on import


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    got = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert got.failed == 0, f"{got.failed} of {got.attempted} docstring examples of {name} failed (see above)"


def test_every_module_is_collected():
    assert len(MODULES) > 100 and "autotile.tables.ctext" in MODULES and "autotile.models.what_decides" in MODULES
