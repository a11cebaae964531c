"""The options of the two sample exports (`results export`, `measure campaign export`), checked and
carried out once: exactly one of --csv PATH|- and --parquet PATH, --json never beside CSV on
stdout, the output path checked before any work."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from ..base.errors import InputError
from ..store import export
from . import paths
from .output import err_console, print_json


@dataclass(frozen=True)
class ExportTarget:
    fmt: str   # "csv" or "parquet"
    path: str  # "-": CSV on stdout

    def write(self, table) -> int:
        """Writes the table; returns its row count."""
        if self.fmt == "csv":
            return export.write_csv(table, self.path)
        return export.write_parquet(table, self.path)

    def report(self, count: int, json_out: bool) -> None:
        where = "stdout" if self.path == "-" else self.path
        if json_out:
            print_json({"samples": count, "path": where, "format": self.fmt})
        else:  # on stderr: stdout may be carrying the CSV itself
            err_console.print(f"wrote {count} samples to {where}", highlight=False, markup=False)


def export_target(csv_path: Optional[str], parquet_path: Optional[Path],
                  json_out: bool) -> ExportTarget:
    if (csv_path is None) == (parquet_path is None):
        raise InputError("give exactly one of --csv PATH|- or --parquet PATH")
    if json_out and csv_path == "-":
        raise InputError("--json and --csv - would both write to stdout", field="--json")
    paths.output_file(None if csv_path is None else Path(csv_path), "--csv")
    paths.output_file(parquet_path, "--parquet")
    if csv_path is not None:
        return ExportTarget("csv", csv_path)
    return ExportTarget("parquet", str(parquet_path))
