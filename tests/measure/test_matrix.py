import json

import pytest
from pydantic import ValidationError

from intercore.base.errors import InputError
from intercore.measure.periodic.matrix import InterferenceMatrix, plot_heatmap


def _matrix(**changes) -> InterferenceMatrix:
    fields = dict(tasks=("a", "b", "c"), statistic="max",
                  directed=((None, 2.0, 1.1), (1.2, None, None), (1.0, 1.7, None)),
                  n=((0, 30, 30), (30, 0, 0), (30, 30, 0)),
                  provenance={"source": "hand-made for this test"})
    fields.update(changes)
    return InterferenceMatrix(**fields)


def test_symmetric_is_the_worse_direction_and_unknown_when_a_direction_is_missing():
    m = _matrix()
    assert m.symmetric == ((None, 2.0, 1.1), (2.0, None, None), (1.1, None, None))
    assert m.interference("b", "a") == m.interference("a", "b") == 2.0
    # b beside c was never measured: the pair is unknown even though c beside b is 1.7.
    assert m.degradation("c", "b") == 1.7 and m.interference("b", "c") is None
    assert list(m.pairs()) == [("a", "b", 2.0), ("a", "c", 1.1), ("b", "c", None)]


def test_which_co_runner_is_worst_is_what_most_rounds_say():
    # a beside b: 2.0 over every job, decided by one round (a host event): 2.0, 0.9, 1.0.
    rounds = tuple(((None, ab, 1.1), (1.2, None, None), (1.0, 1.7, None))
                   for ab in (2.0, 0.9, 1.0))
    m = _matrix(by_round=rounds)
    assert m.rounds("a", "b") == (2.0, 0.9, 1.0) and m.typical("a", "b") == 1.0
    assert m.typical("a", "c") == 1.1 and m.degradation("a", "b") == 2.0
    # Two rounds: the mean of the middle pair; none recorded: the directed value.
    assert _matrix(by_round=rounds[:2]).typical("a", "b") == pytest.approx(1.45)
    assert _matrix().typical("a", "b") == 2.0 and _matrix().rounds("a", "b") == ()
    # A round that gave no value for a cell leaves the others to say it.
    gap = (((None, None, 1.1), (1.2, None, None), (1.0, 1.7, None)), rounds[1])
    assert _matrix(by_round=gap).typical("a", "b") == 0.9


@pytest.mark.parametrize("changes, words", [
    ({"tasks": ("a", "a", "c")}, "unique"),
    ({"n": ((0, 30), (30, 0))}, "3 x 3"),
    ({"directed": ((1.0, 2.0, 1.1), (1.2, None, None), (1.0, 1.7, None))}, "diagonal"),
    ({"directed": ((None, -2.0, 1.1), (1.2, None, None), (1.0, 1.7, None))}, "positive"),
    ({"directed": ((None, float("inf"), 1.1), (1.2, None, None), (1.0, 1.7, None))},
     "finite"),
    ({"n": ((0, 0, 30), (30, 0, 0), (30, 30, 0))}, "n 0"),
    ({"statistic": "mean"}, "statistic"),
    ({"by_round": (((None, 2.0), (1.2, None)),)}, r"by_round\[0\] must be 3 x 3"),
    ({"by_round": (((1.0, 2.0, 1.1), (1.2, None, None), (1.0, 1.7, None)),)}, "diagonal"),
])
def test_invalid_matrices_are_refused(changes, words):
    with pytest.raises(ValidationError, match=words):
        _matrix(**changes)


def test_json_round_trip_writes_the_symmetric_matrix_for_readers(tmp_path):
    m = _matrix()
    path = tmp_path / "m.json"
    m.save_json(path)
    data = json.loads(path.read_text())
    assert data["format"] == "intercore.interference-matrix/1"
    assert data["symmetric"][0][1] == 2.0
    assert InterferenceMatrix.load_json(path) == m


