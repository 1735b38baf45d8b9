#!/usr/bin/env python3
"""The page on a real GPU, measured: `./tools/dev gpu-page`'s harness.

Serves the built page (dist/) cross-origin isolated, as `trunk serve` does,
with Python's standard library only (the GPU machine has no Node and no
network), takes the device widget's reports by POST, and drives headless
Chromium through the DevTools protocol over a pipe (--remote-debugging-pipe:
no websocket library needed). In order:

  1. the adapter: WebGPU must be the GPU's (not SwiftShader, not a fallback
     adapter) unless --allow-software (a dry run on a machine without one);
  2. ?selftest=1 in the cpu and the gpu profile (every kernel against its
     CPU twin on this adapter, then the whole model);
  3. ?widget=device&report=… for the bundled model and for each extra model
     folder under dist/ given with --model (a GPT-2-124M-shaped f16 model the
     CLI made on the machine), confirming the big download as a user would;
  4. the prefill-decode lesson (Time a generation) on the bundled model;
  5. the quantization lesson (Measure) on each --model: every format's
     bytes, decode and prefill time, drift, on the GPU.

Writes OUT/gpu-page.json (everything) and OUT/gpu-page.txt (a summary).

    python3 tools/gpu_page/run.py --dist dist --chromium PATH --out DIR [--model models/NAME/]... [--allow-software]
"""
import argparse
import http.server
import json
import os
import shutil
import socketserver
import subprocess
import sys
import tempfile
import threading
import time

# WebGPU on NVIDIA without a display (headless Chrome, Vulkan through the loader).
GPU_FLAGS = [
    "--enable-unsafe-webgpu",
    "--enable-features=Vulkan",
    "--use-angle=vulkan",
    "--use-vulkan=native",
    "--disable-vulkan-surface",
]
BASE_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu-sandbox",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--remote-debugging-pipe",
]


class Reports:
    """The device reports POSTed to /device-report, as they arrive."""

    def __init__(self):
        self.items = []
        self.cond = threading.Condition()

    def add(self, body):
        with self.cond:
            self.items.append(json.loads(body))
            self.cond.notify_all()

    def wait(self, count, seconds):
        with self.cond:
            self.cond.wait_for(lambda: len(self.items) >= count, timeout=seconds)
            if len(self.items) < count:
                raise TimeoutError(f"no device report within {seconds} s")
            return self.items[count - 1]


def serve(dist, reports):
    """dist/ on 127.0.0.1 (a free port), cross-origin isolated; POST /device-report kept."""

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a, **k):
            super().__init__(*a, directory=dist, **k)

        def end_headers(self):
            self.send_header("Cross-Origin-Opener-Policy", "same-origin")
            self.send_header("Cross-Origin-Embedder-Policy", "require-corp")
            self.send_header("Cache-Control", "no-store")
            super().end_headers()

        def do_POST(self):
            if self.path != "/device-report":
                self.send_error(404)
                return
            length = int(self.headers.get("content-length", 0))
            reports.add(self.rfile.read(length).decode("utf-8"))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *a):
            pass

    Handler.extensions_map = {**Handler.extensions_map, ".wasm": "application/wasm", ".js": "text/javascript"}
    httpd = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, f"http://127.0.0.1:{httpd.server_address[1]}/"


class Browser:
    """Chromium driven over --remote-debugging-pipe: JSON messages ended by NUL
    on fd 3 (to the browser) and fd 4 (from it)."""

    def __init__(self, chromium, gpu):
        to_r, to_w = os.pipe()
        from_r, from_w = os.pipe()
        self.profile = tempfile.mkdtemp(prefix="decode-lab-gpu-page-")

        flags = BASE_FLAGS + (GPU_FLAGS if gpu else ["--enable-unsafe-webgpu"])
        # The shell puts the pipe's ends on fds 3 and 4, where Chromium looks for them.
        shell = f'exec "$0" "$@" 3<&{to_r} 4>&{from_w}'
        self.proc = subprocess.Popen(
            ["/bin/sh", "-c", shell, chromium, *flags, f"--user-data-dir={self.profile}", "about:blank"],
            pass_fds=(to_r, from_w), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        os.close(to_r)
        os.close(from_w)
        self.out = os.fdopen(to_w, "wb", buffering=0)
        self.inp = os.fdopen(from_r, "rb", buffering=0)
        self.buf = b""
        self.next_id = 0
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self.call("Page.enable", session=True)
        self.call("Runtime.enable", session=True)

    def _read(self):
        while b"\0" not in self.buf:
            chunk = self.inp.read(1 << 16)
            if not chunk:
                raise RuntimeError("Chromium closed its pipe: " + self.proc.stderr.read().decode()[-2000:])
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, params=None, session=False):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = self.session
        self.out.write(json.dumps(msg).encode() + b"\0")
        while True:
            reply = self._read()
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})

    def eval(self, expression):
        """The value of `expression` in the page (awaited if a promise)."""
        r = self.call("Runtime.evaluate", {"expression": expression, "awaitPromise": True,
                                           "returnByValue": True}, session=True)
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expression[:80]}: {r['exceptionDetails'].get('text')}")
        return r["result"].get("value")

    def goto(self, url):
        self.call("Page.navigate", {"url": url}, session=True)
        time.sleep(0.5)

    def wait(self, expression, seconds, what):
        """Polls `expression` until it is truthy; its value."""
        end = time.time() + seconds
        while time.time() < end:
            try:
                v = self.eval(expression)
            except RuntimeError:
                v = None
            if v:
                return v
            time.sleep(0.5)
        raise TimeoutError(f"{what}: not within {seconds} s")

    def close(self):
        try:
            self.call("Browser.close")
        except Exception:
            pass
        self.proc.wait(timeout=30)
        shutil.rmtree(self.profile, ignore_errors=True)


