"""Property-based fuzzing of every loader and every option parser the CLI uses.

The property is the same everywhere: whatever the input, a parser returns a value in its
documented range or raises InputError (ValueError for the pure text parsers of base.parse);
never another exception, never a hang. Where a parser has an inverse, the round trip holds.
Example counts are fixed (derandomized, no example database) so that CI runs the same cases
every time; tests/fuzz/README.md lists them.
"""

from __future__ import annotations

import json
import math

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from intercore.base import yamlfile
from intercore.campaign.spec import Campaign, load_campaign
from intercore.base.errors import InputError
from intercore.base.parse import MAX_CPU_ID, format_cpu_list, parse_cpu_list, parse_size
from intercore.host.topology import read_topology
from intercore.base import units
from intercore.measure.aggressors.catalog import parse_victim
from intercore.measure.periodic.matrix import InterferenceMatrix
from intercore.measure.aggressors.presets import Footprints, parse_set
from intercore.measure.periodic.taskset import resolve
from intercore.mitigate.plan.record import CgroupPlan

FUZZ = settings(max_examples=300, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow])
FUZZ_SLOW = settings(FUZZ, max_examples=100)  # each example starts a parse of a whole file

TOPO = read_topology()
FP = Footprints.for_host(TOPO)

# Text close enough to each grammar that the fuzzer reaches its corners, plus anything.
SIZE_TEXT = st.one_of(st.text(),
                      st.from_regex(r"\A\s*-?\d{0,25}(\.\d+)?\s*[kKmMgGtTpP]?i?[bB]?\s*\Z"))
DURATION_TEXT = st.one_of(st.text(),
                          st.from_regex(r"\A-?\d{0,22}(\.\d{0,12})?(ns|us|ms|s|m|h|d)?\Z"))
CPU_TEXT = st.one_of(st.text(), st.from_regex(r"\A[\d,\- ]{0,30}\Z"))
SET_ALPHABET = st.sampled_from(
    ["bw", "pll", "bankpll", "cmd", ":", "op=", "read", "write", "rmw", "size=", "mlp=", "rate=",
     "mask=", "value=", "platform=", "host", ",", "+", "@", "0", "1", "99", "4K", "1T", "-1",
     "nan", "inf", "0x", "(", ")", "BwRead(LLC)", "PLLWrite(DRAM)", "BkPLLRead(LLC)", " ", "="])
SET_TEXT = st.one_of(st.text(max_size=40), st.lists(SET_ALPHABET, max_size=12).map("".join))
VICTIM_ALPHABET = st.sampled_from(
    ["matmul", "matrix1", "ptrchase", "stream", "qsort", "susan", ":", "size=", "mode=",
     "corners", "smooth", "n=", "count=", ",", "=", "8M", "1T", "-3", "cpu=", "reps=", "x"])
VICTIM_TEXT = st.one_of(st.text(max_size=30), st.lists(VICTIM_ALPHABET, max_size=8).map("".join))

# YAML/JSON values of any shape, for the loaders and the schemas.
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(),
                    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=20))
KEYS = st.text(max_size=8).filter(lambda k: k not in ("<<", "="))  # YAML's merge and value keys
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=5), st.dictionaries(KEYS, inner, max_size=5)), max_leaves=40)


def _only_input_errors(fn, *args, errors=(InputError,), **kwargs):
    try:
        return fn(*args, **kwargs)
    except errors:
        return None


# ---- loaders -----------------------------------------------------------------------------------

@FUZZ
@given(st.binary(max_size=400))
def test_decode_takes_any_bytes(raw):
    text = _only_input_errors(yamlfile.decode, raw, "x")
    if text is not None:
        assert "\0" not in text and raw.decode("utf-8").removeprefix("\ufeff") == text


@pytest.mark.slow
@FUZZ
@given(st.text(max_size=300))
def test_yaml_parser_takes_any_text(text):
    doc = _only_input_errors(yamlfile.parse, text, "x.yaml")
    if doc is not None:
        assert all(isinstance(line, int) and line >= 1 for line in doc.lines.values())


@FUZZ
@given(st.text(alphabet="[]{}:,-&*ab !'\"\n\t#|>?0", max_size=200))
def test_yaml_parser_takes_any_structure_text(text):
    _only_input_errors(yamlfile.parse, text, "x.yaml")


