"""convtune.tune / bench / workload_info: the command's arguments and its failures."""

import json

import pytest

import convtune
from convtune import ConvtuneError, Workload
from convtune import _cli


def test_flags_and_selection():
    flags = _cli._flags({"time_budget": 30, "json": True, "quiet": False, "db": None,
                         "epilogue": ["bias", "qc"]})
    assert flags == ["--time-budget", "30", "--json", "--epilogue", "bias,qc"]
    w = Workload(op="conv2d", c=16, k=16, h=8, w=8, kernel=1)
    assert _cli._selection(w) == [w.key]
    assert _cli._selection("conv2d-nchw") == ["conv2d-nchw"]
    two = _cli._selection([w, {"op": "conv2d", "c": 8, "k": 8, "h": 4, "w": 4, "kernel": 3}])
    assert [Workload(o) for o in json.loads(two[0])][0] == w
    with pytest.raises(TypeError):
        _cli._selection([3.5])


def test_tune_reports_the_commands_failure(tmp_path):
    # no GPU here (or a bad workload there): the command's own last message comes back
    with pytest.raises(ConvtuneError, match="convtune tune exited with"):
        convtune.tune("conv2d-nope", db=str(tmp_path / "t.db"), trials=1)


def test_bench_reports_the_commands_failure(tmp_path):
    with pytest.raises(ConvtuneError, match="convtune bench exited with"):
        convtune.bench(set="no_such_set", batch=1, db=str(tmp_path / "t.db"))


def test_command_named_by_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("CONVTUNE_CLI", str(tmp_path / "missing"))
    assert convtune.command() == str(tmp_path / "missing")
    with pytest.raises(ConvtuneError, match="missing"):
        convtune.workload_info("conv2d-x")
