#!/usr/bin/env node
// Word timings (issue 21) with the real voice en_US-joe-medium and real recognizers: when voxmill says each word is
// spoken (the voice's own phoneme durations) against whisper.cpp's DTW word times on the synthesized audio, with
// tiny.en and with base, the two recognizers against each other (how far apart two references already are), and
// against a reference in the signal itself: where speech starts again after a silence (onsetDifferences).
// Also: the cost of the graph edit (first load and cached), of asking for timings, and the measured effect of each
// per-request voice control.
//
//   node bench/word-timings.mjs [--sets accuracy,prose] [--quick]
//
// Two sentence sets: `accuracy` (the 30 sentences of test/accuracy/sentences.mjs: numbers, abbreviations, quotes)
// and `prose` (the sentences of bench/tts.mjs's paragraphs). Words are paired in order by their spelling (a
// monotonic alignment of lowercased letters and digits), so a word either side misheard or spelled otherwise ("5"
// and "five") is left out rather than paired with a neighbour. Synthesis runs with noise_scale and noise_w 0, so
// the audio is the same on every run.
import { copyFileSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { ACCURACY_SENTENCES } from '../test/accuracy/sentences.mjs';
import { benchArgs, distEntry, ensureDist, flag, isEntry, realModels, root, runMain } from './lib.mjs';
import { PARAGRAPHS } from './tts.mjs';

/** The words of a text as compared: lowercase letters and digits only. */
const spelling = (word) => word.toLowerCase().replace(/[^\p{L}\p{N}]/gu, '');

/**
 * Pairs two timed word lists in order where their spelling is equal (the longest common subsequence), so each pair
 * is the same word in both; returns [a, b] pairs.
 */
export function pairWords(a, b) {
  const x = a.map((w) => spelling(w.word));
  const y = b.map((w) => spelling(w.word));
  const n = x.length;
  const m = y.length;
  const table = Array.from({ length: n + 1 }, () => new Int32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      table[i][j] = x[i] !== '' && x[i] === y[j] ? table[i + 1][j + 1] + 1 : Math.max(table[i + 1][j], table[i][j + 1]);
    }
  }
  const pairs = [];
  for (let i = 0, j = 0; i < n && j < m; ) {
    if (x[i] !== '' && x[i] === y[j]) pairs.push([a[i++], b[j++]]);
    else if (table[i + 1][j] >= table[i][j + 1]) i++;
    else j++;
  }
  return pairs;
}

/** Median and 95th percentile of |a.start - b.start| over pairs, in ms, and the mean signed difference. */
export function startDifferences(pairs) {
  return spreadOf(pairs.map(([a, b]) => (a.start - b.start) * 1000));
}

/** Frames of the onset detector: 10 ms windows every 5 ms at 16 kHz. */
const ONSET_HOP = 80;
const ONSET_WINDOW = 160;
/** Silence before an onset: at least 80 ms more than 35 dB under the loudest frame. */
const ONSET_QUIET_FRAMES = 16;
const ONSET_FLOOR_DB = 35;

/**
 * A reference that needs no recognizer: where speech starts again after a silence, found in the audio itself (16 kHz
 * samples), against the start voxmill gives the word nearest to it (within 300 ms). Returns voxmill's start minus
 * the onset, in ms, per onset. Words after a pause are the only ones whose start the signal shows plainly.
 */
export function onsetDifferences(samples, words) {
  const frames = Math.floor(samples.length / ONSET_HOP);
  const level = new Float32Array(frames);
  let loudest = -200;
  for (let f = 0; f < frames; f++) {
    let energy = 0;
    for (let i = 0; i < ONSET_WINDOW && f * ONSET_HOP + i < samples.length; i++)
      energy += samples[f * ONSET_HOP + i] ** 2;
    level[f] = 10 * Math.log10(energy / ONSET_WINDOW + 1e-12);
    loudest = Math.max(loudest, level[f]);
  }
  const differences = [];
  let quiet = Number.POSITIVE_INFINITY;
  for (let f = 0; f < frames; f++) {
    if (level[f] < loudest - ONSET_FLOOR_DB) {
      quiet++;
      continue;
    }
    if (quiet >= ONSET_QUIET_FRAMES) {
      const onset = (f * ONSET_HOP) / 16000;
      let nearest;
      for (const word of words) {
        if (!nearest || Math.abs(word.start - onset) < Math.abs(nearest.start - onset)) nearest = word;
      }
      if (nearest && Math.abs(nearest.start - onset) < 0.3) differences.push((nearest.start - onset) * 1000);
    }
    quiet = 0;
  }
  return differences;
}

