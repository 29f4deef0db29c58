// transcribe() against whisper.cpp's own whisper-cli, built from the same tree with the same flags and the addon's
// patch set (native/whisper-patches.cmake; bench/build-whisper-cli.mjs --patched): with the
// same decoding parameters both must produce the same segments, word for word and to the millisecond.
//
// Parameters, side by side (whisper-cli 1.9.1 examples/cli/cli.cpp vs native/whisper_model.cc):
//   threads          -t 2                            threads: 2
//   language         -l en (its default)             'en' (forced for English-only models)
//   greedy           -bs 1 -bo 5                     beamSize: 1, bestOf: 5
//   beam             -bs 5 -bo 5 (its defaults)      beamSize: 5, bestOf: 5
//   fallback         -tpi 0.2 (default) / -nf -> 0   temperatureIncrement: 0.2 (default) / 0
//   thresholds       -et 2.4 -lpt -1 -nth 0.6        the same defaults
//   flash attention  on by default / -nfa            load { flashAttention: true } / off in calls that use DTW
//   DTW              -dtw tiny.en                    load default (preset picked from the header), used by calls
//                                                    that ask for word times (patch 0002: per call, not per model)
// Equal without a flag on either side: temperature 0, suppress_nst off, max_len 0, audio_ctx 0, no prompt
// (whisper-cli passes "" and we pass NULL; both give zero prompt tokens), token_timestamps off (whisper-cli turns
// it on only for -owts, -ojf or -ml; we only for word timestamps). One default differs: whisper-cli keeps
// whisper_full_default_params' no_context = true, we set false. It only clears the state's past-text prompt at
// the start of whisper_full(); each of our calls gets a fresh state, so that past is empty either way. The long
// file below (two 30 s windows, 75 segments) and reusing one model for every file would show it if it mattered.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error plain ESM build script without type declarations
import { ensureWhisperCli } from '../../bench/build-whisper-cli.mjs';
// The build's time limit grows with this machine's slowdown.
import { scaledMs } from '../../scripts/lib/machine-speed.mjs';
import { type Segment, type TranscribeOptions, WhisperModel } from '../../src/index.js';
import { fixture, sharedAudio } from '../helpers/paths.js';

const run = promisify(execFile);
const tinyEn = fixture('models/ggml-tiny.en-random.bin');
const THREADS = 2;
const SAMPLE_RATE = 16_000;

interface CliSegment {
  /** whisper-cli's JSON "offsets", in ms (whisper.cpp keeps 10 ms steps). */
  from: number;
  to: number;
  /** Raw segment text, as whisper.cpp returned it (leading space, maybe whitespace only). */
  text: string;
}

interface CliResult {
  segments: CliSegment[];
  /** Samples whisper-cli decoded, from its own log line. */
  samples: number;
}

let cli: string;
let work: string;

/** The first `seconds` of a 16 kHz mono 16-bit wav, as a new wav file (both sides read the same file). */
function writeWavPrefix(source: string, seconds: number, target: string): string {
  const wav = readFileSync(source);
  let offset = 12;
  while (offset + 8 <= wav.length && wav.toString('latin1', offset, offset + 4) !== 'data') {
    const size = wav.readUInt32LE(offset + 4);
    offset += 8 + size + (size & 1);
  }
  expect(wav.toString('latin1', offset, offset + 4)).toBe('data');
  const bytes = Math.min(wav.readUInt32LE(offset + 4), seconds * SAMPLE_RATE * 2);
  const header = Buffer.alloc(44);
  header.write('RIFF', 0, 'latin1');
  header.writeUInt32LE(36 + bytes, 4);
  header.write('WAVEfmt ', 8, 'latin1');
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20); // PCM
  header.writeUInt16LE(1, 22); // mono
  header.writeUInt32LE(SAMPLE_RATE, 24);
  header.writeUInt32LE(SAMPLE_RATE * 2, 28);
  header.writeUInt16LE(2, 32);
  header.writeUInt16LE(16, 34);
  header.write('data', 36, 'latin1');
  header.writeUInt32LE(bytes, 40);
  writeFileSync(target, Buffer.concat([header, wav.subarray(offset + 8, offset + 8 + bytes)]));
  return target;
}

