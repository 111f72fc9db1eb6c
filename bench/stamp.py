#!/usr/bin/env python3
"""stamp.py ERR_FILE -- COMMAND...: run COMMAND with its standard error to
ERR_FILE, each line prefixed with the wall-clock time it arrived (seconds
since the epoch, as the database's trial timestamps), so that a run's
progress lines line up with its trials (bench/tune_timeline.py --err).
Standard output passes through; exits with the command's status."""
import subprocess
import sys
import time


def main():
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        sys.exit(__doc__)
    with open(sys.argv[1], "w") as err:
        proc = subprocess.Popen(sys.argv[3:], stderr=subprocess.PIPE)
        for line in proc.stderr:
            err.write(f"{time.time():.3f} {line.decode(errors='replace')}")
            err.flush()
        sys.exit(proc.wait())


if __name__ == "__main__":
    main()
