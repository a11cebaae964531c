"""The heatmap's rendering rules (issue 22): an absolute colour scale in Δ with its legend, a
prediction below 1 shown as 1 and explained, intercore's instrumentation never shown nor
sharing attention, the page opening on the user's line that carries the most predicted
slowdown, and measured Δ beside predicted. Regions are built here, with their source files,
so every rule is checked against numbers chosen for it."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from intercore.learn import heatmap
from intercore.learn.features import RegionFeatures, Token
from intercore.base.native import kit_dir

ARCH_H = str(kit_dir() / "include" / "ic_arch.h")
MODEL = {"path": "m", "dataset": "d", "confidence": 0.95, "hierarchy": "L1d 48 KiB",
         "regime": "the shared regime", "host": "x86_64 AMD EPYC (KVM)",
         "aggressor": "BwRead(LLC)"}


def _token(pc: int, source: str | None, execs: int, far: int = 0, kind: str = "mov:R,M8"
           ) -> Token:
    return Token(pc, kind, execs, execs, 0, 8 * execs, 0, (execs - far, 0, 0, far),
                 (0,) * 33, (0,) * 27, source=source, function="work" if source else None)


def _region(rid: int, name: str, tokens: list[Token]) -> RegionFeatures:
    served = tuple(sum(t.served[i] for t in tokens) for i in range(4))
    return RegionFeatures(rid, name, 1, sum(t.execs for t in tokens),
                          sum(t.loads for t in tokens), 0, 0, 10, served, (0,) * 27,
                          tuple(tokens))


def _received(*att: list[float]) -> np.ndarray:
    """Attention received per region: position 0 is the <region> token."""
    width = 1 + max(len(a) for a in att)
    return np.array([[0.0, *a] + [0.0] * (width - 1 - len(a)) for a in att])


def _sources(tmp_path: Path) -> tuple[str, str]:
    a, b = tmp_path / "a.c", tmp_path / "b.c"
    a.write_text("".join(f"a line {n}\n" for n in range(1, 21)))
    b.write_text("".join(f"b line {n}\n" for n in range(1, 21)))
    return str(a), str(b)


def _instrumented(a: str, b: str) -> tuple[list[RegionFeatures], np.ndarray]:
    """Region 1 in a.c, region 2 in b.c; each also holds a marker, a kit-header line and a
    line-less (libc) instruction, which the model attends to most."""
    r1 = _region(1, "fir", [_token(0x10, f"{a}:3", 100, kind="<mark>"),
                            _token(0x14, f"{ARCH_H}:40", 100),
                            _token(0x18, None, 100),
                            _token(0x20, f"{a}:5", 1000, far=900),
                            _token(0x24, f"{a}:6", 1000)])
    r2 = _region(2, "pid", [_token(0x30, f"{ARCH_H}:40", 100),
                            _token(0x34, f"{b}:10", 4000, far=10),
                            _token(0x38, f"{b}:11", 4000)])
    return [r1, r2], _received([0.2, 0.5, 0.1, 0.15, 0.05], [0.7, 0.2, 0.1])


def _bg_of_line(page: str, n: int, nth_file: int = 0) -> str:
    pre = re.findall(r'<pre class="src">(.*?)</pre>', page, re.S)[nth_file]
    m = re.search(r'<div[^>]*style="background: ([^"]+)"[^>]*><span class="ln">' + str(n)
                  + r"</span>", pre)
    assert m, n
    return m.group(1)


def _redness(bg: str) -> int:
    """0 for white, 175 for full red."""
    if bg == "transparent":
        return 0
    return 255 - int(re.match(r"rgb\(255,(\d+),\d+\)", bg).group(1))


def test_a_flat_program_is_painted_white_and_the_scale_is_shown(tmp_path):
    a, b = _sources(tmp_path)
    regions, received = _instrumented(a, b)
    # The k-sweep: every region predicted just below 1, safe bounds a little above.
    doc = heatmap.build([a], regions, np.array([0.99, 0.995]), np.array([1.02, 1.03]),
                        received, MODEL)
    page = heatmap.render_html(doc)
    assert all(r["delta_shown"] == 1.0 for r in doc["regions"])
    for n in (5, 6):
        assert _redness(_bg_of_line(page, n)) == 0
    for cell in re.findall(r'<td class="num" style="background: ([^"]+)"', page):
        assert _redness(cell) == 0, "a region predicted at Δ 0.99 is not red"
    scale = re.search(r'<p class="scale" id="scale">(.*?)</p>', page, re.S).group(1)
    assert "1.00" in scale and f"{heatmap.SCALE_TOP:.2f}+" in scale
    assert doc["scale"] == {"quantity": "predicted median Δ, below 1 shown as 1",
                            "white": 1.0, "red": heatmap.SCALE_TOP}


def test_the_colour_is_absolute_not_relative_to_the_programs_maximum(tmp_path):
    a, b = _sources(tmp_path)
    regions, received = _instrumented(a, b)
    low = heatmap.build([a], regions, np.array([1.1, 1.05]), np.array([1.2, 1.1]), received,
                        MODEL)
    high = heatmap.build([a], regions, np.array([1.1, 1.9]), np.array([1.2, 2.1]), received,
                         MODEL)
    fir = {d["regions"][i]["region"]: d["regions"][i] for d in (low,) for i in range(2)}["fir"]
    fir_high = next(r for r in high["regions"] if r["region"] == "fir")
    # Region fir's most attended user line is a.c:5: it carries fir's whole Δ on both pages,
    # whatever the other region's Δ.
    assert _bg_of_line(heatmap.render_html(low), 5, nth_file=list(
        f["file"] for f in low["files"]).index(a)) == heatmap.colour(1.1)
    assert _bg_of_line(heatmap.render_html(high), 5, nth_file=list(
        f["file"] for f in high["files"]).index(a)) == heatmap.colour(1.1)
    assert fir["delta_shown"] == fir_high["delta_shown"] == 1.1
    assert heatmap.colour(1.0) == heatmap.colour(0.5) == "rgb(255,255,255)"
    assert heatmap.colour(heatmap.SCALE_TOP) == heatmap.colour(5.0) == "rgb(255,80,80)"
    assert _redness(heatmap.colour(1.2)) < _redness(heatmap.colour(1.5))


def test_a_prediction_below_one_is_shown_as_one_with_the_raw_value_explained(tmp_path):
    a, b = _sources(tmp_path)
    regions, received = _instrumented(a, b)
    doc = heatmap.build([a], regions, np.array([0.97, 1.3]), np.array([1.1, 1.5]), received,
                        MODEL)
    fir = next(r for r in doc["regions"] if r["region"] == "fir")
    assert fir["delta"] == 0.97 and fir["delta_shown"] == 1.0 and fir["carried"] == 0.0
    page = heatmap.render_html(doc)
    assert 'title="predicted 0.970, shown as 1"' in page
    assert "predicted below 1, shown as 1" in page
    assert "(predicted 0.970, shown as 1)" in page  # the line tooltip of fir's lines


def test_instrumentation_is_neither_shown_nor_shares_attention(tmp_path):
    a, b = _sources(tmp_path)
    regions, received = _instrumented(a, b)
    doc = heatmap.build([a], regions, np.array([1.4, 1.1]), np.array([1.6, 1.2]), received,
                        MODEL)
    for r in doc["regions"]:
        assert {ln["file"] for ln in r["lines"]} <= {a, b}
        assert abs(sum(ln["attention"] for ln in r["lines"]) - 1) < 1e-9
        assert abs(sum(ln["l2_share"] for ln in r["lines"]) - 1) < 1e-9
    fir = next(r for r in doc["regions"] if r["region"] == "fir")
    # The marker's line (a.c:3) is the user's macro, yet the marker instruction is ours.
    assert [ln["line"] for ln in fir["lines"]] == [5, 6]
    assert [round(ln["attention"], 6) for ln in fir["lines"]] == [0.75, 0.25]
    assert abs(doc["instrumentation_attention"]["fir"] - 0.8) < 1e-9
    page = heatmap.render_html(doc)
    assert "ic_arch.h" not in page
    assert [f["file"] for f in doc["files"]] == [a, b]


def test_a_users_copy_of_the_kit_headers_is_still_instrumentation(tmp_path):
    copy = tmp_path / "vendor" / "ic_arch.h"
    assert not heatmap.is_users(_token(0, f"{copy}:12", 1))
    assert heatmap.is_users(_token(0, f"{tmp_path / 'arch.h'}:12", 1))
    assert not heatmap.is_users(_token(0, None, 1))


def test_the_page_opens_on_the_users_line_that_carries_the_most_slowdown(tmp_path):
    a, b = _sources(tmp_path)
    regions, received = _instrumented(a, b)
    # pid (b.c) runs 8000 of 10300 instructions at Δ 1.3: it carries more than fir (a.c)
    # at Δ 1.5 over 2300.
    doc = heatmap.build([a], regions, np.array([1.5, 1.3]), np.array([1.7, 1.4]), received,
                        MODEL)
    assert doc["files"][0]["file"] == b and doc["files"][0]["hottest_line"] == 10
    page = heatmap.render_html(doc)
    assert re.findall(r"<h2>(.*?)</h2>", page) == [b, a]
    assert re.search(r'<div id="hottest"[^>]*><span class="ln">10</span>b line 10', page)
    # The region table still leads with the largest predicted Δ.
    assert [r["region"] for r in doc["regions"]] == ["fir", "pid"]


def test_measured_delta_is_shown_beside_the_prediction(tmp_path):
    a, b = _sources(tmp_path)
    regions, received = _instrumented(a, b)
    fir = {"delta": 1.234, "delta_ci": [1.2, 1.27], "n": 30, "aggressor_set": "BwRead(LLC)",
           "regime": "shared", "invocation": 7}
    doc = heatmap.build([a], regions, np.array([1.5, 1.3]), np.array([1.7, 1.4]), received,
                        MODEL, measured={"fir": fir})
    by_name = {r["region"]: r for r in doc["regions"]}
    assert by_name["fir"]["measured"] == fir and by_name["pid"]["measured"] is None
    page = heatmap.render_html(doc)
    row = re.search(r"<tr><td>1 fir</td>(.*?)</tr>", page, re.S).group(1)
    assert "1.234 [1.200, 1.270]" in row and "invocation 7" in row
    assert re.search(r"<tr><td>2 pid</td>.*?<td class=\"num\">-</td>", page, re.S)
