#!/usr/bin/env node
// Which ONNX Runtime voxmill runs Piper on (issue 22): onnxruntime-node (native, the optional peer) against
// onnxruntime-web's WebAssembly build (the dependency an app gets by default), with the real voice en_US-joe-medium.
//
//   node bench/onnx-runtime.mjs [--repeats 5] [--threads 1]
//
// One process, two engines (createSpeech with onnxRuntime 'native' and 'wasm', one TTS worker each, the same intra-op
// thread count), each warmed up by one synthesis. Cold start: the first synthesizeToBuffer() of a short sentence,
// which starts the worker and loads the runtime and the voice. Then the 983-character paragraph of bench/tts.mjs as
// pcm16, alternating the engines, `repeats` times each: real-time factor = wall time / seconds of speech. The ratio
// is wasm / native per round, its median shown. Results: bench/out/onnx-runtime-<time>.json and a markdown table.
import { dirname } from 'node:path';
import { performance } from 'node:perf_hooks';
import {
  benchArgs,
  ensureDist,
  flag,
  gitCommit,
  machineFacts,
  median,
  realModels,
  runMain,
  spread,
  writeResults,
} from './lib.mjs';
import { PARAGRAPH, WARM_TEXT } from './tts.mjs';

const { settings } = benchArgs('node bench/onnx-runtime.mjs [flags]', {
  repeats: flag.integer('paragraph syntheses per runtime', 5),
  threads: flag.integer('ONNX Runtime intra-op threads (wasm: its thread count)', 1),
});

runMain('onnx-runtime', async () => {
  ensureDist();
  const { createSpeech } = await import('../dist/index.js');
  const voice = realModels(['piper-joe-medium'])['piper-joe-medium'];
  const engines = {};
  const cold = {};
  for (const backend of ['native', 'wasm']) {
    engines[backend] = createSpeech({
      onnxRuntime: backend,
      voiceDirs: [dirname(voice)],
      tts: { workers: 1, intraOpThreads: settings.threads },
    });
    const voices = await engines[backend].listVoices();
    engines[backend].voiceId = voices[0].id;
    const started = performance.now();
    await engines[backend].synthesizeToBuffer({ voice: voices[0].id, input: WARM_TEXT, format: 'pcm16' });
    cold[backend] = performance.now() - started;
  }
  const rtf = { native: [], wasm: [] };
  for (let i = 0; i < settings.repeats; i++) {
    for (const backend of i % 2 === 0 ? ['native', 'wasm'] : ['wasm', 'native']) {
      const engine = engines[backend];
      const started = performance.now();
      const result = await engine.synthesizeToBuffer({ voice: engine.voiceId, input: PARAGRAPH, format: 'pcm16' });
      rtf[backend].push((performance.now() - started) / 1000 / result.duration);
    }
  }
  for (const engine of Object.values(engines)) await engine.close();
  const ratios = rtf.native.map((native, i) => rtf.wasm[i] / native);
  const [low, high] = spread(ratios);
  console.log(`| runtime | cold start | real-time factor (median of ${settings.repeats}) |`);
  console.log('| --- | --- | --- |');
  for (const backend of ['native', 'wasm']) {
    console.log(`| ${backend} | ${(cold[backend] / 1000).toFixed(2)} s | ${median(rtf[backend]).toFixed(3)} |`);
  }
  console.log(`\nwasm / native real-time factor: ${median(ratios).toFixed(2)} (${low.toFixed(2)}–${high.toFixed(2)})`);
  writeResults('onnx-runtime', { commit: gitCommit(), machine: machineFacts(), settings, cold, rtf });
});