READY = "document.querySelector('[data-testid=status]')?.dataset.state"
ADAPTER = """(async () => {
  if (!navigator.gpu) return {error: 'no navigator.gpu'};
  const a = await navigator.gpu.requestAdapter();
  if (!a) return {error: 'no adapter'};
  const i = a.info || {};
  return {vendor: i.vendor, architecture: i.architecture, device: i.device, description: i.description,
          fallback: Boolean(a.isFallbackAdapter || i.isFallbackAdapter), features: [...a.features],
          maxStorageBufferBindingSize: a.limits.maxStorageBufferBindingSize};
})()"""


def settled(b, seconds=600):
    return b.wait(f"['ready', 'error'].includes({READY}) && {READY}", seconds, "the page to be ready")


def selftest(b, url, kernels):
    b.goto(f"{url}?selftest=1&kernels={kernels}")
    settled(b)
    b.wait("document.querySelector('[data-testid=selftest]')?.dataset.result", 900, f"the self-test ({kernels})")
    return {"kernels": kernels,
            "result": b.eval("document.querySelector('[data-testid=selftest]').dataset.result"),
            "report": b.eval("document.querySelector('[data-testid=selftest-report]').value")}


def device(b, url, reports, model):
    """The device widget with report=: it measures as it loads and POSTs its
    report here. A model over 100 MB asks first: yes, as a user would."""
    query = "?widget=device&report=%2Fdevice-report" + (f"&model={model}" if model else "")
    count = len(reports.items) + 1
    b.goto(url + query)
    said, end = None, time.time() + 1800
    while time.time() < end:
        if len(reports.items) >= count:
            return {"model": model, "report": reports.items[count - 1]}
        page = b.eval("""({
          state: document.querySelector('[data-testid=status]')?.dataset.state,
          confirm: Boolean(document.querySelector('[data-testid=confirm-yes]')),
          error: (document.querySelector('[data-testid=error]') || document.querySelector('[role=alert]'))?.textContent,
          doing: document.querySelector('[data-testid=device-progress]')?.textContent,
        })""") or {}
        if page.get("error"):
            return {"model": model, "error": page["error"]}
        if page.get("confirm"):
            b.eval("document.querySelector('[data-testid=confirm-yes]').click()")
        if page.get("doing") != said:
            said = page.get("doing")
            print(f"device report {model or 'bundled'}: {page.get('state')}: {said or ''}", flush=True)
        time.sleep(1)
    return {"model": model, "error": "no report within 30 minutes"}


def prefill_decode(b, url):
    b.goto(url + "?widget=prefill-decode&prompt=ROMEO%3A&max_tokens=32")
    settled(b)
    b.eval("document.querySelector('[data-testid=time-generation]').click()")
    time.sleep(1)
    b.wait(f"{READY} === 'ready' && !document.querySelector('[data-testid=time-generation]').disabled",
           900, "the prefill-decode timing")
    # textContent, not innerText: innerText follows layout, and a machine
    # without fonts (the GPU machine) lays out no text, so it read as empty cells.
    return {"figures": b.eval("""(() => {
      const panel = document.querySelector('.prefill-decode .panel');
      if (!panel) return null;
      const rows = [...panel.querySelectorAll('[data-testid=cost-table] tr')]
        .map(tr => [...tr.cells].map(c => c.textContent.trim()).join('\\t'));
      const said = [...panel.querySelectorAll('p.verdict, p.readout')].map(p => p.textContent.trim());
      return [...rows, ...said].join('\\n');
    })()""")}



