"""Spec loading: good specs, a table of bad specs with their exact one-line messages, the
expression attacks refused at load, and a round trip of generated specs."""

from __future__ import annotations

import itertools
import json
import math
import os
import re
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autotile.errors import InputError
from autotile.hardware import load_profile
from autotile.kernels import registry
from autotile.space import ChoiceParam, IntParam, load_spec
from tests.conftest import DATA, ROOT

# (case, spec text, exact message with {f} = the spec file and {dir} = its folder)
BAD = [
    ('parms',
     'op: matmul\nshapes:\n  - {m: 64, n: 64, k: 64}\nparams:\n  base_m: {type: int, low: 16, high: 64}\ndescription: x\nparms:\n  base_n: {type: int, low: 16, high: 64}\n',
     '{f}:7:1: parms: unknown key, did you mean params?'),
    ('unknown op',
     'op: matmull\nshapes: [{m: 1, n: 1, k: 1}]\nparams: {a: {type: bool}}\n',
     "{f}:1:5: op: unknown op 'matmull', expected one of matmul, copy, weighted_sum, global_sum, sigmoid, elementwise, resize, roi_align, replay, did you mean matmul?"),
    ('missing params',
     'op: matmul\nshapes: [{m: 1, n: 1, k: 1}]\n',
     "{f}:1:1: missing key 'params'"),
    ('not a mapping',
     '- op\n',
     '{f}:1:1: expected a spec mapping, got a list'),
    ('unknown dtype',
     'op: matmul\ndtypes: [fp16, fp64]\nshapes: [{m: 1, n: 1, k: 1}]\nparams: {a: {type: bool}}\n',
     "{f}:2:16: dtypes[1]: unknown dtype 'fp64' for matmul, expected one of fp16, bf16, fp32, int8, did you mean fp16?"),
    ('dtype not for op',
     'op: sigmoid\ndtypes: [int8]\nshapes: [{n: 1}]\nparams: {a: {type: bool}}\n',
     "{f}:2:10: dtypes[0]: unknown dtype 'int8' for sigmoid, expected one of fp32, fp16, bf16"),
    ('unknown unit',
     'op: matmul\nunits: [cube, scalar]\nshapes: [{m: 1, n: 1, k: 1}]\nparams: {a: {type: bool}}\n',
     "{f}:2:15: units[1]: unknown unit 'scalar' for matmul, expected one of cube, vector"),
    ('missing dim',
     'op: matmul\nshapes:\n  - {m: 1, n: 1}\nparams: {a: {type: bool}}\n',
     "{f}:3:5: shapes[0]: missing key 'k'"),
    ('unknown dim',
     'op: matmul\nshapes:\n  - {m: 1, n: 1, k: 1, kk: 2}\nparams: {a: {type: bool}}\n',
     '{f}:3:24: shapes[0].kk: unknown key, did you mean k?'),
    ('zero dim',
     'op: matmul\nshapes:\n  - {m: 0, n: 1, k: 1}\nparams: {a: {type: bool}}\n',
     '{f}:3:9: shapes[0].m: expected a positive integer, got 0'),
    ('grid empty',
     'op: matmul\nshapes:\n  - grid: {m: [], n: [1], k: [1]}\nparams: {a: {type: bool}}\n',
     '{f}:3:15: shapes[0].grid.m: expected a non-empty list of positive integers'),
    ('grid float',
     'op: matmul\nshapes:\n  - grid: {m: [16, 2.5], n: [1], k: [1]}\nparams: {a: {type: bool}}\n',
     '{f}:3:20: shapes[0].grid.m[1]: expected a positive integer, got 2.5'),
    ('no type',
     'op: matmul\nshapes: [{m: 1, n: 1, k: 1}]\nparams:\n  a: {low: 1, high: 2}\n',
     "{f}:4:6: params.a: missing key 'type' (one of int, categorical, bool, fixed)"),
    ('bad type',
     'op: matmul\nshapes: [{m: 1, n: 1, k: 1}]\nparams:\n  a: {type: integer, low: 1, high: 2}\n',
     "{f}:4:13: params.a.type: unknown parameter type 'integer', expected one of int, categorical, bool, fixed, did you mean int?"),
    ('unknown param key',
     'op: matmul\nshapes: [{m: 1, n: 1, k: 1}]\nparams:\n  a: {type: int, low: 1, hihg: 2}\n',
     '{f}:4:26: params.a.hihg: unknown key, did you mean high?'),
    ('low > high',
     'op: matmul\nshapes: [{m: 1, n: 1, k: 1}]\nparams:\n  a: {type: int, low: 8, high: 2}\n',
     '{f}:4:32: params.a.high: low 8 is greater than high 2'),
    ('step and pow2',
     'op: matmul\nshapes: [{m: 1, n: 1, k: 1}]\nparams:\n  a: {type: int, low: 1, high: 8, step: 2, pow2: true}\n',
     '{f}:4:44: params.a.pow2: step and pow2 cannot be combined'),
    ('step zero',
     'op: matmul\nshapes: [{m: 1, n: 1, k: 1}]\nparams:\n  a: {type: int, low: 1, high: 8, step: 0}\n',
     '{f}:4:41: params.a.step: expected a positive integer, got 0'),
    ('empty choices',
     'op: matmul\nshapes: [{m: 1, n: 1, k: 1}]\nparams:\n  a: {type: categorical, choices: []}\n',
     '{f}:4:35: params.a.choices: expected a non-empty list of choices, got an empty list'),
    ('dup choices',
     'op: matmul\nshapes: [{m: 1, n: 1, k: 1}]\nparams:\n  a: {type: categorical, choices: [1, 2, 1]}\n',
     '{f}:4:42: params.a.choices[2]: choice 1 listed twice'),
    ('dup choices int and float',
     'op: matmul\nshapes: [{m: 1, n: 1, k: 1}]\nparams:\n  a: {type: categorical, choices: [1, 1.0]}\n',
     '{f}:4:39: params.a.choices[1]: choice 1.0 listed twice (as 1: the same number)'),
    ('dup choices bool and int',  # a bool is 0 or 1 in expressions and in an enumeration's column
     'op: matmul\nshapes: [{m: 1, n: 1, k: 1}]\nparams:\n  a: {type: categorical, choices: [true, 1]}\n',
     '{f}:4:42: params.a.choices[1]: choice 1 listed twice (as true: the same number)'),
    ('dup choices per unit',
     'op: matmul\nshapes: [{m: 1, n: 1, k: 1}]\nparams:\n  a: {type: categorical, choices: {cube: [0, false]}}\n',
     '{f}:4:46: params.a.choices.cube[1]: choice false listed twice (as 0: the same number)'),
    ('choice -inf',
     'op: matmul\nshapes: [{m: 1, n: 1, k: 1}]\nparams:\n  a: {type: categorical, choices: [2, -.inf]}\n',
     '{f}:4:39: params.a.choices[1]: expected a finite number, got -inf'),
    ('fixed inf',
     'op: matmul\nshapes: [{m: 1, n: 1, k: 1}]\nparams:\n  a: {type: fixed, value: .inf}\n',
     '{f}:4:27: params.a.value: expected a finite number, got inf'),
    ('fixed beyond int64',
     'op: matmul\nshapes: [{m: 1, n: 1, k: 1}]\nparams:\n  a: {type: fixed, value: 99999999999999999999999}\n',
     '{f}:4:27: params.a.value: number 99999999999999999999999 larger than 2**62'),
    ('choice below int64',
     'op: matmul\nshapes: [{m: 1, n: 1, k: 1}]\nparams:\n  a: {type: categorical, choices: [1, -9223372036854775809]}\n',
     '{f}:4:39: params.a.choices[1]: number -9223372036854775809 larger than 2**62'),
    ('choice just beyond 2**62',
     'op: matmul\nshapes: [{m: 1, n: 1, k: 1}]\nparams:\n  a: {type: categorical, choices: [1, 4611686018427387905]}\n',
     '{f}:4:39: params.a.choices[1]: number 4611686018427387905 larger than 2**62'),
    ('choice float beyond 2**62',
     'op: matmul\nshapes: [{m: 1, n: 1, k: 1}]\nparams:\n  a: {type: categorical, choices: [1, 1e300]}\n',
     '{f}:4:39: params.a.choices[1]: number 1e+300 larger than 2**62'),
    ('derived overflows to inf',
     'op: matmul\nshapes: [{m: 1, n: 1, k: 1}]\nparams:\n  a: {type: bool}\nderived:\n  d: "1e300 * 1e300"\n',
     '{f}:6:7: derived.d: part computes to inf, not a finite number'),
    ('derived inf minus inf',
     'op: matmul\nshapes: [{m: 1, n: 1, k: 1}]\nparams:\n  a: {type: bool}\nderived:\n  d: "a + (1e308*10 - 1e308*10)"\n',
     '{f}:6:12: derived.d: part computes to inf, not a finite number'),
    ('mixed choices',
     'op: matmul\nshapes: [{m: 1, n: 1, k: 1}]\nparams:\n  a: {type: categorical, choices: [1, x]}\n',
     '{f}:4:35: params.a.choices: expected all choices text or all numbers/bools, not both'),
    ('shadow ns',
     'op: matmul\nshapes: [{m: 1, n: 1, k: 1}]\nparams:\n  hw: {type: bool}\n',
     '{f}:4:3: params.hw: name hw shadows the hw namespace'),
    ('shadow fn',
     'op: matmul\nshapes: [{m: 1, n: 1, k: 1}]\nparams:\n  a: {type: bool}\nderived:\n  min: a + 1\n',
     '{f}:6:3: derived.min: name min shadows the function min()'),
    ('shadow bool',
     'op: matmul\nshapes: [{m: 1, n: 1, k: 1}]\nparams:\n  a: {type: bool}\nderived:\n  "false": a + 1\n',
     '{f}:6:3: derived.false: name false shadows the boolean false'),
    ('constant where',  # it loaded and emptied the domain silently, while a constant constraint is refused
     'op: matmul\nshapes: [{m: 1, n: 1, k: 1}]\nparams:\n  a: {type: int, low: 1, high: 4, where: 0}\n',
     '{f}:4:42: params.a.where: where does not read a (it is always true or always false)'),
    ('reuse name',
     'op: matmul\nshapes: [{m: 1, n: 1, k: 1}]\nparams:\n  a: {type: bool}\nderived:\n  a: a + 1\n',
     '{f}:6:3: derived.a: name a is already used by param a'),
    ('bad name',
     'op: matmul\nshapes: [{m: 1, n: 1, k: 1}]\nparams:\n  __class__: {type: bool}\n',
     "{f}:4:3: params.__class__: '__class__' is not a valid name (ASCII letters, digits and _, not starting with _ or a digit)"),
    ('keyword name',  # it said "not a valid name (ASCII letters, digits and _, ...)", which class is
     'op: matmul\nshapes: [{m: 1, n: 1, k: 1}]\nparams:\n  class: {type: bool}\n',
     "{f}:4:3: params.class: name class is a reserved word of the expression language; expected another name"),
    ('fullwidth name',  # Python reads ｘ in an expression as x: it collided silently with derived x
     'op: matmul\nshapes: [{m: 1, n: 1, k: 1}]\nparams:\n  x: {type: int, low: 1, high: 4}\nderived:\n  ｘ: x + 1\n',
     "{f}:6:3: derived.ｘ: 'ｘ' is not a valid name (ASCII letters, digits and _, not starting with _ or a digit)"),
    ('micro sign name',  # read as Greek mu in expressions: "unknown name 'μ_cores', did you mean µ_cores?"
     'op: matmul\nshapes: [{m: 1, n: 1, k: 1}]\nparams:\n  µ_cores: {type: int, low: 1, high: 4}\n',
     "{f}:4:3: params.µ_cores: 'µ_cores' is not a valid name (ASCII letters, digits and _, not starting with _ or a digit)"),
    ('fullwidth dim',  # an expression would read shape.ｘ as shape.x (a replay's größe is fine)
     'op: replay\nshapes: [{ｘ: 1}]\nparams:\n  a: {type: bool}\n',
     "{f}:2:11: shapes[0].ｘ: 'ｘ' is not a valid dimension name"),
    ('below',
     'op: matmul\nshapes: [{m: 1, n: 1, k: 1}]\nparams:\n  a: {type: int, low: 1, high: "b * 2"}\n  b: {type: int, low: 1, high: 4}\n',
     '{f}:4:33: params.a.high: b is declared below a; a bound may only use params declared above it'),
    ('text param in expr',
     'op: matmul\nshapes: [{m: 1, n: 1, k: 1}]\nparams:\n  o: {type: categorical, choices: [x, y]}\n  a: {type: int, low: 1, high: o}\n',
     '{f}:5:32: params.a.high: o has text values: only derived values and constraints may compare it (== or !=) to a choice'),
    ('derived in bound',
     'op: matmul\nshapes: [{m: 1, n: 1, k: 1}]\nparams:\n  a: {type: int, low: 1, high: 4}\nderived:\n  d: a * 2\nconstraints:\n  - {expr: d + e < 3, message: m}\n',
     "{f}:8:16: constraints[0].expr: unknown name 'e'"),
    ('unknown unit in param',
     'op: matmul\nunits: [cube]\nshapes: [{m: 1, n: 1, k: 1}]\nparams:\n  a: {type: int, low: 1, high: 4, units: [vectr]}\n',
     "{f}:5:43: params.a.units[0]: unknown unit 'vectr' for matmul, expected one of cube, vector, did you mean vector?"),
    ('unit mismatch',
     'op: matmul\nunits: [cube, vector]\nshapes: [{m: 1, n: 1, k: 1}]\nparams:\n  a: {type: int, low: 1, high: 4, units: [cube]}\n  b: {type: int, low: 1, high: a}\n',
     '{f}:6:6: params.b: b is in every unit but its bounds use a, which is only in units cube'),
    ('constraint no message',
     'op: matmul\nshapes: [{m: 1, n: 1, k: 1}]\nparams:\n  a: {type: int, low: 1, high: 4}\nconstraints:\n  - {expr: a < 3}\n',
     "{f}:6:5: constraints[0]: missing key 'message'"),
    ('constraint not list',
     'op: matmul\nshapes: [{m: 1, n: 1, k: 1}]\nparams:\n  a: {type: int, low: 1, high: 4}\nconstraints:\n  expr: a < 3\n',
     '{f}:6:3: constraints: expected a list of {expr, message} mappings, got a mapping'),
    ('objective',
     'op: matmul\nshapes: [{m: 1, n: 1, k: 1}]\nparams:\n  a: {type: bool}\nobjective: [cycles, latency]\n',
     "{f}:5:21: objective[1]: unknown objective 'latency', expected one of cycles, time_us, max_abs_error, max_rel_error"),
    ('three objectives',
     'op: matmul\nshapes: [{m: 1, n: 1, k: 1}]\nparams:\n  a: {type: bool}\nobjective: [cycles, time_us, max_abs_error]\n',
     '{f}:5:12: objective: expected one or two objectives, got 3'),
    ('sampler',
     'op: matmul\nshapes: [{m: 1, n: 1, k: 1}]\nparams:\n  a: {type: bool}\nsampler: tpee\n',
     "{f}:5:10: sampler: unknown sampler 'tpee', expected one of tpe, random, cmaes, gp, nsga2, exhaustive, portfolio, did you mean tpe?"),
    ('budget',
     'op: matmul\nshapes: [{m: 1, n: 1, k: 1}]\nparams:\n  a: {type: bool}\nbudget: {trials: -3}\n',
     '{f}:5:18: budget.trials: expected a positive integer, got -3'),
    ('budget key',
     'op: matmul\nshapes: [{m: 1, n: 1, k: 1}]\nparams:\n  a: {type: bool}\nbudget: {trails: 3}\n',
     '{f}:5:10: budget.trails: unknown key, did you mean trials?'),
    ('timeout',
     'op: matmul\nshapes: [{m: 1, n: 1, k: 1}]\nparams:\n  a: {type: bool}\nbudget: {timeout_s: fast}\n',
     "{f}:5:21: budget.timeout_s: expected a positive number of seconds, got 'fast'"),
    ('seed',
     'op: matmul\nshapes: [{m: 1, n: 1, k: 1}]\nparams:\n  a: {type: bool}\nseed: 1.5\n',
     '{f}:5:7: seed: expected an integer from 0 to 2**32-1, got 1.5'),
    ('replay no file',
     'op: matmul\nshapes: [{m: 1, n: 1, k: 1}]\nparams:\n  a: {type: bool}\nbackend: replay\n',
     "{f}:5:10: backend: backend replay needs a measurements file (missing key 'measurements')"),
    ('replay missing file',
     'op: matmul\nshapes: [{m: 1, n: 1, k: 1}]\nparams:\n  a: {type: bool}\nbackend: replay\nmeasurements: nope.json\n',
     '{f}:6:15: measurements: file not found: {dir}/nope.json'),
    ('measurements w/o replay',
     'op: matmul\nshapes: [{m: 1, n: 1, k: 1}]\nparams:\n  a: {type: bool}\nmeasurements: nope.json\n',
     '{f}:5:1: measurements: measurements are only used with backend: replay'),
    ('hardware',
     'op: matmul\nhardware: ascend911b2\nshapes: [{m: 1, n: 1, k: 1}]\nparams:\n  a: {type: bool}\n',
     "{f}:2:11: hardware: unknown hardware profile 'ascend911b2', expected a bundled name (ascend310p3, ascend910, ascend910b2, ascend910b4) or a path to a profile file, did you mean ascend910b2?"),
    ('hardware path',
     'op: matmul\nhardware: chips/mine.yaml\nshapes: [{m: 1, n: 1, k: 1}]\nparams:\n  a: {type: bool}\n',
     '{f}:2:11: hardware: profile file not found: {dir}/chips/mine.yaml'),
    ('expr pos',
     'op: matmul\nshapes: [{m: 1, n: 1, k: 1}]\nparams:\n  a: {type: int, low: 1, high: "min(8, hw.l1_byte)"}\n',
     "{f}:4:40: params.a.high: unknown hw field 'l1_byte', expected one of l1_bytes, l0a_bytes, l0b_bytes, l0c_bytes, ub_bytes, l2_bytes, cube_cores, vector_cores, clock_ghz, did you mean l1_bytes?"),
    ('expr pos plain',
     'op: matmul\nshapes: [{m: 1, n: 1, k: 1}]\nparams:\n  a: {type: int, low: 1, high: 4}\nconstraints:\n  - expr: a < 3 and a.real\n    message: x\n',
     '{f}:6:21: constraints[0].expr: attribute access is only allowed as shape.<name>, dtype.<name>, hw.<name>, unit.<name>'),
    ('inputs not mapping',
     'op: matmul\nshapes: [{m: 1, n: 1, k: 1}]\nparams:\n  a: {type: bool}\ninputs: [1, 2]\n',
     '{f}:5:9: inputs: expected a mapping, got a list'),
    ('inputs unknown option',
     'op: elementwise\nshapes: [{n: 64}]\nparams:\n  a: {type: bool}\ninputs: {knd: mul}\n',
     '{f}:5:10: inputs.knd: unknown option, did you mean kind? (elementwise takes kind, data)'),
    ('inputs op without options',
     'op: matmul\nshapes: [{m: 1, n: 1, k: 1}]\nparams:\n  a: {type: bool}\ninputs: {data: gm}\n',
     '{f}:5:10: inputs.data: unknown option (matmul takes none)'),
    ('inputs bad choice (unhashable)',
     'op: elementwise\nshapes: [{n: 64}]\nparams:\n  a: {type: bool}\ninputs: {kind: [add]}\n',
     '{f}:5:16: inputs.kind: expected one of add, mul, relu, got [\'add\']'),
    ('inputs wrong type',
     'op: roi_align\nshapes: [{n: 1, c: 1, h: 8, w: 8, rois: 1, pooled_h: 2, pooled_w: 2}]\nparams:\n'
     '  a: {type: bool}\ninputs: {roi_max: "0.5"}\n',
     "{f}:5:19: inputs.roi_max: expected a number in (0, 1], got '0.5'"),
    ('inputs out of range',
     'op: roi_align\nshapes: [{n: 1, c: 1, h: 8, w: 8, rois: 1, pooled_h: 2, pooled_w: 2}]\nparams:\n'
     '  a: {type: bool}\ninputs: {roi_seed: -1}\n',
     '{f}:5:20: inputs.roi_seed: expected an integer in [0, 4294967295], got -1'),
    ('inputs huge negative integer',
     'op: roi_align\nshapes: [{n: 1, c: 1, h: 8, w: 8, rois: 1, pooled_h: 2, pooled_w: 2}]\nparams:\n'
     '  a: {type: bool}\ninputs: {sampling_ratio: -100000000000000000000}\n',
     '{f}:5:26: inputs.sampling_ratio: expected an integer in [-1, 64], got -100000000000000000000'),
    ('inputs integer too big for a float',
     'op: roi_align\nshapes: [{n: 1, c: 1, h: 8, w: 8, rois: 1, pooled_h: 2, pooled_w: 2}]\nparams:\n'
     '  a: {type: bool}\ninputs: {spatial_scale: 1' + '0' * 400 + '}\n',
     '{f}:5:25: inputs.spatial_scale: expected a number in [1e-06, 1000000], got 1' + '0' * 400),
    ('inputs scale too small for the ROI generator',
     'op: roi_align\nshapes: [{n: 1, c: 1, h: 8, w: 8, rois: 1, pooled_h: 2, pooled_w: 2}]\nparams:\n'
     '  a: {type: bool}\ninputs: {spatial_scale: 1.0e-320}\n',
     '{f}:5:25: inputs.spatial_scale: expected a number in [1e-06, 1000000], got 1e-320'),
    ('inputs across options',
     'op: roi_align\nshapes: [{n: 1, c: 1, h: 8, w: 8, rois: 1, pooled_h: 2, pooled_w: 2}]\nparams:\n'
     '  a: {type: bool}\ninputs: {roi_min: 0.6}\n',
     '{f}:5:19: inputs.roi_min: expected at most roi_max (0.5), got 0.6'),
    ('inputs align_corners with nearest',  # PyTorch refuses it; it was accepted and ignored
     'op: resize\nshapes: [{n: 1, c: 1, h_in: 2, w_in: 2, h_out: 4, w_out: 4}]\nparams:\n'
     '  a: {type: bool}\ninputs: {mode: nearest, align_corners: true}\n',
     '{f}:5:40: inputs.align_corners: expected false with mode nearest (it applies to mode bilinear only), got true'),
    ('fixed no value',
     'op: matmul\nshapes: [{m: 1, n: 1, k: 1}]\nparams:\n  a: {type: fixed}\n',
     "{f}:4:6: params.a: missing key 'value'"),
    ('pow2 false',
     'op: matmul\nshapes: [{m: 1, n: 1, k: 1}]\nparams:\n  a: {type: int, low: 1, high: 8, pow2: false}\n',
     '{f}:4:41: params.a.pow2: expected true, got false'),
    ('float low',
     'op: matmul\nshapes: [{m: 1, n: 1, k: 1}]\nparams:\n  a: {type: int, low: 1.5, high: 8}\n',
     '{f}:4:23: params.a.low: expected an integer, got 1.5'),
    ('shapes empty',
     'op: matmul\nshapes: []\nparams:\n  a: {type: bool}\n',
     '{f}:2:9: shapes: expected a non-empty list of shapes, got an empty list'),
    ('bad yaml',
     'op: matmul\nshapes: [{m: 1, n: 1, k: 1}\nparams:\n  a: {type: bool}\n',
     "{f}:3:1: invalid YAML: expected ',' or ']', but got '<scalar>'"),
    ('where unknown',
     'op: matmul\nshapes: [{m: 1, n: 1, k: 1}]\nparams:\n  a: {type: int, low: 1, high: 8, where: "divides(a, b)"}\n',
     "{f}:4:54: params.a.where: unknown name 'b'"),
    ('tagged key',
     'op: matmul\nshapes: [{m: 1, n: 1, k: 1}]\nparams:\n  a: {type: int,!!binary  low: 1, high: 2}\n',
     '{f}:4:17: params.a: invalid key: failed to decode base64 data: Incorrect padding'),
    ('params empty',
     'op: matmul\nshapes: [{m: 1, n: 1, k: 1}]\nparams: {}\n',
     '{f}:3:9: params: expected a mapping of parameter names to definitions, got an empty mapping'),]