def test_json_with_an_inconsistent_symmetric_matrix_is_refused_with_its_line(tmp_path):
    path = tmp_path / "m.json"
    _matrix().save_json(path)
    data = json.loads(path.read_text())
    data["symmetric"][0][1] = 1.0
    path.write_text(json.dumps(data, indent=2))
    with pytest.raises(InputError) as info:
        InterferenceMatrix.load_json(path)
    assert info.value.field == "symmetric" and info.value.line is not None
    assert "max(directed" in info.value.message


def test_json_schema_errors_name_file_line_and_field(tmp_path):
    path = tmp_path / "m.json"
    _matrix().save_json(path)
    text = path.read_text().replace('"statistic": "max"', '"statistic": "mean"')
    path.write_text(text)
    with pytest.raises(InputError) as info:
        InterferenceMatrix.load_json(path)
    line = next(i for i, t in enumerate(text.splitlines(), 1) if '"mean"' in t)
    assert (info.value.source, info.value.line, info.value.field) == (str(path), line,
                                                                       "statistic")


def test_broken_json_is_reported_as_json(tmp_path):
    path = tmp_path / "m.json"
    path.write_text('{"tasks": [\n  "a",\n}')
    with pytest.raises(InputError, match="not valid JSON") as info:
        InterferenceMatrix.load_json(path)
    assert info.value.line == 3


def test_csv_round_trip(tmp_path):
    m = _matrix()
    path = tmp_path / "m.csv"
    m.save_csv(path)
    lines = path.read_text().splitlines()
    assert lines[0] == "task,beside,degradation,n,statistic"
    assert "a,b,2.0,30,max" in lines and "b,c,,0,max" in lines
    assert len(lines) == 1 + 6  # the diagonal is left out
    back = InterferenceMatrix.load_csv(path)
    assert (back.tasks, back.directed, back.n, back.statistic) == \
        (m.tasks, m.directed, m.n, m.statistic)


def test_csv_errors_name_the_line(tmp_path):
    path = tmp_path / "m.csv"
    path.write_text("task,beside,degradation,n,statistic\na,b,2.0,30,max\nb,a,x,30,max\n")
    with pytest.raises(InputError) as info:
        InterferenceMatrix.load_csv(path)
    assert info.value.line == 3
    path.write_text("task,beside,degradation,n,statistic\na,b,2.0,30,max\nb,a,1.0,30,p99\n")
    with pytest.raises(InputError, match="one statistic"):
        InterferenceMatrix.load_csv(path)


def test_heatmap_is_a_png(tmp_path):
    path = tmp_path / "m.png"
    plot_heatmap(_matrix(), path, theta=1.5)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert path.stat().st_size > 10_000


def test_a_task_that_reports_no_jobs_has_an_empty_row_and_its_pairs_take_the_other_side():
    def matrix(directed, n, unknown=("noise",)):
        return InterferenceMatrix(tasks=("ctl", "noise", "other"), statistic="max",
                                  directed=directed, n=n, progress_unknown=unknown)

    m = matrix(((None, 2.5, 1.1), (None, None, None), (1.2, None, None)),
               ((0, 9, 9), (0, 0, 0), (9, 0, 0)))
    # The command's side cannot be measured, ever: the pair is the side that can.
    assert m.interference("ctl", "noise") == 2.5 and m.symmetric[1][0] == 2.5
    assert m.interference("ctl", "other") == 1.2  # the worse side, as always
    # Not measured is still unknown where both sides could have been.
    assert matrix(((None, 2.5, None), (None, None, None), (1.2, None, None)),
                  ((0, 9, 0), (0, 0, 0), (9, 0, 0))).interference("ctl", "other") is None
    with pytest.raises(ValueError, match="its row must be null"):
        matrix(((None, 2.5, 1.1), (1.0, None, None), (1.2, None, None)),
               ((0, 9, 9), (9, 0, 0), (9, 0, 0)))
    with pytest.raises(ValueError, match="not a task"):
        matrix(((None, 2.5, 1.1), (None, None, None), (1.2, None, None)),
               ((0, 9, 9), (0, 0, 0), (9, 0, 0)), unknown=("ghost",))
