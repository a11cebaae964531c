"""pytest imports test files by their base name (no __init__.py in tests/): two files of one
name in different folders stop the whole run at collection, which a helper running only
its own folder never sees."""

from __future__ import annotations

from collections import Counter
from pathlib import Path


def test_no_two_test_files_share_a_name():
    names = Counter(p.name for p in Path(__file__).parent.rglob("test_*.py"))
    assert len(names) > 100 and [n for n, c in names.items() if c > 1] == []
