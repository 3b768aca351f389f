"""Errors that carry where the problem is (file, field) and what is wrong.

The CLI prints them one per line and exits 2; nothing here ever reaches the
user as a traceback.
"""

from __future__ import annotations


class Problem:
    """One problem: the file, the field in it ("" when the whole file), and what is wrong. Immutable and
    hashable, compared by value.

    Written out, not a dataclass: every command imports this module, and a dataclass compiles its
    generated methods from source text in every process (docs/measurement.md, "Issue 34 item 2: stop 43").
    """

    __slots__ = ("file", "field", "reason")
    __match_args__ = ("file", "field", "reason")

    file: str
    field: str
    reason: str

    def __init__(self, file: str, field: str, reason: str) -> None:
        object.__setattr__(self, "file", file)
        object.__setattr__(self, "field", field)
        object.__setattr__(self, "reason", reason)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to field {name!r}: Problem is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}: Problem is immutable")

    def _values(self) -> tuple[str, str, str]:
        return (self.file, self.field, self.reason)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        return f"{self.__class__.__qualname__}(file={self.file!r}, field={self.field!r}, reason={self.reason!r})"

    def __reduce__(self) -> tuple:
        return (self.__class__, self._values())

    def __str__(self) -> str:
        if self.field:
            return f"{self.file}: {self.field}: {self.reason}"
        return f"{self.file}: {self.reason}"


class BenchpackError(Exception):
    """Base for every error the CLI reports as invalid input (exit status 2)."""

    def __init__(self, problems: list[Problem] | Problem | str):
        if isinstance(problems, str):
            problems = [Problem("benchpack", "", problems)]
        elif isinstance(problems, Problem):
            problems = [problems]
        self.problems: list[Problem] = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))

    def lines(self) -> list[str]:
        return [str(p) for p in self.problems]


class PackError(BenchpackError):
    """An invalid pack manifest or pack-owned file."""


class ConfigError(BenchpackError):
    """Invalid command-line options or runner configuration (env vars, metadata files)."""
