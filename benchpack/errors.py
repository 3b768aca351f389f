"""Errors that carry where the problem is (file, field) and what is wrong.

The CLI prints them one per line and exits 2; nothing here ever reaches the
user as a traceback.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    file: str
    field: str
    reason: str

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