@pytest.mark.parametrize("case,text,message", BAD, ids=[b[0] for b in BAD])
def test_bad_spec_message(write_spec, case, text, message):
    path = write_spec(text)
    with pytest.raises(InputError) as info:
        load_spec(path)
    expected = message.replace("{f}", path).replace("{dir}", str(Path(path).parent))
    assert str(info.value) == expected


ATTACKS = [
    '"__import__(\'os\').system(\'touch /tmp/pwned\')"',
    '"__import__(\'os\').system(\'id\')"',
    '"().__class__"',
    '"hw.__dict__"',
    '"10**10**10"',
    '"(lambda: 1)()"',
    '"[c for c in ().__class__.__bases__]"',
    '"shape.__class__"',
    '"min.__self__"',
    '"2 ** 10 ** 2"',
    '"99999999999999999999999999999999"',
]


@pytest.mark.parametrize("bound", ATTACKS)
def test_expression_attacks_are_refused_at_load(write_spec, run_cli, bound):
    pwned = Path("/tmp/pwned")
    existed = pwned.exists()
    path = write_spec("op: matmul\nshapes: [{m: 64, n: 64, k: 64}]\nparams:\n"
                      f"  base_m: {{type: int, low: 16, high: {bound}}}\n")
    code, out, err = run_cli("space", path)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1
    assert err.startswith(f"autotile: error: {path}:4:") and "params.base_m.high: " in err
    assert "Traceback" not in err
    assert pwned.exists() == existed