@FUZZ
@given(st.text(alphabet='[]{}:,"0123456789.eE+-truefalsn \n\\', max_size=200))
def test_json_parser_takes_any_text(text):
    _only_input_errors(yamlfile.parse_json, text, "x.json")


@pytest.mark.slow
@FUZZ
@given(VALUES)
def test_any_value_round_trips_through_yaml_and_json(value):
    assert yamlfile.parse(yaml.safe_dump(value), "x.yaml").data == value
    assert yamlfile.parse_json(json.dumps(value), "x.json").data == value


@pytest.mark.slow
@FUZZ
@given(st.integers(1, 12), st.integers(1, 12))
def test_aliases_are_bounded_by_what_they_expand_to(levels, fan):
    lines = ["l0: &l0 [x]"] + [f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * fan) + "]"
                               for i in range(1, levels + 1)]
    text = "\n".join(lines) + "\n"
    sizes = [2]  # l0: the list and its x; each next list holds `fan` copies of the one before
    for _ in range(levels):
        sizes.append(1 + fan * sizes[-1])
    expanded = 1 + sum(1 + s for s in sizes)  # the mapping, each key, each value expanded
    try:
        yamlfile.parse(text, "x.yaml")
    except InputError as exc:
        assert "aliases" in exc.message and expanded > yamlfile.MAX_VALUES
    else:
        assert expanded <= yamlfile.MAX_VALUES


@FUZZ
@given(st.integers(1, 200), st.sampled_from(["[", "{a: ", "- "]))
def test_nesting_is_bounded_at_the_depth_not_by_recursion(depth, opener):
    closer = {"[": "]", "{a: ": "}", "- ": ""}[opener]
    if opener == "- ":
        text = "".join("  " * i + "- \n" for i in range(depth)) + "  " * depth + "x\n"
    else:
        text = opener * depth + "1" + closer * depth
    try:
        yamlfile.parse(text, "x.yaml")
    except InputError as exc:  # the innermost value sits one level below the collections
        assert depth + 1 > yamlfile.MAX_DEPTH and "nested deeper" in exc.message
    else:
        assert depth + 1 <= yamlfile.MAX_DEPTH


# ---- schemas over arbitrary documents ----------------------------------------------------------

def _validate(model, data, source="x"):
    doc = yamlfile.Document(data, {(): 1}, source)
    return _only_input_errors(yamlfile.validate, doc, model)


@FUZZ
@given(st.fixed_dictionaries({"name": SCALARS}, optional={
    "tasks": st.lists(st.fixed_dictionaries(
        {"name": st.sampled_from(["a", "b", "root", "../x", ""]),
         "workload": st.sampled_from(["matrix1", "qsort", "bw", "nope", "BwRead(LLC)"]),
         "period": st.sampled_from(["10ms", "0ms", "10", 10, "1e9h", None, [1]]),
         "role": st.sampled_from(["critical", "best-effort", "boss"])},
        optional={"cpu": st.one_of(st.integers(-2, 10 ** 12), st.text(max_size=3)),
                  "priority": st.integers(-5, 500), "weight": st.integers(-5, 10 ** 10),
                  "deadline": st.sampled_from(["5ms", "50ms", "-1ms"]),
                  "params": st.dictionaries(st.sampled_from(["size", "op", "count", "n"]),
                                            st.one_of(SCALARS, st.sampled_from(
                                                ["1T", "4K", "2xLLC", "write"]))),
                  "work": st.sampled_from(["passes:2", "time:5ms", "time:1h", "never"])}),
        max_size=3), "extra": VALUES}))
def test_task_sets_resolve_or_refuse(data):
    doc = yamlfile.Document(data, {(): 1}, "set.yaml")
    ts = _only_input_errors(resolve, doc, TOPO)
    if ts is not None:
        for t in ts.tasks:
            assert t.period_ns > 0 and 0 <= t.priority <= 99 and 1 <= t.weight <= 10000
            assert t.cpu is None or t.cpu in TOPO.online_cpus


@FUZZ
@given(st.fixed_dictionaries({
    "tasks": st.lists(st.sampled_from(["a", "b", "c", ""]), max_size=3),
    "statistic": st.sampled_from(["max", "p99", "mean"]),
    "directed": st.lists(st.lists(st.one_of(st.none(), st.floats()), max_size=3), max_size=3),
    "n": st.lists(st.lists(st.integers(-3, 10 ** 9), max_size=3), max_size=3)}))
