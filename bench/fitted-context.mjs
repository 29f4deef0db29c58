#!/usr/bin/env node
// Short clips with an encoder context fitted to them (TranscribeOptions.fittedContextSeconds, src/stt/fitted-context.ts)
// against whisper's full 30 s window, with real weights: speed, word error rate, and how often the fitted decode is
// thrown away for the full one.
//
//   npm run bench:fitted-context [-- options]     (the flags: FLAGS below, or `node bench/fitted-context.mjs --help`)
//
// Needs `npm run models:test` (real tiny.en and base). Clips, all under 10 s:
// - every file of ../shared/audio/transcripts.tsv shorter than 10 s (LibriSpeech and LJ Speech, whole utterances):
//   scored against the reference transcript;
// - the first 1, 2, 3, 5 and 8 s of jfk.wav and ten 2-9 s slices of gb0.wav at fixed offsets, cut anywhere (mid-word
//   too, the hard case for a short context): scored against the full window's own text, since no reference exists.
// Each clip, decoding and model is transcribed through createSpeech as a user gets it, with fittedContextSeconds 0
// (full window) and 10 (shortened: the default, DEFAULT_FITTED_CONTEXT_SECONDS),
// --repeats warm calls each, alternating; the time is the median. The
// "fell back" column comes from one extra fitted decode through the addon itself (the parameters fittedContext()
// gives): TOKEN_LIMIT, or a repeat loop or a phrase said twice (fittedDecodeFailed), each of which makes the library
// decode again with the full window.
// Decodings: greedy without DTW (svc-stt-1-flash's) and beam 5 with DTW word timestamps (svc-stt-1's); with DTW the
// word starts of the two runs are compared too (median and largest difference over words both runs have in the
// same order). VAD off on both sides (it changes the audio's length, not this comparison).
// Results: bench/out/fitted-context-<time>.json and markdown tables on stdout.
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import {
  benchArgs,
  ensureDist,
  flag,
  gitCommit,
  machineFacts,
  median,
  readReferences,
  realModels,
  referenceWer,
  root,
  runMain,
  sharedAudio,
  transcriptWords,
  writeResults,
} from './lib.mjs';

const MODELS = { 'tiny.en': 'whisper-tiny.en', base: 'whisper-base' };
const DECODINGS = {
  greedy: { beamSize: 1, dtw: false, timestamps: 'segment' },
  'beam5-dtw': { beamSize: 5, dtw: true, timestamps: 'word' },
};
const RATE = 16_000;
const JFK_CUTS = [1, 2, 3, 5, 8];
/** gb0.wav slices: [start, seconds], spread over the file, lengths 2-9 s. */
const GB0_SLICES = [
  [3, 2],
  [14.3, 3],
  [25.7, 4],
  [37.1, 5],
  [48.9, 6],
  [60.2, 7],
  [71.6, 8],
  [83.3, 9],
  [95.5, 2.5],
  [108.8, 6.5],
];

const { settings } = benchArgs('npm run bench:fitted-context [-- options]', {
  models: flag.list('real models', MODELS),
  decodings: flag.list('decodings', DECODINGS),
  repeats: flag.integer('warm calls per clip and side (the median is taken)', 3),
  threads: flag.integer('threads per transcription', 1),
  quick: flag.boolean('1 repeat, tiny.en, greedy'),
});
if (settings.quick) Object.assign(settings, { repeats: 1, models: ['tiny.en'], decodings: ['greedy'] });

const dist = await import(join(root, 'dist', 'index.js'));
const { native } = await import(join(root, 'dist', 'native.js'));
const { normalizeTranscribeOptions } = await import(join(root, 'dist', 'stt', 'request.js'));
const { CUSTOM_STT_TIER } = await import(join(root, 'dist', 'tiers.js'));
const { DEFAULT_DECODER_PRECISION, DEFAULT_GREEDY_INT8_VOCABULARY } = await import(
  join(root, 'dist', 'stt', 'whisper-model.js')
);
const { DEFAULT_FITTED_CONTEXT_SECONDS, fittedContext, fittedDecodeFailed } = await import(
  join(root, 'dist', 'stt', 'fitted-context.js')
);
/** The fitted side's fittedContextSeconds: the library's default. */
const FITTED_SECONDS = DEFAULT_FITTED_CONTEXT_SECONDS;

