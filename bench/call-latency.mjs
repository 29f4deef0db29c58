#!/usr/bin/env node
// One call's latency (issue 43, "Latency of one call"): how long a lone transcription of a short clip takes in a
// warm process with createSpeech's defaults, against faster-whisper int8 on the same clip and weights in the same run.
//
//   node bench/call-latency.mjs [--model tiny.en] [--file jfk.wav] [--calls 4] [--python PATH]
//
// voxmill: one process, createSpeech with its defaults (the CPU budget, the beam size and fitted context of a
// custom model id), the real model as a custom id, VAD off; a first call to warm up, then `--calls` calls with
// `timestamps: 'segment'` (the default) and as many with `timestamps: 'word'` (DTW), each decoding the file again.
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

async function voxmillCalls(modelPath, audio) {
  const { createSpeech } = await import(join(root, 'dist', 'index.js'));
  const speech = createSpeech({ models: { bench: modelPath }, vadModel: null });
  try {
    const call = async (timestamps) => {
      const started = performance.now();
      await speech.transcribe(audio, { model: 'bench', language: 'en', vad: false, timestamps });
      return performance.now() - started;
    };
    await call('segment');
    const out = {};
    for (const timestamps of ['segment', 'word']) {
      out[timestamps] = [];
      for (let i = 0; i < settings.calls; i++) out[timestamps].push(await call(timestamps));
    }
    return out;
  } finally {
    await speech.close();
  }
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
  const audio = sharedAudio(settings.file ?? 'jfk.wav');
  const python = peersPython(settings.python);
  const voxmill = await voxmillCalls(models[names.ggml], audio);
  const peer = { 1: peerCalls(python, models[names.ct2], audio, 1), 2: peerCalls(python, models[names.ct2], audio, 2) };
  const peerBest = Math.min(median(peer[1]), median(peer[2]));
  const ratio = median(voxmill.segment) / peerBest;
  console.log(`${settings.model}, ${settings.file ?? 'jfk.wav'}, ${settings.calls} warm calls each (seconds):`);
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
    voxmillMs: voxmill,
    fasterWhisperInt8Ms: peer,
    ratio,
  });
  console.log(`Raw results: ${out}`);
}

runMain('call-latency', main);
