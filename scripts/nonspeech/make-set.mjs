#!/usr/bin/env node
// The non-speech and long-audio set of issue 20 ("transcripts that invent nothing"): audio in which a transcriber
// must find no words, and speech placed at known times inside it. Deterministic (a seeded generator, fixed
// parameters): the same files on every machine, so results compare across runs. 16 kHz mono 16-bit WAV.
//
//   node scripts/nonspeech/make-set.mjs [--out DIR] [--full]
//
// Writes DIR (default test/fixtures/nonspeech, git-ignored) and DIR/manifest.json:
//   {"files": [{"file", "kind": "nonspeech" | "islands" | "long", "seconds", "description",
//               "islands": [{"clip", "start", "end", "text"}]}]}
// Kinds: pure non-speech (digital silence, white/pink/brown noise at several levels, mains hum, synthetic chords,
// melody and rhythm, clicks, room tone): any word is invented. Islands: real speech clips from ../shared/audio at
// known offsets in a minute of silence, room tone or noise (reference text from transcripts.tsv). Long (only with
// --full): a 60-minute concatenation of the clips with gaps, its reference the clips' texts in order.
// Speech is decoded with the built library (dist/, `npm run build:ts`), so the addon must be built.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { uniform } from '../lib/fixture-voices.mjs';
import { pcm16MonoWav } from '../lib/wav.mjs';

