#!/usr/bin/env node
// Invented words (issue 20): what voxmill, whisper-cli and faster-whisper transcribe from audio with no speech in it,
// and how well they transcribe speech islands inside silence, room tone, noise and music, with real weights.
//
//   node bench/nonspeech.mjs [--models tiny.en,base] [--engines voxmill,whisper-cli,fw] [--only NAME,...]
//
// The set comes from scripts/nonspeech/make-set.mjs (made here when missing). Every engine runs as its users get it,
// once with its VAD off and once on:
// - voxmill: createSpeech with the model as svc-stt-1 (its tier defaults: beam 5, DTW word times), vad false / true
//   (the Silero v6.2.0 model from ../shared).
// - whisper-cli (bench/build-whisper-cli.mjs, the same whisper.cpp tree): its defaults, `-l en -oj`, and
//   `--vad -vm <silero>` for VAD on (with the GGML_OPENMP=ON build, see whisperCli()).
// - faster-whisper 1.2.1 (the peers venv): its library defaults, language en, vad_filter false / true.
// Per file: the words emitted (for pure non-speech every word is invented), and for islands the word error rate
// against the islands' reference texts in order (words lower-cased, letters, digits and apostrophes); whisper's
// bracketed annotations ([BLANK_AUDIO], (music)) are counted apart, and a whisper-cli run still decoding after
// --timeout-seconds is stopped and reported as a loop.
// Results: bench/out/nonspeech-<time>.json and a markdown table on stdout.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
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

const MODELS = {
  'tiny.en': { ggml: 'whisper-tiny.en', ct2: 'ct2-whisper-tiny.en' },
  base: { ggml: 'whisper-base', ct2: 'ct2-whisper-base' },
};
const ENGINES = { voxmill: 'voxmill', 'whisper-cli': 'whisper-cli', fw: 'faster-whisper' };
const setDir = join(root, 'test', 'fixtures', 'nonspeech');
const sileroModel = join(sharedDir, 'models', 'whisper', 'ggml-silero-v6.2.0.bin');

const { settings } = benchArgs('node bench/nonspeech.mjs [flags]', {
  models: flag.list('real models', MODELS, ['tiny.en']),
  engines: flag.list('engines', ENGINES),
  only: flag.string('only these files of the set (comma-separated names without .wav)', { defaultText: 'all' }),
  vad: flag.list('VAD runs (voxmill only: the peers always run both)', { off: 'off', on: 'on' }),
  threads: flag.integer('threads per transcription', 2),
  'timeout-seconds': flag.integer('give up on one whisper-cli run (a repeat loop) after this long', 120),
  python: flag.string('the peers venv python', { defaultText: 'bash scripts/peers-setup.sh' }),
  options: flag.json('voxmill: extra transcribe options for both runs (e.g. {"conditionOnPreviousText":false})', {}),
  'vad-options': flag.json('voxmill: the VAD-on run\'s vad option (e.g. {"speechPadMs":400})', true),
  'decoder-precision': flag.decoderPrecision(),
});

function ensureSet() {
  if (existsSync(join(setDir, 'manifest.json'))) return;
  const made = spawnSync(process.execPath, [join(root, 'scripts', 'nonspeech', 'make-set.mjs')], { stdio: 'inherit' });
  if (made.status !== 0) throw new Error('scripts/nonspeech/make-set.mjs failed');
}

async function voxmill(modelPath, files, vads = settings.vad) {
  const { createSpeech } = await import(join(root, 'dist', 'index.js'));
  const speech = createSpeech({
    models: {
      'svc-stt-1': { model: modelPath, threads: settings.threads, decoderPrecision: settings.decoderPrecision },
    },
    vadModel: sileroModel,
  });
  const results = { off: [], on: [] };
  try {
    for (const vad of vads) {
      for (const file of files) {
        const started = performance.now();
        const result = await speech.transcribe(file, {
          language: 'en',
          timestamps: 'word',
          ...settings.options,
          vad: vad === 'on' ? settings.vadOptions : false,
        });
        const seconds = (performance.now() - started) / 1000;
        results[vad].push({ text: result.text, words: result.words ?? [], seconds });
      }
    }
  } finally {
    await speech.close();
  }
  return results;
}