def test_attack_column_points_into_the_expression(write_spec):
    path = write_spec("op: matmul\nshapes: [{m: 64, n: 64, k: 64}]\nparams:\n"
                      "  base_m: {type: int, low: 16, high: \"min(64, hw.__dict__)\"}\n")
    with pytest.raises(InputError) as info:
        load_spec(path)
    assert (info.value.line, info.value.col) == (4, 47)  # the "h" of hw.__dict__


def test_matmul_study_loads():
    spec = load_spec(ROOT / "studies" / "matmul.yaml")
    assert spec.op.name == "matmul" and spec.hardware.name == "ascend910b2"
    assert spec.dtypes == ("fp16",) and spec.units == ("cube",)
    assert spec.shapes[0] == {"m": 1024, "n": 2048, "k": 512}
    assert {"m": 1000, "n": 1000, "k": 1000} in spec.shapes and len(spec.shapes) == 5
    names = [p.name for p in spec.params]
    for field in ("base_m", "base_n", "base_k", "step_m", "step_n", "step_ka", "step_kb",
                  "depth_a1", "depth_b1", "db_l0a", "db_l0b", "db_l0c", "iterate_order",
                  "single_core_m", "single_core_n", "single_core_k"):
        assert field in names
    assert spec.budget.trials == 150 and spec.seed == 0 and spec.sampler == "portfolio"
    assert spec.objectives == ("cycles",) and spec.backend == "simulator"
    assert len(spec.constraints) >= 7 and spec.param("iterate_order").is_text


