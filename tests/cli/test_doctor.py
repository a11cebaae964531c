import json

import pytest
from typer.testing import CliRunner

from intercore.cli import doctor
from intercore.cli.main import app
from intercore.host import host_report

HOST_KEYS = {"fingerprint", "kernel_release", "arch", "cpu", "placement", "cgroups", "perf",
             "resctrl", "rt", "hugepages", "pagemap"}
CANARY_KEYS = {"regime", "ratio", "iso_ns", "int_ns", "n", "footprint", "victim_cpu",
               "aggressor_cpu", "reason"}


@pytest.fixture(scope="module")
def invoke():
    runner = CliRunner()
    return lambda *args: runner.invoke(app, list(args), catch_exceptions=False)


def test_json_without_canary(invoke):
    result = invoke("doctor", "--json", "--no-canary")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert set(data) == {"host", "canary", "warnings"}
    assert data["canary"] is None
    assert set(data["host"]) == HOST_KEYS
    report = host_report()
    assert data["host"]["cpu"]["online"] == list(report.topology.online_cpus)
    assert data["host"]["fingerprint"] == report.fingerprint()
    assert data["warnings"] == report.warnings


def test_tables(invoke):
    result = invoke("doctor", "--no-canary")
    assert result.exit_code == 0, result.output
    report = host_report()
    for title in ("CPUs:", "Caches", "cgroups", "perf events", "resctrl", "Real-time",
                  "Huge pages"):
        assert title in result.output
    for event in report.perf:
        assert event.name in result.output
    assert result.output.count("warning:") == len(report.warnings)
    assert f"host fingerprint: {report.fingerprint()}" in result.output


def test_help_documents_json_keys(invoke):
    result = invoke("doctor", "--help")
    for key in ("host.cpu.caches", "shared_cpu_list", "canary", "regime", "warnings"):
        assert key in result.output


def test_rejects_too_few_canary_pairs(invoke):
    result = invoke("doctor", "--canary-pairs", "1")
    assert result.exit_code == 2


def test_canary_warnings():
    assert doctor._canary_warnings({"regime": "shared"}) == []
    [unknown] = doctor._canary_warnings({"regime": "unknown", "reason": "noisy"})
    assert unknown == "shared-cache canary inconclusive: noisy"
    [unshared] = doctor._canary_warnings({"regime": "not-shared", "ratio": 1.01,
                                          "victim_cpu": 1, "aggressor_cpu": 0, "reason": "r"})
    assert "between CPU 1 and CPU 0 (ratio 1.01): r" in unshared


@pytest.mark.slow
def test_real_canary(invoke):
    result = invoke("doctor", "--json", "--canary-pairs", "3")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["canary"] is not None, data["warnings"]
    assert CANARY_KEYS <= set(data["canary"])
    assert data["canary"]["regime"] in {"shared", "not-shared", "unknown"}