/** Median and 95th percentile of absolute values, and the mean, of differences in ms. */
export function spreadOf(differences) {
  const sorted = differences.map(Math.abs).sort((a, b) => a - b);
  const at = (q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
  return {
    pairs: differences.length,
    medianMs: at(0.5),
    p95Ms: at(0.95),
    meanSignedMs: differences.reduce((s, v) => s + v, 0) / Math.max(1, differences.length),
  };
}

/** The sentence sets, by name. */
export function sentenceSets() {
  const prose = PARAGRAPHS.flatMap((p) => p.split(/(?<=[.!?])\s+/u)).filter((s) => s.length > 0);
  return { accuracy: [...ACCURACY_SENTENCES], prose };
}

async function main() {
  const { settings } = benchArgs('node bench/word-timings.mjs [options]', {
    sets: flag.string('sentence sets to score', { value: 'LIST', defaultText: 'accuracy,prose' }),
    quick: flag.boolean('ten sentences per set'),
  });
  ensureDist();
  const voxmill = await import(pathToFileURL(distEntry).href);
  const { timedVoiceModel } = await import(pathToFileURL(join(root, 'dist', 'tts', 'edited-voice.js')).href);
  const models = realModels(['whisper-tiny.en', 'whisper-base', 'piper-joe-medium']);
  const scratch = mkdtempSync(join(tmpdir(), 'voxmill-word-times-'));
  try {
    // The voice in a directory of its own, so the first load really edits the graph.
    const voiceFile = join(scratch, basename(models['piper-joe-medium']));
    copyFileSync(models['piper-joe-medium'], voiceFile);
    copyFileSync(`${models['piper-joe-medium']}.json`, `${voiceFile}.json`);
    let started = performance.now();
    await timedVoiceModel(voiceFile);
    const editMs = performance.now() - started;
    started = performance.now();
    await timedVoiceModel(voiceFile);
    const cachedMs = performance.now() - started;
    rmSync(join(scratch, (await timedVoiceModel(voiceFile)).path.split('/').pop()));

    const speech = voxmill.createSpeech({
      models: { 'svc-stt-1': models['whisper-tiny.en'], 'svc-stt-1-flash': models['whisper-base'] },
      voiceDirs: [dirname(voiceFile)],
      vadModel: null,
      idleUnloadMs: 0,
    });
    try {
      const voice = (await speech.listVoices()).find((v) => v.id.includes('joe')).id;
      const fixed = { voice, format: 'wav', noiseScale: 0, noiseW: 0 };
      // First synthesis with timings: the graph edit, then the session load, in the worker.
      started = performance.now();
      await speech.synthesizeToBuffer({ ...fixed, input: 'Hello.', timestamps: 'word' });
      const firstTimedMs = performance.now() - started;
      console.log(
        `graph edit: ${editMs.toFixed(0)} ms the first time (read, edit, write ${(statSync(voiceFile).size / 1e6).toFixed(0)} MB), ` +
          `${cachedMs.toFixed(1)} ms cached; first synthesis with timings (edit + load + 'Hello.') ${firstTimedMs.toFixed(0)} ms`,
      );

      // Cost of asking for timings: the same sentences with and without, warm, alternating.
      const sets = sentenceSets();
      const names = (settings.sets ?? 'accuracy,prose').split(',');
      const take = (list) => (settings.quick ? list.slice(0, 10) : list);
      const plainMs = [];
      const timedMs = [];
      for (const text of take(sets.accuracy)) {
        started = performance.now();
        await speech.synthesizeToBuffer({ ...fixed, input: text });
        plainMs.push(performance.now() - started);
        started = performance.now();
        await speech.synthesizeToBuffer({ ...fixed, input: text, timestamps: 'word' });
        timedMs.push(performance.now() - started);
      }
      const sum = (xs) => xs.reduce((a, b) => a + b, 0);
      console.log(
        `cost of timestamps 'word' (accuracy set, warm): ${sum(timedMs).toFixed(0)} ms against ${sum(plainMs).toFixed(0)} ms ` +
          `without (ratio ${(sum(timedMs) / sum(plainMs)).toFixed(3)})`,
      );

      for (const name of names) {
        const all = { tiny: [], base: [], between: [], onsets: [] };
        for (const text of take(sets[name])) {
          const out = await speech.synthesizeToBuffer({ ...fixed, input: text, timestamps: 'word' });
          all.onsets.push(...onsetDifferences((await voxmill.decodeAudio(out.audio)).samples, out.words));
          const tiny = await speech.transcribe(out.audio, { model: 'svc-stt-1', language: 'en', timestamps: 'word' });
          const base = await speech.transcribe(out.audio, {
            model: 'svc-stt-1-flash',
            language: 'en',
            timestamps: 'word',
          });
          all.tiny.push(...pairWords(out.words, tiny.words ?? []));
          all.base.push(...pairWords(out.words, base.words ?? []));
          all.between.push(...pairWords(tiny.words ?? [], base.words ?? []));
        }
        const line = (what, stats) =>
          `  ${what.padEnd(28)} ${String(stats.pairs).padStart(4)} words  median ${stats.medianMs.toFixed(0).padStart(4)} ms` +
          `  p95 ${stats.p95Ms.toFixed(0).padStart(4)} ms  mean signed ${stats.meanSignedMs.toFixed(0).padStart(4)} ms`;
        console.log(`${name} (${take(sets[name]).length} sentences), |start difference|:`);
        console.log(line('voxmill vs tiny.en DTW', startDifferences(all.tiny)));
        console.log(line('voxmill vs base DTW', startDifferences(all.base)));
        console.log(line('tiny.en DTW vs base DTW', startDifferences(all.between)));
        console.log(line('voxmill vs onsets after pauses', spreadOf(all.onsets)));
      }

      // The per-request controls, measured on one paragraph.
      const text =
        'The keeper climbed the stairs. The light could be seen far out to sea. Sailors counted its flashes.';
      const seconds = async (options) =>
        (await speech.synthesizeToBuffer({ ...fixed, input: text, ...options })).duration;
      const none = await seconds({ sentenceSilence: 0 });
      const controls = [];
      for (const lengthScale of [0.5, 1.5, 2]) {
        controls.push(
          `length_scale ${lengthScale}: ${((await seconds({ sentenceSilence: 0, lengthScale })) / none).toFixed(3)}x`,
        );
      }
      for (const sentenceSilence of [0.5, 1]) {
        const added = ((await seconds({ sentenceSilence })) - none) / 2;
        controls.push(`sentence_silence ${sentenceSilence}: +${added.toFixed(3)} s per pause`);
      }
      const pcm = async (options) =>
        (await speech.synthesizeToBuffer({ voice, format: 'pcm16', input: text, ...options })).audio;
      const same = (await pcm({ noiseScale: 0, noiseW: 0 })).equals(await pcm({ noiseScale: 0, noiseW: 0 }));
      const differs = !(await pcm({})).equals(await pcm({}));
      const wLengths = new Set();
      for (let i = 0; i < 3; i++) wLengths.add((await pcm({ noiseScale: 0, noiseW: 1.5 })).length);
      controls.push(`noise_scale 0 + noise_w 0: identical audio twice ${same}; defaults: two runs differ ${differs}`);
      controls.push(`noise_w 1.5 (noise_scale 0): ${wLengths.size} different lengths in 3 runs`);
      console.log(`controls (against ${none.toFixed(3)} s with no pause): ${controls.join('; ')}`);
    } finally {
      await speech.close();
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

if (isEntry(import.meta.url)) runMain('word-timings', main);
