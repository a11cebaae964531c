"""The reusable report API: sections of typed blocks rendered into one self-contained page."""

from __future__ import annotations

import base64
import math
import re
from datetime import datetime, timezone

import pytest

from intercore.report import plots
from intercore.report.html import (Figure, KeyValues, Notes, Preformatted, Section, Table, Text,
                                   render, write)

EXTERNAL = re.compile(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//|url\(\s*["']?(?:https?:)?//|"""
                      r"""<link\b|<script\b|@import""", re.IGNORECASE)


def svg_of(uri: str) -> str:
    prefix = "data:image/svg+xml;base64,"
    assert uri.startswith(prefix)
    return base64.b64decode(uri[len(prefix):]).decode()


def test_every_block_kind_renders_in_order_with_a_table_of_contents():
    figure = Figure(plots.grouped_bars(["a", "b"], ["s1"], [[1.2, 1.5]], ylabel="x", title="t"),
                    "a caption")
    page = render("My report", [
        Section("First part", [Text("hello"), KeyValues({"key": 1.23456789, "none": None})]),
        Section("Second part", [Table(("name", "value"), [["x", 2.0], ["y", None]],
                                      caption="cap", numeric=frozenset({1})),
                                figure, Notes(["careful"]), Preformatted("a:\n  b: 1")]),
    ], subtitle="sub", generated_at=datetime(2025, 1, 1, tzinfo=timezone.utc))
    assert page.index('id="first-part"') < page.index('id="second-part"')
    assert '<a href="#first-part">First part</a>' in page
    assert "<dd>1.235</dd>" in page and "<dd>—</dd>" in page
    assert '<td class="num">2</td>' in page
    assert "a caption" in page and "careful" in page and "a:\n  b: 1" in page
    assert "2025-01-01 00:00:00 UTC" in page
    assert not EXTERNAL.search(page)


def test_user_text_is_escaped_everywhere():
    evil = '<script>alert("x")</script>'
    page = render(evil, [Section(evil, [Text(evil), Table((evil,), [[evil]]),
                                        KeyValues({evil: evil}), Notes([evil]),
                                        Preformatted(evil)])])
    assert "<script>" not in page
    assert page.count("&lt;script&gt;") >= 7


def test_empty_tables_and_notes_say_so():
    page = render("r", [Section("s", [Table(("a",), [], caption="Skipped setups"),
                                      Notes([])])])
    assert "Skipped setups (no rows)" in page and "None." in page


def test_figures_must_be_inline_and_anchors_unique():
    with pytest.raises(ValueError, match="inline"):
        Figure("https://example.com/plot.png", "remote")
    with pytest.raises(ValueError, match="unique"):
        render("r", [Section("Same", []), Section("Same", [])])


def test_write_makes_no_directory(tmp_path):
    """The commands check that the directory exists before any work (issue 18)."""
    with pytest.raises(FileNotFoundError):
        write(tmp_path / "deep" / "r.html", "r", [Section("s", [Text("t")])])
    assert not (tmp_path / "deep").exists()
    path = write(tmp_path / "r.html", "r", [Section("s", [Text("t")])])
    assert path.read_text().startswith("<!DOCTYPE html>")
    assert [p.name for p in tmp_path.iterdir()] == ["r.html"]


def test_plots_are_deterministic_svg_without_external_references():
    args = (["qsort", "susan"], ["interf_write_1MiB", "interf_write_2MiB"],
            [[1.5, 2.0], [1.7, math.nan]])
    kw = dict(lo=[[1.4, 1.9], [1.6, math.nan]], hi=[[1.6, 2.1], [1.8, math.nan]],
              ylabel="slowdown", title="Fig", reference=1.0)
    first, second = plots.grouped_bars(*args, **kw), plots.grouped_bars(*args, **kw)
    assert first == second
    svg = svg_of(first)
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg
    assert "interf_write_2MiB" in svg  # text stays text (svg.fonttype none)
    assert not re.search(r"""(?:href|src)=["']https?:""", svg)


def test_heatmap_marks_missing_cells():
    svg = svg_of(plots.heatmap(["read", "write"], ["1M", "2M"], [[1.1, math.nan], [1.3, 1.9]],
                               title="h", xlabel="size", ylabel="access", colorbar="slowdown"))
    assert "n/a" in svg and "1.90" in svg
