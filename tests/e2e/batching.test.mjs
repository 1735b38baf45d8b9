// End-to-end test of the batching lesson in real headless Chromium on both
// engines: every batch size measured, curves drawn, each batched text equal
// to its run alone and to the CLI's `generate --batch`, the matrix
// experiment and the verdict present, Stop mid-measurement, URL round-trip.
// Run by `./tools/dev test` next to widgets.test.mjs (same environment).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { crc32 } from 'node:zlib';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { startLab, noFatal, noSeriousA11y, DIST, ARTIFACTS } from './helpers.mjs';

const lab = await startLab();
before(async () => { await lab.start(); });
after(() => lab.stop());

/** The CLI's `generate --batch 8` continuations (seed, seed + 1, …), without the prompt. */
function cliBatch(prompt, tokens, seed) {
  const out = execFileSync(process.env.CLI || 'target/release/decode-lab', [
    'generate', '--model', resolve(DIST, 'models/shakespeare'), '--prompt', prompt, '--backend', 'cpu',
    '--temperature', '1', '--top-k', '40', '--seed', String(seed), '--max-tokens', String(tokens), '--batch', '8',
  ], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  return out.split(/^\[continuation \d+ of 8, seed \d+\]\n/m).slice(1).map((t) => t.slice(prompt.length, -1));
}

/** RFC 4180 CSV (quoted cells, doubled quotes, CRLF lines) as rows of cells. */
function parseCsv(text) {
  const rows = [];
  let row = [], cell = '', quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') { cell += '"'; i++; } else if (c === '"') quoted = false; else cell += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') { row.push(cell); cell = ''; }
    else if (c === '\r' && text[i + 1] === '\n') { row.push(cell); rows.push(row); row = []; cell = ''; i++; }
    else cell += c;
  }
  return rows;
}

const QUERY = '?widget=batching&prompt=ROMEO%3A&max_tokens=8&seed=5';

