#!/bin/sh
# The chat page at / opened in headless Chromium, driven over the DevTools
# protocol (tests/serve/page_driver.py). /?q=TEXT only fills the input box:
# loaded without a click, the page must send nothing (the server counts
# no chat request; it used to send on load, so any link or site could spend
# the server's compute). After a real mouse click on Send it streams the reply
# from the fake engine, and the page's DOM must then hold the reply, the
# reasoning inside a collapsed <details>, and a tokens/s line. The page is
# served with X-Frame-Options DENY and CSP frame-ancestors 'none'. Stop
# (clicked once the reply streams; the fake engine takes 150 ms a step) ends
# the reply part way, marked "stopped", with Stop disabled again; a max
# tokens of 3 (?max=3) gives a reply of 3 tokens that says the limit was
# reached. Expected
# texts from tests/fixtures/serve/expected.json (case chat_thinking, made by
# tools/make_serve_fixtures.py). SKIP without chromium, jq or python3.
# Loopback only; the server is always stopped.
CHROME=$(command -v chromium || command -v chromium-browser || command -v google-chrome)
if [ -z "$CHROME" ]; then echo "SKIP chat_page_in_browser: chromium is not installed"; exit 0; fi
if ! command -v jq >/dev/null 2>&1; then echo "SKIP chat_page_in_browser: jq is not installed"; exit 0; fi
if ! command -v python3 >/dev/null 2>&1; then echo "SKIP chat_page_in_browser: python3 is not installed"; exit 0; fi
EXP=tests/fixtures/serve/expected.json
want_content=$(jq -r '.cases[] | select(.name=="chat_thinking") | .expect.content' "$EXP")
want_reasoning=$(jq -r '.cases[] | select(.name=="chat_thinking") | .expect.reasoning_content' "$EXP")
. tests/serve/serve_lib.sh
serve_start chat_page_in_browser --parallel 1 --ctx 256 --fake-step-ms 150
URL="http://127.0.0.1:$PORT/?q=Hi%20there&temp=0"
rc=0
chat_requests() {
    curl -s "http://127.0.0.1:$PORT/metrics" |
        sed -n 's/^nectar_requests_total{endpoint="chat_completions",code="200"} //p'
}
hdr=$(curl -s -D - -o /dev/null "http://127.0.0.1:$PORT/" | tr -d '\r')
if ! printf '%s\n' "$hdr" | grep -qx 'X-Frame-Options: DENY' ||
    ! printf '%s\n' "$hdr" | grep -qx "Content-Security-Policy: frame-ancestors 'none'"; then
    echo "FAIL chat_page_not_framable: headers: $hdr"
    rc=1
else
    echo "PASS chat_page_not_framable"
fi
timeout 60 python3 tests/serve/page_driver.py "$CHROME" "$URL" "$TMP/dom0" 2>"$TMP/driver0.err"
n=$(chat_requests)
if [ ! -s "$TMP/dom0" ]; then
    echo "FAIL chat_page_waits_for_the_user: the page did not load: $(tail -3 "$TMP/driver0.err")"
    rc=1
elif [ -n "$n" ] && [ "$n" != "0" ] || grep -q 'data-state="done"' "$TMP/dom0"; then
    echo "FAIL chat_page_waits_for_the_user: ?q= was sent without a click ($n chat requests)"
    rc=1
else
    echo "PASS chat_page_waits_for_the_user"
fi
timeout 90 python3 tests/serve/page_driver.py "$CHROME" "$URL" "$TMP/dom" --click-send \
    2>"$TMP/driver.err"
# The reply's text nodes as the page wrote them (HTML-escaped by the DOM dump).
esc() { printf '%s' "$1" | sed -e 's/&/\&amp;/g' -e 's/</\&lt;/g' -e 's/>/\&gt;/g'; }
if ! grep -q 'data-state="done"' "$TMP/dom"; then
    echo "FAIL chat_page_in_browser: the page did not finish its reply: $(head -c 400 "$TMP/dom") $(tail -3 "$TMP/driver.err")"
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
fi

# Stop: the reply is cut short (fewer words than the whole reply) and marked
timeout 90 python3 tests/serve/page_driver.py "$CHROME" "$URL" "$TMP/dom_stop" --click-send --click-stop \
    2>"$TMP/driver_stop.err"
if grep -q 'data-state="done"' "$TMP/dom_stop" && grep -q '<div class="stats">stopped</div>' "$TMP/dom_stop" &&
    ! grep -qF "$(esc "$want_content")" "$TMP/dom_stop" &&
    grep -q '<button id="stop" type="button" disabled="">Stop</button>' "$TMP/dom_stop"; then
    echo "PASS chat_page_stop_button"
else
    echo "FAIL chat_page_stop_button: $(grep -o '<div id="log".*' "$TMP/dom_stop" | head -c 600) $(tail -3 "$TMP/driver_stop.err")"
    rc=1
fi

# max tokens: the request's max_tokens, so the reply is 3 tokens long
timeout 90 python3 tests/serve/page_driver.py "$CHROME" "$URL&max=3" "$TMP/dom_max" --click-send \
    2>"$TMP/driver_max.err"
if grep -q 'data-state="done"' "$TMP/dom_max" &&
    grep -q '<div class="stats">3 tokens, [0-9.-]* tokens/s, max tokens reached</div>' "$TMP/dom_max"; then
    echo "PASS chat_page_max_tokens"
else
    echo "FAIL chat_page_max_tokens: $(grep -o '<div id="log".*' "$TMP/dom_max" | head -c 600) $(tail -3 "$TMP/driver_max.err")"
    rc=1
fi
serve_stop page_server_clean_shutdown || rc=1
exit $rc