async function clips() {
  const out = [];
  for (const [file, text] of readReferences()) {
    const { samples } = await dist.decodeAudio(sharedAudio(file));
    if (samples.length / RATE < FITTED_SECONDS && !out.some((c) => c.name === file.replace(/\.\w+$/, ''))) {
      out.push({ name: file.replace(/\.\w+$/, ''), samples, reference: text });
    }
  }
  const jfk = (await dist.decodeAudio(sharedAudio('jfk.wav'))).samples;
  for (const s of JFK_CUTS) out.push({ name: `jfk first ${s} s`, samples: jfk.slice(0, s * RATE) });
  const gb0 = (await dist.decodeAudio(sharedAudio('gb0.wav'))).samples;
  for (const [start, s] of GB0_SLICES) {
    out.push({ name: `gb0 ${start}+${s} s`, samples: gb0.slice(start * RATE, (start + s) * RATE) });
  }
  return out;
}

/** Word start differences (s) between two runs over the words they share in order (a word-level diff walk). */
function startDiffs(a = [], b = []) {
  const diffs = [];
  let j = 0;
  for (const word of a) {
    const k = b.findIndex((w, at) => at >= j && w.word.trim().toLowerCase() === word.word.trim().toLowerCase());
    if (k < 0) continue;
    diffs.push(Math.abs(b[k].start - word.start));
    j = k + 1;
  }
  return diffs;
}

/** One fitted decode through the addon: 'ok', 'token limit' or 'loop' (what makes the library fall back). */
async function fittedOutcome(model, samples, decoding) {
  const fitted = fittedContext(samples.length / RATE, FITTED_SECONDS);
  if (!fitted) return 'not short';
  // The native parameters createSpeech sends for this call (the library's own defaults), plus the fitted ones.
  const { params: called } = normalizeTranscribeOptions(
    { language: 'en', timestamps: decoding.timestamps, beamSize: decoding.beamSize },
    { ...CUSTOM_STT_TIER, threads: settings.threads },
  );
  const params = { ...called, ...fitted };
  try {
    const result = await model.transcribe(samples, params).promise;
    return fittedDecodeFailed(result.segments) ? 'loop' : 'ok';
  } catch (error) {
    if (error?.code === 'TOKEN_LIMIT') return 'token limit';
    throw error;
  }
}

async function measure(modelName, modelPath, decodingName, all) {
  const decoding = DECODINGS[decodingName];
  const speech = dist.createSpeech({
    models: { bench: { model: modelPath, threads: settings.threads, dtw: decoding.dtw, beamSize: decoding.beamSize } },
    vadModel: null,
    cpuThreads: settings.threads,
  });
  const direct = await native().WhisperModel.load(modelPath, {
    gpu: false,
    flashAttention: true,
    dtw: decoding.dtw,
    // The library's own load defaults, as createSpeech's model above gets them.
    decoderInt8: DEFAULT_DECODER_PRECISION === 'int8',
    greedyInt8Vocabulary: DEFAULT_GREEDY_INT8_VOCABULARY,
    gpuDevice: 0,
  }).promise;
  const rows = [];
  try {
    const options = (fitted) => ({
      model: 'bench',
      language: 'en',
      vad: false,
      timestamps: decoding.timestamps,
      fittedContextSeconds: fitted ? FITTED_SECONDS : 0,
    });
    await speech.transcribe(all[0].samples, options(false));
    for (const clip of all) {
      const times = { full: [], fitted: [] };
      const results = {};
      for (let r = 0; r < settings.repeats; r++) {
        for (const side of r % 2 === 0 ? ['full', 'fitted'] : ['fitted', 'full']) {
          const started = performance.now();
          results[side] = await speech.transcribe(clip.samples, options(side === 'fitted'));
          times[side].push(performance.now() - started);
        }
      }
      const reference = clip.reference ?? results.full.text;
      const diffs = decoding.timestamps === 'word' ? startDiffs(results.full.words, results.fitted.words) : [];
      rows.push({
        model: modelName,
        decoding: decodingName,
        clip: clip.name,
        seconds: clip.samples.length / RATE,
        scoredAgainst: clip.reference ? 'reference' : 'full window',
        fullMs: median(times.full),
        fittedMs: median(times.fitted),
        fullWer: clip.reference ? referenceWer(results.full.text, reference) : 0,
        fittedWer: referenceWer(results.fitted.text, reference),
        fullText: results.full.text,
        fittedText: results.fitted.text,
        outcome: await fittedOutcome(direct, clip.samples, decoding),
        wordStartDiffMedianMs: diffs.length ? Math.round(median(diffs) * 1000) : null,
        wordStartDiffMaxMs: diffs.length ? Math.round(Math.max(...diffs) * 1000) : null,
      });
    }
  } finally {
    direct.dispose();
    await speech.close();
  }
  return rows;
}

