#!/usr/bin/env python3
"""tune_timeline.py DB [JSON_OUT] [--err STAMPED_ERR]: where a tuning run's
time went, from its database (every trial's timestamp, session and compile
time).

A tuner (one GPU: of a host under --devices, of a rank under --mpi) is a
session. For each, its tasks (workload x template) in the order it ran
them: trials, the time from the run's first trial to the task's first and
last trials, and the gap before the task's first trial (the previous task's
end to this one's first measured trial: the task's start, its first compile
and first measurement). Then the run: its span, the compilers' busy time
(the trials' compile times summed), and that over the span: how many
compilers were busy on average.

With --err, the run's standard error as bench/stamp.py wrote it (every line
after its arrival time) from `convtune tune -v`, whose progress lines give
the run's time since its start ("at 1.23 s"): the start, and from it to the
first trial, and from the last trial to the summary line.

Prints a short summary; with JSON_OUT also writes every task's row.
"""
import json
import re
import sqlite3
import sys


def edges(err_path):
    """The run's start and its summary line's time, from a stamped -v log."""
    start = end = None
    for line in open(err_path, errors="replace"):
        stamp, _, text = line.partition(" ")
        m = re.search(r" at ([\d.]+) s$", text.rstrip())
        if start is None and text.startswith("[tune gpu") and m:
            start = float(stamp) - float(m[1])
        if re.match(r"\[tune\] \d+ (GPUs|ranks)", text) and "trials/s" in text:
            end = float(stamp)
    return start, end


def main():
    args = sys.argv[1:]
    err_path = None
    if "--err" in args:
        i = args.index("--err")
        err_path = args[i + 1]
        del args[i:i + 2]
    if len(args) not in (1, 2):
        sys.exit(__doc__)
    db = sqlite3.connect(f"file:{args[0]}?mode=ro", uri=True)
    rows = db.execute(
        "select t.session, w.key, tp.name, t.timestamp, t.compile_ms from trials t "
        "join workloads w on w.id = t.workload_id join templates tp on tp.id = t.template_id "
        "order by t.timestamp").fetchall()
    if not rows:
        sys.exit("tune_timeline: no trials")
    t0 = rows[0][3]
    span = rows[-1][3] - t0
    compile_s = sum(r[4] for r in rows) / 1000
    sessions = {}
    for sess, key, tpl, ts, _ in rows:
        tasks = sessions.setdefault(sess, [])
        if not tasks or tasks[-1]["task"] != (key, tpl):
            tasks.append({"task": (key, tpl), "trials": 0, "first_s": ts - t0, "last_s": ts - t0})
        tasks[-1]["trials"] += 1
        tasks[-1]["last_s"] = ts - t0
    out = {"trials": len(rows), "span_s": span, "compile_s": compile_s,
           "busy_compilers": compile_s / span if span > 0 else 0, "sessions": []}
    print(f"{len(rows)} trials over {span:.1f} s; compiles {compile_s:.0f} s in all, "
          f"{out['busy_compilers']:.1f} compilers busy on average")
    if err_path:
        start, end = edges(err_path)
        if start is not None and end is not None:
            out["start_to_first_s"] = t0 - start
            out["last_to_end_s"] = end - rows[-1][3]
            print(f"  the run's start to its first trial {t0 - start:.2f} s; its last trial to "
                  f"the summary {end - rows[-1][3]:.2f} s")
    for sess, tasks in sessions.items():
        prev = None
        for t in tasks:
            t["gap_s"] = t["first_s"] - (prev["last_s"] if prev else 0.0)
            t["task"] = f"{t['task'][1]} {t['task'][0]}"
            prev = t
        gaps = [t["gap_s"] for t in tasks[1:]]
        spans = [t["last_s"] - t["first_s"] for t in tasks]
        out["sessions"].append({"session": sess, "tasks": tasks})
        print(f"  {sess}: {len(tasks)} tasks, {sum(t['trials'] for t in tasks)} trials; "
              f"first trial at {tasks[0]['first_s']:.1f} s, last at {tasks[-1]['last_s']:.1f} s; "
              f"gaps between tasks {sum(gaps):.1f} s (max {max(gaps, default=0):.1f}); "
              f"tasks' spans {sum(spans):.1f} s")
    if len(args) == 2:
        with open(args[1], "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