async function whisperCli(modelPath, files) {
  const { ensureWhisperCli } = await import('./build-whisper-cli.mjs');
  const { cliText } = await import('./stt.mjs');
  // VAD on uses the -DGGML_OPENMP=ON build: whisper.cpp's whisper_vad() ignores -t and runs Silero with 4 threads,
  // and with ggml's spinning barriers on a machine with fewer cores (2 here) it never finishes; OpenMP's sleep.
  const cli = { off: ensureWhisperCli(), on: ensureWhisperCli({ openmp: true }) };
  const scratch = mkdtempSync(join(tmpdir(), 'voxmill-nonspeech-'));
  const results = { off: [], on: [] };
  try {
    for (const vad of ['off', 'on']) {
      for (const file of files) {
        const out = join(scratch, 'out');
        const args = ['-m', modelPath, '-f', file, '-t', String(settings.threads), '-l', 'en', '-oj', '-of', out];
        if (vad === 'on') args.push('--vad', '-vm', sileroModel);
        const started = performance.now();
        const run = spawnSync(cli[vad], args, { encoding: 'utf8', timeout: settings.timeoutSeconds * 1000 });
        const seconds = (performance.now() - started) / 1000;
        if (run.error?.code === 'ETIMEDOUT') {
          // Still decoding when given up on: a loop of invented text, counted as such.
          results[vad].push({ text: '', words: null, seconds, timedOut: true });
          continue;
        }
        if (run.status !== 0) throw new Error(`whisper-cli failed on ${file}: ${run.stderr.slice(-500)}`);
        results[vad].push({ text: cliText(`${out}.json`).text, words: null, seconds });
      }
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  return results;
}

function fasterWhisper(ct2Dir, files, vads = ['off', 'on']) {
  const python = peersPython(settings.python);
  const results = {};
  for (const vad of vads) {
    const request = {
      model: ct2Dir,
      files,
      compute_type: 'float32',
      threads: settings.threads,
      language: 'en',
      word_timestamps: true,
      library_defaults: true,
      vad_filter: vad === 'on',
      warmup: false,
    };
    const run = spawnSync(python, [join(root, 'scripts', 'peers', 'faster_whisper_peer.py')], {
      input: JSON.stringify(request),
      encoding: 'utf8',
      maxBuffer: 256 * 1024 * 1024,
    });
    if (run.status !== 0) throw new Error(`faster_whisper_peer.py failed: ${run.stderr.slice(-1000)}`);
    results[vad] = JSON.parse(run.stdout).results.map((r) => ({
      text: r.text,
      words: r.words,
      seconds: r.transcribe_ms / 1000,
    }));
  }
  return results;
}

// whisper's non-speech annotations ("[BLANK_AUDIO]", "(music)", "[Applause]"): counted apart from words, since an
// API user sees them in the text all the same.
const ANNOTATION = /\[[^\]]*\]|\([^)]*\)|\*[^*]*\*/g;

/**
 * Word start errors on the islands: each island's words against faster-whisper's word_timestamps on the clip alone,
 * moved to where the clip was put (words matched in order by their normalized text, at most 3 words apart), each
 * clip's first word at the clip's speech onset. `first` holds each island's first matched word only: its error
 * against the known island position.
 */
function timeErrors(entry, words, clipWords) {
  if (!words || entry.islands.length === 0 || !clipWords) return undefined;
  const all = [];
  const first = [];
  const key = (word) => transcriptWords(word).join(' ');
  for (const island of entry.islands) {
    let firstOfIsland = true;
    const expected = (clipWords.get(island.clip) ?? []).map((w) => ({
      key: key(w.word),
      start: w.start + island.start,
    }));
    const heard = words.filter((w) => w.start >= island.start - 1 && w.start < island.end + 1);
    let j = 0;
    for (const ref of expected) {
      const k = heard.findIndex((h, index) => index >= j && key(h.word) === ref.key);
      if (k === -1 || k - j > 3) continue;
      const error = Math.abs(heard[k].start - ref.start);
      if (firstOfIsland) first.push(error);
      firstOfIsland = false;
      all.push(error);
      j = k + 1;
    }
  }
  return { matched: all.length, median: median(all), p95: percentile(all, 0.95), firstMedian: median(first) };
}