def test_defaults_grids_and_duplicates(write_spec):
    path = write_spec("op: matmul\nshapes:\n  - {m: 16, n: 32, k: 64}\n"
                      "  - grid: {k: [64, 128], m: [16], n: [32, 48]}\nparams:\n  a: {type: bool}\n")
    spec = load_spec(path)
    assert spec.shapes == ({"m": 16, "n": 32, "k": 64}, {"m": 16, "n": 32, "k": 128},
                           {"m": 16, "n": 48, "k": 64}, {"m": 16, "n": 48, "k": 128})
    assert list(spec.shapes[0]) == ["m", "n", "k"]
    assert (spec.dtypes, spec.units, spec.sampler, spec.backend) == (("fp16",), ("cube",), "portfolio", "simulator")
    assert spec.hardware.name == "ascend910b2" and spec.measurements is None and spec.inputs == {}


def test_replay_backend_and_relative_paths(write_spec, tmp_path):
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "cache.json").write_text("{}")
    profile = (ROOT / "autotile" / "hardware" / "ascend910b2.yaml").read_text()
    (tmp_path / "chip.yaml").write_text(profile)
    path = write_spec("op: weighted_sum\nhardware: chip.yaml\nunits: [vector, cube]\n"
                      "shapes: [{n: 4096}]\nparams:\n  a: {type: bool}\nbackend: replay\n"
                      "measurements: runs/cache.json\nobjective: [cycles, max_rel_error]\n"
                      "inputs: {weights: ones, scale: 2}\nbudget: {trials: 10, timeout_s: 1.5}\n")
    spec = load_spec(path)
    assert spec.measurements == tmp_path / "runs" / "cache.json"
    assert spec.hardware.path == str(tmp_path / "chip.yaml")
    assert spec.objectives == ("cycles", "max_rel_error") and spec.units == ("vector", "cube")
    assert spec.inputs == {"weights": "ones", "scale": 2}
    assert (spec.budget.trials, spec.budget.timeout_s) == (10, 1.5)


def test_units_restrict_params_and_skip_their_constraints():
    spec = load_spec(DATA / "small.yaml")
    assert spec.param_names("cube") == ("base_m", "base_n", "base_k", "split", "order", "db")
    assert spec.param_names("vector") == ("base_m", "base_n", "split", "order", "db", "lanes")
    vector = spec.space(spec.shapes[0], "fp16", "vector")
    assert [c.message for c in vector.constraints] == ["L0C overflows", "split must divide base_n/16"]


_PER_UNIT = """op: weighted_sum
units: [vector, cube]
shapes: [{n: 4096}]
params:
  cores: {type: int, low: 1, high: "min(unit.cores, shape.n // 16)"}
  tile_len: {type: int, low: 16, high: 65536, pow2: true}
constraints:
  - {expr: "tile_len * dtype.bytes <= hw.l0a_bytes", message: "L0A overflows", units: [cube]}
  - {expr: "cores <= 32", message: "at most 32", units: %s}
"""


def test_narrowing_units_leaves_other_units_params_dormant(write_spec, tmp_path):
    """`units: [cube]` in a copy of a two-unit spec loads as it stands: params and constraints
    of the unit left out stay in the file but apply to no unit (each used to be an error)."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "studies" / "matmul_small.yaml").read_text()
    assert "units: [cube, vector]" in text
    spec = load_spec(write_spec(text.replace("units: [cube, vector]", "units: [cube]")))
    assert spec.units == ("cube",)
    full = load_spec(str(Path(__file__).resolve().parents[1] / "studies" / "matmul_small.yaml"))
    assert spec.param_names("cube") == full.param_names("cube")
    assert "tile_m" in full.param_names("vector") and "tile_m" not in spec.param_names("cube")
    shape = {"m": 64, "n": 64, "k": 64}
    assert spec.space(shape, "fp16", "cube").count() == full.space(shape, "fp16", "cube").count()
    with pytest.raises(InputError, match="vector"):
        spec.space(shape, "fp16", "vector")
    again = load_spec(write_spec(yaml.safe_dump(spec.to_dict(), sort_keys=False)))  # a written-out spec reloads
    assert again.units == ("cube",) and again.param_names("cube") == spec.param_names("cube")


def test_unit_namespace_and_per_unit_constraints(write_spec):
    spec = load_spec(write_spec(_PER_UNIT % "[vector, cube]"))
    hw = spec.hardware
    cube, vector = (spec.space({"n": 4096}, "fp16", u) for u in ("cube", "vector"))
    assert cube.domain("cores", {})[-1] == hw.cube_cores
    assert vector.domain("cores", {})[-1] == hw.vector_cores
    assert [c.message for c in cube.constraints] == ["L0A overflows", "at most 32"]
    assert [c.message for c in vector.constraints] == ["at most 32"]
    assert "L0A overflows" in cube.check({"cores": 1, "tile_len": 65536})
    assert vector.check({"cores": 1, "tile_len": 65536}) is None
    assert spec.to_dict()["constraints"][0]["units"] == ["cube"]
    assert "units" in spec.to_dict()["constraints"][1]


def test_per_unit_constraint_errors(write_spec):
    path = write_spec(_PER_UNIT % "[vector, scalr]")
    with pytest.raises(InputError) as info:
        load_spec(path)
    assert str(info.value) == (f"{path}:9:66: constraints[1].units[1]: unknown unit 'scalr' for weighted_sum, "
                               "expected one of vector, cube, scalar, did you mean scalar?")
    path = write_spec("op: matmul\nshapes: [{m: 64, n: 64, k: 64}]\nparams:\n  unit: {type: bool}\n")
    with pytest.raises(InputError, match="name unit shadows the unit namespace"):
        load_spec(path)


_INPUTS = """op: roi_align
shapes: [{n: 1, c: 16, h: 16, w: 16, rois: 4, pooled_h: 2, pooled_w: 2}]
params:
  tile_c: {type: int, low: 1, high: "shape.c * max(inputs.sampling_ratio, 1)"}
derived:
  grid: "inputs.sampling_ratio ** 2 if inputs.sampling_ratio > 0 else 100"
  pad: "2 if inputs.aligned and inputs.roi_max >= 0.5 else 1"
constraints:
  - {expr: "tile_c * grid * pad <= 64", message: "too many points"}
