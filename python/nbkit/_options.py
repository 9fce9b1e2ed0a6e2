"""Helpers shared by the package's modules (not public)."""
from __future__ import annotations

import json
import os
from typing import Any


def toml_text(tables: dict[str, Any]) -> str:
    """A dict of TOML tables (each a dict of strings, numbers, booleans and lists of them) as
    TOML text: how nbkit.md.Simulation takes a run described in Python."""
    lines: list[str] = []

    def value(v: Any, where: str) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, (int, float)):
            return repr(v) if isinstance(v, int) else repr(float(v))
        if isinstance(v, (str, os.PathLike)):
            return json.dumps(os.fspath(v))  # a TOML basic string: JSON's escapes are TOML's
        if isinstance(v, (list, tuple)):
            return "[" + ", ".join(value(x, where) for x in v) + "]"
        if hasattr(v, "tolist"):  # numpy scalars and arrays
            return value(v.tolist(), where)
        raise TypeError(f"{where}: {v!r} is not a TOML value (string, number, boolean or list)")

    for name, table in tables.items():
        if not isinstance(table, dict):
            raise TypeError(f"config[{name!r}]: expected a dict (a TOML table), got {type(table).__name__}")
        lines.append(f"[{name}]")
        for key, v in table.items():
            lines.append(f"{key} = {value(v, f'[{name}] {key}')}")
        lines.append("")
    return "\n".join(lines)
