"""What the test scripts share, on the standard library alone: checks with a closing count."""
import sys


class Checks:
    """One printed line per check ('ok   NAME' / 'FAIL NAME: detail') and a closing count."""

    def __init__(self):
        self.passed, self.failed = 0, []

    def __call__(self, name, ok, detail=""):
        if ok:
            self.passed += 1
            print(f"ok   {name}", flush=True)
        else:
            self.failed.append(name)
            print(f"FAIL {name}: {str(detail)[:400]}", flush=True)

    def finish(self):
        """Prints 'N passed, M failed' and exits 1 when a check failed."""
        print(f"{self.passed} passed, {len(self.failed)} failed")
        sys.exit(1 if self.failed else 0)


def start_server(args, log_path, marker, guard=120):
    """Starts `args` with its output in `log_path` and waits (a hang guard of `guard` s) for a line that starts
    with `marker` followed by the port the server got; returns (process, port). Exits when it never comes."""
    import subprocess, time
    p = subprocess.Popen(args, stdout=open(log_path, "w"), stderr=subprocess.STDOUT)
    end = time.monotonic() + guard
    while time.monotonic() < end and p.poll() is None:
        for line in open(log_path, errors="replace").read().split("\n")[:-1]:
            if line.startswith(marker):
                return p, int(line[len(marker):])
        time.sleep(0.02)
    p.kill()
    raise SystemExit(f"{args[0]} did not start: {open(log_path, errors='replace').read()[-800:]}")


def port_from(path, proc, pattern, guard=120):
    """Waits (a hang guard of `guard` s) for the log at `path` of `proc` to match `pattern`, whose group 1
    is the port the server got; exits when it never comes. No time decides anything but the guard."""
    import re, time
    end = time.monotonic() + guard
    while time.monotonic() < end and proc.poll() is None:
        m = re.search(pattern, open(path, errors="replace").read())
        if m:
            return int(m.group(1))
        time.sleep(0.05)
    raise SystemExit(f"no {pattern!r} in {path}: {open(path, errors='replace').read()[-600:]}")


def stop_all(procs, grace=10):
    """Terminates every process still running, killing those that do not end within `grace` s."""
    import subprocess
    for p in procs:
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(grace)
            except subprocess.TimeoutExpired:
                p.kill()