"""


@pytest.mark.parametrize("inputs,high,grid,pad,feasible", [
    ("", 32, 4, 2, 8),  # the defaults: sampling_ratio 2, aligned, roi_max 0.5
    ("inputs: {sampling_ratio: 1, aligned: false}\n", 16, 1, 1, 16),
    ("inputs: {sampling_ratio: 0, roi_max: 0.25}\n", 16, 100, 1, 0),
])
def test_expressions_read_the_ops_inputs(write_spec, inputs, high, grid, pad, feasible):
    """``inputs.<option>`` is the spec's value of an op option, or its default: a constraint can
    follow what the kernel derives from them (roi_align's sampling grid)."""
    spec = load_spec(write_spec(_INPUTS + inputs))
    space = spec.space(spec.shapes[0], "fp16")
    assert space.domain("tile_c", {})[-1] == high
    env = space.evaluate({"tile_c": 1})
    assert (env["grid"], env["pad"]) == (grid, pad)
    assert len(space.enumerate()) == space.count().feasible_size == feasible


def test_adaptive_sampling_ratio_reads_as_one_value(write_spec):
    """roi_align's -1 and 0 both mean adaptive: expressions read -1 for either, as the study's
    identity records it, so no constraint can tell two spellings of one spec apart."""
    spaces = [(s := load_spec(write_spec(_INPUTS + f"inputs: {{sampling_ratio: {sr}}}\n"))).space(s.shapes[0], "fp16")
              for sr in (-1, 0)]
    assert [sp.base_env()["inputs.sampling_ratio"] for sp in spaces] == [-1, -1]
    assert [sp.spec.inputs["sampling_ratio"] for sp in spaces] == [-1, 0]  # the spec keeps its text


def test_text_inputs_compare_and_replay_inputs_are_not_read(write_spec):
    text = ("op: resize\nshapes: [{n: 1, c: 4, h_in: 8, w_in: 8, h_out: 16, w_out: 16}]\n"
            "params:\n  tile_h: {type: int, low: 1, high: 8}\ninputs: {mode: nearest}\nconstraints:\n"
            "  - {expr: \"tile_h <= (2 if inputs.mode == 'bilinear' else 4)\", message: m}\n")
    spec = load_spec(write_spec(text))
    assert spec.space(spec.shapes[0], "fp16").count().feasible_size == 4
    assert load_spec(write_spec(text.replace("nearest", "bilinear"))).count(spec.shapes[0]).feasible_size == 2
    path = write_spec(text.replace("'bilinear'", "'bicubic'"))
    with pytest.raises(InputError, match="constraints\\[0\\].expr: 'bicubic' is not a choice of inputs.mode"):
        load_spec(path)
    path = write_spec(text.replace("inputs.mode ==", "inputs.mode + 1 =="))
    with pytest.raises(InputError, match="inputs.mode is text: compare it with == or != to one of 'nearest', 'bilinear'"):
        load_spec(path)
    (Path(path).parent / "m.csv").write_text("tile_h,time\n1,1.0\n")
    path = write_spec(text + "backend: replay\nmeasurements: m.csv\n")  # inputs: a free record there
    with pytest.raises(InputError, match="attribute access is only allowed as shape.<name>, dtype.<name>, hw.<name>, "
                                         "unit.<name>$"):
        load_spec(path)
    path = write_spec(text.replace("  tile_h:", "  inputs: {type: bool}\n  tile_h:"))
    with pytest.raises(InputError, match="name inputs shadows the inputs namespace"):
        load_spec(path)


def test_content_hash_follows_content_not_formatting(write_spec):
    a = write_spec("op: matmul\nshapes: [{m: 64, n: 64, k: 64}]\nparams:\n  a: {type: int, low: 1, high: 4}\n", "a.yaml")
    b = write_spec("# same\nop: matmul\nshapes:\n  - {k: 64, n: 64, m: 64}\nparams:\n  a: {type: int, low: 1, high: \"4\"}\n", "b.yaml")
    c = write_spec("op: matmul\nshapes: [{m: 64, n: 64, k: 64}]\nparams:\n  a: {type: int, low: 1, high: 5}\n", "c.yaml")
    ha, hb, hc = (load_spec(p).content_hash() for p in (a, b, c))
    assert ha == hb != hc and len(ha) == 16


# -- round trip of generated specs ---------------------------------------------------

_NAMES = st.lists(st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True), min_size=1, max_size=5,
                  unique=True).filter(
    lambda names: not {"hw", "dtype", "shape", "min", "max", "ceil", "floor", "log2",
                       "align_up", "divides", "is_pow2", "and", "or", "not", "if", "else", "in", "is",
                       "for", "as", "def", "del", "try", "with", "from", "pass"} & set(names))


@st.composite
def _param(draw, earlier):
    kind = draw(st.sampled_from(["int", "pow2", "multiple_of", "categorical", "bool", "fixed"]))
    if kind in ("int", "pow2", "multiple_of"):
        low = draw(st.integers(0, 20))
        high = draw(st.one_of(st.integers(low, 64),
                              st.sampled_from([f"{low} + {e} * 2" for e in earlier] or [low])))
        out = {"type": "int", "low": low, "high": high}
        if kind == "pow2":
            out["pow2"] = True
        elif kind == "multiple_of":
            out["multiple_of"] = draw(st.sampled_from([1, 2, 16, "dtype.c0"]))
        elif draw(st.booleans()):
            out["step"] = draw(st.integers(1, 5))
        return out
    if kind == "categorical":
        values = draw(st.one_of(
            st.lists(st.integers(-5, 99), min_size=1, max_size=4, unique=True),
            st.lists(st.from_regex(r"[a-z]{1,5}", fullmatch=True), min_size=1, max_size=3,
                     unique=True)))
        return {"type": "categorical", "choices": values}
    if kind == "bool":
        return {"type": "bool"}
    return {"type": "fixed", "value": draw(st.one_of(st.integers(0, 9), st.booleans(),
                                                     st.sampled_from(["nz", "nd"])))}


@st.composite
def _spec(draw):
    names = draw(_NAMES)
    params, numeric = {}, []
    for name in names:
        p = draw(_param(numeric))
        if draw(st.booleans()):
            p["description"] = draw(st.text("abc xyz", min_size=1, max_size=10))
        params[name] = p
        if p["type"] in ("int", "bool") or (p["type"] == "fixed" and not isinstance(p["value"], str)) \
                or (p["type"] == "categorical" and not isinstance(p["choices"][0], str)):
            numeric.append(name)
    spec = {
        "op": "matmul",
        "hardware": "ascend910b2",
        "dtypes": draw(st.lists(st.sampled_from(["fp16", "fp32", "bf16", "int8"]), min_size=1,
                                max_size=4, unique=True)),
        "units": draw(st.lists(st.sampled_from(["cube", "vector"]), min_size=1, max_size=2, unique=True)),
        "shapes": [dict(zip("mnk", s)) for s in draw(st.lists(
            st.tuples(*[st.integers(1, 5000)] * 3), min_size=1, max_size=4, unique=True))],
        "params": params,
        "derived": {},
        "constraints": [],
        "objective": draw(st.sampled_from([["cycles"], ["time_us"], ["cycles", "max_rel_error"]])),
        "budget": draw(st.sampled_from([{"trials": 5}, {"timeout_s": 2.5}, {"trials": 7, "timeout_s": 60}])),
        "sampler": draw(st.sampled_from(["tpe", "random", "nsga2", "exhaustive", "portfolio"])),
        "seed": draw(st.integers(0, 2**32 - 1)),
        "backend": "simulator",
        "inputs": {},  # matmul takes no options; test_inputs_* cover them
        "description": draw(st.text("abc xyz", max_size=20)),
    }
    if numeric:
        spec["derived"] = {"total_x": " + ".join(numeric)}
        spec["constraints"] = [{"expr": f"total_x >= {draw(st.integers(-3, 3))}", "message": "low"}]
    if "int8" in spec["dtypes"] and "cube" not in spec["units"]:
        spec["units"].append("cube")  # only the cube computes matmul in int8
    return spec


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_spec())
def test_generated_specs_round_trip(tmp_path, data):
    path = tmp_path / "gen.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    spec = load_spec(path)
    normal = spec.to_dict()
    assert normal == data
    path.write_text(yaml.safe_dump(normal, sort_keys=False))
    again = load_spec(path)
    assert again.to_dict() == normal and again.content_hash() == spec.content_hash()
    for p in spec.params:
        assert isinstance(p, IntParam if data["params"][p.name]["type"] == "int" else ChoiceParam)
    assert os.path.samefile(spec.file, path)


# -- the params a simulated kernel reads ----------------------------------------------

_SHAPES = {"matmul": {"m": 64, "n": 64, "k": 64}, "copy": {"n": 4096},
           "resize": {"n": 1, "c": 3, "h_in": 8, "w_in": 8, "h_out": 4, "w_out": 4},
           "roi_align": {"n": 1, "c": 16, "h": 16, "w": 16, "rois": 4, "pooled_h": 7, "pooled_w": 7}}


def test_kernel_param_lists_match_the_kernels_default_tilings():
    hw = load_profile()
    for name, op in registry.OPS.items():
        if op.generic:
            assert op.params == ()
            continue
        mod = registry.implementation(name)
        for unit in op.units:
            shape = _SHAPES.get(name, {"n": 4096})
            assert set(op.needs(unit)) == set(mod.default_params(shape, op.dtypes[0], hw, unit)), (name, unit)


def test_kernels_read_their_options_from_the_registry():
    """Each kernel simulates with every choice its registry options allow and refuses an unknown
    option, or a bad value, as an infeasible configuration naming it (the API path; specs are
    refused when they load)."""
    hw = load_profile()
    for name, op in registry.OPS.items():
        if op.generic:
            continue
        mod = registry.implementation(name)
        shape = _SHAPES.get(name, {"n": 4096})
        params = mod.default_params(shape, op.dtypes[0], hw, op.units[0])
        for o in op.options:
            for value in o.choices or (o.default,):
                r = mod.simulate(shape, params, op.dtypes[0], hw, unit=op.units[0], options={o.name: value})
                assert r.feasible, (name, o.name, value, r.reason)
        r = mod.simulate(shape, params, op.dtypes[0], hw, unit=op.units[0], options={"colour": "red"})
        if op.options:  # ops without options ignore the mapping; the spec loader refuses any key
            assert not r.feasible and "colour" in r.reason, name
            bad = op.options[0]
            r = mod.simulate(shape, params, op.dtypes[0], hw, unit=op.units[0], options={bad.name: [1]})
            assert not r.feasible and bad.name in r.reason, name


