// A static file server for the release build (dist/), on 127.0.0.1 with a
// free port, plus two deliberately broken model directories for error tests:
//   /broken/corrupt/   real config and tokenizer, garbage model.safetensors
//   /broken/missing/   nothing at all (404)
//   /broken/neox/      the real files, but config.json says "model_type": "gpt_neox"
//   /parent.html       an empty same-origin page with no embeds, to host one
//   /e2e-models/NAME/  the models the tests make with `decode-lab random-model`
//                      (target/e2e-models/), same-origin as a course's own copy
//   POST /device-report  takes the device widget's report (kept in `reports`)
//   /course/decode-lab/...  the same files under a sub-path (static hosting
//                           like GitHub Pages' /<repo>/, which sets no headers:
//                           no cross-origin isolation there)
// Everything else is served cross-origin isolated (COOP same-origin, COEP
// require-corp), as `trunk serve` serves it (Trunk.toml), so the CPU worker
// gets its coworker; a course author's pages (examples/, /parent.html) are not.
// Counts requests per path so tests can assert what was (not) fetched.
// The app's page is served under the strict Content Security Policy that
// EMBEDDING.md recommends (no inline script; wasm compiles under
// 'wasm-unsafe-eval'), so every e2e test runs under it.
export const CSP = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; " +
  "img-src 'self' data:; connect-src 'self' https://huggingface.co https://*.huggingface.co https://*.hf.co; " +
  "object-src 'none'; base-uri 'none'; form-action 'none'";
// The headers that make a page cross-origin isolated (SharedArrayBuffer for the CPU worker's coworker).
export const ISOLATION = { 'cross-origin-opener-policy': 'same-origin', 'cross-origin-embedder-policy': 'require-corp' };
import { createServer } from 'node:http';
import { readFile } from 'node:fs/promises';
import { extname, join, normalize, resolve } from 'node:path';

const MODELS = resolve(process.env.ARTIFACTS || 'target/e2e', '..', 'e2e-models');

const TYPES = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript', '.wasm': 'application/wasm',
  '.css': 'text/css', '.json': 'application/json', '.png': 'image/png', '.svg': 'image/svg+xml',
  '.md': 'text/markdown; charset=utf-8', '.txt': 'text/plain; charset=utf-8',
};

export async function serve(root) {
  const requests = new Map();
  // `state.nextBuild`: sw.js is served as a newer build's (another VERSION), as after a
  // deploy; 'broken': a deploy whose list names a checksum one of its files does not have.
  const state = { nextBuild: false };
  // Long URLs (a 100 KB value in a hostile-query test) are read, as Chromium sends them.
  // `reports`: bodies POSTed to /device-report (the device widget's report=, as a harness takes it).
  const reports = [];
  const server = createServer({ maxHeaderSize: 4 << 20 }, async (req, res) => {
    if (req.method === 'POST' && req.url === '/device-report') {
      const chunks = [];
      for await (const chunk of req) chunks.push(chunk);
      reports.push({ type: req.headers['content-type'], body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(204).end();
      return;
    }
    // A path that is not valid percent-encoding (a hostile `model=` such as `%`) is a 400,
    // as a real server answers, not an exception that leaves the request hanging.
    let raw;
    try {
      raw = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    } catch {
      res.writeHead(400, { 'content-type': 'text/plain' });
      return res.end('malformed path');
    }
    const path = raw.replace(/^\/course\/decode-lab\//, '/');
    const isolated = raw === path && !path.startsWith('/examples/') && path !== '/parent.html';
    requests.set(path, (requests.get(path) || 0) + 1);
    let body;
    const served = path.endsWith('/') ? path + 'index.html' : path;
    if (path === '/parent.html') {
      body = Buffer.from('<!doctype html><meta charset="utf-8"><title>parent</title><body></body>');
    } else if (path === '/broken/corrupt/model.safetensors') {
      body = Buffer.from('{"this is": "not a safetensors file"}'.repeat(50));
    } else if (path === '/broken/neox/config.json') {
      const real = await readFile(join(root, 'models/shakespeare/config.json'), 'utf8');
      body = Buffer.from(real.replace('"gpt2"', '"gpt_neox"'));
    } else if (path.startsWith('/broken/corrupt/') || path.startsWith('/broken/neox/')) {
      body = await readFile(join(root, 'models/shakespeare', path.split('/').pop())).catch(() => null);
    } else if (path.startsWith('/e2e-models/')) {
      const file = normalize(join(MODELS, path.slice('/e2e-models/'.length)));
      body = file.startsWith(MODELS) ? await readFile(file).catch(() => null) : null;
    } else {
      const file = normalize(join(root, served));
      body = file.startsWith(root) ? await readFile(file).catch(() => null) : null;
      if (body && path === '/sw.js' && state.nextBuild) {
        let sw = body.toString('utf8').replace(/const VERSION = '([^']*)'/, "const VERSION = '$1-next'");
        // 'broken': the list's first checksum is not its file's (every other file is whole).
        if (state.nextBuild === 'broken') sw = sw.replace(/"sha256":"[0-9a-f]{64}"/, `"sha256":"${'0'.repeat(64)}"`);
        body = Buffer.from(sw);
      }
    }
    if (!body) {
      res.writeHead(404).end('not found');
      return;
    }
    const headers = { 'content-type': TYPES[extname(served)] || 'application/octet-stream', 'content-length': body.length };
    // The app's page only: a course author's page (examples/) has its own policy.
    if (served.endsWith('/index.html')) headers['content-security-policy'] = CSP;
    if (isolated) Object.assign(headers, ISOLATION);
    res.writeHead(200, headers);
    res.end(body);
  });
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  const url = `http://127.0.0.1:${server.address().port}/`;
  return { url, requests, state, reports, close: () => new Promise((ok) => server.close(ok)) };
}
