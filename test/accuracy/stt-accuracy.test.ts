// Speech-to-text accuracy with real Whisper weights: voxmill (the built dist/, public API) side by side with
// whisper.cpp's own whisper-cli (built from the same tree with the addon's patch set, bench/build-whisper-cli.mjs
// --patched) on the same ggml file, and
// with faster-whisper 1.2.1 (CTranslate2, CPU) on the CTranslate2 weights that ggml file was converted from. Every
// clip of the shared audio whose transcript is `exact` (models/MANIFEST.json) is scored with the normalizer and
// word error rate of test/helpers/wer.ts.
//
// Targets (issue "Real models in the loop"):
// - voxmill's WER equals whisper-cli's, clip by clip;
// - voxmill's WER over all exact clips is at most faster-whisper's + 1 point;
// - WER over the LibriSpeech clips at most 8% (corpus WER: errors over reference words, and the mean of the
//   clips' WERs, both);
// - word start times within 100 ms of faster-whisper's (word_timestamps=True) at the median, 300 ms at p95, over
//   the words both engines transcribed the same;
// - `vad: true` changes no clean clip's WER by more than 1 point, and silence alone gives empty text;
// - with the encoder's context fitted to clips under 10 s (`fittedContextSeconds: 10`, set), WER over the exact
//   clips is at most the full window's + 1 point, the LibriSpeech clips stay at most 8 %, and word starts keep the
//   100 / 300 ms bounds; the other checks run with the full window (`fittedContextSeconds: 0`), as whisper-cli decodes;
// - the multilingual base model detects the language of multilingual.mp3 (English first) and punctuations_fr.mp3.
//
// Decoding parameters, the same on all three sides: beam 5, best of 5, temperature 0 with fallback steps of 0.2,
// voxmill's thresholds, language `en`, voxmill's default thread count on every side. voxmill loads with its defaults (DTW word
// timestamps, which turn flash attention off), so whisper-cli runs with `-nfa -dtw tiny.en` to do the same work
// (test/soak/parity.test.ts). What faster-whisper can and cannot match is written in
// scripts/peers/faster_whisper_peer.py. whisper-cli reads files with miniaudio (wav, mp3, flac, vorbis; its own
// resampler and downmix): a clip it cannot read (Ogg/Opus) gets voxmill's decoded samples as a float WAV instead, and
// every clip is also run that way ("cli on voxmill's PCM"), which tells decoding differences from model differences.
//
// faster-whisper runs twice: its text (and WER) from a pass without word timestamps, its word times from a pass with
// word_timestamps=True (that option changes its text; see the comment at the call).
//
// The per-clip table, texts and timings go to test/accuracy/results/stt.json (git-ignored).
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error plain ESM build script without type declarations
import { ensureWhisperCli } from '../../bench/build-whisper-cli.mjs';
import { createSpeech, decodeAudio, type Speech, WhisperModel, type Word } from '../../dist/index.js';
import { repoRoot, sharedAudio, sharedDir, sharedModel } from '../helpers/paths.js';
import { requirePeerPython, requireRealModel } from '../helpers/real-models.js';
import { ciSample, ciScoped } from '../helpers/test-scope.js';
import { alignWords, corpusWer, type WerResult, wordErrorRate } from '../helpers/wer.js';

const run = promisify(execFile);
// voxmill's own default (one core left to the host, at most 4). Before whisper.cpp patch 0009 a thread count equal to
// the core count, with a busy core, made ggml's spinning workers wait on each other (a 2-thread decode step took 60x
// longer here); the patch makes them yield. Every engine in this file gets this same count.
const THREADS = Number(process.env.VOXMILL_ACCURACY_THREADS) || Math.max(1, Math.min(4, availableParallelism() - 1));
const DECODING = { beamSize: 5, bestOf: 5, temperature: 0, temperatureIncrement: 0.2 } as const;
const SILERO = sharedModel('whisper/ggml-silero-v6.2.0.bin');
const resultsFile = join(repoRoot, 'test', 'accuracy', 'results', 'stt.json');

const tinyEn = requireRealModel('whisper-tiny.en');
const ct2TinyEn = requireRealModel('ct2-whisper-tiny.en');
const base = requireRealModel('whisper-base');
const ct2Base = requireRealModel('ct2-whisper-base');
const python = requirePeerPython();

