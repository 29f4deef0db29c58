#!/usr/bin/env node
// One call's latency (issue 43, "Latency of one call"): how long a lone transcription of a short clip takes in a
// warm process with createSpeech's defaults, against faster-whisper int8 on the same clip and weights in the same run.
//
//   node bench/call-latency.mjs [--model tiny.en] [--file jfk.wav] [--calls 4] [--python PATH]
//
// voxmill: one process, createSpeech with its defaults (the CPU budget, the beam size and fitted context of a
// custom model id: beam 5), the real model as a custom id, VAD off; a call with each setting to warm up, then
// `--calls` calls with `timestamps: 'segment'` (the default) and as many with `timestamps: 'word'` (DTW), each
// decoding the file again, in two halves: before and after the peer's runs. The budget is the machine's cores - 1
// with the extra thread lent to a lone short call, so on more than 2 cores voxmill may use more threads than the
// peer's 2; the JSON records the budget.
// faster-whisper: scripts/peers/faster_whisper_peer.py, int8, beam 5, one pass over the calls to warm up, then the
// timed pass, once with cpu_threads 1 and once with 2. The ratio is voxmill's median segment call over the peer's
// faster median. Needs `npm run models:test` and the peers (`bash scripts/peers-setup.sh`).
// Results: bench/out/call-latency-<timestamp>.json.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import {
  benchArgs,
  ensureDist,
  flag,
  gitCommit,
  machineFacts,
  median,
  peersPython,
  REAL_WHISPER_MODELS,
  realModels,
  root,
  runMain,
  sharedAudio,
  writeResults,
} from './lib.mjs';

const { settings } = benchArgs('node bench/call-latency.mjs [flags]', {
  model: flag.choice('the real model', Object.keys(REAL_WHISPER_MODELS), 'tiny.en'),
  file: flag.string('the shared audio file', { value: 'NAME', defaultText: 'jfk.wav' }),
  calls: flag.integer('timed calls per side and setting', 4),
  python: flag.string("the peers' Python", { value: 'PATH', defaultText: 'from bash scripts/peers-setup.sh' }),
});

const seconds = (values) => values.map((ms) => Number((ms / 1000).toFixed(3)));

/** A warm createSpeech engine: `calls(n)` times n calls with each timestamps setting, one after another. */
async function voxmillEngine(modelPath, audio) {
  const { createSpeech } = await import(join(root, 'dist', 'index.js'));
  const speech = createSpeech({ models: { bench: modelPath }, vadModel: null });
  const call = async (timestamps) => {
    const started = performance.now();
    await speech.transcribe(audio, { model: 'bench', language: 'en', vad: false, timestamps });
    return performance.now() - started;
  };
  // Both settings warm up (a call with word times loads the alignment pass's first buffers).
  await call('segment');
  await call('word');
  const times = { segment: [], word: [] };
  return {
    cpu: speech.cpu,
    times,
    async calls(n) {
      for (const timestamps of ['segment', 'word']) {
        for (let i = 0; i < n; i++) times[timestamps].push(await call(timestamps));
      }
    },
    close: () => speech.close(),
  };
}

function peerCalls(python, ct2Path, audio, threads) {
  const request = {
    model: ct2Path,
    files: Array.from({ length: settings.calls }, () => audio),
    compute_type: 'int8',
    threads,
    beam_size: 5,
    best_of: 5,
    temperature: 0,
    temperature_increment: 0.2,
    language: 'en',
    word_timestamps: false,
    suppress_non_speech: false,
    warmup: 'all',
  };
  const script = join(root, 'scripts', 'peers', 'faster_whisper_peer.py');
  const run = spawnSync(python, [script], { input: JSON.stringify(request), encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`faster-whisper failed:\n${(run.stderr ?? '').slice(-2000)}`);
  return JSON.parse(run.stdout).results.map((r) => r.transcribe_ms);
}

async function main() {
  ensureDist();
  const names = REAL_WHISPER_MODELS[settings.model];
  const models = realModels([names.ggml, names.ct2]);
  const file = settings.file ?? 'jfk.wav';
  const audio = sharedAudio(file);
  const python = peersPython(settings.python);
  // voxmill's calls in two halves around the peer's processes, so a slow phase of a shared machine reaches both sides.
  const engine = await voxmillEngine(models[names.ggml], audio);
  const peer = {};
  try {
    await engine.calls(Math.ceil(settings.calls / 2));
    peer[1] = peerCalls(python, models[names.ct2], audio, 1);
    peer[2] = peerCalls(python, models[names.ct2], audio, 2);
    await engine.calls(Math.floor(settings.calls / 2));
  } finally {
    await engine.close();
  }
  const voxmill = engine.times;
  const peerBest = Math.min(median(peer[1]), median(peer[2]));
  const ratio = median(voxmill.segment) / peerBest;
  console.log(
    `${settings.model}, ${file}, ${settings.calls} warm calls each (seconds); voxmill's CPU ` +
      `budget ${engine.cpu.cpuThreads} thread(s), ${engine.cpu.threads} a call (and the budget's loan to a lone call):`,
  );
  console.log(`| side | calls | median |\n| --- | --- | --: |`);
  const row = (name, ms) => console.log(`| ${name} | ${seconds(ms).join(', ')} | ${(median(ms) / 1000).toFixed(2)} |`);
  row("voxmill, timestamps 'segment' (default)", voxmill.segment);
  row("voxmill, timestamps 'word' (DTW)", voxmill.word);
  row('faster-whisper int8, beam 5, cpu_threads 1', peer[1]);
  row('faster-whisper int8, beam 5, cpu_threads 2', peer[2]);
  console.log(`voxmill segment / faster-whisper int8 (its faster thread count): ${ratio.toFixed(3)}`);
  const out = writeResults('call-latency', {
    machine: machineFacts(),
    commit: gitCommit(),
    settings: { ...settings, python },
    voxmillCpu: engine.cpu,
    voxmillMs: voxmill,
    fasterWhisperInt8Ms: peer,
    ratio,
  });
  console.log(`Raw results: ${out}`);
}

runMain('call-latency', main);
