#!/bin/sh
# Context shift in `nectar serve` (the demo model, 512 tokens): a chat that
# outgrows the context is refused (400 context_length_exceeded) unless the
# request says "context_shift": true or the server runs with
# --context-shift; then the oldest turns after the system prompt go, the
# X-Context-Shift header says how many messages, and the prompt is exactly
# that of the system prompt plus the messages left (the same request sent
# without them has the same prompt_tokens). A request's "context_shift":
# false overrides the server's default.
if ! command -v python3 >/dev/null 2>&1; then echo "SKIP context_shift: no python3"; exit 0; fi
. tests/serve/serve_lib.sh
serve_launch serve_context_shift -m models/demo -t 1 -np 1
cat >"$TMP/shift.py" <<'PY'
import json, sys, urllib.request, urllib.error
base, mode = sys.argv[1:3]
prefix = "" if mode == "default-off" else "server_flag_"
failed = 0
def check(name, ok, why=""):
    global failed
    name = prefix + name
    print(("PASS %s" % name) if ok else ("FAIL %s: %s" % (name, why)))
    failed += not ok
def post(body):
    req = urllib.request.Request(base + "/v1/chat/completions", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=300) as r:
            return r.status, dict(r.headers), json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), json.loads(e.read())
system = {"role": "system", "content": "You answer in one word."}
turns = []
for i in range(12):
    turns.append({"role": "user", "content": "Tell me about the number %d and its friends." % i})
    turns.append({"role": "assistant", "content": "The number %d is a fine number. " % i * 3})
turns.append({"role": "user", "content": "And now?"})
msgs = [system] + turns
body = {"messages": msgs, "max_tokens": 8, "temperature": 0}
if mode == "default-off":
    st, h, r = post(body)
    check("too_long_chat_refused_without_context_shift",
          st == 400 and r["error"]["code"] == "context_length_exceeded", "%d %r" % (st, r))
    body["context_shift"] = True
st, h, r = post(body)
shift = h.get("X-Context-Shift", "")
n = int(shift.split()[1]) if shift.startswith("dropped ") else 0
check("context_shift_answers_and_says_so",
      st == 200 and n > 0 and r["usage"]["prompt_tokens"] + 8 <= 512 and
      r["choices"][0]["finish_reason"] in ("length", "stop"), "%d %r %r" % (st, h, r))
left = [system] + turns[n:]
st2, h2, r2 = post({"messages": left, "max_tokens": 8, "temperature": 0})
check("context_shift_keeps_the_system_prompt_and_the_newest_turns",
      st2 == 200 and "X-Context-Shift" not in h2 and n % 2 == 0 and
      r2["usage"]["prompt_tokens"] == r["usage"]["prompt_tokens"] and
      r2["choices"][0]["message"]["content"] == r["choices"][0]["message"]["content"],
      "%d dropped; %r vs %r" % (n, r2.get("usage"), r.get("usage")))
if mode == "default-on":
    st, h, r = post(dict(body, context_shift=False))
    check("request_context_shift_false_overrides_the_server", st == 400, "%d" % st)
sys.exit(1 if failed else 0)
PY
python3 "$TMP/shift.py" "http://127.0.0.1:$PORT" default-off || rc=1
serve_stop serve_context_shift_clean_shutdown || rc=1
serve_launch serve_context_shift_on -m models/demo -t 1 -np 1 --context-shift
python3 "$TMP/shift.py" "http://127.0.0.1:$PORT" default-on || rc=1
serve_stop serve_context_shift_flag_clean_shutdown || rc=1
exit ${rc:-0}
