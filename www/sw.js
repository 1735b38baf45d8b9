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
// mix of old and new. The app's own addresses (the scope and its
// index.html, with any query) are answered with the cached index.html, and
// the build's other files from the cache first, else from the network. Any
// other document under the scope is the host's (a course note, the model
// card, a page of its own): it goes to the network, and only a file of the
// build (the example course note) falls back to its own cached copy offline.
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

// The build's paths, relative to the scope: what may be answered from the cache.
const PATHS = new Set(PRECACHE.map((f) => f.path));
// `url`'s path relative to the scope, or null outside it.
function inScope(url) {
  const scope = new URL(self.registration.scope);
  if (!url.pathname.startsWith(scope.pathname)) return null;
  const path = url.pathname.slice(scope.pathname.length);
  try {
    return decodeURIComponent(path);
  } catch {
    return path; // not valid percent-encoding: no file of the build
  }
}

self.addEventListener('fetch', (event) => {
  const request = event.request;
  const url = new URL(request.url);
  if (request.method !== 'GET' || url.origin !== self.location.origin) return;
  const path = inScope(url);
  if (path === null) return;
  if (request.mode === 'navigate') {
    // The app: every widget's address is the one page.
    if (path === '' || path === 'index.html') {
      const index = new URL('index.html', self.registration.scope).href;
      event.respondWith((async () => (await (await caches.open(APP)).match(index)) || fetch(request))());
      return;
    }
    // Another document: the host's, from the network (it may have changed);
    // a file of the build only offline falls back to its stored copy.
    if (!PATHS.has(path)) return;
    event.respondWith(fetch(request).catch(async (e) => {
      const hit = await (await caches.open(APP)).match(request, { ignoreSearch: true });
      if (hit) return hit;
      throw e;
    }));
    return;
  }
  event.respondWith((async () => (await (await caches.open(APP)).match(request)) || fetch(request))());
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
