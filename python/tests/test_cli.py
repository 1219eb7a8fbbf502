"""conformance() and bench() run the `trireme` command and return its JSON report."""

import pytest

import trireme


def test_conformance_report():
    report = trireme.conformance("cpu", quick=True, ops=["add", "softmax"])
    assert report["exit_status"] == 0
    (dev,) = report["reports"]
    assert dev["device"]["spec"] == "cpu:0"
    assert dev["passed"] > 0 and dev["failed"] == 0


def test_bench_report():
    report = trireme.bench(["add_f32"], device="cpu", sizes="4096", reps=5, budget=1)
    (dev,) = report["reports"]
    assert dev["device"]["spec"] == "cpu:0"


def test_missing_cli_says_where_it_looked(monkeypatch):
    monkeypatch.setenv("TRIREME_CLI", "/nonexistent/trireme")
    with pytest.raises(FileNotFoundError):
        trireme.conformance("cpu", ops=["add"])
