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
