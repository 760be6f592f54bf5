"""Drives the chat page in headless Chromium the way a user would, over the
DevTools protocol on --remote-debugging-pipe (fd 3: commands in, fd 4:
replies out, NUL-separated JSON; no websocket library needed).

    page_driver.py CHROME URL OUT [--click-send [--click-stop]]

Opens URL, waits for the page to load, optionally clicks the Send button
(a real mouse event at the button's place, as a user clicks) and, with
--click-stop, the Stop button once the reply has started streaming
(body[data-state=streaming]), then waits for
body[data-state=done] (at most 30 s; 3 s without a click, since nothing
should happen then) and writes the page's DOM to OUT. Exit 0 when the DOM
was written."""
import json
import os
import subprocess
import sys
import tempfile
import time


class Pipe:
    def __init__(self, chrome):
        self.tmp = tempfile.mkdtemp()
        cmd_r, self.cmd_w = os.pipe()
        self.out_r, out_w = os.pipe()

        def child_fds():  # the pipes may already sit on 3 or 4: move them out of the way first
            a, b = os.dup(cmd_r), os.dup(out_w)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.proc = subprocess.Popen(
            [chrome, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--remote-debugging-pipe", "--user-data-dir=" + self.tmp, "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=child_fds, close_fds=False)
        os.close(cmd_r)
        os.close(out_w)
        self.buf = b""
        self.next_id = 0

    def call(self, method, params=None, session=None, timeout=20):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.cmd_w, json.dumps(msg).encode() + b"\0")
        end = time.time() + timeout
        while time.time() < end:
            while b"\0" in self.buf:
                one, self.buf = self.buf.split(b"\0", 1)
                reply = json.loads(one)
                if reply.get("id") == self.next_id:
                    if "error" in reply:
                        raise RuntimeError(f"{method}: {reply['error']}")
                    return reply.get("result", {})
            chunk = os.read(self.out_r, 65536)
            if not chunk:
                raise RuntimeError("chromium closed the pipe")
            self.buf += chunk
        raise RuntimeError(f"{method}: no reply in {timeout} s")

    def close(self):
        try:
            self.call("Browser.close", timeout=5)
        except RuntimeError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        subprocess.run(["rm", "-rf", self.tmp], check=False)


def evaluate(p, session, expr):
    r = p.call("Runtime.evaluate", {"expression": expr, "returnByValue": True}, session)
    return r.get("result", {}).get("value")


def wait_for(p, session, expr, seconds):
    end = time.time() + seconds
    while time.time() < end:
        if evaluate(p, session, expr):
            return True
        time.sleep(0.1)
    return False


def click(p, session, button_id):
    """A mouse click on the element button_id, at its place on the screen."""
    box = evaluate(p, session, "(()=>{const r=document.getElementById('%s')"
                   ".getBoundingClientRect();return [r.x+r.width/2,r.y+r.height/2]})()" % button_id)
    for kind in ("mousePressed", "mouseReleased"):
        p.call("Input.dispatchMouseEvent", {"type": kind, "x": box[0], "y": box[1],
                                            "button": "left", "clickCount": 1}, session)


def main():
    chrome, url, out = sys.argv[1:4]
    press = "--click-send" in sys.argv[4:]
    stop = "--click-stop" in sys.argv[4:]
    p = Pipe(chrome)
    try:
        target = p.call("Target.createTarget", {"url": url})["targetId"]
        session = p.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        wait_for(p, session, "location.href!=='about:blank'&&document.readyState==='complete'", 20)
        if press:
            click(p, session, "send")
        if press and stop:
            if not wait_for(p, session, "document.body.dataset.state==='streaming'", 30):
                raise RuntimeError("the reply never started streaming")
            click(p, session, "stop")
        wait_for(p, session, "document.body.dataset.state==='done'", 30 if press else 3)
        dom = evaluate(p, session, "document.documentElement.outerHTML")
        with open(out, "w", encoding="utf-8") as f:
            f.write(dom or "")
    finally:
        p.close()


if __name__ == "__main__":
    main()
