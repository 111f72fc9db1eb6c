#!/usr/bin/env python3
"""mpi_kill.py OUT DB RANK|int AT [--ref DB] -- MPIRUN_COMMAND...: kill -9 one rank in
the middle of an `mpirun ... convtune tune --mpi --json` run, or interrupt
mpirun as Ctrl-C does, and check what issue 38 promises of it.

Starts the command (stdout to OUT/kill.json, stderr to OUT/kill.err), waits
until the database DB holds AT trials (the run is under way on every rank),
finds rank RANK's process (OMPI_COMM_WORLD_RANK in its environment) and its
sessions in the database (a session's name ends with its GPU's ordinal, and a
rank of this one-host run tunes on its local rank's GPU: OMPI_COMM_WORLD_LOCAL_RANK
in its environment), sends it
SIGKILL and at once reads the database's trial uids: what was committed. When
mpirun ends, checks:
  - the run completed: every workload of its results reported, every task
    (workload x template) with at least --trials trials, rank 0 naming the
    lost rank. A task whose space holds fewer configs ends short: with
    --ref, a database of a clean run of the same set, a short task must have
    ended as short there, with as many trials;
  - nothing committed was lost: every uid read at the kill is still there,
    with the killed rank's trials among them;
  - the database's integrity check passes, and its uids are distinct.
Files: OUT/kill.json (the command's output), kill.err and kill-check.json.

With `int` for RANK, sends mpirun SIGINT instead (a terminal's Ctrl-C reaches
mpirun only: the ranks are in process groups of their own) and checks that
every rank stopped after its batch in flight: rank 0 printed its summary (it
was not killed), no rank was lost, nothing committed at the signal was lost,
and the database's integrity as above. Files: OUT/int.json, int.err and
int-check.json.

Prints one line per check; exit 0 when all hold.
"""
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time


def uids(db_path):
    db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=30)
    try:
        return {r[0]: r[1] for r in db.execute("select uid, session from trials")}
    finally:
        db.close()


def count(db_path):
    if not os.path.exists(db_path):
        return 0
    try:
        db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=30)
        try:
            return db.execute("select count(*) from trials").fetchone()[0]
        finally:
            db.close()
    except sqlite3.Error:
        return 0  # not created yet


