"""The reference dataset shipped inside the package (src/intercore/learn/data/reference):
measured on the development host, so `learn train`, `learn evaluate`, bench/learn.py and the
demo reproduce without hours of measurement. Its dataset.json says where and how."""

from __future__ import annotations

from pathlib import Path

from ..base.errors import InputError

REFERENCE = Path(__file__).with_name("data") / "reference"


def path() -> Path:
    if not (REFERENCE / "dataset.json").is_file():
        raise InputError(f"this installation has no reference dataset ({REFERENCE}); give "
                         "--dataset DIR (make one with `intercore learn dataset`)",
                         field="--dataset")
    return REFERENCE
