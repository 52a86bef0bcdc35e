"""Operators: one module per operator with its tiled Numba kernel, reference and default tiling.

Every operator module offers the same interface, so the tuner, the verifier and the commands
treat all operators alike (``options`` is the spec's op-specific ``inputs:`` mapping):

- ``UNITS``: the units it has kernels for, default first; ``DIMS``: its shape dimensions.
- ``default_params(shape, dtype, hw, unit=None, options=None) -> dict``: the careful-engineer
  baseline (``options`` matter where they change what fits, e.g. resize's layout).
- ``simulate(shape, params, dtype, hw, *, unit=None, options=None, trace_capacity=0,
  want_traces=False) -> SimResult`` (or ``(SimResult, traces)``): count mode on the simulator;
  an infeasible tiling gives ``feasible=False`` with a reason, never an exception.
- ``make_inputs(shape, dtype, seed=0, *, options=None) -> tuple`` of arrays.
- ``execute(inputs, params, dtype, hw, *, unit=None, options=None) -> ndarray``: the same loop
  nest in execute mode.
- ``reference(inputs, dtype, *, options=None) -> ndarray``: NumPy reference.
- ``tolerance(dtype, shape, params=None, unit=None, inputs=None) -> (rtol, atol)`` for
  make_inputs' data; the tiling and unit matter where they choose the accumulation precision
  (the reductions), the data where the error scales with it (matmul: the verification gate
  passes the inputs it drew, and without them the bound is a looser data-free one).

Optional, for verification of large shapes: ``verify_shape(shape, params) -> shape``, a smaller
shape with the tiling's structure (matmul, the 1-D operators), or ``io_elements(shape) -> int``,
the elements an execute-mode run holds (copy, resize, roi_align, matmul), past which it is not
run: the gate then reports the pick not verified, too large to execute in verification.
"""
