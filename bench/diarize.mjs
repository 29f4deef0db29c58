#!/usr/bin/env node
// Diarization benchmark: how much diarization costs next to the transcription it labels, and how good it is.
// Ratios taken in one run (../shared/DESIGN.md): transcription of gb0.wav (127 s) with the tiny.en-shaped
// random-weight model is the reference; diarization of the same file runs in the same process, alternating order
// per repeat, and each ratio is the median of the per-repeat ratios.
//
//   npm run bench:diarize [-- options]     (the flags: `node bench/diarize.mjs --help`)
//
// Reported:
// 1. diarization alone (`Speech.diarize`: decode, Silero VAD, features, clustering) against transcription alone
//    (`Speech.transcribe`, greedy, no temperature fallback: random weights would otherwise decode for minutes):
//    wall-time share, target <= 15%.
// 2. `transcribe({ diarize: true })` against `transcribe()`: the wall-time overhead when both run together
//    (diarization runs on its own worker thread while whisper decodes).
// 3. DER of ../shared/audio/pyannote_sample.wav against its RTTM, 0.25 s collar, built-in features (target <= 15%),
//    and the speakers found.
// 4. Per configuration (built-in features; GE2E when `npm run models:test` made it): DER per file of the development
//    set (`npm run devset:diarize`) and its mean, the share of conversations whose speaker count is right, and the
//    real-time factor (bench/diarize-devset.mjs; skipped with --no-devset or when the set is missing).
// Raw results go to bench/out/diarize-<timestamp>.json.
import { existsSync, readFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { configurations, devsetDir, devsetFiles, printSummary, scoreConfiguration } from './diarize-devset.mjs';
import { benchArgs, distEntry, ensureDist, flag, median, root, sharedDir as shared, writeResults } from './lib.mjs';

const { settings } = benchArgs(
  'npm run bench:diarize [-- options]',
  {
    quick: flag.boolean('1 repeat'),
    repeats: flag.integer('repeats', 3),
    threads: flag.integer('whisper threads', undefined, { defaultText: "voxmill's default, min(4, cores - 1)" }),
    json: flag.boolean('print one JSON document'),
    'no-devset': flag.boolean('skip the development set (section 4)'),
  },
  { quick: { repeats: 1 } },
);
const { repeats, threads, json, noDevset } = settings;

ensureDist();
const voxmill = await import(pathToFileURL(distEntry).href);
const model = join(root, 'test', 'fixtures', 'models', 'ggml-tiny.en-random.bin');
const vadModel = join(shared, 'models', 'whisper', 'ggml-silero-v6.2.0.bin');
const gb0 = join(shared, 'audio', 'gb0.wav');
const sample = join(shared, 'audio', 'pyannote_sample.wav');

const speech = voxmill.createSpeech({ models: { 'svc-stt-1': model }, vadModel, idleUnloadMs: 0 });
const transcribeOptions = { temperatureIncrement: 0, beamSize: 1, timestamps: 'none', ...(threads ? { threads } : {}) };
const time = async (work) => {
  const started = performance.now();
  const result = await work();
  return { ms: performance.now() - started, result };
};

// Warm-up: the model loads, the diarization worker starts.
await speech.transcribe(join(shared, 'audio', 'jfk.wav'), transcribeOptions);
await speech.diarize(join(shared, 'audio', 'jfk.wav'));

const runs = [];
for (let repeat = 0; repeat < repeats; repeat++) {
  const order = repeat % 2 === 0 ? ['transcribe', 'diarize'] : ['diarize', 'transcribe'];
  const run = {};
  for (const step of order) {
    if (step === 'transcribe') run.transcribe = (await time(() => speech.transcribe(gb0, transcribeOptions))).ms;
    else run.diarize = (await time(() => speech.diarize(gb0))).ms;
  }
  run.transcribeWithSpeakers = (await time(() => speech.transcribe(gb0, { ...transcribeOptions, diarize: true }))).ms;
  run.share = run.diarize / run.transcribe;
  run.overhead = run.transcribeWithSpeakers / run.transcribe - 1;
  runs.push(run);
  if (!json) {
    console.error(
      `repeat ${repeat + 1}: transcribe ${(run.transcribe / 1000).toFixed(2)} s, diarize ${(run.diarize / 1000).toFixed(2)} s ` +
        `(${(run.share * 100).toFixed(1)}%), transcribe+diarize ${(run.transcribeWithSpeakers / 1000).toFixed(2)} s`,
    );
  }
}

const reference = voxmill.parseRttm(readFileSync(join(shared, 'audio', 'pyannote_sample.rttm'), 'utf8')).get('sample');
const { ms: sampleMs, result: sampleResult } = await time(() => speech.diarize(sample));
const score = voxmill.scoreDiarization(reference, sampleResult.turns);
await speech.close();

const share = median(runs.map((r) => r.share));
const overhead = median(runs.map((r) => r.overhead));
const report = {
  machine: { cpus: availableParallelism(), model: cpus()[0]?.model, load: loadavg(), node: process.version },
  repeats,
  gb0: {
    transcribeSeconds: median(runs.map((r) => r.transcribe)) / 1000,
    diarizeSeconds: median(runs.map((r) => r.diarize)) / 1000,
    transcribeWithSpeakersSeconds: median(runs.map((r) => r.transcribeWithSpeakers)) / 1000,
    diarizationShare: share,
    togetherOverhead: overhead,
    target: 0.15,
    met: share <= 0.15,
  },
  pyannoteSample: {
    der: score.der,
    missed: score.missed,
    falseAlarm: score.falseAlarm,
    confusion: score.confusion,
    scoredSeconds: score.total,
    speakers: sampleResult.speakers.length,
    diarizeSeconds: sampleMs / 1000,
    target: 0.15,
    met: score.der <= 0.15,
  },
  runs,
};
if (!noDevset && existsSync(join(devsetDir, 'manifest.json'))) {
  const files = devsetFiles();
  report.devset = [];
  for (const configuration of configurations('both')) {
    report.devset.push(
      await scoreConfiguration(voxmill, configuration, files, json ? () => {} : (l) => console.error(l)),
    );
  }
}
const out = writeResults('diarize', report);

if (json) {
  process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
} else {
  const met = (ok) => (ok ? 'target met' : 'target missed');
  const g = report.gb0;
  console.log(`gb0.wav (127 s), tiny.en-shaped model, ${repeats} repeat(s), medians:`);
  console.log(`  transcription alone          ${g.transcribeSeconds.toFixed(2)} s`);
  console.log(
    `  diarization alone            ${g.diarizeSeconds.toFixed(2)} s = ${(share * 100).toFixed(1)}% of transcription (<= 15%: ${met(g.met)})`,
  );
  console.log(
    `  transcribe({ diarize: true }) ${g.transcribeWithSpeakersSeconds.toFixed(2)} s = ${(overhead * 100).toFixed(1)}% over transcription alone`,
  );
  const p = report.pyannoteSample;
  console.log('pyannote_sample.wav against its RTTM (0.25 s collar), built-in features:');
  console.log(
    `  DER ${(p.der * 100).toFixed(1)}% (missed ${p.missed.toFixed(2)} s, false alarm ${p.falseAlarm.toFixed(2)} s, ` +
      `confusion ${p.confusion.toFixed(2)} s of ${p.scoredSeconds.toFixed(2)} s) (<= 15%: ${met(p.met)}); ${p.speakers} speakers`,
  );
  for (const run of report.devset ?? []) printSummary(run);
  console.log(`raw results: ${out}`);
}
