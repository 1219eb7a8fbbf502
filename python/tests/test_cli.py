"""conformance() and bench() run the `trireme` command and return its JSON report; `python -m trireme` is the
command itself."""

import os
import subprocess
import sys

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


def test_python_m_trireme_runs_the_command():
    proc = subprocess.run([sys.executable, "-m", "trireme", "devices"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "cpu" in proc.stdout, proc.stdout
    bad = subprocess.run([sys.executable, "-m", "trireme", "no-such-command"], capture_output=True, text=True,
                         timeout=60)
    assert bad.returncode == 2, bad.stdout + bad.stderr  # the command's own usage error, passed through


def test_python_m_trireme_without_a_command(monkeypatch):
    env = dict(os.environ, TRIREME_CLI="/nonexistent/trireme")
    proc = subprocess.run([sys.executable, "-m", "trireme", "devices"], capture_output=True, text=True, env=env,
                          timeout=60)
    assert proc.returncode != 0 and "trireme" in proc.stderr
