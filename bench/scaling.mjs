#!/usr/bin/env node
// Does the cost of a transcription grow linearly with the audio, and does its memory stay bounded? 1, 10 and 60
// minutes of speech (gb0.wav, 127 s, repeated), transcribed with real tiny.en (greedy, VAD off, the engine's other
// defaults), with and without diarization (built-in speaker features; the shared Silero VAD finds the regions).
//
//   npm run bench:scaling [-- --minutes 1,10,60] [-- --model tiny.en]
//
// One fresh Node process per case, one at a time: it builds the audio in memory (16 kHz float32), then times one
// transcribe() call and reads its own VmHWM (the kernel's high-water mark) and VmRSS after it. Reported per case: wall
// time, real-time factor (wall / audio seconds), peak RSS, and the peak above the audio's own bytes (4 bytes per
// sample, which the caller holds). Linear cost: the RTF is the same at every length; bounded memory: the peak less the
// audio does not grow with it. Results: bench/out/scaling-<timestamp>.json.
import { spawnSync } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import {
  benchArgs,
  distEntry,
  ensureDist,
  flag,
  gitCommit,
  isEntry,
  machineFacts,
  ownMemory,
  realModels,
  repeatToLength,
  runMain,
  sharedAudio,
  sharedDir,
  writeResults,
} from './lib.mjs';

const MODELS = { 'tiny.en': 'whisper-tiny.en', base: 'whisper-base' };
const MINUTES = { 1: 1, 10: 10, 60: 60 };
const self = fileURLToPath(import.meta.url);

/** The child: one transcription of `minutes` of gb0 repeated, printed as one JSON line. */
async function child(task) {
  const voxmill = await import(distEntry);
  const gb0 = (await voxmill.decodeAudio(sharedAudio('gb0.wav'))).samples;
  const audio = repeatToLength(gb0, Math.round(task.minutes * 60 * 16_000));
  const speech = voxmill.createSpeech({
    models: { bench: { model: task.model, beamSize: 1 } },
    vadModel: task.vadModel,
    vad: false,
    idleUnloadMs: 0,
    maxDurationSeconds: 4 * 3600,
  });
  await speech.loadModel('bench');
  const before = ownMemory().hwmKb;
  const started = performance.now();
  const result = await speech.transcribe(audio, {
    model: 'bench',
    language: 'en',
    ...(task.diarize ? { diarize: true } : {}),
  });
  const wallMs = performance.now() - started;
  const out = {
    wallMs,
    audioSeconds: audio.length / 16_000,
    hwmBeforeKb: before,
    hwmKb: ownMemory().hwmKb,
    rssKb: ownMemory().rssKb,
    audioKb: audio.byteLength / 1024,
    words: result.text.split(/\s+/).filter(Boolean).length,
    speakers: task.diarize ? new Set((result.segments ?? []).map((s) => s.speaker)).size : null,
  };
  await speech.close();
  console.log(JSON.stringify(out));
}

async function main() {
  const { settings } = benchArgs('npm run bench:scaling [-- options]', {
    minutes: flag.list('audio lengths in minutes', MINUTES),
    model: flag.choice('real model (`npm run models:test`)', Object.keys(MODELS), 'tiny.en'),
  });
  ensureDist();
  const model = realModels([MODELS[settings.model]])[MODELS[settings.model]];
  const vadModel = `${sharedDir}/models/whisper/ggml-silero-v6.2.0.bin`;
  const rows = [];
  for (const diarize of [false, true]) {
    for (const minutes of settings.minutes.map(Number)) {
      const task = { minutes, diarize, model, vadModel };
      const run = spawnSync(process.execPath, [self, '--child', JSON.stringify(task)], {
        encoding: 'utf8',
        maxBuffer: 1 << 24,
      });
      if (run.status !== 0)
        throw new Error(`the child for ${JSON.stringify(task)} failed:\n${run.stderr.slice(-3000)}`);
      const out = JSON.parse(run.stdout.trim().split('\n').at(-1));
      const row = {
        minutes,
        diarize,
        ...out,
        rtf: out.wallMs / 1000 / out.audioSeconds,
        peakMb: out.hwmKb / 1024,
        peakLessAudioMb: (out.hwmKb - out.audioKb) / 1024,
      };
      rows.push(row);
      process.stderr.write(`${minutes} min, diarize ${diarize}: ${JSON.stringify(row)}\n`);
    }
  }
  console.log('\nminutes | diarize | wall s | RTF | peak RSS MB | peak less the audio MB | words | speakers');
  for (const r of rows) {
    console.log(
      `${r.minutes} | ${r.diarize ? 'yes' : 'no'} | ${(r.wallMs / 1000).toFixed(1)} | ${r.rtf.toFixed(4)} | ` +
        `${r.peakMb.toFixed(0)} | ${r.peakLessAudioMb.toFixed(0)} | ${r.words} | ${r.speakers ?? ''}`,
    );
  }
  const file = writeResults('scaling', { machine: machineFacts(), commit: gitCommit(), model: settings.model, rows });
  console.log(`\nresults: ${file}`);
}

if (isEntry(import.meta.url)) {
  const at = process.argv.indexOf('--child');
  if (at >= 0) await child(JSON.parse(process.argv[at + 1]));
  else runMain('scaling', main);
}
