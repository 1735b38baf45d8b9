// llama.cpp on the CPU (npm node-llama-cpp's prebuilt binaries), timed the
// way `decode-lab bench` times our engine: a warm-up, then the prompt
// (decode-lab bench's pseudo-random ids, `i · 7919 + 13 mod vocab`) in one
// pass three times, the last followed by TOKENS greedy steps, one token each.
// Prints one JSON line: {prefill_ms (the median pass), prefill_passes (each, in
// the order run), decode_ms (per token), ids (the greedy ids: the prefill's,
// then each step's)}.
//
// usage: NODE_LLAMA_CPP=…/node-llama-cpp/dist/index.js \
//   node tools/bench/llama_cpp.mjs MODEL.gguf VOCAB PROMPT_LEN TOKENS THREADS

const [gguf, vocab, promptLen, tokens, threads] = process.argv.slice(2);
if (!threads || !process.env.NODE_LLAMA_CPP) {
  console.error("usage: NODE_LLAMA_CPP=… node llama_cpp.mjs MODEL.gguf VOCAB PROMPT_LEN TOKENS THREADS");
  process.exit(2);
}
const { getLlama, LlamaLogLevel } = await import(process.env.NODE_LLAMA_CPP);
const [n, steps, t] = [Number(promptLen), Number(tokens), Number(threads)];
const prompt = Array.from({ length: n }, (_, i) => (i * 7919 + 13) % Number(vocab));

const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error, maxThreads: t });
const model = await llama.loadModel({ modelPath: gguf, gpuLayers: 0 });
const context = await model.createContext({
  contextSize: n + steps + 16,
  batchSize: n,
  threads: { ideal: t, min: t },
  flashAttention: false,
});
const sequence = context.getSequence();

// The prompt, then greedy tokens: the time to the first (the prefill's) and
// the time of each one after it (a decode step).
async function run(steps) {
  const start = performance.now();
  const times = [];
  const ids = [];
  for await (const id of sequence.evaluate(prompt, { temperature: 0 })) {
    times.push(performance.now());
    ids.push(id);
    if (ids.length > steps) break;
  }
  await sequence.clearHistory();
  return { prefill_ms: times[0] - start, decode_ms: steps && (times[steps] - times[0]) / steps, ids };
}

await run(1); // warm-up, as ours: a prefill and a step fault in memory
// Three timed prefills, the median the figure, as ours (`PREFILL_PASSES`).
const passes = [await run(0), await run(0), await run(steps)];
const prefills = passes.map((p) => p.prefill_ms);
const median = [...prefills].sort((a, b) => a - b)[1];
console.log(JSON.stringify({ ...passes[2], prefill_ms: median, prefill_passes: prefills }));
await context.dispose();
await model.dispose();
await llama.dispose();
