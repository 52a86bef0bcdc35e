"""Small helpers shared by the command modules: JSON printing, ``k=v`` parsing, path checks."""

from __future__ import annotations

import argparse
import json
import math
import os
import pickle
import signal
import sys
import threading
import unicodedata

from autotile.errors import InputError


def print_json(obj) -> None:
    json.dump(obj, sys.stdout, indent=2)
    sys.stdout.write("\n")


def nonempty(value: str | None, flag: str, expected: str = "a file name") -> str | None:
    """A path flag's value, or None when not given; an empty (or blank) value is an error, not
    'no output' (``-o ""`` wrote nothing with exit 0)."""
    if value is not None and not value.strip():
        raise InputError(f"{flag}: expected {expected}, got an empty one")
    return value


def given(what: str):
    """An argparse ``type`` for a file, folder or name positional: an empty (or blank) one is bad
    input, not the current folder (``report ""`` rendered ``.``, ``export ""`` read ``./table.json``).

    >>> given("a folder")("results/mm")
    'results/mm'
    """

    def check(value: str) -> str:
        if not value.strip():
            raise argparse.ArgumentTypeError(f"expected {what}, got an empty one")
        return value

    return check


MAX_SEED = 2**32 - 1  # what numpy's and Optuna's samplers accept
MAX_JOBS = 1024  # worker processes of one command (each tune worker takes a study's trials)


def int_in(value: int | None, flag: str, low: int, high: int) -> int | None:
    """A numeric flag's value, or None when not given; outside ``low .. high`` is one line
    (``--seed -1`` was a traceback from the sampler, after the storage was created)."""
    if value is not None and not low <= value <= high:
        shown = value if len(str(value)) <= 30 else f"an integer of {len(str(abs(value)))} digits"
        raise InputError(f"{flag}: expected an integer from {low} to {high}, got {shown}")
    return value


def parse_kv(text: str, *, what: str, ints: bool = False) -> dict:
    """``m=1024,n=2048`` -> ``{"m": 1024, "n": 2048}``; values are int, float, bool or text."""
    out: dict = {}
    if not text:
        return out
    for part in text.split(","):
        if "=" not in part:
            raise InputError(f"{what}: expected name=value, got {part!r}")
        key, _, raw = part.partition("=")
        key, raw = key.strip(), raw.strip()
        if not key.isidentifier() or unicodedata.normalize("NFKC", key) != key:  # as a spec's dims
            raise InputError(f"{what}: {key!r} is not a valid name")
        value = _value(raw, what=f"{what} {key}", ints=ints)
        if key in out and (type(out[key]), out[key]) != (type(value), value):
            raise InputError(f"{what}: {key} given twice ({out[key]!r} and {value!r})")
        out[key] = value
    return out


def parse_shape(text: str) -> dict:
    """``--shape m=1024,n=2048``: every dimension an integer within the bounds spec shapes have
    (1 .. 2**31-1), so a typo of a few digits is an error, not an hour-long simulation."""
    from autotile.space.loader import MAX_DIM

    shape = parse_kv(text, what="--shape", ints=True)
    for key, value in shape.items():
        if value < 1:
            raise InputError(f"--shape {key}: expected a positive integer, got {value}")
        if value > MAX_DIM:
            raise InputError(f"--shape {key}: expected at most {MAX_DIM}, got {value}")
    return shape


def _value(raw: str, *, what: str, ints: bool):
    try:
        number = int(raw)
    except ValueError:
        number = None
    if number is not None or (not ints and _float(raw) is not None):
        # int() and float() also take 1_000 and non-ASCII digits: only plain decimals are numbers here
        if "_" in raw or not raw.isascii():
            raise InputError(f"{what}: expected a plain decimal number (digits, no underscores), got {raw!r}")
    if number is not None:
        return number
    if ints:
        raise InputError(f"{what}: expected a positive integer, got {raw!r}")
    low = raw.lower()
    if low in ("true", "false"):
        return low == "true"
    value = _float(raw)
    if value is None:
        return raw
    if not math.isfinite(value):
        raise InputError(f"{what}: expected a finite number, got {raw!r}")
    return value