const RATE = 16_000;
const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const { values } = parseArgs({
  options: {
    out: { type: 'string', default: join(root, 'test/fixtures/nonspeech') },
    full: { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (values.help) {
  console.log('usage: node scripts/nonspeech/make-set.mjs [--out DIR] [--full]');
  process.exit(0);
}
const sharedDir = resolve(root, process.env.VOXMILL_TEST_DATA ?? '../shared');

// --- deterministic sources --------------------------------------------------------------------------------

/** Standard normal samples (Box-Muller). */
function gaussian(seed) {
  const next = uniform(seed);
  return () => Math.sqrt(-2 * Math.log(1 - next())) * Math.cos(2 * Math.PI * next());
}

const dbfs = (db) => 10 ** (db / 20);

/** Scales to an RMS of `db` dBFS. */
function atLevel(samples, db) {
  let sum = 0;
  for (const s of samples) sum += s * s;
  const rms = Math.sqrt(sum / samples.length) || 1;
  const gain = dbfs(db) / rms;
  for (let i = 0; i < samples.length; i++) samples[i] *= gain;
  return samples;
}

function whiteNoise(seconds, seed) {
  const next = gaussian(seed);
  return Float32Array.from({ length: seconds * RATE }, () => next());
}

/** Pink (1/f) noise: Paul Kellet's economy filter over white noise. */
function pinkNoise(seconds, seed) {
  const white = whiteNoise(seconds, seed);
  let b0 = 0;
  let b1 = 0;
  let b2 = 0;
  for (let i = 0; i < white.length; i++) {
    const w = white[i];
    b0 = 0.99765 * b0 + w * 0.099046;
    b1 = 0.963 * b1 + w * 0.2965164;
    b2 = 0.57 * b2 + w * 1.0526913;
    white[i] = b0 + b1 + b2 + w * 0.1848;
  }
  return white;
}

/** Brown (1/f²) noise: leaky integration of white noise. */
function brownNoise(seconds, seed) {
  const white = whiteNoise(seconds, seed);
  let last = 0;
  for (let i = 0; i < white.length; i++) {
    last = 0.995 * last + white[i] * 0.05;
    white[i] = last;
  }
  return white;
}

/** Mains hum: the fundamental and its odd harmonics, as a transformer buzzes. */
function hum(seconds, hz) {
  return Float32Array.from({ length: seconds * RATE }, (_, i) => {
    const t = i / RATE;
    return (
      Math.sin(2 * Math.PI * hz * t) + 0.5 * Math.sin(6 * Math.PI * hz * t) + 0.25 * Math.sin(10 * Math.PI * hz * t)
    );
  });
}

const midiHz = (note) => 440 * 2 ** ((note - 69) / 12);

/** A note with a soft attack and release: a sum of harmonics (organ-like) so it is clearly tonal. */
function addNote(out, startSeconds, seconds, note, gain) {
  const hz = midiHz(note);
  const start = Math.round(startSeconds * RATE);
  const length = Math.round(seconds * RATE);
  for (let i = 0; i < length && start + i < out.length; i++) {
    const t = i / RATE;
    const envelope = Math.min(1, t / 0.02, (seconds - t) / 0.08);
    let sample = 0;
    for (let h = 1; h <= 4; h++) sample += Math.sin(2 * Math.PI * hz * h * t) / h;
    out[start + i] += gain * Math.max(0, envelope) * sample;
  }
}

function chords(seconds) {
  const out = new Float32Array(seconds * RATE);
  // I - vi - IV - V in C, two seconds each.
  const progression = [
    [60, 64, 67],
    [57, 60, 64],
    [53, 57, 60],
    [55, 59, 62],
  ];
  for (let bar = 0; bar * 2 < seconds; bar++) {
    for (const note of progression[bar % progression.length]) addNote(out, bar * 2, 2, note, 0.3);
  }
  return out;
}

function melody(seconds, seed) {
  const out = new Float32Array(seconds * RATE);
  const next = uniform(seed);
  const scale = [60, 62, 64, 65, 67, 69, 71, 72];
  let note = 4;
  for (let beat = 0; beat * 0.25 < seconds; beat++) {
    note = Math.max(0, Math.min(scale.length - 1, note + Math.floor(next() * 5) - 2));
    addNote(out, beat * 0.25, 0.24, scale[note], 0.5);
  }
  return out;
}

/** A drum pattern: kick (a falling sine), snare (a noise burst), hi-hat (short high noise), 120 bpm. */
function rhythm(seconds, seed) {
  const out = new Float32Array(seconds * RATE);
  const noise = gaussian(seed);
  const hit = (startSeconds, length, sample) => {
    const start = Math.round(startSeconds * RATE);
    for (let i = 0; i < length * RATE && start + i < out.length; i++) out[start + i] += sample(i / RATE);
  };
  for (let step = 0; step * 0.125 < seconds; step++) {
    const at = step * 0.125;
    if (step % 8 === 0 || step % 8 === 3) {
      hit(at, 0.15, (t) => Math.sin(2 * Math.PI * (150 - 300 * t) * t) * Math.exp(-t * 20));
    }
    if (step % 8 === 4) hit(at, 0.12, (t) => noise() * 0.5 * Math.exp(-t * 30));
    hit(at, 0.03, (t) => noise() * 0.15 * Math.exp(-t * 150));
  }
  return out;
}

/** Clicks: single-sample impulses and short crackles at random times (vinyl, a bad cable). */
function clicks(seconds, seed) {
  const out = new Float32Array(seconds * RATE);
  const next = uniform(seed);
  for (let i = 0; i < seconds * 8; i++) {
    const at = Math.floor(next() * out.length);
    const length = 1 + Math.floor(next() * 40);
    for (let j = 0; j < length && at + j < out.length; j++) out[at + j] = (next() * 2 - 1) * Math.exp(-j / 8);
  }
  return out;
}

/** Room tone: an empty room's brown-ish rumble and air, at a low level. */
function roomTone(seconds, seed) {
  const brown = atLevel(brownNoise(seconds, seed), -52);
  const pink = atLevel(pinkNoise(seconds, seed + 1), -62);
  return brown.map((s, i) => s + pink[i]);
}

// --- files ------------------------------------------------------------------------------------------------

const SECONDS = 30;
const nonSpeech = [
  ['silence-digital', 'digital silence (all zeros)', () => new Float32Array(SECONDS * RATE)],
  ['white-60db', 'white noise at -60 dBFS RMS', () => atLevel(whiteNoise(SECONDS, 1), -60)],
  ['white-40db', 'white noise at -40 dBFS RMS', () => atLevel(whiteNoise(SECONDS, 2), -40)],
  ['white-20db', 'white noise at -20 dBFS RMS', () => atLevel(whiteNoise(SECONDS, 3), -20)],
  ['pink-40db', 'pink noise at -40 dBFS RMS', () => atLevel(pinkNoise(SECONDS, 4), -40)],
  ['pink-20db', 'pink noise at -20 dBFS RMS', () => atLevel(pinkNoise(SECONDS, 5), -20)],
  ['brown-40db', 'brown noise at -40 dBFS RMS', () => atLevel(brownNoise(SECONDS, 6), -40)],
  ['brown-20db', 'brown noise at -20 dBFS RMS', () => atLevel(brownNoise(SECONDS, 7), -20)],
  ['hum-50hz', 'mains hum, 50 Hz with odd harmonics, -30 dBFS', () => atLevel(hum(SECONDS, 50), -30)],
  ['hum-60hz', 'mains hum, 60 Hz with odd harmonics, -30 dBFS', () => atLevel(hum(SECONDS, 60), -30)],
  ['music-chords', 'organ chords I-vi-IV-V, -20 dBFS', () => atLevel(chords(SECONDS), -20)],
  ['music-melody', 'a random-walk melody in C major, eighth notes, -20 dBFS', () => atLevel(melody(SECONDS, 8), -20)],
  ['music-rhythm', 'kick, snare and hi-hat at 120 bpm, -20 dBFS', () => atLevel(rhythm(SECONDS, 9), -20)],
  ['clicks', 'random clicks and crackles, 8 a second', () => clicks(SECONDS, 10)],
  ['room-tone', 'room tone: brown rumble and pink air, about -52 dBFS', () => roomTone(SECONDS, 11)],
];

function transcripts() {
  const lines = readFileSync(join(sharedDir, 'audio', 'transcripts.tsv'), 'utf8')
    .trim()
    .split('\n')
    .slice(1);
  return new Map(lines.map((line) => line.split('\t')));
}

async function decodeClip(decodeAudio, name) {
  return (await decodeAudio(join(sharedDir, 'audio', name))).samples;
}

/** Speech clips at known offsets in a bed; returns the samples and where each clip went. */
function withIslands(bed, placed) {
  const out = Float32Array.from(bed);
  const islands = [];
  for (const { clip, samples, start, text } of placed) {
    const offset = Math.round(start * RATE);
    for (let i = 0; i < samples.length && offset + i < out.length; i++) out[offset + i] += samples[i];
    islands.push({ clip, start, end: start + samples.length / RATE, text });
  }
  return { samples: out, islands };
}

async function main() {
  mkdirSync(values.out, { recursive: true });
  const manifest = { files: [] };
  const write = (file, samples, entry) => {
    writeFileSync(join(values.out, file), pcm16MonoWav(samples, RATE));
    manifest.files.push({ file, seconds: samples.length / RATE, ...entry });
  };
  for (const [name, description, make] of nonSpeech) {
    write(`${name}.wav`, make(), { kind: 'nonspeech', description, islands: [] });
  }

  let decodeAudio;
  try {
    ({ decodeAudio } = await import(join(root, 'dist/index.js')));
  } catch (error) {
    throw new Error(`the speech islands need the built library (npm run build): ${error.message}`);
  }
  const texts = transcripts();
  const clipNames = ['jfk.wav', '2830-3980-0043.wav', '4507-16021-0012.wav', '8455-210777-0068.wav'];
  const clips = [];
  for (const clip of clipNames)
    clips.push({ clip, samples: await decodeClip(decodeAudio, clip), text: texts.get(clip) });
  // A minute each: speech at 5 s, near the middle, and ending 1 s before the end (speech at the very end must not
  // be cut).
  const placements = (bedSeconds) => {
    const [a, b, c] = clips;
    return [
      { ...a, start: 5 },
      { ...b, start: 25 },
      { ...c, start: bedSeconds - 1 - c.samples.length / RATE },
    ];
  };
  const beds = [
    ['islands-silence', 'speech islands in digital silence', () => new Float32Array(60 * RATE)],
    ['islands-room-tone', 'speech islands in room tone', () => roomTone(60, 21)],
    ['islands-pink-30db', 'speech islands in pink noise at -30 dBFS', () => atLevel(pinkNoise(60, 22), -30)],
    ['islands-music', 'speech islands over chords at -30 dBFS', () => atLevel(chords(60), -30)],
  ];
  for (const [name, description, make] of beds) {
    const { samples, islands } = withIslands(make(), placements(60));
    write(`${name}.wav`, samples, { kind: 'islands', description, islands });
  }

  if (values.full) {
    // 60 minutes: the four clips in turn, each followed by 2-6 s of room tone, until an hour is full.
    const total = 3600 * RATE;
    const out = roomTone(3600, 31);
    const next = uniform(32);
    const islands = [];
    let at = 1;
    for (let i = 0; ; i++) {
      const { clip, samples, text } = clips[i % clips.length];
      if (Math.round(at * RATE) + samples.length > total) break;
      const offset = Math.round(at * RATE);
      for (let j = 0; j < samples.length; j++) out[offset + j] += samples[j];
      islands.push({ clip, start: at, end: at + samples.length / RATE, text });
      at += samples.length / RATE + 2 + next() * 4;
    }
    write('long-60min.wav', out, {
      kind: 'long',
      description: '60 minutes of the clips in turn, 2-6 s of room tone between',
      islands,
    });
  }

  writeFileSync(join(values.out, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  console.log(`${manifest.files.length} files in ${values.out}`);
}

main().catch((error) => {
  console.error(`make-set: ${error.message}`);
  process.exit(1);
});
