"""The ``autotile`` command: argument parsing only; each command lives in its own module here.

Exit codes: 0 success, 2 bad input (one line naming file, line, column and field), 1 anything else
(out of memory, say: one line too), 130 interrupted by SIGINT (143 by SIGTERM).
"""

from __future__ import annotations

import argparse
import importlib
import sys

from autotile import __version__
from autotile.atomic import OutputError
from autotile.cli.common import Once
from autotile.errors import InputError, RunError, StorageError

# command name -> module (inside autotile.cli) defining HELP, add_arguments(p) and run(args)
COMMANDS = {
    "hw": "hw",
    "space": "space",
    "tune": "tune",
    "simulate": "simulate",
    "micro": "micro",
    "calibrate": "calibrate",
    "crossover": "crossover",
    "export": "export",
    "lookup": "lookup",
    "report": "report",
    "import-kt": "import_kt",
    "bench-search": "bench_search",
    "train": "train",
    "decide": "decide",
}


class _Parser(argparse.ArgumentParser):
    """argparse that reports bad arguments as one line with exit code 2 and refuses a single-value
    option given twice (``Once`` is its plain ``store`` action)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.register("action", None, Once)
        self.register("action", "store", Once)

    def error(self, message):  # noqa: D401 - argparse API
        raise InputError(f"{self.prog}: {message}")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="autotile", description="Tiling-parameter search for Ascend-style NPU operators.")
    parser.add_argument("--version", action="version", version=f"autotile {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for name, modname in COMMANDS.items():
        mod = importlib.import_module(f"autotile.cli.{modname}")
        p = sub.add_parser(name, help=mod.HELP, description=mod.HELP)
        mod.add_arguments(p)
        p.set_defaults(_run=mod.run)
    return parser


def run(argv: list[str] | None = None) -> int:
    """Parse ``argv`` and run the command; returns the exit code (used by tests in-process)."""
    try:
        args = build_parser().parse_args(argv)
        return int(args._run(args) or 0)
    except InputError as exc:
        print(f"autotile: error: {exc}", file=sys.stderr)
        return 2
    except (OutputError, StorageError, RunError) as exc:
        print(f"autotile: error: {exc}", file=sys.stderr)
        return 1
    except MemoryError as exc:  # a shape too large for this machine: said in one line, not a traceback
        print(f"autotile: error: out of memory{': ' + str(exc) if str(exc) else ''} (a smaller shape, or a "
              "machine with more memory, may run)", file=sys.stderr)
        return 1
    except RuntimeError as exc:
        if "no locator available" not in str(exc):
            raise
        # Numba's cache needs a writable folder; autotile.jitcache found none, not even a temporary one
        print("autotile: error: Numba found no writable folder for the compiled kernels' cache; "
              "set NUMBA_CACHE_DIR to one", file=sys.stderr)
        return 1
    except KeyboardInterrupt as exc:
        print("autotile: interrupted", file=sys.stderr)
        return getattr(exc, "exit_code", 130)
    except BrokenPipeError:  # e.g. `autotile space ... | head`
        sys.stderr.close()
        return 0


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point."""
    sys.exit(run(argv))
