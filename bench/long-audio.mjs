#!/usr/bin/env node
// Long audio (issue 20): the 60-minute file of scripts/nonspeech/make-set.mjs --full (the four shared clips in turn,
// 2-6 s of room tone between, 1 h) through voxmill with real weights, against the same clips transcribed alone.
//
//   node bench/long-audio.mjs [--models tiny.en] [--vad on,off] [--threads 2]
//
// Reported per model and VAD setting: WER of the whole file against the clips' texts in order, and the WER of the
// clips alone (the target: within 1 point); islands dropped (over half their words missing) and repeated (more
// words than the reference by half, or a loop src/stt/repetition.ts's detector finds in the segments); words outside every
// island (invented); the median and p95 error of word starts against the same words of the clip alone (moved to
// where the clip was put; a clip's first word at its speech onset, from its energy), and of each island's first
// word against that onset; wall time and the process's peak RSS.
// Results: bench/out/long-audio-<time>.json and a markdown table on stdout.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
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
  root,
  runMain,
  sharedAudio,
  sharedDir,
  speechOnset,
  transcriptWords,
  wordEdits,
  writeResults,
} from './lib.mjs';

const MODELS = { 'tiny.en': 'whisper-tiny.en', base: 'whisper-base' };
const setDir = join(root, 'test', 'fixtures', 'nonspeech');
const sileroModel = join(sharedDir, 'models', 'whisper', 'ggml-silero-v6.2.0.bin');

const { settings } = benchArgs('node bench/long-audio.mjs [flags]', {
  models: flag.list('real models', MODELS, ['tiny.en']),
  vad: flag.list('VAD settings to run', { on: 'on', off: 'off' }),
  threads: flag.integer('threads per transcription', 2),
  options: flag.json('extra transcribe options (e.g. {"conditionOnPreviousText":false})', {}),
});

function ensureLongFile() {
  const manifestFile = join(setDir, 'manifest.json');
  const has = () =>
    existsSync(manifestFile) &&
    JSON.parse(readFileSync(manifestFile, 'utf8')).files.some((entry) => entry.kind === 'long');
  if (has()) return;
  const made = spawnSync(process.execPath, [join(root, 'scripts', 'nonspeech', 'make-set.mjs'), '--full'], {
    stdio: 'inherit',
  });
  if (made.status !== 0 || !has()) throw new Error('scripts/nonspeech/make-set.mjs --full failed');
}

const wer = (reference, hypothesis) => {
  const ref = transcriptWords(reference);
  return { errors: wordEdits(ref, transcriptWords(hypothesis)), words: ref.length };
};

const percentile = (values, p) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
};