const pct = (x) => `${(100 * x).toFixed(1)} %`;
const ms = (x) => Math.round(x).toLocaleString('en-US');

function table(rows) {
  const lines = [
    '| model | decoding | clip | s | full ms | fitted ms | speed-up | WER full | WER fitted | fitted decode | word starts Δ median / max ms |',
    '| --- | --- | --- | --: | --: | --: | --: | --: | --: | --- | --: |',
  ];
  for (const r of rows) {
    lines.push(
      `| ${r.model} | ${r.decoding} | ${r.clip} | ${r.seconds.toFixed(1)} | ${ms(r.fullMs)} | ${ms(r.fittedMs)} | ` +
        `${(r.fullMs / r.fittedMs).toFixed(2)}× | ${r.scoredAgainst === 'reference' ? pct(r.fullWer) : '(ref.)'} | ` +
        `${pct(r.fittedWer)} | ${r.outcome} | ${r.wordStartDiffMedianMs ?? '-'} / ${r.wordStartDiffMaxMs ?? '-'} |`,
    );
  }
  return lines.join('\n');
}

function summary(rows) {
  const lines = [
    '| model | decoding | clips | total full ms | total fitted ms | speed-up | corpus WER full / fitted (references) | words changed vs full (cut slices) | fell back |',
    '| --- | --- | --: | --: | --: | --: | --- | --: | --: |',
  ];
  const groups = new Map();
  for (const r of rows) {
    const key = `${r.model} | ${r.decoding}`;
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(r);
  }
  for (const [key, group] of groups) {
    const full = group.reduce((s, r) => s + r.fullMs, 0);
    const fitted = group.reduce((s, r) => s + r.fittedMs, 0);
    const refs = group.filter((r) => r.scoredAgainst === 'reference');
    const words = (r) => transcriptWords(r.fullText).length;
    const refWords = refs.reduce((s, r) => s + transcriptWords(referenceOf(r)).length, 0);
    const editsFull = refs.reduce((s, r) => s + r.fullWer * transcriptWords(referenceOf(r)).length, 0);
    const editsFitted = refs.reduce((s, r) => s + r.fittedWer * transcriptWords(referenceOf(r)).length, 0);
    const cuts = group.filter((r) => r.scoredAgainst !== 'reference');
    const changed = cuts.reduce((s, r) => s + Math.round(r.fittedWer * words(r)), 0);
    const cutWords = cuts.reduce((s, r) => s + words(r), 0);
    const fellBack = group.filter((r) => r.outcome !== 'ok').length;
    lines.push(
      `| ${key} | ${group.length} | ${ms(full)} | ${ms(fitted)} | ${(full / fitted).toFixed(2)}× | ` +
        `${pct(editsFull / refWords)} / ${pct(editsFitted / refWords)} | ${changed} of ${cutWords} | ${fellBack} |`,
    );
  }
  return lines.join('\n');
}

let referenceText = new Map();
const referenceOf = (row) => referenceText.get(row.clip) ?? '';

async function main() {
  ensureDist();
  const models = realModels(settings.models.map((m) => MODELS[m]));
  const all = await clips();
  referenceText = new Map(all.filter((c) => c.reference).map((c) => [c.name, c.reference]));
  const rows = [];
  for (const model of settings.models) {
    for (const decoding of settings.decodings) {
      process.stderr.write(`${model}, ${decoding}: ${all.length} clips\n`);
      rows.push(...(await measure(model, models[MODELS[model]], decoding, all)));
    }
  }
  process.stdout.write(`${summary(rows)}\n\n${table(rows)}\n`);
  const file = writeResults('fitted-context', {
    commit: gitCommit(),
    machine: machineFacts(),
    settings,
    rows,
  });
  process.stdout.write(`${file}\n`);
}

runMain('fitted-context', main);