def interruptible(call, *, slow: bool = True):
    """``call()``, stopped promptly by SIGINT (Ctrl-C, ``kill -INT``) when it is ``slow``.

    A Numba kernel keeps the thread that calls it, and the GIL (the kernels are not compiled
    ``nogil``), until it returns, so Python's SIGINT handler, which runs only in the main thread
    between bytecodes, waited for the end of a simulation that can take hours; nor can a worker
    thread help, as the main thread cannot get the GIL back to raise KeyboardInterrupt. Here the
    call runs in a forked child process while this one waits on a pipe, where SIGINT raises
    KeyboardInterrupt at once: the child is killed and the interrupt goes on to the CLI
    (``autotile: interrupted``, exit 130). The result, or the exception, comes back pickled.
    A call that is not ``slow`` (under a second or so, where the child's start, loading the
    compiled kernels again, would be most of the time) runs in this process, as does any call
    where fork is missing, or unsafe because other threads run (inside a test runner, say).
    """
    if not slow or not hasattr(os, "fork") or threading.active_count() > 1:
        return call()
    sys.stdout.flush()
    sys.stderr.flush()
    parent = os.getpid()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: computes, writes the pickled outcome, never returns
        code = 1
        try:
            os.close(read)
            signal.signal(signal.SIGINT, signal.SIG_DFL)  # a terminal's Ctrl-C reaches it too
            _die_with(parent)
            try:
                outcome = (True, call())
            except BaseException as exc:  # handed to the parent to raise, with where it happened
                import traceback

                exc.add_note("in the worker process:\n" + traceback.format_exc().rstrip())
                outcome = (False, exc)
            try:
                data = pickle.dumps(outcome, protocol=pickle.HIGHEST_PROTOCOL)
            except Exception as exc:  # an unpicklable result or exception
                data = pickle.dumps((False, RuntimeError(f"{type(exc).__name__}: {exc}")))
            with os.fdopen(write, "wb") as f:
                f.write(data)
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    try:
        with os.fdopen(read, "rb") as f:
            data = f.read()
    except BaseException:  # KeyboardInterrupt, among others: the child cannot be left running
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(pid, 0)
        raise
    _, status = os.waitpid(pid, 0)
    if not data:
        raise RuntimeError(f"the worker process ended without an answer (wait status {status})")
    ok, value = pickle.loads(data)
    if ok:
        return value
    raise value


def _die_with(parent: int) -> None:
    """On Linux, have the kernel kill this (child) process when its parent dies (SIGKILL)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)


def _float(raw: str) -> float | None:
    try:
        return float(raw)
    except ValueError:
        return None


class Once(argparse.Action):
    """Every single-value option's action (the parsers register it as ``store``): a repeat is an
    error, not silently the last one wins (``--dtype fp16 --dtype fp32`` ran fp32). The options
    given so far are kept on the namespace, since a default value cannot tell given from not."""

    def __call__(self, parser, namespace, values, option_string=None):
        given_so_far = namespace.__dict__.setdefault("_given", {})
        if option_string is not None and self.dest in given_so_far:
            raise argparse.ArgumentError(self, f"given twice ({given_so_far[self.dest]!r} and {values!r}); "
                                               "expected one")
        given_so_far[self.dest] = values
        setattr(namespace, self.dest, values)


class Merged(argparse.Action):
    """A ``name=value,...`` list that may be repeated: the repeats are joined with ``,``, so
    ``parse_kv`` merges them and refuses a name given twice with different values (the last one
    silently won: ``--set tile_len=16 --set cores=2`` ran tile_len's default)."""

    def __call__(self, parser, namespace, values, option_string=None):
        before = getattr(namespace, self.dest, None)
        setattr(namespace, self.dest, f"{before},{values}" if before and values else values or before)


def check_dtype(spec, dtype: str | None) -> None:
    """A --dtype the spec lists (as --unit must be one it lists), else one line naming them."""
    from autotile.yamlsrc import suggest

    # a dtype the op lacks is the space's error (naming the op's dtypes)
    if dtype is not None and dtype in spec.op.dtypes and dtype not in spec.dtypes:
        raise InputError(f"dtype: {dtype!r} is not a dtype of this spec, expected one of "
                         f"{', '.join(spec.dtypes)}" + suggest(dtype, spec.dtypes))


def check_chip_dtype(hw, dtype: str) -> None:
    """A --dtype the chip holds (the 910A and 310P have no bf16), else one line naming its dtypes."""
    problem = hw.dtype_problem(None, dtype)
    if problem:
        raise InputError(f"--dtype: {problem}")


def spec_inputs(spec) -> dict:
    """The files a loaded spec was read from, by how an error names them: the spec itself, its
    hardware profile and (replay) its measurements; an output must be none of them."""
    return {f"the spec {spec.file}": spec.file,
            f"the hardware profile {spec.hardware.path}": getattr(spec.hardware, "path", None),
            f"the measurements file {spec.measurements}": spec.measurements}
