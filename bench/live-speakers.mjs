#!/usr/bin/env node
// Speaker labels of live transcription (`createTranscriber({ diarize: true })`) on the generated development set:
// each conversation is streamed through the public API (real tiny.en, real GE2E, 100 ms chunks as fast as the
// transcriber takes them), its finals (start, end, speaker) are scored as turns against the RTTM truth (the project's
// DER: 0.25 s collar, overlaps scored), and the speaker count is checked. With --grid, each final's voice is
// diarized again from the same samples and the online clustering (LiveSpeakers) replayed with each setting: the
// sweep that chose LIVE_SPEAKER_THRESHOLDS, without decoding every file once per threshold.
//
//   node bench/live-speakers.mjs [--match TEXT] [--devset DIR] [--grid JSON] [--json]
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { devsetDir, devsetFiles, ge2eModel, scoreTurns } from './diarize-devset.mjs';
import { benchArgs, distEntry, ensureDist, flag, realModels, root, sharedDir, writeResults } from './lib.mjs';

const { settings } = benchArgs('node bench/live-speakers.mjs [flags]', {
  match: flag.string('only files whose name contains this', { value: 'TEXT', defaultText: 'all' }),
  devset: flag.string('the development set to score', { value: 'DIR', defaultText: 'test/fixtures/diarize-dev' }),
  grid: flag.json('LiveSpeakers settings to replay the online clustering with, e.g. {"threshold":[0.2,0.25]}', {}),
  json: flag.boolean('write bench/results/live-speakers.json'),
});
ensureDist();
const voxmill = await import(pathToFileURL(distEntry).href);
const dist = (file) => import(pathToFileURL(join(root, 'dist', file)).href);
const { LiveSpeakers } = await dist('diarize/live-speakers.js');
const { Diarizer } = await dist('diarize/diarizer.js');
const { LIVE_SPEAKER_DEFAULTS, LIVE_SPEAKER_THRESHOLDS } = await dist('stt/live-options.js');
const { resolveDiarizationConfig } = await dist('diarize/config.js');

const ge2e = ge2eModel();
const { 'whisper-tiny.en': tinyEn } = realModels(['whisper-tiny.en']);
if (!ge2e) throw new Error("no GE2E model: run 'npm run models:test'");
const vadModel = join(sharedDir, 'models', 'whisper', 'ggml-silero-v6.2.0.bin');
const RATE = 16000;
const CHUNK = RATE / 10;
const files = devsetFiles(settings.match ?? '', settings.devset ?? devsetDir).filter((f) => f.generated);
const pct = (x) => `${(x * 100).toFixed(1).padStart(5)}%`;
const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;

/** Streams the samples through a live transcription with speaker labels; its finals and the seconds it took. */
async function stream(speech, samples) {
  const live = speech.createTranscriber({ diarize: true, interimIntervalMs: 0 });
  const finals = [];
  live.on('final', (event) => finals.push(event));
  const started = performance.now();
  for (let i = 0; i < samples.length; i += CHUNK) {
    if (!live.write(samples.subarray(i, i + CHUNK))) await new Promise((resolve) => live.once('drain', resolve));
  }
  live.end();
  await new Promise((resolve, reject) => {
    live.once('finish', resolve);
    live.once('error', reject);
  });
  return { finals, seconds: (performance.now() - started) / 1000 };
}

const score = (file, reference, labelled) =>
  scoreTurns(
    voxmill,
    file,
    reference,
    labelled.filter((t) => t.speaker !== undefined && t.end > t.start),
  );