for (const backend of ['cpu', 'webgpu']) {
  test(`batching on ${backend}: B = 1, 2, 4, 8 measured both ways, texts equal their runs alone and the CLI, matrix experiment, verdict, Stop, URL round-trip`, async () => {
    const page = await lab.open(backend, QUERY);
    await page.click('[data-testid=measure-batch]');
    await page.waitForFunction(() => !document.querySelector('[data-testid=measure-batch]').disabled
      && document.querySelector('[data-testid=stop-generation]').disabled, null, { timeout: 300_000 });
    assert.equal(await page.locator('[data-testid=error]').count(), 0);
    const rows = await page.$$eval('[data-testid=batch-row]', (rs) => rs.map((r) => [...r.children].map((c) => c.textContent)));
    assert.deepEqual(rows.map((r) => r[0]), ['1', '2', '4', '8']);
    for (const r of rows) {
      assert.ok(Number(r[1]) > 0 && Number(r[2]) > 0, `tokens/s measured: ${r}`);
      // Exactly what each engine does per batched step: WebGPU dispatches kernels in one
      // submit; the CPU engine dispatches and submits nothing.
      const perStep = backend === 'webgpu' ? /^[1-9]\d* \/ 1$/ : /^0 \/ 0$/;
      assert.match(r[5], perStep, `dispatches / submits per step on ${backend}: ${r[5]}`);
      assert.equal(r[6], '✓ same text');
    }
    const series = (id) => page.$$eval(`[data-testid=${id}] .series`, (ss) => ss.map((s) => s.querySelectorAll('circle').length));
    assert.deepEqual(await series('batch-throughput'), [4, 4]);
    assert.deepEqual(await series('batch-latency'), [4]);
    // The chart's text alternative: the same numbers as the table, behind "Show as table".
    await page.click('[data-testid=batch-throughput] [data-testid=chart-table] summary');
    const asTable = await page.$$eval('[data-testid=batch-throughput] [data-testid=chart-table] tbody tr',
      (rs) => rs.map((r) => [...r.children].map((c) => c.textContent)));
    assert.deepEqual(asTable.map((r) => r[0]), ['1', '2', '4', '8']);
    asTable.forEach((r, i) => assert.ok(Math.abs(Number(r[1]) - Number(rows[i][2])) <= 0.05 + 1e-9,
      `chart table ${r[1]} against the figures table's ${rows[i][2]} tokens/s`));
    // The table as CSV: its header and the same numbers, cell for cell.
    const [file] = await Promise.all([page.waitForEvent('download'),
      page.click('[data-testid=download-csv][aria-label="Download CSV: each batch size\'s figures"]')]);
    assert.equal(file.suggestedFilename(), 'decode-lab-each-batch-size-s-figures.csv');
    const csv = parseCsv(readFileSync(await file.path(), 'utf8'));
    assert.deepEqual(csv[0].slice(0, 3), ['B', 'one after another, tokens/s', 'batched, tokens/s']);
    assert.deepEqual(csv.slice(1).map((r) => [r[0], r[2], r[6]]), rows.map((r) => [r[0], r[2], r[6]]));
    // Copy as PNG: the chart with its stylesheet's colours, the page's link stamped and
    // kept as the PNG's Source; a table as a PNG too; saved as a file where the clipboard is refused.
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write']);
    // (The clipboard re-encodes an image and drops its text chunks: the saved file keeps them.)
    const chart = await copiedPng(page, '[data-testid=batch-throughput] [data-testid=copy-png]');
    assert.ok(chart.width >= 2 * 300 && chart.height >= 2 * 100, `${chart.width} × ${chart.height}`);
    assert.ok(chart.blue > 50, `the series drawn in its Okabe–Ito blue: ${chart.blue} pixels`);
    assert.ok(chart.stamp > 20, `the link written in the corner: ${chart.stamp} dark pixels`);
    const table = await copiedPng(page, '[aria-label="Copy as PNG: each batch size\'s figures"]');
    assert.ok(table.width >= 2 * 400 && table.stamp > 20, `the table drawn, stamped: ${table.width} wide`);
    // A browser that keeps images off the clipboard (fault injected): the PNG is saved instead.
    await page.evaluate(() => { navigator.clipboard.write = () => Promise.reject(new DOMException('refused', 'NotAllowedError')); });
    const [png] = await Promise.all([page.waitForEvent('download'),
      page.click('[data-testid=batch-throughput] [data-testid=copy-png]')]);
    assert.match(png.suggestedFilename(), /^decode-lab-.*\.png$/);
    assert.equal(pngSource(readFileSync(await png.path())), await page.evaluate(() => location.href));
    const texts = await page.$$eval('[data-testid=batch-text]', (ls) => ls.map((l) => [l.dataset.same, l.querySelector('.text').textContent]));
    assert.equal(texts.length, 8);
    assert.ok(texts.every(([same]) => same === 'true'));
    assert.deepEqual(texts.map(([, t]) => t), cliBatch('ROMEO:', 8, 5));
    assert.ok(new Set(texts.map(([, t]) => t)).size > 1, 'the seeds differ');
    const passes = await page.$$eval('[data-testid=pass-row]', (rs) => rs.map((r) => Number(r.children[0].textContent)));
    assert.deepEqual(passes, [1, 8, 32, 128]);
    const verdict = await page.textContent('[data-testid=batch-verdict]');
    assert.match(verdict, /One step \(B = 1\) takes \d+\.\d\d ms.*reading its \d+\.\d MB of weights at this device's measured read rate \(\d+\.\d GB\/s: a kernel that only reads a large buffer\)/);
    // The step's share of the device's read rate, as the bench prints it.
    const who = backend === 'cpu' ? 'CPU' : 'GPU';
    assert.match(await page.textContent('[data-testid=bandwidth]'),
      new RegExp(`^This step read \\d+\\.\\d MB at \\d+\\.\\d GB/s \\((GPU|wall) time \\d+\\.\\d\\d ms\\) — \\d+ % of what this ${who} can read per second \\(\\d+\\.\\d GB/s, measured here\\)\\.$`));
    assert.match(verdict, /dominates here\. A batch of 8/);
    if (backend === 'webgpu') assert.match(verdict, /its \d+ dispatches at \d\.\d{3} ms each/);
    await page.screenshot({ path: `${ARTIFACTS}/batching-${backend}.png`, fullPage: true });
    await noSeriousA11y(page, `batching on ${backend}, measured`);

    await page.click('[data-testid=copy-embed]');
    const code = await page.inputValue('[data-testid=embed-code]');
    const src = code.match(/src="([^"]+)"/)[1].replaceAll('&amp;', '&');
    assert.match(src, /widget=batching/);
    assert.match(src, /max_tokens=8/);
    assert.match(src, /seed=5/);
    await noFatal(page);
    await page.close();
    const again = await lab.open(backend, src.slice(src.indexOf('?')));
    assert.equal(await again.inputValue('[data-testid=max-tokens]'), '8');
    // Stop mid-measurement: a long run, stopped once the first rows are in.
    await again.fill('[data-testid=max-tokens]', '200');
    await again.click('[data-testid=measure-batch]');
    await again.waitForFunction(() => document.querySelector('[data-testid=batch-progress]'), null, { timeout: 60_000 });
    await again.click('[data-testid=stop-generation]');
    await again.waitForFunction(() => !document.querySelector('[data-testid=measure-batch]').disabled, null, { timeout: 300_000 });
    assert.ok(await again.locator('[data-testid=batch-row]').count() < 4, 'stopped before every size ran');
    await noFatal(again);
    await again.close();
  });
}