const percentile = (values, p) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
};

function score(entry, result, clipWords) {
  const annotations = (result.text.match(ANNOTATION) ?? []).length;
  const hypothesis = transcriptWords(result.text.replace(ANNOTATION, ' '));
  const facts = {
    words: hypothesis.length,
    annotations,
    seconds: Number(result.seconds.toFixed(2)),
    ...(result.timedOut ? { timedOut: true } : {}),
    text: result.text.slice(0, 160),
  };
  if (entry.islands.length === 0) return facts;
  const reference = transcriptWords(entry.islands.map((island) => island.text).join(' '));
  const times = timeErrors(entry, result.words, clipWords);
  return { ...facts, wer: wordEdits(reference, hypothesis) / reference.length, ...(times ? { times } : {}) };
}

async function main() {
  ensureDist();
  ensureSet();
  const manifest = JSON.parse(readFileSync(join(setDir, 'manifest.json'), 'utf8'));
  const only = new Set((settings.only ?? '').split(',').filter(Boolean));
  // The 60-minute file is bench/long-audio.mjs's, unless named.
  const entries = manifest.files.filter((entry) =>
    only.size === 0 ? entry.kind !== 'long' : only.has(entry.file.replace(/\.wav$/, '')),
  );
  const files = entries.map((entry) => join(setDir, entry.file));
  const real = realModels(settings.models.flatMap((m) => [MODELS[m].ggml, MODELS[m].ct2]));
  const document = { bench: 'nonspeech', commit: gitCommit(), machine: machineFacts(), settings, results: [] };
  for (const model of settings.models) {
    const byEngine = {};
    for (const engine of settings.engines) {
      process.stderr.write(`${model}: ${engine}\n`);
      if (engine === 'voxmill') byEngine[engine] = await voxmill(real[MODELS[model].ggml], files);
      if (engine === 'whisper-cli') byEngine[engine] = await whisperCli(real[MODELS[model].ggml], files);
      if (engine === 'fw') byEngine[engine] = fasterWhisper(real[MODELS[model].ct2], files);
    }
    // The islands' reference word times: faster-whisper's word_timestamps on each clip alone; and the clips alone
    // through voxmill and faster-whisper (VAD off), the WER the islands are held to.
    const islandEntries = entries.filter((entry) => entry.islands.length > 0);
    const clips = [...new Set(islandEntries.flatMap((entry) => entry.islands.map((island) => island.clip)))];
    let clipWords;
    if (clips.length > 0) {
      const alone = fasterWhisper(real[MODELS[model].ct2], clips.map(sharedAudio), ['off']).off;
      // faster-whisper starts a clip's first word at the clip's start (0.00 on all three, though the speech starts
      // 0.2-0.6 s in), so that word's reference is the clip's speech onset, from its energy.
      clipWords = new Map();
      for (const [i, clip] of clips.entries()) {
        const onset = await speechOnset(sharedAudio(clip));
        const words = alone[i].words.map((w, j) => (j === 0 ? { ...w, start: Math.max(w.start, onset) } : w));
        clipWords.set(clip, words);
      }
      const voxAlone = settings.engines.includes('voxmill')
        ? (await voxmill(real[MODELS[model].ggml], clips.map(sharedAudio), ['off'])).off
        : undefined;
      const reference = transcriptWords(islandEntries[0].islands.map((island) => island.text).join(' '));
      const werOf = (results) =>
        results
          ? wordEdits(
              reference,
              transcriptWords(
                islandEntries[0].islands.map((island) => results[clips.indexOf(island.clip)].text).join(' '),
              ),
            ) / reference.length
          : undefined;
      document.clipsAlone = { ...document.clipsAlone, [model]: { voxmill: werOf(voxAlone), fw: werOf(alone) } };
    }
    entries.forEach((entry, i) => {
      const row = { model, file: entry.file, kind: entry.kind, engines: {} };
      for (const [engine, results] of Object.entries(byEngine)) {
        const scored = (vad) => (results[vad]?.length > 0 ? score(entry, results[vad][i], clipWords) : undefined);
        row.engines[engine] = { off: scored('off'), on: scored('on') };
      }
      document.results.push(row);
    });
  }
  const outFile = writeResults('nonspeech', document);
  const engines = settings.engines;
  const tags = (r) => (r.annotations > 0 ? ` +${r.annotations} tag` : '');
  const cell = (r) =>
    r === undefined
      ? '-'
      : r.timedOut
        ? `loop (> ${settings.timeoutSeconds} s)`
        : (r.wer === undefined ? String(r.words) : `${(r.wer * 100).toFixed(1)} %`) + tags(r);
  const lines = [
    `| model | file | ${engines.map((e) => `${e} VAD off | ${e} VAD on`).join(' | ')} |`,
    `| --- | --- | ${engines.map(() => '--- | ---').join(' | ')} |`,
    ...document.results.map(
      (row) =>
        `| ${row.model} | ${row.file} | ${engines.map((e) => `${cell(row.engines[e].off)} | ${cell(row.engines[e].on)}`).join(' | ')} |`,
    ),
  ];
  for (const [model, alone] of Object.entries(document.clipsAlone ?? {})) {
    const pct = (x) => (x === undefined ? '-' : `${(x * 100).toFixed(1)} %`);
    lines.push(
      `${model}: the islands' clips alone, VAD off: voxmill ${pct(alone.voxmill)}, faster-whisper ${pct(alone.fw)}`,
    );
  }
  const ms = (x) => (Number.isFinite(x) ? `${Math.round(x * 1000)}` : '-');
  const timeCell = (r) => (r?.times ? `${ms(r.times.median)} / ${ms(r.times.p95)} / ${ms(r.times.firstMedian)}` : '-');
  const islandRows = document.results.filter((row) => row.kind === 'islands');
  if (islandRows.length > 0) {
    lines.push(
      '',
      "word start error against faster-whisper on the clips alone, ms: median / p95 / median of islands' first words",
      `| model | file | ${engines.map((e) => `${e} VAD off | ${e} VAD on`).join(' | ')} |`,
      `| --- | --- | ${engines.map(() => '--- | ---').join(' | ')} |`,
      ...islandRows.map(
        (row) =>
          `| ${row.model} | ${row.file} | ${engines.map((e) => `${timeCell(row.engines[e].off)} | ${timeCell(row.engines[e].on)}`).join(' | ')} |`,
      ),
    );
  }
  const totals = settings.models.map((model) => {
    const rows = document.results.filter((r) => r.model === model && r.kind === 'nonspeech');
    const sum = (engine, vad, key) => rows.reduce((total, r) => total + (r.engines[engine][vad]?.[key] ?? 0), 0);
    const loops = (engine, vad) => rows.filter((r) => r.engines[engine][vad]?.timedOut).length;
    const both = (engine, vad) =>
      `${sum(engine, vad, 'words')} words, ${sum(engine, vad, 'annotations')} tags, ${loops(engine, vad)} loops`;
    return `${model}: invented on ${rows.length} non-speech files: ${engines
      .map((e) => `${e} ${both(e, 'off')} (VAD on: ${both(e, 'on')})`)
      .join('; ')}`;
  });
  process.stdout.write(
    `${lines.join('\n')}\n\nnon-speech cells: words emitted (+N tag: bracketed annotations such as [BLANK_AUDIO]); islands: WER\n${totals.join('\n')}\n${outFile}\n`,
  );
}

runMain('nonspeech', main);
