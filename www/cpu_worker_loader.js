// Starts the CPU worker's wasm (src/bin/cpu_worker/main.rs; Trunk builds
// cpu_worker.js + cpu_worker_bg.wasm, which tools/post_build.mjs renames by
// their content, rewriting the two names below). A wasm that fails to load would
// otherwise be a silent rejection in this thread: the page is told instead,
// and runs the CPU engine on its own thread.
importScripts('./cpu_worker.js');
wasm_bindgen({ module_or_path: './cpu_worker_bg.wasm' })
  // The wasm memory's size (it keeps its peak), for the browser tests to read.
  .then((wasm) => { self.wasmMemoryBytes = () => wasm.memory.buffer.byteLength; })
  .catch((e) => postMessage({ failed: String(e) }));
