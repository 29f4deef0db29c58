#!/usr/bin/env node
// Diarization of one long generated conversation (scripts/diarize-devset/make-devset.mjs --long-minutes M): the
// real-time factor (wall time / audio time, decode and VAD included), peak RSS of the whole process (sampled every
// 50 ms) and DER against its RTTM, per configuration (built-in features, GE2E).
//
//   npm run devset:diarize -- --long-minutes 10 && node bench/diarize-long.mjs --minutes 10 [--config ge2e]
//   node bench/diarize-long.mjs --minutes 120 --devset DIR --config campplus+seg --diarization '{"intraOpThreads":2}'
// One configuration per process when peak RSS matters (the peak is the process's).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { configurations, devsetDir } from './diarize-devset.mjs';
import { benchArgs, distEntry, ensureDist, flag, sharedDir as shared, writeResults } from './lib.mjs';

const { settings } = benchArgs('node bench/diarize-long.mjs [options]', {
  minutes: flag.integer('the long file to diarize: long-<N>min.wav', 10),
  config: flag.string('configurations, as bench/diarize-devset.mjs names them', {
    value: 'NAMES',
    defaultText: 'both',
  }),
  diarization: flag.json('engine diarization settings to override', {}),
  devset: flag.string('the folder holding long-<N>min.wav', { value: 'DIR', defaultText: 'test/fixtures/diarize-dev' }),
});
ensureDist();
const voxmill = await import(pathToFileURL(distEntry).href);
const wav = join(settings.devset ?? devsetDir, `long-${settings.minutes}min.wav`);
const reference = [...voxmill.parseRttm(readFileSync(wav.replace(/\.wav$/, '.rttm'), 'utf8')).values()][0];
const vadModel = join(shared, 'models', 'whisper', 'ggml-silero-v6.2.0.bin');

const results = [];
for (const { name, diarization } of configurations(settings.config ?? 'both', settings.diarization)) {
  const speech = voxmill.createSpeech({ vadModel, diarization, idleUnloadMs: 0, maxDurationSeconds: 3 * 3600 });
  await speech.diarize(join(shared, 'audio', 'jfk.wav'));
  let peak = process.memoryUsage().rss;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 50);
  const started = performance.now();
  const result = await speech.diarize(wav);
  const seconds = (performance.now() - started) / 1000;
  clearInterval(sampler);
  await speech.close();
  const score = voxmill.scoreDiarization(reference, result.turns);
  const row = {
    name,
    audioSeconds: result.duration,
    seconds,
    rtf: seconds / result.duration,
    peakRssMb: peak / 2 ** 20,
    der: score.der,
    speakers: result.speakers.length,
  };
  results.push(row);
  console.log(
    `${name}: ${(row.audioSeconds / 60).toFixed(1)} min in ${seconds.toFixed(1)} s, RTF ${row.rtf.toFixed(4)}, ` +
      `peak RSS ${row.peakRssMb.toFixed(0)} MB, DER ${(row.der * 100).toFixed(1)}%, ${row.speakers} speakers (4 true)`,
  );
}
console.log(`raw results: ${writeResults('diarize-long', { minutes: settings.minutes, results })}`);