def rank_pid(rank):
    """The rank's process and its local rank: of the processes with its rank in
    their environment and --mpi in their command line (its compilers and
    measuring process are forked from it, so they have both), the one whose
    parent is none of them; (None, None) unless there is exactly one."""
    found, local = {}, {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            env = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
            cmd = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
            stat = open(f"/proc/{pid}/stat").read()
        except OSError:
            continue
        if f"OMPI_COMM_WORLD_RANK={rank}".encode() in env and b"--mpi" in cmd:
            found[int(pid)] = int(stat.rsplit(")", 1)[1].split()[1])
            for e in env:
                if e.startswith(b"OMPI_COMM_WORLD_LOCAL_RANK="):
                    local[int(pid)] = int(e.split(b"=", 1)[1])
    roots = [pid for pid, parent in found.items() if parent not in found]
    if len(roots) != 1:
        return None, None
    return roots[0], local.get(roots[0])


def task_counts(db):
    """Trials per task: (workload key, template name) -> count."""
    return {(k, t): n for k, t, n in db.execute(
        "select w.key, tp.name, count(*) from trials t join workloads w on w.id = t.workload_id "
        "join templates tp on tp.id = t.template_id group by w.key, tp.name")}


def main():
    ref = None
    if len(sys.argv) > 6 and sys.argv[5] == "--ref":
        ref = sys.argv[6]
        del sys.argv[5:7]
    if len(sys.argv) < 7 or sys.argv[5] != "--":
        sys.exit(__doc__)
    out, db_path, at = sys.argv[1], sys.argv[2], int(sys.argv[4])
    interrupt = sys.argv[3] == "int"
    rank = None if interrupt else int(sys.argv[3])
    name = "int" if interrupt else "kill"
    cmd = sys.argv[6:]
    trials = int(cmd[cmd.index("--trials") + 1])
    t0 = time.time()
    with open(f"{out}/{name}.json", "w") as so, open(f"{out}/{name}.err", "w") as se:
        proc = subprocess.Popen(cmd, stdout=so, stderr=se)
        while proc.poll() is None and count(db_path) < at:
            time.sleep(0.25)
        victim, local = (proc.pid, None) if interrupt else rank_pid(rank)
        if proc.poll() is not None or victim is None or (not interrupt and local is None):
            proc.wait()
            sys.exit(f"{name}: the run ended, or rank {rank} (and its local rank) was not "
                     f"found, before {at} trials")
        # tuner/tune.c's tune_session_name: the GPU's ordinal last
        session_end = f"-{local}"
        os.kill(victim, signal.SIGINT if interrupt else signal.SIGKILL)
        killed_at = time.time() - t0
        committed = uids(db_path)
        rc = proc.wait()
    wall = time.time() - t0
    err = open(f"{out}/{name}.err").read()
    try:
        res = json.load(open(f"{out}/{name}.json"))
    except ValueError:
        res = []
    db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    integrity = db.execute("pragma integrity_check").fetchone()[0]
    n, distinct = db.execute("select count(*), count(distinct uid) from trials").fetchone()
    per_task = task_counts(db)
    n_workloads = db.execute("select count(distinct workload_id) from trials").fetchone()[0]
    final = uids(db_path)
    lost = [u for u in committed if u not in final]
    victim_at_kill = 0 if interrupt else sum(1 for s in committed.values()
                                             if s.endswith(session_end))
    victim_final = 0 if interrupt else sum(1 for s in final.values() if s.endswith(session_end))
    short = {t: c for t, c in per_task.items() if c < trials}
    if ref:
        rdb = sqlite3.connect(f"file:{ref}?mode=ro", uri=True)
        ref_counts = task_counts(rdb)
        rdb.close()
        short = {t: c for t, c in short.items() if ref_counts.get(t) != c}
    summary = [l for l in err.splitlines() if re.match(r"\[tune\] \d+ ranks", l)]
    lost_lines = [l for l in err.splitlines() if "lost" in l or "not heard" in l]
    if interrupt:
        checks = {
            "rank 0 finished and printed its summary": len(summary) == 1,
            "no rank lost": not lost_lines,
            "every uid committed at the signal is still there": not lost,
            "integrity check ok": integrity == "ok",
            "uids distinct": n == distinct,
        }
        report = dict(command=" ".join(cmd), signal="SIGINT to mpirun",
                      signal_after_trials=at, signal_at_s=killed_at, wall_s=wall, rc=rc,
                      summary=summary, trials=n, distinct_uids=distinct,
                      committed_at_signal=len(committed), lost_uids=len(lost),
                      integrity=integrity, checks=checks)
        json.dump(report, open(f"{out}/int-check.json", "w"), indent=1)
        print(f"int: SIGINT to mpirun at {killed_at:.1f} s after {at}+ trials ({len(committed)} "
              f"committed); run ended {wall - killed_at:.1f} s later, rc {rc}: "
              f"{summary[-1] if summary else 'no summary line'}")
        for name, ok in checks.items():
            print(f"  {'ok  ' if ok else 'FAIL'} {name}")
        sys.exit(0 if all(checks.values()) else 1)
    checks = {
        "mpirun exited 0": rc == 0,
        f"rank 0 named rank {rank} lost": f"rank {rank}" in err,
        "every workload reported": len(res) > 0 and len(res) == n_workloads,
        f"every task has {trials} trials or more, or all its space has": not short and bool(per_task),
        "every uid committed at the kill is still there": not lost,
        f"rank {rank} had committed trials, all kept": 0 < victim_at_kill <= victim_final,
        "integrity check ok": integrity == "ok",
        "uids distinct": n == distinct,
    }
    report = dict(command=" ".join(cmd), rank=rank, kill_after_trials=at, killed_at_s=killed_at,
                  wall_s=wall, rc=rc, summary=summary, workloads=len(res), tasks=len(per_task),
                  trials=n, distinct_uids=distinct, committed_at_kill=len(committed),
                  victim_trials_at_kill=victim_at_kill, victim_trials_final=victim_final,
                  lost_uids=len(lost), short_tasks=[f"{t[1]} {t[0]}: {c}" for t, c in short.items()],
                  reference=ref, integrity=integrity,
                  lost_lines=lost_lines, checks=checks)
    json.dump(report, open(f"{out}/kill-check.json", "w"), indent=1)
    print(f"kill: rank {rank} (pid {victim}) killed at {killed_at:.1f} s after {at}+ trials "
          f"({len(committed)} committed, {victim_at_kill} of them its own); run ended at "
          f"{wall:.1f} s, rc {rc}: {summary[-1] if summary else 'no summary line'}")
    for line in report["lost_lines"][:3]:
        print(f"  {line}")
    for name, ok in checks.items():
        print(f"  {'ok  ' if ok else 'FAIL'} {name}")
    sys.exit(0 if all(checks.values()) else 1)


if __name__ == "__main__":
    main()
