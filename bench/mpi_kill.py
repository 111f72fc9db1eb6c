#!/usr/bin/env python3
"""mpi_kill.py OUT DB RANK AT -- MPIRUN_COMMAND...: kill -9 one rank in the
middle of an `mpirun ... convtune tune --mpi --json` run, and check what
issue 38 promises of it.

Starts the command (stdout to OUT/kill.json, stderr to OUT/kill.err), waits
until the database DB holds AT trials (the run is under way on every rank),
finds rank RANK's process (OMPI_COMM_WORLD_RANK in its environment) and its
session in the database (a session names its process id in hex), sends it
SIGKILL and at once reads the database's trial uids: what was committed. When
mpirun ends, checks:
  - the run completed: every workload of its results reported, every task
    (workload x template) with at least --trials trials, rank 0 naming the
    lost rank;
  - nothing committed was lost: every uid read at the kill is still there,
    with the killed rank's trials among them;
  - the database's integrity check passes, and its uids are distinct.
Writes OUT/kill-check.json and prints one line per check; exit 0 when all
hold.
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
    """The rank's process: of the processes with its rank in their environment
    and --mpi in their command line (its compilers and measuring process are
    forked from it, so they have both), the one whose parent is none of them."""
    found = {}
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
    roots = [pid for pid, parent in found.items() if parent not in found]
    return roots[0] if len(roots) == 1 else None


def main():
    if len(sys.argv) < 7 or sys.argv[5] != "--":
        sys.exit(__doc__)
    out, db_path, rank, at = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    cmd = sys.argv[6:]
    trials = int(cmd[cmd.index("--trials") + 1])
    t0 = time.time()
    with open(f"{out}/kill.json", "w") as so, open(f"{out}/kill.err", "w") as se:
        proc = subprocess.Popen(cmd, stdout=so, stderr=se)
        while proc.poll() is None and count(db_path) < at:
            time.sleep(0.25)
        victim = rank_pid(rank)
        if proc.poll() is not None or victim is None:
            proc.wait()
            sys.exit(f"kill: the run ended, or rank {rank} was not found, before {at} trials")
        session_tag = f"-{victim:x}-"
        os.kill(victim, signal.SIGKILL)
        killed_at = time.time() - t0
        committed = uids(db_path)
        rc = proc.wait()
    wall = time.time() - t0
    err = open(f"{out}/kill.err").read()
    try:
        res = json.load(open(f"{out}/kill.json"))
    except ValueError:
        res = []
    db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    integrity = db.execute("pragma integrity_check").fetchone()[0]
    n, distinct = db.execute("select count(*), count(distinct uid) from trials").fetchone()
    per_task = db.execute("select workload_id, template_id, count(*) from trials "
                          "group by workload_id, template_id").fetchall()
    n_workloads = db.execute("select count(distinct workload_id) from trials").fetchone()[0]
    final = uids(db_path)
    lost = [u for u in committed if u not in final]
    victim_at_kill = sum(1 for s in committed.values() if session_tag in s)
    victim_final = sum(1 for s in final.values() if session_tag in s)
    short = [t for t in per_task if t[2] < trials]
    summary = [l for l in err.splitlines() if re.match(r"\[tune\] \d+ ranks", l)]
    checks = {
        "mpirun exited 0": rc == 0,
        f"rank 0 named rank {rank} lost": f"rank {rank}" in err,
        "every workload reported": len(res) > 0 and len(res) == n_workloads,
        f"every task has {trials} trials or more": not short and len(per_task) > 0,
        "every uid committed at the kill is still there": not lost,
        f"rank {rank} had committed trials, all kept": 0 < victim_at_kill <= victim_final,
        "integrity check ok": integrity == "ok",
        "uids distinct": n == distinct,
    }
    report = dict(command=" ".join(cmd), rank=rank, kill_after_trials=at, killed_at_s=killed_at,
                  wall_s=wall, rc=rc, summary=summary, workloads=len(res), tasks=len(per_task),
                  trials=n, distinct_uids=distinct, committed_at_kill=len(committed),
                  victim_trials_at_kill=victim_at_kill, victim_trials_final=victim_final,
                  lost_uids=len(lost), short_tasks=len(short), integrity=integrity,
                  lost_lines=[l for l in err.splitlines() if "lost" in l or "not heard" in l],
                  checks=checks)
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
