#!/usr/bin/env node
// Streaming transcription on the OpenAI-compatible route (issue 15): POST /v1/audio/transcriptions with stream=true
// on gb0.wav (127 s), the time from sending the request to the first `transcript.text.delta` against the time to the
// `transcript.text.done` event, and the same request without streaming (json) in the same run, alternating.
//
//   node bench/openai-stream.mjs [--repeats 3] [--model tiny.en]
//
// One process: createSpeech with the real model as svc-stt-1 (its tier defaults: beam 5, DTW word times, VAD on),
// createSpeechHandler on a bare http server on 127.0.0.1, and fetch() as the client (the upload built beforehand).
// Results: bench/out/openai-stream-<time>.json and a markdown table on stdout.
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
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
  sharedAudio,
  sharedDir,
  writeResults,
} from './lib.mjs';

const MODELS = { 'tiny.en': 'whisper-tiny.en', base: 'whisper-base' };
const KEY = 'sk-bench';

const { settings } = benchArgs('node bench/openai-stream.mjs [flags]', {
  repeats: flag.integer('streamed and plain requests each', 3),
  model: flag.list('real model', MODELS, ['tiny.en']),
});

async function streamed(url, form) {
  const started = performance.now();
  const response = await fetch(`${url}/v1/audio/transcriptions`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${KEY}` },
    body: form(),
  });
  if (!response.ok) throw new Error(`HTTP ${response.status}: ${await response.text()}`);
  let firstDelta;
  let deltas = 0;
  let text = '';
  let buffer = '';
  const decoder = new TextDecoder();
  for await (const chunk of response.body) {
    buffer += decoder.decode(chunk, { stream: true });
    let end = buffer.indexOf('\n\n');
    while (end !== -1) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      end = buffer.indexOf('\n\n');
      if (!block.startsWith('data: ')) continue;
      const event = JSON.parse(block.slice(6));
      if (event.type === 'transcript.text.delta') {
        deltas++;
        firstDelta ??= performance.now() - started;
      } else if (event.type === 'transcript.text.done') {
        text = event.text;
      } else if (event.error) {
        throw new Error(event.error.message);
      }
    }
  }
  return { firstDeltaMs: firstDelta, doneMs: performance.now() - started, deltas, words: text.split(/\s+/u).length };
}

async function plain(url, form) {
  const started = performance.now();
  const response = await fetch(`${url}/v1/audio/transcriptions`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${KEY}` },
    body: form(false),
  });
  if (!response.ok) throw new Error(`HTTP ${response.status}: ${await response.text()}`);
  await response.json();
  return { doneMs: performance.now() - started };
}

runMain('openai-stream', async () => {
  ensureDist();
  const { createSpeech, createSpeechHandler } = await import('../dist/index.js');
  const [name] = settings.model;
  const models = realModels([MODELS[name]]);
  const speech = createSpeech({
    models: { 'svc-stt-1': models[MODELS[name]] },
    vadModel: join(sharedDir, 'models', 'whisper', 'ggml-silero-v6.2.0.bin'),
  });
  const server = createServer(createSpeechHandler({ speech, auth: [KEY] }));
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${server.address().port}`;
  const audio = new Blob([readFileSync(sharedAudio('gb0.wav'))], { type: 'audio/wav' });
  const form = (stream = true) => {
    const data = new FormData();
    data.set('model', 'whisper-1');
    data.set('language', 'en');
    if (stream) data.set('stream', 'true');
    data.set('file', audio, 'gb0.wav');
    return data;
  };
  await plain(url, form); // warm-up: loads the model
  const runs = { streamed: [], plain: [] };
  for (let i = 0; i < settings.repeats; i++) {
    const order = i % 2 === 0 ? ['streamed', 'plain'] : ['plain', 'streamed'];
    for (const kind of order) runs[kind].push(kind === 'streamed' ? await streamed(url, form) : await plain(url, form));
  }
  server.close();
  await speech.close();
  const first = median(runs.streamed.map((r) => r.firstDeltaMs));
  const done = median(runs.streamed.map((r) => r.doneMs));
  const whole = median(runs.plain.map((r) => r.doneMs));
  const s = (ms) => `${(ms / 1000).toFixed(2)} s`;
  console.log(`| model | first delta | streamed: done | plain json | first delta / plain | deltas |`);
  console.log('| --- | --- | --- | --- | --- | --- |');
  console.log(
    `| ${name} | ${s(first)} | ${s(done)} | ${s(whole)} | ${(first / whole).toFixed(3)} | ${runs.streamed[0].deltas} |`,
  );
  writeResults('openai-stream', { commit: gitCommit(), machine: machineFacts(), settings, runs });
});
