// Shared by the e2e files: the static server, one Chromium with WebGPU
// (`--enable-unsafe-webgpu`, SwiftShader) and one without (the CPU engine),
// and small page helpers. Every page fails its test on a page error or panic.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { serve } from './server.mjs';

const { chromium } = await import(process.env.PLAYWRIGHT_CORE);
export const ARTIFACTS = resolve(process.env.ARTIFACTS || 'target/e2e');
export const DIST = resolve(process.env.DIST || 'dist');

const FLAGS = { webgpu: ['--enable-unsafe-webgpu'], cpu: [] };

/**
 * Browsers + server, started by `start()` in a `before` hook. A browser
 * process that ends (not a page: a page crash fails its test) is reported and
 * started again on the next request, so one lost process cannot fail every
 * later test of the file (once, in CI, the CPU one ended as its first page of
 * widgets.test.mjs loaded, and 13 tests failed with it).
 */
export async function startLab() {
  const lab = { browsers: {}, server: null };
  const launch = async (name) => {
    const browser = await chromium.launch({
      executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
      args: ['--no-sandbox', '--disable-gpu-sandbox', '--disable-dev-shm-usage', ...FLAGS[name]],
    });
    browser.on('disconnected', () => {
      if (lab.stopping) return;
      console.error(`# the ${name} Chromium process ended at ${new Date().toISOString()}`);
    });
    lab.browsers[name] = browser;
    return browser;
  };
  /** The `name` browser ('webgpu' or 'cpu'), started again if its process ended. */
  lab.browser = async (name) => {
    const b = lab.browsers[name];
    return b?.isConnected() ? b : launch(name);
  };
  lab.start = async () => {
    lab.server = await serve(DIST);
    mkdirSync(ARTIFACTS, { recursive: true });
    for (const name of Object.keys(FLAGS)) await launch(name);
    return lab.server;
  };
  lab.stop = async () => {
    lab.stopping = true;
    for (const b of Object.values(lab.browsers)) await b.close();
    await lab.server?.close();
  };
  /**
   * A fresh page (own context: own Cache Storage), loaded until ready or error.
   * If the browser process itself ends while the page loads, the page is
   * opened once more in a new one (reported above); anything else fails.
   * `init(page)` runs before the page loads (init scripts: `defaultLimits`).
   */
  lab.open = async (backend, query = '', viewport = { width: 1280, height: 900 }, init = async () => {}) => {
    for (let attempt = 1; ; attempt++) {
      const browser = await lab.browser(backend);
      const page = await browser.newPage({ viewport });
      page.errors = [];
      page.on('pageerror', (e) => page.errors.push(e.message));
      try {
        await watchCsp(page);
        await init(page);
        await page.goto(lab.server.url + query);
        await waitSettled(page);
        return page;
      } catch (e) {
        if (browser.isConnected() || attempt > 1) throw e;
        // Playwright appends what Chromium printed; its end says how the process ended.
        const lines = e.message.split('\n');
        console.error(`# opening ${query || '/'} again in a new ${backend} browser: ${lines[0]}\n${lines.slice(-12).map((l) => `#   ${l}`).join('\n')}`);
      }
    }
  };
  /**
   * A copied link (an embed's `src`, or any URL of the page) opened again.
   * The link holds no engine, so it opens on the CPU engine: a WebGPU page
   * load on CI's software GPU costs seconds.
   */
  lab.openLink = (src) => lab.open('cpu', src.slice(src.indexOf('?')));
  return lab;
}

/** How many requests for model files (`/models/…`) the server has answered. */
export function modelRequests(server) {
  return [...server.requests].filter(([p]) => p.startsWith('/models/')).reduce((n, [, c]) => n + c, 0);
}

/**
 * [`modelRequests`] once the count has stopped moving for `quietMs`: the
 * start of a test that asserts its own pages request no model. A page of an
 * earlier test that loaded the model registered the service worker, whose
 * install fetches the build's files; a request sent just before that page
 * closed can reach the server after the next test has begun (once, in CI,
 * one arrived inside the custom-logits test: 264 against 263).
 */
export async function settledModelRequests(server, quietMs = 500) {
  for (let last = modelRequests(server); ;) {
    await new Promise((ok) => setTimeout(ok, quietMs));
    const now = modelRequests(server);
    if (now === last) return now;
    last = now;
  }
}

/** Waits until the page (or frame) reports ready or error. */
export async function waitSettled(page) {
  await page.waitForSelector('[data-testid=status][data-state=ready], [data-testid=status][data-state=error]', { timeout: 180_000 });
}

// The WebGPU spec's defaults for the limits that bind a kernel or a model.
export const DEFAULT_LIMITS = {
  maxStorageBuffersPerShaderStage: 8,
  maxStorageBufferBindingSize: 128 * 1024 * 1024,
  maxBufferSize: 256 * 1024 * 1024,
  maxComputeWorkgroupStorageSize: 16384,
  maxComputeInvocationsPerWorkgroup: 256,
  maxComputeWorkgroupSizeX: 256,
  maxUniformBufferBindingSize: 65536,
};

/** Makes `page`'s WebGPU adapter report only [`DEFAULT_LIMITS`] (an init script
 * wraps `GPUAdapter.prototype.limits`), as a modest laptop's browser offers;
 * the page asks its device for those, so Chromium enforces them. */
export async function defaultLimits(page) {
  await page.addInitScript((defaults) => {
    const real = Object.getOwnPropertyDescriptor(GPUAdapter.prototype, 'limits').get;
    Object.defineProperty(GPUAdapter.prototype, 'limits', {
      get() {
        const limits = real.call(this);
        return new Proxy(limits, {
          get(target, key) {
            const value = target[key];
            if (key in defaults) return Math.min(defaults[key], value);
            return typeof value === 'function' ? value.bind(target) : value;
          },
        });
      },
    });
  }, DEFAULT_LIMITS);
}

/** Records Content-Security-Policy violations (see server.mjs) in `window.__csp`. */
export async function watchCsp(page) {
  await page.addInitScript(() => {
    window.__csp = [];
    document.addEventListener('securitypolicyviolation', (e) => window.__csp.push(`${e.violatedDirective} ${e.blockedURI}`));
  });
}

export async function noFatal(page) {
  assert.equal(await page.locator('[data-testid=fatal]').count(), 0, 'a panic reached the page');
  assert.deepEqual(page.errors ?? [], []);
  assert.deepEqual(await page.evaluate(() => window.__csp ?? []), [], 'no Content-Security-Policy violation');
}

export async function set(page, testid, value) {
  await page.fill(`[data-testid=${testid}]`, String(value));
}

/** Clicks Generate and waits for the run to finish; returns the output text. */
export async function generate(page) {
  await page.click('[data-testid=generate]');
  await page.waitForFunction(() => !document.querySelector('[data-testid=generate]').disabled
    && document.querySelector('[data-testid=status]').dataset.state === 'ready', null, { timeout: 300_000 });
  return page.textContent('[data-testid=output]').catch(() => null);
}

export async function bars(page) {
  return page.$$eval('[data-testid=bar]', (els) => els.map((e) => ({
    id: Number(e.dataset.id), token: e.dataset.token, pRaw: Number(e.dataset.pRaw), p: Number(e.dataset.p), kept: e.dataset.kept === 'true',
  })));
}

/** The widget table (contract::WIDGETS) as the CLI prints it: each widget's
 * name, title, whether it needs the model and its default controls. The
 * tests' widget lists come from here, so a new widget is tested without an
 * edit to them. */
export const WIDGET_TABLE = JSON.parse(
  execFileSync(process.env.CLI || 'target/release/decode-lab', ['widgets', '--json'], { encoding: 'utf8' }));

/** The CLI's greedy continuation of `prompt` (no echo of the prompt). */
export function cliGreedy(tokens, prompt = 'ROMEO:\n', extra = []) {
  const out = execFileSync(process.env.CLI || 'target/release/decode-lab', [
    'generate', '--model', resolve(DIST, 'models/shakespeare'), '--prompt', prompt,
    '--temperature', '0', '--max-tokens', String(tokens), '--backend', 'cpu', ...extra,
  ], { encoding: 'utf8' });
  return out.slice(prompt.length, -1); // the CLI echoes the prompt and ends with a newline
}

const AXE_TAGS = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'];
let axeSource;

/** axe-core's WCAG A/AA violations on `page` as it is now: [{ id, impact, nodes, targets }]. */
export async function audit(page) {
  axeSource ??= readFileSync(process.env.AXE_CORE, 'utf8');
  // Evaluated through the DevTools protocol: the page's CSP (rightly) refuses an injected <script>.
  if (!(await page.evaluate(() => Boolean(window.axe)))) await page.evaluate(axeSource);
  return page.evaluate(async (tags) => {
    const r = await window.axe.run(document, { runOnly: { type: 'tag', values: tags } });
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.length, targets: v.nodes.slice(0, 3).map((n) => n.target.join(' ')) }));
  }, AXE_TAGS);
}

/** Fails on any serious or critical axe violation of `page` as it is now (`what`: the state audited). */
export async function noSeriousA11y(page, what) {
  const bad = (await audit(page)).filter((v) => ['serious', 'critical'].includes(v.impact));
  assert.deepEqual(bad.map((v) => `${v.id} (${v.impact}) on ${v.targets.join(' | ')}`), [], `axe on ${what}`);
}