def test_matrices_validate_or_refuse(data):
    matrix = _validate(InterferenceMatrix, data)
    if matrix is not None:
        for row in matrix.directed:
            assert all(v is None or (math.isfinite(v) and v > 0) for v in row)


@pytest.mark.slow
@FUZZ
@given(VALUES)
def test_plans_and_campaigns_refuse_any_shape(data):
    _validate(CgroupPlan, data)
    _validate(Campaign, data)


@FUZZ_SLOW
@given(st.fixed_dictionaries({
    "name": st.sampled_from(["fz", "f z", "a*"]),
    "repetitions": st.integers(-1, 10 ** 7), "rounds": st.integers(-1, 10 ** 5),
    "seed": st.integers(-1, 2 ** 70),
    "guests": st.fixed_dictionaries({"app": st.fixed_dictionaries(
        {"kind": st.just("critical"), "tasks": st.lists(VICTIM_TEXT, min_size=1, max_size=2)},
        optional={"cpu": st.integers(-1, 10 ** 6)})})}))
def test_campaign_files_load_or_refuse(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("c") / "c.yaml"
    path.write_text(yaml.safe_dump(data))
    campaign = _only_input_errors(load_campaign, path)
    if campaign is not None:
        assert 1 <= campaign.rounds <= 1000 and 1 <= campaign.repetitions <= 100_000
        assert 0 <= campaign.seed < 2 ** 63


# ---- option parsers ----------------------------------------------------------------------------

@FUZZ
@given(SIZE_TEXT)
def test_sizes(text):
    size = _only_input_errors(units.parse_size, text, field="-p")
    assert size is None or size > 0
    fits = _only_input_errors(units.workload_size, text, field="-p")
    assert fits is None or 0 < fits <= units.memory_bytes()


@FUZZ
@given(st.integers(1, 2 ** 50))
def test_sizes_round_trip(n):
    assert parse_size(units.size_arg(n)) == n


@FUZZ
@given(DURATION_TEXT)
def test_durations(text):
    ns = _only_input_errors(units.duration, text, field="--block")
    assert ns is None or 0 <= ns <= units.MAX_DURATION_NS


@FUZZ
@given(st.integers(0, units.MAX_DURATION_NS))
def test_durations_round_trip(ns):
    assert units.parse_duration_ns(units.duration_text(ns)) == ns


@FUZZ
@given(st.one_of(st.text(max_size=12), st.from_regex(r"\A-?\d{0,4}(\.\d*)?%?\Z"),
                 st.sampled_from(["none", "50%", "100%", "0%", "20ms", "0ms", "nan%"])))
def test_max_freeze(text):
    _only_input_errors(units.max_freeze, text, field="--max-freeze")


@FUZZ
@given(CPU_TEXT)
def test_cpu_lists(text):
    cpus = _only_input_errors(parse_cpu_list, text, errors=(ValueError,))
    if cpus is not None:
        assert all(0 <= c <= MAX_CPU_ID for c in cpus) and list(cpus) == sorted(set(cpus))


@FUZZ
@given(st.sets(st.integers(0, MAX_CPU_ID), max_size=40))
def test_cpu_lists_round_trip(cpus):
    assert parse_cpu_list(format_cpu_list(cpus)) == tuple(sorted(cpus))


@FUZZ
@given(SET_TEXT)
def test_aggressor_set_grammar(text):
    aset = _only_input_errors(parse_set, text, FP, TOPO)
    if aset is not None:
        for m in aset.members:
            assert m.size is None or 0 < m.size <= units.memory_bytes()
            assert m.cpu is None or m.cpu in TOPO.online_cpus


@FUZZ
@given(VICTIM_TEXT, st.lists(VICTIM_TEXT, max_size=3))
def test_victim_specs(text, params):
    _only_input_errors(parse_victim, text, params, FP)


@pytest.mark.parametrize("text", ["1-8192", "0-99999999999999", "99999"])
def test_cpu_ids_beyond_linux_are_refused_without_expanding_them(text):
    with pytest.raises(ValueError, match="largest id"):
        parse_cpu_list(text)