/**
 * whisper-cli's -oj file escapes only `"` and `\`, so text from random weights (control characters, bytes that
 * are not UTF-8 on their own) makes it invalid JSON. Read it as bytes instead: the structure around each text is
 * ASCII, which never occurs inside a multi-byte UTF-8 sequence, and each text is decoded as UTF-8 afterwards the way
 * N-API decodes ours (invalid sequences become U+FFFD).
 */
function parseCliJson(path: string): CliSegment[] {
  const raw = readFileSync(path).toString('latin1');
  const pattern = /"offsets": \{\n\t*"from": (\d+),\n\t*"to": (\d+)\n\t*\},\n\t*"text": "((?:[^"\\]|\\.)*)"\n/g;
  const segments: CliSegment[] = [];
  for (const match of raw.matchAll(pattern)) {
    const text = Buffer.from(match[3]!.replace(/\\(["\\])/g, '$1'), 'latin1').toString('utf8');
    segments.push({ from: Number(match[1]), to: Number(match[2]), text });
  }
  // Every segment of the file was matched: one "offsets" object per segment.
  expect(segments.length).toBe(raw.split('"offsets": {').length - 1);
  return segments;
}

async function whisperCli(audio: string, flags: string[], name: string): Promise<CliResult> {
  const out = join(work, name);
  const { stderr } = await run(
    cli,
    ['-m', tinyEn, '-f', audio, '-t', String(THREADS), '-l', 'en', ...flags, '-oj', '-of', out],
    { maxBuffer: 64 * 1024 * 1024 },
  );
  const samples = /processing '.*' \((\d+) samples,/.exec(stderr)?.[1];
  expect(samples, `whisper-cli did not log its sample count:\n${stderr.slice(-2000)}`).toBeDefined();
  return { segments: parseCliJson(`${out}.json`), samples: Number(samples) };
}

/**
 * What transcribe() promises to make of whisper.cpp's raw segments, written out independently of src/:
 * - segments whose text is whitespace only are dropped and texts are trimmed (whisper.cpp starts each with a
 *   space); ids count the kept segments;
 * - times are seconds at millisecond precision, within [0, duration], starts and ends non-decreasing and
 *   start <= end. whisper.cpp does not clamp: with random weights it ends segments at <|24.96|> on 2–11 s clips.
 * Everything is done in integer ms so the comparison below can be exact.
 */
function expectedSegments(raw: CliSegment[], samples: number): Segment[] {
  const durationMs = samples / (SAMPLE_RATE / 1000);
  const clamp = (ms: number) => (ms <= durationMs ? ms : Math.floor(durationMs));
  const segments: Segment[] = [];
  let lastStart = 0;
  let lastEnd = 0;
  for (const s of raw) {
    const text = s.text.trim();
    if (text === '') continue;
    const start = clamp(Math.max(lastStart, s.from));
    const end = clamp(Math.max(start, lastEnd, s.to));
    segments.push({ id: segments.length, start: start / 1000, end: end / 1000, text });
    lastStart = start;
    lastEnd = end;
  }
  return segments;
}

interface Case {
  name: string;
  load: { dtw: boolean; flashAttention?: boolean };
  cliFlags: string[];
  options: TranscribeOptions;
  /** `word` runs DTW (without flash attention); such a call returns words, not segments, so its text is compared. */
  timestamps: 'segment' | 'word';
  files: string[];
}

const short = ['jfk.wav', '2830-3980-0043.wav', '4507-16021-0012.wav', '8455-210777-0068.wav'];
// Beam search with fallback on random weights costs about 20 s per side on the long clip: short files only.
const withLong = [...short, 'gb0-40s.wav'];

const cases: Case[] = [
  {
    name: 'greedy, no fallback, flash attention (whisper-cli defaults otherwise)',
    load: { dtw: false, flashAttention: true },
    cliFlags: ['-bs', '1', '-bo', '5', '-nf'],
    options: { beamSize: 1, bestOf: 5, temperatureIncrement: 0 },
    timestamps: 'segment',
    files: withLong,
  },
  {
    name: 'beam 5, best of 5, temperature fallback 0.2, flash attention (exactly whisper-cli defaults)',
    load: { dtw: false, flashAttention: true },
    cliFlags: ['-bs', '5', '-bo', '5'],
    options: { beamSize: 5, bestOf: 5, temperatureIncrement: 0.2 },
    timestamps: 'segment',
    files: short,
  },
  {
    name: 'library load defaults (DTW tiny.en), a call without word times: flash attention, no DTW, greedy',
    load: { dtw: true },
    cliFlags: ['-bs', '1', '-bo', '5', '-nf'],
    options: { beamSize: 1, bestOf: 5, temperatureIncrement: 0 },
    timestamps: 'segment',
    files: short,
  },
  {
    name: 'library load defaults, word times (DTW, no flash attention) vs -nfa -dtw tiny.en, greedy, no fallback',
    load: { dtw: true },
    cliFlags: ['-bs', '1', '-bo', '5', '-nf', '-nfa', '-dtw', 'tiny.en'],
    options: { beamSize: 1, bestOf: 5, temperatureIncrement: 0 },
    timestamps: 'word',
    files: withLong,
  },
  {
    name: 'library load defaults, word times vs -nfa -dtw tiny.en, beam 5 with fallback',
    load: { dtw: true },
    cliFlags: ['-bs', '5', '-bo', '5', '-nfa', '-dtw', 'tiny.en'],
    options: { beamSize: 5, bestOf: 5, temperatureIncrement: 0.2 },
    timestamps: 'word',
    files: short,
  },
];

beforeAll(() => {
  // Builds whisper-cli on first use (about 90 s on 2 cores); the hook timeout of the native project allows it. The
  // variant with the addon's patch set: patch 0005 changes the encoder's rounding, so upstream's binary may punctuate
  // a borderline window differently (BENCHMARKS.md, "Patch 0005").
  cli = ensureWhisperCli({ patched: true });
  work = mkdtempSync(join(tmpdir(), 'voxmill-parity-'));
  writeWavPrefix(sharedAudio('gb0.wav'), 40, join(work, 'gb0-40s.wav'));
}, scaledMs(600_000));

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

const audioPath = (file: string) => (file === 'gb0-40s.wav' ? join(work, file) : sharedAudio(file));

describe.each(cases)('transcribe() matches whisper-cli: $name', ({ load, cliFlags, options, timestamps, files }) => {
  let model: WhisperModel;

  beforeAll(async () => {
    model = await WhisperModel.load(tinyEn, load);
    // Compare what we think we compare: the CLI's flags describe what this call runs (patch 0002: a call with word
    // times runs DTW without flash attention, one without runs flash attention).
    expect(model.info.flashAttention).toBe(load.flashAttention ?? true);
    expect(model.info.dtwPreset).toBe(load.dtw ? 'tiny.en' : null);
    expect(cliFlags.includes('-dtw')).toBe(timestamps === 'word');
    expect(cliFlags.includes('-nfa')).toBe(timestamps === 'word');
  });

  afterAll(() => model?.dispose());

  it.each(files)('%s', async (file) => {
    const audio = audioPath(file);
    // One model serves every file: a past-text prompt leaking from one call into the next would show here.
    // whisper.cpp's raw output on both sides: voxmill's guards against invented text (which rewrite the loops
    // random weights fall into) are off here and tested in test/unit/invented-text.test.ts.
    const ours = await model.transcribe(audio, {
      ...options,
      threads: THREADS,
      language: 'en',
      timestamps,
      repetitionGuard: false,
      skipGuard: false,
      annotations: 'keep',
      // whisper-cli's 30 s window on every file (the fitted context for short clips: test/accuracy/stt-accuracy).
      fittedContextSeconds: 0,
    });
    const reference = await whisperCli(audio, cliFlags, `${file}-${cliFlags.join('')}`);

    expect(reference.segments.length).toBeGreaterThan(0);
    expect(ours.duration).toBe(reference.samples / SAMPLE_RATE);
    expect(ours.language).toBe('en');
    if (timestamps === 'word') expect(ours.words?.length).toBeGreaterThan(0);
    else expect(ours.segments).toEqual(expectedSegments(reference.segments, reference.samples));
    // The full text keeps whisper's own spacing between segments, whitespace-only ones included.
    expect(ours.text).toBe(
      reference.segments
        .map((s) => s.text)
        .join('')
        .trim(),
    );
  });
});