interface ManifestEntry {
  file: string;
  language: string | null;
  sample_rate?: number;
  format?: { container: string; codec: string; channels: number; duration_s: number };
  transcript_quality?: string;
  notes?: string;
}

const manifest = JSON.parse(readFileSync(join(sharedDir, 'models', 'MANIFEST.json'), 'utf8')) as ManifestEntry[];
const transcripts = new Map(
  readFileSync(join(sharedDir, 'audio', 'transcripts.tsv'), 'utf8')
    .split('\n')
    .slice(1)
    .filter((line) => line.includes('\t'))
    .map((line) => line.split('\t') as [string, string]),
);

interface Clip {
  name: string;
  path: string;
  reference: string;
  librispeech: boolean;
  format: string;
  codec: string;
  rate: number;
}

const allClips: Clip[] = manifest
  .filter((e) => e.file.startsWith('audio/') && e.transcript_quality === 'exact')
  .map((e) => {
    const name = basename(e.file);
    const reference = transcripts.get(name);
    if (reference === undefined) throw new Error(`transcripts.tsv has no line for ${name}`);
    const f = e.format;
    return {
      name,
      path: sharedAudio(name),
      reference,
      librispeech: /LibriSpeech/.test(e.notes ?? ''),
      format: f ? `${f.codec} ${e.sample_rate} Hz ${f.channels === 2 ? 'stereo' : 'mono'}` : '',
      codec: f?.codec ?? '',
      rate: e.sample_rate ?? 0,
    };
  });

// CI's sample: every codec and every sample rate of the exact clips once (jfk in Vorbis at 16 kHz, Opus at 48 kHz and
// stereo FLAC at 44.1 kHz; LJ001-0002 in MP3 at 22.05 kHz), and three short LibriSpeech clips in WAV and FLAC at
// 16 kHz. Each clip costs about the same here (the full 30 s window is decoded), so 8 of 15 clips is about half the
// time. `npm run test:accuracy:full` runs every clip. The 'covers' test checks that the sample still covers them all.
const SAMPLE = new Set([
  'jfk.ogg',
  'jfk.opus',
  'jfk.flac',
  'LJ001-0002.mp3',
  '2830-3980-0043.wav',
  '4507-16021-0012.wav',
  '8455-210777-0068.wav',
  '1089-134691-0000.flac',
]);
const clips = ciSample(allClips, (clip) => SAMPLE.has(clip.name));

interface EngineRun {
  text: string;
  wer: WerResult;
  /** ms: voxmill's transcribe() on a warm model; faster-whisper's transcribe on a warm model; whisper-cli's own
   * "total - load" (decoding the file, state, inference), its process wall being in `wallMs`. */
  ms: number;
  wallMs?: number;
  /** whisper-cli only: it could not read the file and got voxmill's samples instead. */
  fedPcm?: boolean;
}

interface WordTiming {
  word: string;
  start: number;
  end: number;
}

interface ClipResult {
  clip: string;
  format: string;
  reference: string;
  refWords: number;
  voxmill: EngineRun;
  whisperCli: EngineRun;
  whisperCliOnVoxmillPcm: EngineRun;
  /** Without word timestamps: the text faster-whisper gives when only text is asked for. */
  fasterWhisper: EngineRun;
  /** With word_timestamps=True, the run the word times come from (its text can differ: see the file comment). */
  fasterWhisperWithWords: EngineRun;
  vad?: EngineRun;
  /** `fittedContextSeconds: 10`: the encoder's context fitted to clips under 10 s, with its word pairs. */
  fitted: EngineRun & { pairs: WordPair[] };
  timestamps: {
    matched: number;
    medianStartDiffMs: number;
    maxStartDiffMs: number;
    pairs: WordPair[];
  };
}

interface WordPair {
  word: string;
  /** [start, end] in seconds. */
  voxmill: [number, number];
  fasterWhisper: [number, number];
}

interface Report {
  settings: Record<string, unknown>;
  clips: ClipResult[];
  summary: Record<string, unknown>;
  languageDetection?: Record<string, unknown>[];
  silence?: Record<string, unknown>[];
  timings: Record<string, unknown>;
}