def quantization(b, url, model):
    """The quantization lesson on `model` (a folder under dist/): Measure
    every format on the page's engine (the GPU's), its rows and its speed
    sentence as the table shows them."""
    query = (f"?model={model}&" if model else "?") + \
        "widget=quantization&max_tokens=16&heldout_tokens=64&prompt=The%20capital%20of%20France%20is"
    b.goto(url + query)
    end = time.time() + 900
    while time.time() < end and not b.eval("Boolean(document.querySelector('[data-testid=measure]:not([disabled])'))"):
        if b.eval("Boolean(document.querySelector('[data-testid=confirm-yes]'))"):
            b.eval("document.querySelector('[data-testid=confirm-yes]').click()")
        error = b.eval("document.querySelector('[data-testid=error]')?.textContent")
        if error:
            return {"model": model, "error": error}
        time.sleep(1)
    b.eval("document.querySelector('[data-testid=measure]').click()")
    time.sleep(1)
    b.wait("""!document.querySelector('[data-testid=measure]').disabled
      && document.querySelectorAll('[data-testid=quant-row]').length > 0""", 1800, "the quantization lesson")
    return {"model": model, **b.eval("""({
      rows: [...document.querySelectorAll('[data-testid=quant-row]')].map((r) => ({
        name: r.querySelector('th').textContent.trim(),
        ...Object.fromEntries([...r.querySelectorAll('td')].map((td) => [td.dataset.col, td.textContent.trim()])),
      })),
      speed: document.querySelector('[data-testid=quant-speed]')?.textContent,
      engine: document.querySelector('[data-testid=backend]')?.textContent,
      errors: [...document.querySelectorAll('[data-testid=error]')].map((e) => e.textContent),
    })""")}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dist", required=True)
    ap.add_argument("--chromium", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--model", action="append", default=[], help="another model folder under dist/, e.g. models/gpt2-124m-shape/")
    ap.add_argument("--allow-software", action="store_true", help="a dry run on a software adapter (SwiftShader)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    reports = Reports()
    httpd, url = serve(os.path.abspath(args.dist), reports)
    b = Browser(args.chromium, gpu=not args.allow_software)
    results = {"url": url, "chromium": args.chromium}
    try:
        b.goto(url + "?logits=1,0")
        results["adapter"] = adapter = b.eval(ADAPTER)
        print("adapter:", json.dumps(adapter), flush=True)
        software = adapter.get("error") or adapter.get("fallback") or "swiftshader" in json.dumps(adapter).lower()
        if software and not args.allow_software:
            raise SystemExit(f"WebGPU here is not a real GPU ({adapter}): check the Vulkan driver and Chromium's flags")
        results["selftest"] = [selftest(b, url, k) for k in ("cpu", "gpu")]
        for s in results["selftest"]:
            print(f"selftest {s['kernels']}: {s['result']}", flush=True)
        results["device"] = [device(b, url, reports, m) for m in [None, *args.model]]
        results["prefill_decode"] = prefill_decode(b, url)
        results["quantization"] = [quantization(b, url, m) for m in args.model]
    finally:
        b.close()
        httpd.shutdown()
        with open(os.path.join(args.out, "gpu-page.json"), "w") as f:
            json.dump(results, f, indent=1)
    with open(os.path.join(args.out, "gpu-page.txt"), "w") as f:
        f.write(summary(results))
    print(summary(results))


def summary(r):
    lines = [f"adapter: {json.dumps(r.get('adapter'))}"]
    for s in r.get("selftest", []):
        lines.append(f"selftest {s['kernels']}: {s['result']}")
    for d in r.get("device", []):
        name = d["model"] or "bundled"
        if "error" in d:
            lines.append(f"device report {name}: error: {d['error']}")
            continue
        rep = d["report"]
        load = rep["load"]
        lines.append(f"device report {name} ({rep['engine']}): ready at {load['ready_at_ms']:.0f} ms "
                     f"(probe {load['probe_ms']:.0f}, download {load['download_ms']:.0f}, prepare {load['prepare_ms']:.0f}, "
                     f"engine {load['engine_ms']:.0f}), first token {rep['first_token_ms']:.1f} ms; kernels {rep['kernels']}")
        for p in rep["profiles"]:
            gpu = p["decode_gpu_ms_per_token"]
            lines.append(f"  {p['profile']:<8} pipelines {p['pipelines_ms'] or 0:.0f} ms, prefill {p['prefill_ms_per_token']:.3f} ms/token, "
                         f"decode {p['decode_ms_per_token']:.3f} ms/token" + (f" (GPU {gpu:.3f})" if gpu else "")
                         + (f" error {p['error']}" if p["error"] else ""))
        dev = rep["device"]
        lines.append(f"  read {dev['read_bytes_per_s'] / 1e9:.1f} GB/s ({dev['read_of_published_peak'] or 'no published peak'}), "
                     f"copy {dev['copy_bytes_per_s'] / 1e9:.1f} GB/s")
    pd = r.get("prefill_decode")
    if pd:
        lines.append("prefill-decode lesson:")
        lines.extend("  " + l for l in (pd.get("figures") or "").splitlines()[:30])
    for q in r.get("quantization", []):
        if "error" in q:
            lines.append(f"quantization lesson {q['model']}: error: {q['error']}")
            continue
        lines.append(f"quantization lesson {q['model']} ({q.get('engine')}):")
        for row in q["rows"]:
            lines.append(f"  {row['name']:<14} {row.get('bytes', ''):>10}  decode {row.get('ms', ''):>8} ms/token  "
                         f"prefill {row.get('prefill', ''):>8} ms  KL {row.get('kl', '')}  top-1 {row.get('top1', '')}")
        lines.append(f"  {q.get('speed')}")
        lines.extend(f"  error: {e}" for e in q.get("errors", []))
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
