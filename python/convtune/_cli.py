"""convtune.tune and convtune.bench: the `convtune` command, run as it is.

No second tuning engine: these build the command line from the same
selection arguments the command takes and return its JSON document as
Python objects. The command is CONVTUNE_CLI's path, else the one installed
beside this Python (`pip install .` puts it in the environment's scripts
folder), else the first on PATH.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Optional, Union

from ._errors import INVALID_ARG, IO, NOT_FOUND, ConvtuneError
from ._workload import Workload

WorkloadSpec = Union[Workload, str, Mapping[str, Any]]


def command() -> str:
    """The path of the `convtune` command these wrappers run."""
    env = os.environ.get("CONVTUNE_CLI")
    if env:
        return env
    beside = Path(sys.executable).parent / "convtune"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which("convtune")
    if found:
        return found
    raise ConvtuneError(NOT_FOUND, "the convtune command was not found: install the package with "
                        "`pip install .`, put convtune on PATH, or set CONVTUNE_CLI")


def _selection(workloads: Optional[Union[WorkloadSpec, Sequence[WorkloadSpec]]]) -> list[str]:
    """The positional selection: a key, a JSON object, or a JSON list."""
    if workloads is None:
        return []
    if isinstance(workloads, (Workload, str, Mapping)):
        workloads = [workloads]
    if len(workloads) == 1 and isinstance(workloads[0], Workload):
        return [workloads[0].key]
    if len(workloads) == 1 and isinstance(workloads[0], str):
        return [workloads[0]]
    items = []
    for w in workloads:
        if isinstance(w, Workload):
            items.append(w.to_json())
        elif isinstance(w, Mapping):
            items.append(dict(w))
        elif isinstance(w, str):
            items.append(Workload(w).to_json())
        else:
            raise TypeError(f"a workload is a Workload, a key or a JSON object, not {type(w).__name__}")
    return [json.dumps(items)]


def _flags(options: Mapping[str, Any]) -> list[str]:
    """Keyword options as the command's flags: time_budget=30 is --time-budget 30,
    True a bare flag, False and None left out, a list comma-joined."""
    out = []
    for name, value in options.items():
        if value is None or value is False:
            continue
        flag = "--" + name.replace("_", "-")
        if value is True:
            out.append(flag)
        elif isinstance(value, (list, tuple)):
            out += [flag, ",".join(str(v) for v in value)]
        else:
            out += [flag, str(value)]
    return out


def _run(argv: list[str]) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(argv, capture_output=True, text=True, check=False)
    except OSError as e:
        raise ConvtuneError(IO, f"{argv[0]}: {e}") from e


def _fail(what: str, p: subprocess.CompletedProcess) -> ConvtuneError:
    lines = [ln for ln in (p.stderr or "").strip().splitlines() if ln.strip()]
    last = lines[-1] if lines else "no message"
    return ConvtuneError(INVALID_ARG, f"convtune {what} exited with {p.returncode}: {last}")


def tune(workloads: Optional[Union[WorkloadSpec, Sequence[WorkloadSpec]]] = None, **options: Any) -> Any:
    """Run `convtune tune` on the workloads (or a selection: set="resnet50",
    model="m.onnx", file=...) with the command's options as keywords (db,
    trials, time_budget, batch, layout, out, epilogue, ...); returns its --json
    document. Raises ConvtuneError with the command's last message on failure."""
    argv = [command(), "tune", *_selection(workloads), *_flags(options), "--json", "-q"]
    p = _run(argv)
    if p.returncode != 0:
        raise _fail("tune", p)
    return json.loads(p.stdout)


def bench(workloads: Optional[Union[WorkloadSpec, Sequence[WorkloadSpec]]] = None, **options: Any) -> Any:
    """Run `convtune bench` (set= or model=, batch=, db=, layout=, ...) and return
    its results document. The command's results file goes to results_dir
    (a temporary folder unless given)."""
    with tempfile.TemporaryDirectory(prefix="convtune-bench-") as tmp:
        out = Path(tmp) / "bench.json"
        opts = dict(options)
        opts.setdefault("results_dir", tmp)
        argv = [command(), "bench", *_selection(workloads), *_flags(opts), "--json-out", str(out)]
        p = _run(argv)
        if p.returncode != 0:
            raise _fail("bench", p)
        return json.loads(out.read_text())


def workload_info(workloads: Union[WorkloadSpec, Sequence[WorkloadSpec]], **options: Any) -> Any:
    """`convtune workload --json`: each workload's name, key, JSON, output shape and ops."""
    p = _run([command(), "workload", *_selection(workloads), *_flags(options), "--json"])
    if p.returncode != 0:
        raise _fail("workload", p)
    return json.loads(p.stdout)