const missing = [tinyEn, ct2TinyEn, python].find((r) => r.skip);

// --- whisper-cli ---------------------------------------------------------------------------------------------------

/** whisper-cli's -oj file escapes only `"` and `\` (see test/soak/parity.test.ts): read the texts from the bytes. */
function cliText(jsonPath: string): string {
  const raw = readFileSync(jsonPath).toString('latin1');
  const pattern = /"offsets": \{\n\t*"from": \d+,\n\t*"to": \d+\n\t*\},\n\t*"text": "((?:[^"\\]|\\.)*)"\n/g;
  const texts = [...raw.matchAll(pattern)].map((m) => m[1]!.replace(/\\(["\\])/g, '$1'));
  return Buffer.from(texts.join(''), 'latin1').toString('utf8').trim();
}

/** 16 kHz mono 32-bit float WAV (format 3), which whisper-cli's miniaudio reads sample for sample. */
function writeFloatWav(path: string, samples: Float32Array): void {
  const header = Buffer.alloc(44);
  const bytes = samples.byteLength;
  header.write('RIFF', 0, 'latin1');
  header.writeUInt32LE(36 + bytes, 4);
  header.write('WAVEfmt ', 8, 'latin1');
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(3, 20);
  header.writeUInt16LE(1, 22);
  header.writeUInt32LE(16_000, 24);
  header.writeUInt32LE(16_000 * 4, 28);
  header.writeUInt16LE(4, 32);
  header.writeUInt16LE(32, 34);
  header.write('data', 36, 'latin1');
  header.writeUInt32LE(bytes, 40);
  writeFileSync(path, Buffer.concat([header, Buffer.from(samples.buffer, samples.byteOffset, bytes)]));
}

interface CliRun {
  text: string;
  ms: number;
  wallMs: number;
}

/** One whisper-cli process; undefined when it could not read the audio (it then exits 0 without output). */
async function whisperCli(cli: string, model: string, audio: string, out: string): Promise<CliRun | undefined> {
  const args = [
    ...['-m', model, '-f', audio, '-t', String(THREADS), '-l', 'en'],
    ...['-bs', String(DECODING.beamSize), '-bo', String(DECODING.bestOf), '-tp', String(DECODING.temperature)],
    ...['-tpi', String(DECODING.temperatureIncrement), '-nfa', '-dtw', 'tiny.en', '-oj', '-of', out],
  ];
  rmSync(`${out}.json`, { force: true });
  const started = performance.now();
  const { stderr } = await run(cli, args, { maxBuffer: 64 * 1024 * 1024 });
  const wallMs = performance.now() - started;
  if (!existsSync(`${out}.json`)) return undefined;
  const timing = (name: string) => Number(new RegExp(`${name} time =\\s+([\\d.]+) ms`).exec(stderr)?.[1]);
  return { text: cliText(`${out}.json`), ms: timing('total') - timing('load'), wallMs };
}

// --- faster-whisper -------------------------------------------------------------------------------------------------

interface PeerResult {
  file: string;
  text: string;
  language: string;
  language_probability: number;
  transcribe_ms: number;
  words: { word: string; start: number; end: number; probability: number }[];
}

interface PeerOutput {
  faster_whisper: string;
  ctranslate2: string;
  load_ms: number;
  warmup_ms: number;
  options: Record<string, unknown>;
  results: PeerResult[];
}

async function fasterWhisper(request: Record<string, unknown>): Promise<PeerOutput> {
  const script = join(repoRoot, 'scripts', 'peers', 'faster_whisper_peer.py');
  const child = execFile(python.path!, [script], { maxBuffer: 256 * 1024 * 1024 });
  const output = new Promise<string>((resolve, reject) => {
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr!.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => {
      if (code === 0) resolve(stdout);
      else reject(new Error(`faster_whisper_peer.py exited with ${code}:\n${stderr.slice(-3000)}`));
    });
  });
  child.stdin!.end(JSON.stringify(request));
  return JSON.parse(await output) as PeerOutput;
}

// --- word timings ---------------------------------------------------------------------------------------------------

/** A word's key for aligning two engines' words: letters and digits only, lower case. */
const wordKey = (word: string) => word.toLowerCase().replace(/[^\p{L}\p{N}]/gu, '');

/** Start-time differences of the words both engines transcribed the same, aligned as word sequences. */
function wordPairs(ours: readonly WordTiming[], theirs: readonly WordTiming[]): WordPair[] {
  const a = ours.filter((w) => wordKey(w.word) !== '');
  const b = theirs.filter((w) => wordKey(w.word) !== '');
  const ms = (t: number) => Math.round(t * 1000) / 1000;
  const pairs: WordPair[] = [];
  for (const step of alignWords(
    a.map((w) => wordKey(w.word)),
    b.map((w) => wordKey(w.word)),
  )) {
    if (step.op !== 'equal') continue;
    const x = a[step.ref]!;
    const y = b[step.hyp]!;
    pairs.push({ word: wordKey(x.word), voxmill: [x.start, x.end], fasterWhisper: [ms(y.start), ms(y.end)] });
  }
  return pairs;
}

/** |start difference| in ms of each pair. */
const startDiffsMs = (pairs: readonly WordPair[]) =>
  pairs.map((p) => Math.abs(p.voxmill[0] - p.fasterWhisper[0]) * 1000);

function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((x, y) => x - y);
  // Nearest rank.
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

const points = (wer: number) => Math.round(wer * 10_000) / 100;
const median = (values: readonly number[]) => {
  const sorted = [...values].sort((x, y) => x - y);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

// --- the run --------------------------------------------------------------------------------------------------------

describe.skipIf(missing !== undefined)(`speech-to-text accuracy with real weights ${missing?.reason ?? ''}`, () => {
  let work: string;
  let speech: Speech | undefined;
  const report: Report = { settings: {}, clips: [], summary: {}, timings: {} };
  const started = performance.now();

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'voxmill-stt-accuracy-'));
    const buildStarted = performance.now();
    // Builds whisper-cli on first use (minutes on 2 cores): the accuracy project's hook timeout allows it. It carries
    // the addon's patch set (patch 0005 changes the encoder's rounding; BENCHMARKS.md, "Patch 0005").
    const cli = ensureWhisperCli({ patched: true }) as string;
    const cliBuildMs = performance.now() - buildStarted;

    // voxmill: load defaults (DTW word timestamps on), one warm-up call, then each clip once.
    const loadStarted = performance.now();
    const model = await WhisperModel.load(tinyEn.path!);
    const voxmillLoadMs = performance.now() - loadStarted;
    expect(model.info.dtwPreset).toBe('tiny.en');
    // The full window, as whisper-cli decodes (the binding checked alone); the fitted context is run after it.
    const options = {
      ...DECODING,
      language: 'en',
      threads: THREADS,
      timestamps: 'word',
      fittedContextSeconds: 0,
    } as const;
    await model.transcribe(clips[0]!.path, options);
    const voxmill = new Map<string, { text: string; words: Word[]; ms: number }>();
    const fitted = new Map<string, { text: string; words: Word[]; ms: number }>();
    const pcm = new Map<string, string>();
    for (const clip of clips) {
      const t = performance.now();
      const result = await model.transcribe(clip.path, options);
      voxmill.set(clip.name, { text: result.text, words: result.words ?? [], ms: performance.now() - t });
      const decoded = await decodeAudio(clip.path);
      const wav = join(work, `${clip.name}.f32.wav`);
      writeFloatWav(wav, decoded.samples);
      pcm.set(clip.name, wav);
      // The default (DEFAULT_FITTED_CONTEXT_SECONDS), set so the check does not follow a changed default.
      const f = performance.now();
      const withFitted = await model.transcribe(clip.path, { ...options, fittedContextSeconds: 10 });
      fitted.set(clip.name, { text: withFitted.text, words: withFitted.words ?? [], ms: performance.now() - f });
    }
    model.dispose();

    // whisper-cli: one process per clip, on the file and on voxmill's samples.
    const cliOnFile = new Map<string, CliRun & { fedPcm: boolean }>();
    const cliOnPcm = new Map<string, CliRun>();
    for (const clip of clips) {
      const out = join(work, `cli-${clip.name}`);
      const onPcm = await whisperCli(cli, tinyEn.path!, pcm.get(clip.name)!, `${out}-pcm`);
      if (!onPcm) throw new Error(`whisper-cli could not read the float WAV of ${clip.name}`);
      cliOnPcm.set(clip.name, onPcm);
      const onFile = await whisperCli(cli, tinyEn.path!, clip.path, out);
      cliOnFile.set(clip.name, onFile ? { ...onFile, fedPcm: false } : { ...onPcm, fedPcm: true });
    }

    // faster-whisper: one process per pass, the model loaded once, one untimed warm-up. Text from a pass without
    // word timestamps: with word_timestamps=True, faster-whisper 1.2.1 moves its next window's start to the last
    // word's end, which on 1089-134686-0000 skips "mutton pieces to be ladled out and" (6 words) that the same
    // weights transcribe without it; voxmill's text does not depend on its timestamp setting.
    const peerRequest = {
      model: ct2TinyEn.path,
      files: clips.map((c) => c.path),
      compute_type: 'float32',
      threads: THREADS,
      beam_size: DECODING.beamSize,
      best_of: DECODING.bestOf,
      temperature: DECODING.temperature,
      temperature_increment: DECODING.temperatureIncrement,
      language: 'en',
      suppress_non_speech: false,
    };
    const peer = await fasterWhisper({ ...peerRequest, word_timestamps: false });
    const peerWords = await fasterWhisper({ ...peerRequest, word_timestamps: true });

    // VAD on the same clips through the engine, as a server would run it: `vad: true`, the configured Silero model.
    speech = createSpeech({
      models: { 'svc-stt-1': { model: tinyEn.path!, beamSize: DECODING.beamSize, threads: THREADS } },
      vadModel: SILERO,
      idleUnloadMs: 0,
    });
    const vad = new Map<string, { text: string; ms: number }>();
    for (const clip of clips) {
      const t = performance.now();
      // The full window on both sides of the VAD comparison: the VAD checked alone.
      const result = await speech.transcribe(clip.path, {
        ...DECODING,
        language: 'en',
        vad: true,
        fittedContextSeconds: 0,
      });
      vad.set(clip.name, { text: result.text, ms: performance.now() - t });
    }

    for (const clip of clips) {
      const ours = voxmill.get(clip.name)!;
      const onFile = cliOnFile.get(clip.name)!;
      const onPcm = cliOnPcm.get(clip.name)!;
      const theirs = peer.results.find((r) => r.file === clip.path)!;
      const theirWords = peerWords.results.find((r) => r.file === clip.path)!;
      const pairs = wordPairs(ours.words, theirWords.words);
      const diffs = startDiffsMs(pairs);
      const vadRun = vad.get(clip.name)!;
      const fittedRun = fitted.get(clip.name)!;
      report.clips.push({
        clip: clip.name,
        format: clip.format,
        reference: clip.reference,
        refWords: wordErrorRate(clip.reference, '').refWords,
        voxmill: { text: ours.text, wer: wordErrorRate(clip.reference, ours.text), ms: ours.ms },
        whisperCli: {
          text: onFile.text,
          wer: wordErrorRate(clip.reference, onFile.text),
          ms: onFile.ms,
          wallMs: onFile.wallMs,
          fedPcm: onFile.fedPcm,
        },
        whisperCliOnVoxmillPcm: {
          text: onPcm.text,
          wer: wordErrorRate(clip.reference, onPcm.text),
          ms: onPcm.ms,
          wallMs: onPcm.wallMs,
        },
        fasterWhisper: { text: theirs.text, wer: wordErrorRate(clip.reference, theirs.text), ms: theirs.transcribe_ms },
        fasterWhisperWithWords: {
          text: theirWords.text,
          wer: wordErrorRate(clip.reference, theirWords.text),
          ms: theirWords.transcribe_ms,
        },
        vad: { text: vadRun.text, wer: wordErrorRate(clip.reference, vadRun.text), ms: vadRun.ms },
        fitted: {
          text: fittedRun.text,
          wer: wordErrorRate(clip.reference, fittedRun.text),
          ms: fittedRun.ms,
          pairs: wordPairs(fittedRun.words, theirWords.words),
        },
        timestamps: {
          matched: pairs.length,
          medianStartDiffMs: Math.round(median(diffs)),
          maxStartDiffMs: Math.round(Math.max(0, ...diffs)),
          pairs,
        },
      });
    }

    const all = report.clips;
    const libri = all.filter((c) => clips.find((x) => x.name === c.clip)!.librispeech);
    const pairs = all.flatMap((c) => c.timestamps.pairs);
    const diffs = startDiffsMs(pairs);
    const endDiffs = pairs.map((p) => Math.abs(p.voxmill[1] - p.fasterWhisper[1]) * 1000);
    // Signed: positive when voxmill's word starts later than faster-whisper's.
    const signed = pairs.map((p) => (p.voxmill[0] - p.fasterWhisper[0]) * 1000);
    const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);
    report.settings = {
      threads: THREADS,
      decoding: DECODING,
      language: 'en',
      models: { ggml: tinyEn.path, ct2: ct2TinyEn.path },
      voxmill: { load: 'defaults (DTW tiny.en, flash attention off)', timestamps: 'word' },
      whisperCli: { path: cli, flags: '-nfa -dtw tiny.en -bs 5 -bo 5 -tp 0 -tpi 0.2 -l en' },
      fasterWhisper: { version: peer.faster_whisper, ctranslate2: peer.ctranslate2, options: peer.options },
    };
    report.summary = {
      clips: all.length,
      refWords: sum(all.map((c) => c.refWords)),
      werPercent: {
        voxmill: points(corpusWer(all.map((c) => c.voxmill.wer))),
        whisperCli: points(corpusWer(all.map((c) => c.whisperCli.wer))),
        whisperCliOnVoxmillPcm: points(corpusWer(all.map((c) => c.whisperCliOnVoxmillPcm.wer))),
        fasterWhisper: points(corpusWer(all.map((c) => c.fasterWhisper.wer))),
        fasterWhisperWithWords: points(corpusWer(all.map((c) => c.fasterWhisperWithWords.wer))),
        voxmillWithVad: points(corpusWer(all.map((c) => c.vad!.wer))),
        voxmillFittedContext: points(corpusWer(all.map((c) => c.fitted.wer))),
      },
      librispeech: {
        clips: libri.length,
        corpusWerPercent: points(corpusWer(libri.map((c) => c.voxmill.wer))),
        meanClipWerPercent: points(sum(libri.map((c) => c.voxmill.wer.wer)) / libri.length),
        fasterWhisperCorpusWerPercent: points(corpusWer(libri.map((c) => c.fasterWhisper.wer))),
      },
      wordStartDiffMs: {
        words: diffs.length,
        median: Math.round(median(diffs)),
        p95: Math.round(quantile(diffs, 0.95)),
        max: Math.round(Math.max(0, ...diffs)),
        signedMedian: Math.round(median(signed)),
        endMedian: Math.round(median(endDiffs)),
        endP95: Math.round(quantile(endDiffs, 0.95)),
      },
    };
    report.timings = {
      whisperCliBuildMs: Math.round(cliBuildMs),
      voxmill: { loadMs: Math.round(voxmillLoadMs), transcribeMs: Math.round(sum(all.map((c) => c.voxmill.ms))) },
      whisperCli: {
        // Its own "total - load" per file, and the processes' wall (a model load in each).
        transcribeMs: Math.round(sum(all.map((c) => c.whisperCli.ms))),
        wallMs: Math.round(sum(all.map((c) => c.whisperCli.wallMs ?? 0))),
      },
      fasterWhisper: {
        loadMs: Math.round(peer.load_ms),
        warmupMs: Math.round(peer.warmup_ms),
        transcribeMs: Math.round(sum(all.map((c) => c.fasterWhisper.ms))),
        withWordsTranscribeMs: Math.round(sum(all.map((c) => c.fasterWhisperWithWords.ms))),
      },
      voxmillWithVadMs: Math.round(sum(all.map((c) => c.vad!.ms))),
      voxmillFittedContextMs: Math.round(sum(all.map((c) => c.fitted.ms))),
      audioSeconds: Math.round(sum(await Promise.all(clips.map(async (c) => (await decodeAudio(c.path)).duration)))),
    };
    writeReport(report, started);
  });

  afterAll(async () => {
    await speech?.close();
    if (work) rmSync(work, { recursive: true, force: true });
    writeReport(report, started);
  });

  it('covers every exact clip, or in CI every codec and sample rate of them', () => {
    expect(allClips.length).toBeGreaterThanOrEqual(15);
    const kinds = (list: readonly Clip[], key: 'codec' | 'rate') => [...new Set(list.map((c) => c[key]))].sort();
    expect(kinds(clips, 'codec')).toEqual(kinds(allClips, 'codec'));
    expect(kinds(clips, 'rate')).toEqual(kinds(allClips, 'rate'));
    expect(clips.length).toBe(ciScoped(allClips.length, SAMPLE.size));
    expect(report.clips.map((c) => c.clip)).toEqual(clips.map((c) => c.name));
  });

  it("has whisper-cli's word error rate on every clip", () => {
    const werOf = (key: 'voxmill' | 'whisperCli') =>
      Object.fromEntries(report.clips.map((c) => [c.clip, points(c[key].wer.wer)]));
    expect(werOf('voxmill')).toEqual(werOf('whisperCli'));
  });

  it('transcribes word for word what whisper-cli transcribes from the same samples', () => {
    // Same samples, same model, same parameters: any difference is in the binding, not in decoding the file.
    const texts = (key: 'voxmill' | 'whisperCliOnVoxmillPcm') =>
      Object.fromEntries(report.clips.map((c) => [c.clip, c[key].text]));
    expect(texts('voxmill')).toEqual(texts('whisperCliOnVoxmillPcm'));
  });

  it("is within 1 point of faster-whisper's word error rate", () => {
    const ours = corpusWer(report.clips.map((c) => c.voxmill.wer));
    const theirs = corpusWer(report.clips.map((c) => c.fasterWhisper.wer));
    expect(points(ours)).toBeLessThanOrEqual(points(theirs) + 1);
  });

  it('transcribes the LibriSpeech clips with at most 8% WER', () => {
    const libri = report.clips.filter((c) => clips.find((x) => x.name === c.clip)!.librispeech);
    expect(libri.length).toBeGreaterThanOrEqual(ciScoped(7, 4));
    expect(points(corpusWer(libri.map((c) => c.voxmill.wer)))).toBeLessThanOrEqual(8);
    const mean = libri.reduce((sum, c) => sum + c.voxmill.wer.wer, 0) / libri.length;
    expect(points(mean)).toBeLessThanOrEqual(8);
  });

  it("places word starts within 100 ms (median) and 300 ms (p95) of faster-whisper's", () => {
    const diffs = startDiffsMs(report.clips.flatMap((c) => c.timestamps.pairs));
    // Most words are the same in both transcripts, so nearly all of them are compared.
    const words = report.clips.reduce((sum, c) => sum + c.refWords, 0);
    expect(diffs.length).toBeGreaterThan(0.8 * words);
    expect(median(diffs)).toBeLessThanOrEqual(100);
    expect(quantile(diffs, 0.95)).toBeLessThanOrEqual(300);
  });

  it('costs no clean clip a word with vad: true (WER at most 1 point higher)', () => {
    // One-sided: with 200 ms of padding the VAD's cut can also help (LJ001-0007: "Gutenberg" with it, "Guttenburg"
    // without).
    const changed = report.clips
      .filter((c) => points(c.vad!.wer.wer) - points(c.voxmill.wer.wer) > 1)
      .map((c) => ({ clip: c.clip, without: c.voxmill.text, with: c.vad!.text }));
    expect(changed).toEqual([]);
  });

  it('with the context fitted to clips under 10 s: WER within 1 point of the full window, LibriSpeech at most 8 %', () => {
    const full = points(corpusWer(report.clips.map((c) => c.voxmill.wer)));
    const withFitted = points(corpusWer(report.clips.map((c) => c.fitted.wer)));
    expect(withFitted).toBeLessThanOrEqual(full + 1);
    const libri = report.clips.filter((c) => clips.find((x) => x.name === c.clip)!.librispeech);
    expect(points(corpusWer(libri.map((c) => c.fitted.wer)))).toBeLessThanOrEqual(8);
  });

  it("with the context fitted to clips under 10 s, places word starts within 100 ms (median) and 300 ms (p95) of faster-whisper's", () => {
    const diffs = startDiffsMs(report.clips.flatMap((c) => c.fitted.pairs));
    const words = report.clips.reduce((sum, c) => sum + c.refWords, 0);
    expect(diffs.length).toBeGreaterThan(0.8 * words);
    expect(median(diffs)).toBeLessThanOrEqual(100);
    expect(quantile(diffs, 0.95)).toBeLessThanOrEqual(300);
  });

  it('gives empty text for silence with vad: true', async () => {
    const cases = [
      { name: 'digital silence', samples: new Float32Array(16_000 * 5) },
      { name: 'faint noise (-60 dBFS)', samples: noise(16_000 * 5, 0.001, 7) },
    ];
    const results: Record<string, unknown>[] = [];
    for (const c of cases) {
      const wav = join(work, `${c.name.replace(/\W+/g, '-')}.wav`);
      writeFloatWav(wav, c.samples);
      const result = await speech!.transcribe(wav, { ...DECODING, language: 'en', vad: true, timestamps: 'word' });
      results.push({ input: c.name, text: result.text, words: result.words?.length ?? 0 });
    }
    report.silence = results;
    expect(results.map((r) => r.text)).toEqual(cases.map(() => ''));
    expect(results.map((r) => r.words)).toEqual(cases.map(() => 0));
  });

  describe.skipIf(base.skip)(`language detection with whisper-base ${base.reason}`, () => {
    const expected: Record<string, string> = {};
    for (const e of manifest) {
      const name = basename(e.file);
      if (['multilingual.mp3', 'punctuations_fr.mp3', 'gaenswein15.mp3'].includes(name) && e.language) {
        // A clip in two languages starts with the first: whisper detects from the first 30 s.
        expected[name] = e.language.split('+')[0]!;
      }
    }

    it('detects the language of multilingual.mp3 and punctuations_fr.mp3', async () => {
      const model = await WhisperModel.load(base.path!, { dtw: false });
      const detected: Record<string, string> = {};
      const rows: Record<string, unknown>[] = [];
      for (const name of Object.keys(expected)) {
        const t = performance.now();
        // Greedy: only the detected language is checked.
        const result = await model.transcribe(sharedAudio(name), { threads: THREADS, timestamps: 'none', beamSize: 1 });
        detected[name] = result.language;
        rows.push({ clip: name, expected: expected[name], voxmill: result.language, ms: performance.now() - t });
      }
      model.dispose();
      if (!ct2Base.skip) {
        const peer = await fasterWhisper({
          model: ct2Base.path,
          files: Object.keys(expected).map((n) => sharedAudio(n)),
          threads: THREADS,
          beam_size: 1,
          language: null,
          word_timestamps: false,
          warmup: false,
        });
        for (const row of rows) {
          const r = peer.results.find((x) => basename(x.file) === row.clip);
          row.fasterWhisper = r?.language;
          row.fasterWhisperProbability = r?.language_probability;
        }
      }
      report.languageDetection = rows;
      expect({ multilingual: detected['multilingual.mp3'], fr: detected['punctuations_fr.mp3'] }).toEqual({
        multilingual: expected['multilingual.mp3'],
        fr: expected['punctuations_fr.mp3'],
      });
    });
  });
});

/** Deterministic uniform noise in [-amplitude, amplitude]. */
function noise(count: number, amplitude: number, seed: number): Float32Array {
  const out = new Float32Array(count);
  let state = seed >>> 0 || 1;
  for (let i = 0; i < count; i++) {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    out[i] = ((state >>> 0) / 0xffffffff - 0.5) * 2 * amplitude;
  }
  return out;
}

function writeReport(report: Report, started: number): void {
  mkdirSync(join(repoRoot, 'test', 'accuracy', 'results'), { recursive: true });
  const out = { ...report, timings: { ...report.timings, testFileMs: Math.round(performance.now() - started) } };
  writeFileSync(resultsFile, `${JSON.stringify(out, null, 2)}\n`);
}