async function main() {
  ensureDist();
  ensureLongFile();
  const { createSpeech } = await import(join(root, 'dist', 'index.js'));
  const { findTextLoops } = await import(join(root, 'dist', 'stt', 'repetition.js'));
  const manifest = JSON.parse(readFileSync(join(setDir, 'manifest.json'), 'utf8'));
  const long = manifest.files.find((entry) => entry.kind === 'long');
  const real = realModels(settings.models.map((m) => MODELS[m]));
  const document = { bench: 'long-audio', commit: gitCommit(), machine: machineFacts(), settings, results: [] };
  for (const model of settings.models) {
    const speech = createSpeech({
      models: { 'svc-stt-1': { model: real[MODELS[model]], threads: settings.threads } },
      vadModel: sileroModel,
      idleUnloadMs: 0,
    });
    try {
      // The clips alone: their WER, and where each one's first word starts.
      const clips = new Map();
      for (const clip of [...new Set(long.islands.map((island) => island.clip))]) {
        const alone = await speech.transcribe(sharedAudio(clip), { language: 'en', timestamps: 'word', vad: false });
        const text = long.islands.find((island) => island.clip === clip).text;
        const onset = await speechOnset(sharedAudio(clip));
        // The first word's start is the clip's speech onset: whisper starts it at the segment's start.
        const words = alone.words.map((w, i) => ({
          key: transcriptWords(w.word).join(' '),
          start: i === 0 ? onset : w.start,
        }));
        clips.set(clip, { text: alone.text, onset, timed: words, ...wer(text, alone.text) });
      }
      const aloneErrors = long.islands.reduce((sum, island) => sum + clips.get(island.clip).errors, 0);
      const referenceWords = long.islands.reduce((sum, island) => sum + clips.get(island.clip).words, 0);
      for (const vad of settings.vad) {
        process.stderr.write(`${model}: 60 min, VAD ${vad}\n`);
        const started = performance.now();
        const result = await speech.transcribe(join(setDir, long.file), {
          language: 'en',
          timestamps: 'word',
          ...settings.options,
          vad: vad === 'on',
        });
        const seconds = (performance.now() - started) / 1000;
        const whole = wer(long.islands.map((island) => island.text).join(' '), result.text);
        // Words by island: those starting from 1 s before an island to 1 s after it (the gaps are 2-6 s).
        const wordErrors = [];
        const islands = long.islands.map((island) => {
          const words = result.words.filter((w) => w.start >= island.start - 1 && w.start < island.end + 1);
          const { errors, words: refWords } = wer(island.text, words.map((w) => w.word).join(' '));
          const firstError = words.length > 0 ? words[0].start - (island.start + clips.get(island.clip).onset) : null;
          // Every word against the same word of the clip alone, matched in order (at most 3 words apart).
          let j = 0;
          for (const ref of clips.get(island.clip).timed) {
            const k = words.findIndex((w, index) => index >= j && transcriptWords(w.word).join(' ') === ref.key);
            if (k === -1 || k - j > 3) continue;
            wordErrors.push(Math.abs(words[k].start - (island.start + ref.start)));
            j = k + 1;
          }
          return { clip: island.clip, start: island.start, hypWords: words.length, refWords, errors, firstError };
        });
        const outside = result.words.filter(
          (w) => !long.islands.some((island) => w.start >= island.start - 1 && w.start < island.end + 1),
        );
        const dropped = islands.filter((island) => island.errors > island.refWords / 2).length;
        const repeated = islands.filter((island) => island.hypWords > 1.5 * island.refWords);
        const loops = findTextLoops((result.segments ?? []).map((s) => s.text)).length;
        const firstErrors = islands.filter((i) => i.firstError !== null).map((i) => Math.abs(i.firstError));
        const row = {
          model,
          vad,
          seconds: Number(seconds.toFixed(1)),
          peakRssMb: Math.round(process.resourceUsage().maxRSS / 1024),
          islands: long.islands.length,
          wer: whole.errors / whole.words,
          clipsAloneWer: aloneErrors / referenceWords,
          dropped,
          repeatedIslands: repeated.length,
          loops,
          inventedWords: outside.length,
          invented: outside.slice(0, 20).map((w) => `${w.word}@${w.start}`),
          firstWordErrorMedian: median(firstErrors),
          firstWordErrorP95: percentile(firstErrors, 0.95),
          wordErrorMedian: median(wordErrors),
          wordErrorP95: percentile(wordErrors, 0.95),
          islandDetail: islands,
        };
        document.results.push(row);
      }
    } finally {
      await speech.close();
    }
  }
  const outFile = writeResults('long-audio', document);
  const pct = (x) => `${(x * 100).toFixed(1)} %`;
  const ms = (x) => `${Math.round(x * 1000)} ms`;
  const lines = [
    '| model | VAD | 60-min WER | clips alone | dropped | repeated | loops | invented words | word start error median / p95 | first words | time | peak RSS |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    ...document.results.map(
      (r) =>
        `| ${r.model} | ${r.vad} | ${pct(r.wer)} | ${pct(r.clipsAloneWer)} | ${r.dropped} of ${r.islands} | ${r.repeatedIslands} | ${r.loops} | ${r.inventedWords} | ${ms(r.wordErrorMedian)} / ${ms(r.wordErrorP95)} | ${ms(r.firstWordErrorMedian)} / ${ms(r.firstWordErrorP95)} | ${r.seconds} s | ${r.peakRssMb} MB |`,
    ),
  ];
  process.stdout.write(`${lines.join('\n')}\n${outFile}\n`);
}

runMain('long-audio', main);
