"""PASS/FAIL lines for the Python test scripts (tests/test.h's format):
check(name, ok, why) prints one; exit_code() is 1 when any failed."""

_failed = []


def check(name, ok, why=""):
    if ok:
        print("PASS " + name)
    else:
        _failed.append(name)
        print("FAIL %s: %s" % (name, why))


def exit_code():
    return 1 if _failed else 0
