// Decode Lab's service worker: after one visit the page, its CPU worker and
// the bundled model load with the network off.
//
// tools/post_build.mjs writes the build's file list into PRECACHE (each
// file's path, size and SHA-256) and VERSION (a hash of that list), so every
// build is a new worker. Installing fetches every file, checks its size and
// checksum, and stores them in a cache of that version; a file that fails
// fails the install and its half-filled cache is deleted, so the cache is
// never half-written and the old version keeps serving. Activating deletes
// older versions' caches: one version's files are served together, never a
// mix of old and new. Requests are answered from the cache first (a page
// address with any query is the cached index.html), else from the network.
const VERSION = 'dev';
const PRECACHE = [];
const APP = `decode-lab-app-${VERSION}`;

const hex = (buffer) => [...new Uint8Array(buffer)].map((b) => b.toString(16).padStart(2, '0')).join('');

// A file as the build made it: from the page's own model cache when it holds
// it whole (the page registers this worker once the model has loaded, so the
// model is not downloaded twice), else from the network; checked either way.
async function fetchChecked({ path, size, sha256 }) {
  const url = new URL(path, self.registration.scope).href;
  for (const response of [await caches.match(url), null]) {
    const r = response || await fetch(url, { cache: 'no-cache' });
    if (!r.ok) throw new Error(`${path}: HTTP ${r.status}`);
    const body = await r.clone().arrayBuffer();
    if (body.byteLength === size && hex(await crypto.subtle.digest('SHA-256', body)) === sha256) {
      return [url, new Response(body, { headers: r.headers })];
    }
    if (!response) throw new Error(`${path}: ${body.byteLength} bytes or its checksum differ from the build's`);
  }
}

self.addEventListener('install', (event) => {
  event.waitUntil((async () => {
    try {
      const files = await Promise.all(PRECACHE.map(fetchChecked));
      const cache = await caches.open(APP);
      // Written only once every file has arrived whole.
      await Promise.all(files.map(([url, response]) => cache.put(url, response)));
    } catch (e) {
      await caches.delete(APP);
      throw e;
    }
  })());
});

self.addEventListener('activate', (event) => {
  event.waitUntil((async () => {
    for (const name of await caches.keys()) {
      if (name.startsWith('decode-lab-app-') && name !== APP) await caches.delete(name);
    }
    await self.clients.claim();
  })());
});

self.addEventListener('fetch', (event) => {
  const request = event.request;
  if (request.method !== 'GET' || new URL(request.url).origin !== self.location.origin) return;
  event.respondWith((async () => {
    const cache = await caches.open(APP);
    // Any page address under the scope, with any query, is the one page.
    const url = request.mode === 'navigate' ? new URL('index.html', self.registration.scope).href : request;
    const hit = await cache.match(url);
    return hit || fetch(request);
  })());
});

// The page asks whether this version's files are all stored; its "update
// ready: reload" asks a waiting (newer) worker to take over at once, since a
// reload alone would keep the old one serving until its last tab closed.
self.addEventListener('message', (event) => {
  if (event.data === 'decode-lab:update') self.skipWaiting();
  if (event.data === 'decode-lab:offline?') {
    event.waitUntil((async () => {
      const cache = await caches.open(APP);
      const stored = (await cache.keys()).length;
      event.source.postMessage({ type: 'decode-lab:offline', version: VERSION, ready: stored === PRECACHE.length });
    })());
  }
});
