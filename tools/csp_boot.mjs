// Trunk post-build hook: moves Trunk's inline start-up script out of
// index.html into boot.js, so the built page runs under a strict Content
// Security Policy (`script-src 'self' 'wasm-unsafe-eval'`, no inline script).
// Runs in Trunk's staging directory (TRUNK_STAGING_DIR) for build and serve.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const dir = process.env.TRUNK_STAGING_DIR;
if (!dir) throw new Error('csp_boot.mjs runs as a Trunk hook (TRUNK_STAGING_DIR is unset)');
const html = readFileSync(join(dir, 'index.html'), 'utf8');
const inline = /<script type="module">([\s\S]*?)<\/script>/;
const found = html.match(inline);
if (!found) throw new Error('no inline module script in index.html: Trunk changed its output');
// The script imports the app's JS by the same base path the other assets use.
const base = found[1].match(/from '(.*?)decode-lab-app[^']*\.js'/)?.[1];
if (base === undefined) throw new Error('the start-up script does not import decode-lab-app');
writeFileSync(join(dir, 'boot.js'), found[1].trim() + '\n');
writeFileSync(join(dir, 'index.html'), html.replace(inline, `<script type="module" src="${base}boot.js"></script>`));
