#!/bin/sh
# The chat page at / opened in headless Chromium: it sends a message (the
# page's ?q= hook), streams the reply from the fake engine, and the page's
# DOM must then hold the reply, the reasoning inside a collapsed <details>,
# and a tokens/s line. Expected texts from tests/fixtures/serve/expected.json
# (case chat_thinking, made by tools/make_serve_fixtures.py). SKIP without
# chromium or jq. Loopback only; the server is always stopped.
CHROME=$(command -v chromium || command -v chromium-browser || command -v google-chrome)
if [ -z "$CHROME" ]; then echo "SKIP chat_page_in_browser: chromium is not installed"; exit 0; fi
if ! command -v jq >/dev/null 2>&1; then echo "SKIP chat_page_in_browser: jq is not installed"; exit 0; fi
EXP=tests/fixtures/serve/expected.json
want_content=$(jq -r '.cases[] | select(.name=="chat_thinking") | .expect.content' "$EXP")
want_reasoning=$(jq -r '.cases[] | select(.name=="chat_thinking") | .expect.reasoning_content' "$EXP")
. tests/serve/serve_lib.sh
serve_start chat_page_in_browser --parallel 1 --ctx 256
timeout 90 "$CHROME" --headless --no-sandbox --disable-gpu --no-first-run \
    --user-data-dir="$TMP/profile" --virtual-time-budget=20000 \
    --dump-dom "http://127.0.0.1:$PORT/?q=Hi%20there&temp=0" >"$TMP/dom" 2>"$TMP/chrome.err"
# The reply's text nodes as the page wrote them (HTML-escaped by the DOM dump).
esc() { printf '%s' "$1" | sed -e 's/&/\&amp;/g' -e 's/</\&lt;/g' -e 's/>/\&gt;/g'; }
if ! grep -q 'data-state="done"' "$TMP/dom"; then
    echo "FAIL chat_page_in_browser: the page did not finish its reply: $(head -c 400 "$TMP/dom")"
    rc=1
elif ! grep -qF "<div>$(esc "$want_content")</div>" "$TMP/dom"; then
    echo "FAIL chat_page_in_browser: reply not shown; page: $(grep -o '<div id="log".*' "$TMP/dom" | head -c 600)"
    rc=1
elif ! grep -qF "<summary>thinking</summary><div>$(esc "$want_reasoning")</div></details>" "$TMP/dom"; then
    echo "FAIL chat_page_in_browser: reasoning not in a collapsed <details>"
    rc=1
elif ! grep -q 'tokens/s</div>' "$TMP/dom"; then
    echo "FAIL chat_page_in_browser: no tokens/s line"
    rc=1
else
    echo "PASS chat_page_in_browser"
    rc=0
fi
serve_stop page_server_clean_shutdown || rc=1
exit $rc
