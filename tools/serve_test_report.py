"""PASS/FAIL lines for the server test scripts (test_server_*.py), in the
form tests/run_tests.sh counts, and the number of failures so far."""

_failures = 0


def report(name, ok, why=""):
    global _failures
    if ok:
        print(f"PASS {name}")
    else:
        _failures += 1
        print(f"FAIL {name}: {why}")


def failures():
    return _failures
