// Trunk post-build hook (runs in Trunk's staging directory, TRUNK_STAGING_DIR,
// for build and serve). Three jobs:
// 1. Moves Trunk's inline start-up script out of index.html into boot-HASH.js,
//    so the built page runs under a strict Content Security Policy
//    (`script-src 'self' 'wasm-unsafe-eval'`, no inline script).
// 2. Names the CPU worker's files by their content (Trunk hashes the app's
//    files, not a worker's): cpu_worker_loader-HASH.js, cpu_worker-HASH.js,
//    cpu_worker_bg-HASH.wasm. A host that caches files hard then never serves
//    an old worker (or start-up script) beside a new app after a deploy. The
//    page reads the loader's name from <meta name="cpu-worker"> (src/worker.rs).
// 3. Writes the build's file list (path, size, SHA-256) into the service
//    worker (www/sw.js), and a version that is a hash of it: after one visit
//    the page, the CPU worker and the bundled model load offline, and a new
//    build replaces them all at once.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';

const dir = process.env.TRUNK_STAGING_DIR;
if (!dir) throw new Error('post_build.mjs runs as a Trunk hook (TRUNK_STAGING_DIR is unset)');
const at = (name) => join(dir, name);
const hash = (...parts) => {
  const h = createHash('sha256');
  parts.forEach((p) => h.update(p));
  return h.digest('hex').slice(0, 16);
};

// The worker: its wasm and glue first, then the loader that names them.
const glue = readFileSync(at('cpu_worker.js'));
const wasm = readFileSync(at('cpu_worker_bg.wasm'));
const worker = hash(glue, wasm);
const loaderText = readFileSync(at('cpu_worker_loader.js'), 'utf8');
if (!loaderText.includes("'./cpu_worker.js'") || !loaderText.includes("'./cpu_worker_bg.wasm'")) {
  throw new Error('www/cpu_worker_loader.js no longer names ./cpu_worker.js and ./cpu_worker_bg.wasm');
}
const loader = loaderText
  .replace("'./cpu_worker.js'", `'./cpu_worker-${worker}.js'`)
  .replace("'./cpu_worker_bg.wasm'", `'./cpu_worker_bg-${worker}.wasm'`);
const loaderName = `cpu_worker_loader-${hash(loader)}.js`;
renameSync(at('cpu_worker.js'), at(`cpu_worker-${worker}.js`));
renameSync(at('cpu_worker_bg.wasm'), at(`cpu_worker_bg-${worker}.wasm`));
writeFileSync(at(loaderName), loader);
rmSync(at('cpu_worker_loader.js'));

// The start-up script, and the page that names both.
const html = readFileSync(at('index.html'), 'utf8');
const inline = /<script type="module">([\s\S]*?)<\/script>/;
const found = html.match(inline);
if (!found) throw new Error('no inline module script in index.html: Trunk changed its output');
// The script imports the app's JS by the same base path the other assets use.
const base = found[1].match(/from '(.*?)decode-lab-app[^']*\.js'/)?.[1];
if (base === undefined) throw new Error('the start-up script does not import decode-lab-app');
const boot = found[1].trim() + '\n';
const bootName = `boot-${hash(boot)}.js`;
writeFileSync(at(bootName), boot);
const meta = `<meta name="cpu-worker" content="${base}${loaderName}" />`;
if (!html.includes('</head>')) throw new Error('index.html has no </head>');
writeFileSync(at('index.html'), html
  .replace(inline, `<script type="module" src="${base}${bootName}"></script>`)
  .replace('</head>', `${meta}</head>`));

// The service worker's file list: everything the page loads and the example
// course note (so the lesson opens offline with its widgets), not the worker
// itself.
const files = [];
const walk = (d) => readdirSync(d).forEach((name) => {
  const path = join(d, name);
  if (statSync(path).isDirectory()) return walk(path);
  const rel = relative(dir, path).split(sep).join('/');
  if (rel === 'sw.js') return;
  const bytes = readFileSync(path);
  files.push({ path: rel, size: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') });
});
walk(dir);
files.sort((a, b) => a.path.localeCompare(b.path));
const sw = readFileSync(at('sw.js'), 'utf8');
const version = hash(JSON.stringify(files));
if (!sw.includes("const VERSION = 'dev';") || !sw.includes('const PRECACHE = [];')) {
  throw new Error('www/sw.js no longer holds the VERSION and PRECACHE placeholders');
}
writeFileSync(at('sw.js'), sw
  .replace("const VERSION = 'dev';", `const VERSION = '${version}';`)
  .replace('const PRECACHE = [];', `const PRECACHE = ${JSON.stringify(files)};`));