def _edges(o: registry.Option) -> list:
    """The extreme values a numeric option admits (an open bound: the next float inside it)."""
    low = math.nextafter(o.low, math.inf) if o.low_open else o.low
    return [low, o.high] if o.kind == "number" else [int(low), int(o.high)]


def test_numeric_options_are_bounded_and_simulate_at_their_extremes():
    """Every int or number option has both bounds, and each kernel simulates (feasible or not,
    never an exception) with every pair of extreme values: a value the loader accepts must not
    crash a simulation later (a huge sampling_ratio did, with an OverflowError)."""
    hw = load_profile()
    for name, op in registry.OPS.items():
        numeric = [o for o in op.options if o.kind in ("int", "number")]
        for o in numeric:
            assert o.low is not None and o.high is not None, (name, o.name)
        if op.generic or not numeric:
            continue
        mod = registry.implementation(name)
        shape = _SHAPES.get(name, {"n": 4096})
        params = mod.default_params(shape, op.dtypes[0], hw, op.units[0])
        for a, b in itertools.combinations_with_replacement(numeric, 2):
            for va, vb in itertools.product(_edges(a), _edges(b)):
                opts = {a.name: va, b.name: vb} if a is not b else {a.name: va}
                if any(o.at_most and o.name in opts and opts[o.name] > opts.get(o.at_most, math.inf)
                       for o in numeric):
                    continue
                r = mod.simulate(shape, params, op.dtypes[0], hw, unit=op.units[0], options=opts)
                assert r.feasible or r.reason, (name, opts)


@pytest.mark.parametrize("option,value,ok", [
    (registry.Option("n", "int", 0, low=0, high=4), 4, True),
    (registry.Option("n", "int", 0, low=0, high=4), 5, False),
    (registry.Option("n", "int", 0, low=0, high=4), True, False),  # YAML true is no integer
    (registry.Option("n", "int", 0, low=0, high=4), 2.0, False),
    (registry.Option("x", "number", 1.0, low=0, low_open=True), 0, False),
    (registry.Option("x", "number", 1.0, low=0, low_open=True), 1e-9, True),
    (registry.Option("x", "number", 1.0, low=0, low_open=True), float("inf"), False),
    (registry.Option("x", "number", 1.0, low=0, low_open=True), float("nan"), False),
    pytest.param(registry.Option("x", "number", 0.5, low=0, high=1), 10**400, False, id="int-past-float"),
    pytest.param(registry.Option("n", "int", 0, low=-1, high=4), -10**400, False, id="huge-negative-int"),
    (registry.Option("b", "bool", False), 0, False),
    (registry.Option("c", "choice", "a", ("a", "b")), {"a": 1}, False),
    (registry.Option("c", "choice", "a", ("a", "b")), "b", True),
])
def test_option_values(option, value, ok):
    if ok:
        option.check(value)
    else:
        with pytest.raises(registry.OptionError, match=f"expected {re.escape(option.expected())}"):
            option.check(value)


_NO_STEP_N = """op: matmul
units: [cube, vector]
shapes: [{m: 64, n: 64, k: 64}]
params:
  base_m: {type: fixed, value: 64}
  base_n: {type: fixed, value: 64}
  base_k: {type: fixed, value: 64}
  step_m: {type: fixed, value: 1}
  step_ka: {type: fixed, value: 1}
  step_kb: {type: fixed, value: 1}
  depth_a1: {type: fixed, value: 1}
  db_l0a: {type: fixed, value: 1}
  db_l0b: {type: fixed, value: 1}
  db_l0c: {type: fixed, value: 1}
  iterate_order: {type: fixed, value: m_first}
  single_core_m: {type: fixed, value: 64}
  single_core_n: {type: fixed, value: 64}
  single_core_k: {type: fixed, value: 64}
budget: {trials: 3}
"""


@pytest.mark.parametrize("command", [("simulate", "--shape", "m=64,n=64,k=64"), ("tune", "--quiet")])
def test_a_spec_missing_a_kernel_param_is_refused_before_simulating(write_spec, run_cli, tmp_path, command):
    path = write_spec(_NO_STEP_N)
    load_spec(path)  # a space can be described without every kernel param
    out_dir = ("--out", str(tmp_path / "o")) if command[0] == "tune" else ()
    code, out, err = run_cli(command[0], path, *command[1:], *out_dir)
    assert code == 2 and out == ""
    assert err == (f"autotile: error: {path}:4:1: params: missing step_n, depth_b1, which the matmul kernel on "
                   "cube reads (declare each; {type: fixed, value: V} pins one)\n")
    assert not (tmp_path / "o").exists()
    # a unit-restricted param does not stand in for another unit's
    spec = load_spec(write_spec(_NO_STEP_N.replace("  step_m:", "  step_n: {type: fixed, value: 1, units: [vector]}\n"
                                                   "  depth_b1: {type: fixed, value: 1}\n  step_m:")))
    with pytest.raises(InputError, match="missing step_n,"):
        spec.require_kernel_params("cube")


def test_a_param_the_kernel_does_not_read_is_located_at_the_param(write_spec, run_cli):
    """It was reported at ``params`` (4:1), not at the param; ``space`` counts it, as documented."""
    path = write_spec("op: sigmoid\nunits: [vector]\nshapes: [{n: 4096}]\nparams:\n"
                      "  tile_len: {type: int, low: 64, high: 128, pow2: true}\n  cores: {type: fixed, value: 1}\n"
                      "  buffer_num: {type: fixed, value: 1}\n  variant: {type: fixed, value: exact}\n"
                      "  tile_lenght: {type: bool}\n")
    code, out, err = run_cli("simulate", path, "--shape", "n=4096")
    assert (code, out) == (2, "")
    assert err.startswith(f"autotile: error: {path}:9:3: params.tile_lenght: 'tile_lenght' is not read by the "
                          "sigmoid kernel on vector, so it would change nothing"), err
    code, out, err = run_cli("space", path, "--json")
    assert (code, err) == (0, "") and json.loads(out)["raw_size"] == 4


# -- YAML 1.2 floats: exponents without a dot or a signed exponent are numbers -------------------

@pytest.mark.parametrize("text,value", [("1e6", 1e6), ("1.0e6", 1e6), ("1E6", 1e6), ("+1e6", 1e6),
                                        ("2.5e-1", 0.25), (".5e0", 0.5), ("1.0e+6", 1e6)])
def test_exponent_floats_are_numbers(write_spec, text, value):
    spec = load_spec(write_spec(
        "op: roi_align\nshapes: [{n: 1, c: 1, h: 8, w: 8, rois: 1, pooled_h: 2, pooled_w: 2}]\nparams:\n"
        f"  tile_c: {{type: fixed, value: 1}}\ninputs: {{spatial_scale: {text}}}\n"))
    assert spec.inputs["spatial_scale"] == value


def test_exponent_floats_keep_positions_and_quoted_ones_stay_text(write_spec):
    from autotile.yamlsrc import SafeDumper, load_text

    doc = load_text("a: [1, -2E-3]\nb: '1e6'\nc: 1e\n", "x.yaml")
    assert doc.value == {"a": [1, -0.002], "b": "1e6", "c": "1e"}
    assert doc.where(("a", 1)) == (1, 8)
    assert load_text(yaml.dump(doc.value, Dumper=SafeDumper), "y.yaml").value == doc.value  # text quoted
    path = write_spec("op: roi_align\nshapes: [{n: 1, c: 1, h: 8, w: 8, rois: 1, pooled_h: 2, pooled_w: 2}]\n"
                      "params:\n  tile_c: {type: fixed, value: 1}\ninputs: {spatial_scale: '1e6'}\n")
    with pytest.raises(InputError, match=r":5:25: inputs.spatial_scale: expected a number .*got '1e6'"):
        load_spec(path)


# -- YAML 1.2 integers: leading zeros are decimal, as on the command line -------------------------

@pytest.mark.parametrize("text,value", [("0064", 64), ("0400", 400), ("010", 10), ("0128", 128), ("-007", -7),
                                        ("0o17", 15), ("0x1f", 31), ("1:00", "1:00"), ("1_000", "1_000"),
                                        ("0b101", "0b101"), ("1:30.5", "1:30.5"), ("1_0.5", "1_0.5")])
