"""nectar.Decision (python/nectar/decision.py) against the PyTorch reference
of tests/fixtures/decision (ref/decide.txt, written by
tools/make_decision_fixtures.py: per input its marker probabilities,
calibrated probabilities and action probabilities), within 1e-4; token ids
give the same as texts; a bad input raises NectarError with the library's
line. Run by test_decide_python.sh.

usage: decision_python.py FIXTURES_DIR
"""

import sys

import nectar

fix = sys.argv[1]
failed = 0


def check(name, ok, why=""):
    global failed
    if ok:
        print("PASS " + name)
    else:
        failed += 1
        print("FAIL %s: %s" % (name, why))


def rows(a):
    return [list(map(float, r)) for r in a]


for name in ("dm_multi", "dm_compact", "dm_k3"):
    d = nectar.Decision("%s/decision/%s" % (fix, name), threads=2)
    with open("%s/decision/%s/ref/texts.txt" % (fix, name)) as f:
        texts = [line.rstrip("\n") for line in f if line.strip()]
    with open("%s/decision/%s/ref/decide.txt" % (fix, name)) as f:
        want = [float(x) for x in f.read().split()]
    out = d.decide(texts)
    got = []
    for p, q, a in zip(rows(out["marker_probs"]), rows(out["calibrated"]),
                       rows(out["action_probs"])):
        got += p + q + a
    worst = max(abs(x - y) for x, y in zip(got, want)) if len(got) == len(want) else float("inf")
    check("python_decide_%s_matches_reference" % name, worst <= 1e-4,
          "%d values vs %d, worst %.3g" % (len(got), len(want), worst))
    shape_ok = len(out["action_probs"]) == len(texts) and \
        len(out["marker_probs"][0]) == d.num_markers and len(out["actions"]) == len(texts)
    check("python_decide_%s_shapes" % name, shape_ok, repr(out["actions"]))

# dm_multi names its actions; the ids of a text give what the text gives
d = nectar.Decision(fix + "/decision/dm_multi", threads=1)
text = "Which city? <m1> Paris <m2> Berlin <m3> Rome <m4> Tokyo"
one = d.decide(text)
check("python_decide_names_the_action", one["actions"] == ["ask"], repr(one["actions"]))
ids = nectar.Model(fix + "/decision/dm_multi").tokenize(text, add_special=True)
by_ids = d.decide([ids])
diff = max(abs(x - y) for x, y in zip(rows(by_ids["action_probs"])[0],
                                      rows(one["action_probs"])[0]))
check("python_decide_ids_equal_text", diff <= 1e-6, "%.3g" % diff)
try:
    import numpy
    check("python_decide_returns_numpy", isinstance(one["marker_probs"], numpy.ndarray) and
          one["marker_probs"].dtype == numpy.float32, type(one["marker_probs"]))
except ImportError:
    check("python_decide_returns_lists_without_numpy", isinstance(one["marker_probs"], list))

try:
    nectar.Decision(fix + "/decision/dm_compact").decide(["only [OPT] two [OPT]"])
    check("python_decide_missing_marker_raises", False, "no exception")
except nectar.NectarError as e:
    check("python_decide_missing_marker_raises", "marker 3" in str(e) and e.status == "invalid",
          str(e))
sys.exit(1 if failed else 0)
