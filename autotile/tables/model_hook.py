"""The lookup's ``model`` fallback: the learned cost regressor ranks configurations of the
table's own spec for a shape nobody tuned (``autotile train`` writes the model)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path


def regressor_hook(table, models_dir: str | Path | None = None) -> Callable | None:
    """``model(op, shape, dtype) -> params or None`` from a trained cost model, or None if there
    is no model file for the table's op (the lookup then goes on to the default heuristic)."""
    from autotile.models import store

    if not store.path_for("cost", table.op, models_dir).exists():
        return None
    reg = store.load_regressor(table.op, models_dir, hw=table.hardware)

    def model(op: str, shape: dict, dtype: str):
        from autotile.models.regressor import predict_params

        spec = table.spec
        for unit in spec.units:
            if unit in reg.units:
                return predict_params(op, shape, dtype, spec.space(shape, dtype, unit), model=reg, unit=unit)
        return None

    return model