def test_integers_follow_yaml_1_2(text, value):
    """YAML 1.1 read 0064 as octal 52, 0128 as text and 1:00 as base 60 (60)."""
    from autotile.yamlsrc import SafeDumper, load_text

    assert load_text(f"a: {text}\n", "x.yaml").value == {"a": value}
    assert load_text(yaml.dump({"a": text}, Dumper=SafeDumper), "y.yaml").value == {"a": text}  # text quoted


def test_zero_padded_shape_and_bound_read_as_decimal(write_spec, run_cli):
    path = write_spec("op: matmul\nunits: [vector]\nshapes: [{m: 0064, k: 0016, n: 0032}]\n"
                      "params:\n  tile_len: {type: int, low: 1, high: 0040}\n")
    spec = load_spec(path)
    assert spec.shapes == ({"m": 64, "n": 32, "k": 16},)
    assert spec.params[0].high.eval({}) == 40
    for high in ("1:00", "1_000", '"0b11"'):
        path = write_spec("op: matmul\nunits: [vector]\nshapes: [{m: 64, k: 16, n: 32}]\n"
                          f"params:\n  tile_len: {{type: int, low: 1, high: {high}}}\n")
        code, out, err = run_cli("space", path)
        assert code == 2 and "params.tile_len.high: " in err and "Traceback" not in err, err
    code, out, err = run_cli("space", write_spec("op: matmul\nshapes: [{m: 1:00, k: 16, n: 32}]\n"
                                                 "params:\n  a: {type: bool}\n"))
    assert code == 2 and err.endswith("shapes[0].m: expected a positive integer, got '1:00'\n")


# -- YAML merge keys: an explicit key overrides a merged one ---------------------------------------

def test_merge_keys_are_overridden_by_explicit_keys(write_spec):
    """``{<<: *small, high: 64}`` was refused as a duplicate key."""
    from autotile.yamlsrc import load_text

    doc = load_text("small: &small {type: int, low: 1, high: 8}\n"
                    "t: {<<: *small, high: 64}\n"
                    "u: {<<: [{high: 4, w: 0}, *small], low: 2}\n", "x.yaml")
    assert doc.value["t"] == {"type": "int", "low": 1, "high": 64}
    assert list(doc.value["u"].items()) == [("type", "int"), ("low", 2), ("high", 4), ("w", 0)]  # PyYAML's order
    assert doc.where(("t", "high"), key=True) == (2, 17) and doc.where(("t", "low"), key=True) == (1, 27)
    with pytest.raises(InputError, match=r"^x.yaml:2:26: t.high: duplicate key$"):
        load_text("small: &small {low: 1}\nt: {<<: *small, high: 8, high: 64}\n", "x.yaml")
    spec = load_spec(write_spec("op: matmul\nunits: [vector]\nshapes: [{m: 64, k: 16, n: 32}]\n"
                                "params:\n  tile_len: &small {type: int, low: 1, high: 8}\n"
                                "  other: {<<: *small, high: 64}\n"))
    assert [p.high.eval({}) for p in spec.params] == [8, 64]


def test_merge_keys_many_times_over_stay_cheap():
    from autotile.yamlsrc import load_text

    text = "l0: &l0 {x: 1}\n" + "".join(f"l{i}: &l{i} {{<<: [*l{i - 1}, *l{i - 1}], k{i}: 1}}\n"
                                         for i in range(1, 40))
    assert len(load_text(text, "x.yaml").value["l39"]) == 40


RECURSIVE = [  # (name, text, located message)
    ("alias in its own list", "a: &a [*a]\n", "1:4: a[0]: a YAML alias refers to a node that contains it"),
    ("alias in its own mapping", "a: &a {b: *a}\n", "1:4: a.b: a YAML alias refers to a node that contains it"),
    ("alias two levels down", "op: global_sum\nshapes: &s [{n: 4096}, [*s]]\n",
     "2:9: shapes[1][0]: a YAML alias refers to a node that contains it"),
    ("3000 nested lists", "op: " + "[" * 3000 + "]" * 3000 + "\n", "1:104: invalid YAML: nesting deeper than 100 levels"),
    ("nested mappings", "op: " + "{a: " * 120 + "1" + "}" * 120 + "\n",
     "1:398: invalid YAML: nesting deeper than 100 levels"),
    ("aliases nest deeper than the text",
     "x: &x " + "[" * 90 + "1" + "]" * 90 + "\ny: " + "[" * 50 + "*x" + "]" * 50 + "\n",
     "1:56: y" + "[0]" * 99 + ": nesting deeper than 100 levels (after aliases)"),
    ("merge key of a scalar", "a: {<<: 1}\n",
     "1:9: a: invalid YAML: expected a mapping or list of mappings for merging, but found scalar"),
]


@pytest.mark.parametrize("case,text,message", RECURSIVE, ids=[r[0] for r in RECURSIVE])
def test_recursive_or_deep_yaml_is_a_located_error(write_spec, run_cli, case, text, message):
    """A cycle through an alias, or nesting past 100 levels, was a RecursionError traceback."""
    path = write_spec(text)
    code, out, err = run_cli("space", path)
    assert code == 2 and err == f"autotile: error: {path}:{message}\n"


def test_nesting_within_the_limit_loads_and_recursion_left_is_caught():
    import sys

    from autotile.yamlsrc import MAX_DEPTH, load_text

    text = "a: " + "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1) + "\n"
    value = load_text(text, "x.yaml").value["a"]
    for _ in range(MAX_DEPTH - 2):
        value = value[0]
    assert value == []
    assert load_text("a: &a [1]\nb: [*a, *a]\n", "x.yaml").value == {"a": [1], "b": [[1], [1]]}  # no cycle
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(len(__import__("inspect").stack()) + 120)
    try:
        with pytest.raises(InputError, match=r"^x.yaml:1:\d+: invalid YAML: nesting too deep$"):
            load_text(text, "x.yaml")
    finally:
        sys.setrecursionlimit(limit)


HEAD = "op: matmul\nshapes: [{m: 64, n: 64, k: 64}]\nparams:\n  base_m: {type: int, low: 16, high: 64}\n"
# (style, the high bound's YAML after "  a:\n    type: int\n    low: 16\n    high:", the wrong
# name's 1-based (line, col) in the file). Lines 1-4 are HEAD, 5-7 the start of ``a``.
MULTILINE = [
    ("plain", " min(64,\n      base_m,\n      bas_m)\n", (10, 7)),
    ("plain, blank line", " min(64,\n\n      bas_m)\n", (10, 7)),
    ("single-quoted with ''", " 'min(64, base_m) if dtype.name == ''fp16'' else\n   min(8, bas_m)'\n", (9, 11)),
    ("double-quoted", ' "max(16,\n      shape.nn)"\n', (9, 7)),
    ("double-quoted, escapes before", ' "max(\\x31\\u0036,\\t\n      shape.nn)"\n', (9, 7)),
    ("double-quoted, escaped break", ' "max(16, sha\\\n   pe.nn)"\n', (8, 20)),
    ("double-quoted, the name escaped", ' "max(16,\n  \\x62ase_nn)"\n', (9, 3)),
    ("literal", " |\n      min(64,\n          bas_m)\n", (10, 11)),
    ("literal, explicit indent", " |2-\n      min(64,\n        bas_m)\n", (10, 9)),
    ("folded", " >-\n      min(64,\n\n          base_m,\n        bas_m)\n", (12, 9)),
    ("folded, keep", " >+\n\n      min(64, bas_m)\n\n", (10, 15)),
]


@pytest.mark.parametrize("case,high,at", MULTILINE, ids=[m[0] for m in MULTILINE])
def test_error_column_inside_multiline_expressions(write_spec, case, high, at):
    """An error in an expression that spans lines (plain, quoted or block scalar) names the line
    and column of the offending name, not the scalar's first line (which it did), and never a
    column past a line's end."""
    text = HEAD + "  a:\n    type: int\n    low: 16\n    high:" + high
    path = write_spec(text)
    with pytest.raises(InputError) as info:
        load_spec(path)
    assert "params.a.high" in str(info.value)
    assert (info.value.line, info.value.col) == at, str(info.value)
    line = text.splitlines()[at[0] - 1]
    assert at[1] <= len(line)
    assert line[at[1] - 1:].lstrip("\\x62").startswith(("bas", "sha", "ase")), line


def test_syntax_error_on_a_later_line_stays_on_that_line(write_spec):
    path = write_spec(HEAD + "  a:\n    type: int\n    low: 16\n    high: |\n      min(64,\n        base_m +)\n")
    with pytest.raises(InputError) as info:
        load_spec(path)
    assert info.value.line == 10 and 9 <= info.value.col <= len("        base_m +)"), str(info.value)