function summary(rows) {
  const variants = [...new Set(rows.map((r) => r.variant))].map((v) => {
    const of = rows.filter((r) => r.variant === v);
    return `${v} ${pct(mean(of.map((r) => r.der)))}`;
  });
  return {
    meanDer: mean(rows.map((r) => r.der)),
    countRight: mean(rows.map((r) => (r.found === r.speakers ? 1 : 0))),
    text: `mean DER ${pct(mean(rows.map((r) => r.der)))} (${variants.join(', ')}; miss ${pct(mean(rows.map((r) => r.missed)))}, fa ${pct(mean(rows.map((r) => r.falseAlarm)))}, conf ${pct(mean(rows.map((r) => r.confusion)))}), count right ${pct(mean(rows.map((r) => (r.found === r.speakers ? 1 : 0))))} over ${rows.length} files`,
  };
}

const speech = voxmill.createSpeech({
  vadModel,
  models: { 'svc-stt-1': tinyEn },
  diarization: { embeddingModel: ge2e },
  idleUnloadMs: 0,
});
const keys = Object.keys(settings.grid);
const combos = keys.reduce((acc, key) => acc.flatMap((c) => settings.grid[key].map((v) => ({ ...c, [key]: v }))), [{}]);
const replay = keys.length > 0;
const diarizer = replay ? new Diarizer({ intraOpThreads: 1, maxQueue: 1000, onnxRuntime: 'auto' }) : undefined;
// What the live flow asks of the worker for each utterance (src/engine/live-speaker-flow.ts).
const utteranceSettings = {
  ...resolveDiarizationConfig({ embeddingModel: ge2e }).base,
  minSpeakers: 1,
  maxSpeakers: LIVE_SPEAKER_DEFAULTS.maxSpeakers,
  numSpeakers: undefined,
};
const rows = [];
const voicesPerFile = [];
let audioSeconds = 0;
let wallSeconds = 0;
try {
  for (const file of files) {
    const { samples } = await voxmill.decodeAudio(file.wav);
    const reference = [...voxmill.parseRttm(readFileSync(file.rttm, 'utf8')).values()][0];
    const { finals, seconds } = await stream(speech, samples);
    audioSeconds += samples.length / RATE;
    wallSeconds += seconds;
    const row = score(
      file,
      reference,
      finals.flatMap((f) => f.turns ?? []),
    );
    rows.push(row);
    console.log(
      `${file.name.padEnd(24)} DER ${pct(row.der)} (miss ${pct(row.missed)}, fa ${pct(row.falseAlarm)}, conf ${pct(row.confusion)}) speakers ${row.found}/${row.speakers}, ${finals.length} utterances`,
    );
    if (diarizer) {
      const utterances = [];
      for (const f of finals) {
        const piece = samples.slice(Math.round(f.start * RATE), Math.round(f.end * RATE));
        if (piece.length === 0) continue;
        const found = await diarizer.utterance(piece, utteranceSettings, ge2e);
        const turns = found.turns.map((t) => ({ ...t, start: t.start + f.start, end: t.end + f.start }));
        utterances.push({ turns, voices: found.voices });
      }
      voicesPerFile.push({ file, reference, utterances });
    }
  }
} finally {
  await speech.close();
  await diarizer?.close();
}
const live = summary(rows);
console.log(
  `live (default threshold ${LIVE_SPEAKER_THRESHOLDS.ge2e}): ${live.text}; stream at ${(audioSeconds / wallSeconds).toFixed(1)}x real time`,
);
const sweep = [];
for (const combo of replay ? combos : []) {
  const replayed = voicesPerFile.map(({ file, reference, utterances }) => {
    const speakers = new LiveSpeakers({ threshold: LIVE_SPEAKER_THRESHOLDS.ge2e, ...LIVE_SPEAKER_DEFAULTS, ...combo });
    return score(
      file,
      reference,
      utterances.flatMap((u) => speakers.label(u.turns, u.voices)),
    );
  });
  const s = summary(replayed);
  sweep.push({ ...combo, meanDer: s.meanDer, countRight: s.countRight });
  console.log(`${JSON.stringify(combo)}: ${s.text}`);
}
if (settings.json) writeResults('live-speakers', { rows, summary: live, sweep, audioSeconds, wallSeconds });
