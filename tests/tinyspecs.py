"""Tiny spec texts the tune-lifecycle tests edit (resume, interrupt, warm start, trial cap)."""

# one elementwise study of ten configurations; tests swap shapes, kind, budget by text replace
EW = """op: elementwise
hardware: ascend910b2
dtypes: [fp16]
units: [vector]
shapes: [{n: 4096}]
inputs: {kind: add, data: gm}
params:
  tile_len: {type: int, low: 16, high: "shape.n", pow2: true}
  buffer_num: {type: int, low: 1, high: 4, step: 1}
  cores: {type: int, low: 1, high: "min(hw.vector_cores, shape.n // 16)", pow2: true}
constraints:
  - {expr: "3 * buffer_num * tile_len * dtype.bytes <= hw.ub_bytes", message: "fit UB"}
objective: cycles
budget: {trials: 10}
seed: 0
"""

EW2 = EW.replace("shapes: [{n: 4096}]", "shapes: [{n: 4096}, {n: 8192}]")  # two shapes, tuned in order

# 6 configurations: a budget of 10 can only end at the trial cap
SMALL = EW.replace('''  tile_len: {type: int, low: 16, high: "shape.n", pow2: true}
  buffer_num: {type: int, low: 1, high: 4, step: 1}
  cores: {type: int, low: 1, high: "min(hw.vector_cores, shape.n // 16)", pow2: true}
constraints:
  - {expr: "3 * buffer_num * tile_len * dtype.bytes <= hw.ub_bytes", message: "fit UB"}
''', '''  tile_len: {type: int, low: 16, high: 64, pow2: true}
  buffer_num: {type: int, low: 1, high: 2}
  cores: {type: fixed, value: 1}
''')
assert SMALL != EW and EW2 != EW  # the replaced text must be there
