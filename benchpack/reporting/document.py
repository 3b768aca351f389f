"""A report as a list of blocks, rendered as Markdown or as rich terminal output.

Cells are already-formatted strings (None renders as a dash), so both
renderings show exactly the same figures. Numeric columns are right-aligned
and never wrapped on a terminal; text columns wrap when the terminal is
narrow.
"""

from __future__ import annotations

import io
from typing import Any, Iterable, Union

# msgspec.Struct, not @dataclass: a dataclass compiles its generated methods from source text in every
# process (~0.4 ms a class); a Struct is built in C (docs/measurement.md, "Issue 34 item 2: stop 43").
import msgspec

DASH = "—"
TERMINAL_WIDTH = 100  # what the tables are designed to fit


class Heading(msgspec.Struct):
    text: str
    level: int = 1


class Paragraph(msgspec.Struct):
    text: str
    muted: bool = False  # a note or legend: dim on a terminal


class Bullets(msgspec.Struct):
    items: list[str]


class Column(msgspec.Struct):
    name: str
    numeric: bool = False


class Table(msgspec.Struct):
    columns: list[Column]
    rows: list[list[Any]] = msgspec.field(default_factory=list)
    title: str | None = None

    def add(self, *cells: Any) -> None:
        self.rows.append(list(cells))


Block = Union[Heading, Paragraph, Bullets, Table]


def columns(*specs: str) -> list[Column]:
    """`columns("case", "#n", "#TTFT s")`: a leading `#` marks a numeric column."""
    return [Column(s[1:], True) if s.startswith("#") else Column(s) for s in specs]


def text(value: Any) -> str:
    if value is None:
        return DASH
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        return ", ".join(text(v) for v in value) or DASH
    if isinstance(value, dict):
        return ", ".join(f"{k}: {text(v)}" for k, v in value.items()) or DASH
    value = str(value)
    return value if value.strip() else DASH


# --- Markdown ------------------------------------------------------------------


def _md_cell(value: Any) -> str:
    """One Markdown table cell: `|` would split the cell, newlines would end the row."""
    return text(value).replace("\r\n", " ").replace("\n", " ").replace("|", "\\|")


def markdown_table(table: Table) -> str:
    head = "| " + " | ".join(c.name for c in table.columns) + " |"
    rule = "|" + "|".join("---:" if c.numeric else "---" for c in table.columns) + "|"
    body = ["| " + " | ".join(_md_cell(v) for v in row) + " |" for row in table.rows]
    lines = ([f"**{table.title}**", ""] if table.title else []) + [head, rule] + body
    return "\n".join(lines)


def to_markdown(blocks: Iterable[Block]) -> str:
    parts = []
    for block in blocks:
        if isinstance(block, Heading):
            parts.append("#" * block.level + " " + block.text)
        elif isinstance(block, Paragraph):
            parts.append(block.text)
        elif isinstance(block, Bullets):
            parts.append("\n".join(f"- {item}" for item in block.items) if block.items else "None.")
        elif isinstance(block, Table):
            parts.append(markdown_table(block))
    return "\n\n".join(parts).rstrip() + "\n"


# --- terminal (rich) -------------------------------------------------------------


def _rich_table(table: Table):
    from rich import box
    from rich.table import Table as RichTable

    rich_table = RichTable(title=table.title, title_justify="left", title_style="bold", box=box.SIMPLE_HEAD,
                           pad_edge=False, show_edge=False, padding=(0, 1))
    for column in table.columns:
        if column.numeric:
            rich_table.add_column(column.name, justify="right", no_wrap=True)
        else:
            rich_table.add_column(column.name, overflow="fold")
    for row in table.rows:
        rich_table.add_row(*(text(v) for v in row))
    return rich_table


def print_blocks(blocks: Iterable[Block], console) -> None:
    from rich.markup import escape
    from rich.text import Text

    for block in blocks:
        if isinstance(block, Heading):
            style = "bold underline" if block.level == 1 else "bold"
            console.print(Text(block.text, style=style))
        elif isinstance(block, Paragraph):
            console.print(Text(block.text, style="dim" if block.muted else ""))
        elif isinstance(block, Bullets):
            for item in block.items or ["None."]:
                console.print("• " + escape(item), highlight=False)
        elif isinstance(block, Table):
            console.print(_rich_table(block))
        console.print()


def terminal_console(stream):
    """A rich console on `stream`, no wider than the width the tables are designed for."""
    from rich.console import Console

    console = Console(file=stream)
    return console if console.width <= TERMINAL_WIDTH else Console(file=stream, width=TERMINAL_WIDTH)


def to_terminal_text(blocks: Iterable[Block], width: int = TERMINAL_WIDTH) -> str:
    """The terminal rendering without colour, as a string (tests, width checks)."""
    from rich.console import Console

    buffer = io.StringIO()
    console = Console(file=buffer, width=width, color_system=None, force_terminal=False, highlight=False)
    print_blocks(blocks, console)
    return buffer.getvalue()