/** Presses a Copy as PNG button, reads the PNG off the clipboard: its size,
 * pixels of the chart's blue, dark pixels in the stamp's strip. */
async function copiedPng(page, button) {
  await page.click(button);
  await page.waitForFunction((b) => /^copied$/.test(document.querySelector(b).nextElementSibling.textContent), button);
  const got = await page.evaluate(async () => {
    const [item] = await navigator.clipboard.read();
    const blob = await item.getType('image/png');
    const bitmap = await createImageBitmap(blob);
    const c = new OffscreenCanvas(bitmap.width, bitmap.height);
    const ctx = c.getContext('2d');
    ctx.drawImage(bitmap, 0, 0);
    const px = ctx.getImageData(0, 0, c.width, c.height).data;
    let blue = 0, stamp = 0;
    for (let i = 0; i < px.length; i += 4) {
      const [r, g, b] = [px[i], px[i + 1], px[i + 2]];
      if (Math.abs(r - 0x00) < 40 && Math.abs(g - 0x72) < 40 && Math.abs(b - 0xb2) < 40) blue++;
      if ((i / 4) / c.width > c.height - 36 && r < 160 && g < 160 && b < 160) stamp++;
    }
    return { bytes: [...new Uint8Array(await blob.arrayBuffer())], width: c.width, height: c.height, blue, stamp };
  });
  pngSource(Buffer.from(got.bytes)); // a PNG
  return got;
}

/** The `Source` tEXt chunk of a PNG, its CRC checked. */
function pngSource(png) {
  assert.deepEqual([...png.subarray(0, 8)], [137, 80, 78, 71, 13, 10, 26, 10], 'a PNG');
  for (let at = 8; at < png.length;) {
    const len = png.readUInt32BE(at);
    const typed = png.subarray(at + 4, at + 8 + len);
    if (typed.subarray(0, 4).toString('latin1') === 'tEXt') {
      assert.equal(png.readUInt32BE(at + 8 + len), crc32(typed), 'the chunk CRC');
      const [key, value] = typed.subarray(4).toString('latin1').split('\0');
      if (key === 'Source') return value;
    }
    at += 12 + len;
  }
  return null;
}