def test_matmul_study_typo_in_folded_bound_points_at_the_name(tmp_path):
    text = (ROOT / "studies" / "matmul.yaml").read_text()
    lines = text.splitlines(keepends=True)
    row = next(i for i, ln in enumerate(lines) if "db_l0b * base_n * dtype" in ln)
    lines[row] = lines[row].replace("base_n *", "base_nn *")
    path = tmp_path / "matmul.yaml"
    path.write_text("".join(lines))
    with pytest.raises(InputError) as info:
        load_spec(path)
    assert (info.value.line, info.value.col) == (row + 1, lines[row].index("base_nn") + 1)
    assert info.value.field == "params.base_k.high"


def test_scalar_offsets_rebuild_every_style():
    from autotile.yamlsrc import load_text

    text = ("a: x\n  y  z\n\n  w\nb: 'p''q\n   r'\nc: \"\\x41 \\\n  B\\tC\"\nd: |\n  one\n   two\ne: >\n"
            "  f1\n  f2\n\n  f3\n")
    doc = load_text(text, "t.yaml")
    for key, value in doc.value.items():
        for i, ch in enumerate(value.rstrip("\n")):
            line, col = doc.where_in((key,), i)
            src = text.splitlines()[line - 1]
            assert 1 <= col <= max(len(src), 1)
            if ch not in " \n":  # a folded break stands at the next line's text
                assert src[col - 1] == ch or src[col - 1] == "\\" or ch == "'", (key, i, ch, line, col)


@pytest.mark.parametrize("hw, top", [("ascend910b2", 55), ("ascend910", 63), ("ascend310p3", 62)])
def test_a_sampling_ratio_no_tiling_holds_is_refused_where_it_stands(write_spec, hw, top):
    """roi_align keeps every sampling point of a bin in UB: on the 910B2 every tiling overflowed
    from 56 up (64 was admitted, each trial infeasible). The loader refuses such a ratio at
    inputs.sampling_ratio; the largest it admits simulates at the smallest tiling."""
    text = (ROOT / "studies" / "roi_align.yaml").read_text().replace("hardware: ascend910b2", f"hardware: {hw}")
    spec = load_spec(write_spec(text.replace("sampling_ratio: 2,", f"sampling_ratio: {top},")))
    mod = registry.implementation("roi_align")
    for dtype, c in (("fp16", 8), ("fp32", 4)):
        shape = {"n": 1, "c": c, "h": 16, "w": 16, "rois": 2, "pooled_h": 1, "pooled_w": 1}
        p = {"tile_rois": 1, "tile_bins": 1, "tile_c": c, "buffer_num": 1, "cores": 1}
        assert mod.simulate(shape, p, dtype, spec.hardware, options=spec.inputs).feasible, (dtype, hw)
        r = mod.simulate({**shape, "c": 2 * c}, p, dtype, spec.hardware, options=spec.inputs)  # wider: no fit
        assert not r.feasible and "UB overflow" in r.reason
    path = write_spec(text.replace("sampling_ratio: 2,", f"sampling_ratio: {top + 1},"))
    with pytest.raises(InputError) as exc:
        load_spec(path)
    need = (top + 1) ** 2 * 64 + 64
    assert str(exc.value) == (
        f"{path}:12:47: inputs.sampling_ratio: {top + 1} keeps {(top + 1) ** 2:,} sampling points a bin in UB: the "
        f"smallest tiling (one ROI, bin and channel, single buffered) needs {need:,} bytes in fp16, more than {hw}'s "
        f"ub_bytes {spec.hardware.ub_bytes:,}; at most {top} fits (with up to 8 channels; fewer with more)")


SIGMOID = ("op: sigmoid\nunits: [{units}]\nshapes: [{{n: 4096}}]\nparams:\n"
           "  tile_len: {{type: int, low: 16, high: 4096}}\n  buffer_num: {{type: int, low: 1, high: 2}}\n"
           "  cores: {{type: fixed, value: 1}}\n  variant: {variant}\n")
KERNEL_VALUES = [
    ("vector", "{type: categorical, choices: [Exact, Poly]}",
     "{f}:8:42: params.variant.choices[0]: the sigmoid kernel takes variant as one of exact, poly (on vector), "
     "got 'Exact', did you mean exact?"),
    ("vector, scalar", "{type: categorical, choices: {vector: [exact], scalar: [poly, lut_liner]}}",
     "{f}:8:74: params.variant.choices.scalar[1]: the sigmoid kernel takes variant as one of exact, poly, "
     "lut_nearest, lut_linear (on scalar), got 'lut_liner', did you mean lut_linear?"),
    ("vector, scalar", "{type: categorical, choices: [exact, lut]}",
     "{f}:8:49: params.variant.choices[1]: the sigmoid kernel takes variant as one of exact, poly on vector; "
     "exact, poly, lut_nearest, lut_linear on scalar, got 'lut'"),
    ("vector", "{type: int, low: 0, high: 1}",
     "{f}:8:19: params.variant.type: the sigmoid kernel takes variant as text, one of exact, poly (on vector), "
     "not an integer: declare it {type: categorical, choices: [...]}"),
    ("scalar", "{type: fixed, value: 2}",
     "{f}:8:33: params.variant.value: the sigmoid kernel takes variant as one of exact, poly, lut_nearest, "
     "lut_linear (on scalar), got 2"),
]


@pytest.mark.parametrize("units, variant, message", KERNEL_VALUES)
def test_a_value_the_kernel_never_takes_is_refused_where_it_stands(write_spec, run_cli, units, variant, message):
    """``variant: [Exact, Poly]`` loaded, and tune spent its trial cap before saying "no feasible
    configuration found ... variant='Exact', expected one of ('exact', 'poly')" with exit 0."""
    path = write_spec(SIGMOID.format(units=units, variant=variant))
    code, out, err = run_cli("tune", path, "--out", str(Path(path).parent / "out"), "--quiet")
    assert (code, out) == (2, "") and err == f"autotile: error: {message.replace('{f}', path)}\n", err
    assert not (Path(path).parent / "out").exists()


def test_text_for_a_number_param_is_refused(write_spec):
    text = SIGMOID.format(units="vector", variant="{type: categorical, choices: [exact]}")
    path = write_spec(text.replace("buffer_num: {type: int, low: 1, high: 2}",
                                   "buffer_num: {type: categorical, choices: [one, two]}"))
    with pytest.raises(InputError) as info:
        load_spec(path)
    assert str(info.value) == (f"{path}:6:45: params.buffer_num.choices[0]: the sigmoid kernel takes "
                               "buffer_num as a number, got text 'one'")


@pytest.mark.parametrize("units, variant", [
    ("vector, scalar", "{type: categorical, choices: [exact, lut_linear]}"),  # lut_linear: on scalar
])
def test_values_some_unit_of_the_param_takes_load(write_spec, units, variant):
    assert load_spec(write_spec(SIGMOID.format(units=units, variant=variant))).op.name == "sigmoid"


def test_values_some_dtypes_only_take_load(write_spec):
    """acc_dtype fp16 is infeasible for fp32 input, not for fp16: not refused at load."""
    spec = load_spec(write_spec("op: weighted_sum\ndtypes: [fp32]\nunits: [vector]\nshapes: [{n: 4096}]\nparams:\n"
                                "  acc_dtype: {type: categorical, choices: [fp16]}\n"))
    assert spec.params[0].choices == ("fp16",)


@pytest.mark.parametrize("ref", ["mine.yaml", "./mine.yaml", "chips/mine.yaml"])
def test_a_missing_profile_beside_a_spec_in_the_current_folder_is_located(write_spec, run_cli, monkeypatch, ref):
    """With the spec in the current folder, ``hardware: mine.yaml`` said "autotile: error:
    mine.yaml: file not found" (no line, column or field): the path equalled the reference, so
    the existence check was skipped; ``./mine.yaml`` was located."""
    path = write_spec(f"op: sigmoid\nhardware: {ref}\nshapes: [{{n: 64}}]\nparams:\n  tile_len: {{type: fixed, value: 16}}\n")
    monkeypatch.chdir(Path(path).parent)
    code, out, err = run_cli("space", "spec.yaml")
    assert (code, out) == (2, "")
    assert err == f"autotile: error: spec.yaml:2:11: hardware: profile file not found: {ref.removeprefix('./')}\n"


def test_a_profile_beside_a_spec_in_the_current_folder_loads(write_spec, monkeypatch):
    path = write_spec("op: sigmoid\nhardware: mine.yaml\nshapes: [{n: 64}]\nparams:\n  tile_len: {type: fixed, value: 16}\n")
    (Path(path).parent / "mine.yaml").write_text((ROOT / "autotile" / "hardware" / "ascend910b2.yaml").read_text())
    monkeypatch.chdir(Path(path).parent)
    assert load_spec("spec.yaml").hardware.content_hash() == load_profile("ascend910b2").content_hash()
