"""Error types shared by every package.

`InputError` is bad user input (a spec, profile, table or measurement file, or a command-line
value). The CLI prints it as one line and exits with code 2; it never shows a traceback.
"""

from __future__ import annotations


class InputError(Exception):
    """Bad input, located as precisely as we can: file, line, column and field.

    >>> str(InputError("expected an integer", file="s.yaml", line=3, col=9, field="params.base_m.high"))
    's.yaml:3:9: params.base_m.high: expected an integer'
    """

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        col: int | None = None,
        field: str | None = None,
    ) -> None:
        self.message = " ".join(str(message).split())  # always one line
        self.file = file
        self.line = line
        self.col = col
        self.field = field
        super().__init__(self.__str__())

    def __str__(self) -> str:
        where = ""
        if self.file is not None:
            where = str(self.file)
            if self.line is not None:
                where += f":{self.line}"
                if self.col is not None:
                    where += f":{self.col}"
            where += ": "
        field = f"{self.field}: " if self.field else ""
        return f"{where}{field}{self.message}"

    def located(self, **kw) -> InputError:
        """A copy with location fields filled in where this one has none."""
        args = {k: getattr(self, k) for k in ("file", "line", "col", "field")}
        for key, value in kw.items():
            if args.get(key) is None:
                args[key] = value
        return InputError(self.message, **args)


class InfeasibleConfig(Exception):
    """A configuration that cannot run (a buffer overflows, a constraint fails).

    Carries a human-readable reason naming the buffer or constraint and the numbers.
    """

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


class StorageError(Exception):
    """The study storage failed (e.g. the database went away). Completed trials are saved;
    rerunning the same command resumes."""


class RunError(Exception):
    """A run that could not go on for a reason other than input or storage (its worker processes
    kept dying); the CLI prints one line and exits 1."""


class Terminated(KeyboardInterrupt):
    """A second SIGTERM: stop at once, as a second Ctrl-C does, but with SIGTERM's exit code."""

    exit_code = 143
