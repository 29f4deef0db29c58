// The audio sets of the speech-to-text speed table (bench/stt-real.mjs, issue 43: "the LibriSpeech clips, 10 short
// clips (< 5 s) and a 10-minute file"), each a list of files with their reference transcripts
// (../shared/audio/transcripts.tsv). An engine process transcribes every file of a set in turn, one model load.
//
// Single files (the earlier tables): jfk, librispeech (1089-134686-0000), gb0.
// librispeech-7: the seven LibriSpeech clips of the shared data (2.0-10.4 s, 28.5 s in all).
// short-10: ten real recordings under 5 s: the five shared LibriSpeech / LJ Speech clips that are, and five cut at
//   pauses from longer shared clips (jfk in three, LJ001-0001's first clause, 1089-134691-0001's first clause). The
//   cuts are fixed times in the middle of pauses (each pause found by its energy: 250 ms or more at least 25 dB
//   under the clip's loud frames), and each piece's text is the reference's words on that side of the pause.
// ten-minutes: every English clip of the shared data with a reference (gb0 first; 187 s in all) in turn, 1-3 s of
//   silence after each (seeded), over and over until the next would pass 600 s; then silence to exactly 600 s.
//   The reference is their texts in order. It repeats its speech about three times: its figures are about a long
//   file's windows, carried prompt and memory, not about a wide vocabulary.
// perturbed: every English clip with a reference (as in ten-minutes: 12 clips from 7 speakers, 520 words, gb0 376 of
//   them) clean and in seven seeded copies (PERTURBATIONS: noise at 15 and 5 dB SNR, two rooms, 0.85 and 1.2 times
//   the tempo, noise over a room): 96 files, 4,160 words, so that two engines' word error rates on these recordings
//   can be told apart to well under a point (bench/stt-wer.mjs); the 73-74-word sets above move 1.35 points a word.
//   The tempo copies need ffmpeg on the PATH.
// Made files go to bench/out/stt-sets/ (re-made when missing; decoding needs the built library, dist/).
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  atTempo,
  brownNoise,
  convolve,
  frameRms,
  fromDb,
  hum,
  pinkNoise,
  random,
  rmsOf,
  roomImpulse,
  seedOf,
  voicedMask,
} from '../scripts/diarize-devset/dsp.mjs';
import { uniform } from '../scripts/lib/fixture-voices.mjs';
import { pcm16MonoWav } from '../scripts/lib/wav.mjs';
import { distEntry, readReferences, root, sharedAudio } from './lib.mjs';

const RATE = 16_000;
const setsDir = join(root, 'bench', 'out', 'stt-sets');

const LIBRISPEECH = [
  '1089-134686-0000.flac',
  '1089-134686-0001.flac',
  '1089-134691-0000.flac',
  '1089-134691-0001.flac',
  '2830-3980-0043.wav',
  '4507-16021-0012.wav',
  '8455-210777-0068.wav',
];

/** Pieces cut from longer clips: [file, start s, end s, the reference's words in that piece]. */
const CUTS = [
  ['jfk.wav', 0, 2.7, 'And so my fellow Americans,'],
  ['jfk.wav', 3.0, 7.85, 'ask not what your country can do for you,'],
  ['jfk.wav', 7.85, 11.0, 'ask what you can do for your country.'],
  ['LJ001-0001.wav', 0, 4.2, 'Printing, in the only sense with which we are at present concerned,'],
  ['1089-134691-0001.flac', 0, 3.3, 'FOR A FULL HOUR HE HAD PACED UP AND DOWN WAITING'],
];
const SHORT_WHOLE = [
  '1089-134686-0001.flac',
  '1089-134691-0000.flac',
  '2830-3980-0043.wav',
  '4507-16021-0012.wav',
  '8455-210777-0068.wav',
];

/** Every English clip with a reference, in the ten-minute file's order. */
const LONG_CLIPS = ['gb0.wav', 'jfk.wav', 'LJ001-0001.wav', 'LJ001-0002.mp3', 'LJ001-0007.flac', ...LIBRISPEECH];
const LONG_SECONDS = 600;
/** The seed of the gaps between the ten-minute file's clips. */
const GAP_SEED = 43;

/**
 * The perturbed set's copies of each clip: name -> what is done to it (seeded per clip and copy). Noise is pink or
 * brown noise (drawn per clip and copy; brown, mostly under 100 Hz, masks far less than pink at one SNR) with mains
 * hum 10 dB under it, at `snrDb` under the clip's voiced frames; a room is
 * dsp.mjs's synthetic impulse response (`rt60` s, direct path `drrDb` over the tail), the level brought back to
 * the clean clip's; a tempo is ffmpeg's atempo (pitch kept).
 */
const PERTURBATIONS = {
  clean: {},
  'noise-15db': { snrDb: 15 },
  'noise-5db': { snrDb: 5 },
  'room-0.5s': { rt60: 0.5, drrDb: 3 },
  'room-0.9s': { rt60: 0.9, drrDb: 0 },
  'tempo-0.85': { tempo: 0.85 },
  'tempo-1.2': { tempo: 1.2 },
  'room-0.6s-noise-10db': { rt60: 0.6, drrDb: 2, snrDb: 10 },
};
/** Raised when perturb() or the dsp.mjs helpers it calls change what they make, so old copies are not reused. */
const PERTURB_VERSION = 1;

/** RMS over the voiced 20 ms frames (dsp.mjs's rule): the speech level noise is set against. */
function voicedRms(samples) {
  const rms = frameRms(samples);
  const mask = voicedMask(rms);
  let sum = 0;
  let n = 0;
  for (let f = 0; f < rms.length; f++) {
    if (mask[f]) {
      sum += rms[f] * rms[f];
      n++;
    }
  }
  return Math.sqrt(sum / Math.max(1, n));
}

/** `samples` with PERTURBATIONS[name]'s changes, the random parts seeded by the clip and the copy. */
async function perturb(samples, file, name) {
  const { snrDb, rt60, drrDb, tempo } = PERTURBATIONS[name];
  const rand = random(seedOf('stt-perturbed', file, name));
  const level = voicedRms(samples);
  let out = samples;
  if (tempo !== undefined) out = await atTempo(out, tempo);
  if (rt60 !== undefined) {
    // convolve keeps the input's length: the tail after the last sample is dropped.
    const wet = convolve(out, roomImpulse(rt60, drrDb, rand.between(0.003, 0.012), rand));
    const gain = level / voicedRms(wet);
    out = Float32Array.from(wet, (s) => s * gain);
  }
  if (snrDb !== undefined) {
    const noise = rand.next() < 0.5 ? pinkNoise(out.length, rand) : brownNoise(out.length, rand);
    const buzz = hum(out.length, rand.next() < 0.5 ? 50 : 60);
    const noiseGain = 1 / rmsOf(noise);
    const buzzGain = fromDb(-10) / rmsOf(buzz);
    const bed = Float32Array.from(noise, (s, i) => s * noiseGain + buzz[i] * buzzGain);
    const bedGain = (level * fromDb(-snrDb)) / rmsOf(bed);
    out = Float32Array.from(out, (s, i) => s + bed[i] * bedGain);
  }
  // Clipping would be a perturbation of its own: scale the copy down instead where a peak passes full scale.
  let peak = 0;
  for (const s of out) peak = Math.max(peak, Math.abs(s));
  return peak > 0.99 ? Float32Array.from(out, (s) => (s * 0.99) / peak) : out;
}

/** The set names --audio takes, with what each is. */
export const SETS = {
  jfk: 'jfk.wav (11 s)',
  librispeech: '1089-134686-0000.flac (10.4 s)',
  gb0: 'gb0.wav (127 s)',
  'librispeech-7': 'the seven LibriSpeech clips (28.5 s)',
  'short-10': 'ten real clips under 5 s (five cut at pauses)',
  'ten-minutes': 'the English clips in turn to 600 s',
  perturbed: 'the English clips clean and in 7 noisy, reverberant or faster/slower copies (96 files, 25 min)',
};

const SINGLE = { jfk: 'jfk.wav', librispeech: '1089-134686-0000.flac', gb0: 'gb0.wav' };

/** Writes `samples` to `path` unless it is there (a temporary name renamed into place: never half a file). */
function writeWav(path, samples) {
  if (existsSync(path)) return;
  writeFileSync(`${path}.partial`, pcm16MonoWav(samples, RATE));
  renameSync(`${path}.partial`, path);
}

/**
 * The files of set `name`: [{ path, reference }], made under bench/out/stt-sets/ when they are cut or joined.
 * @param {string} name a key of SETS
 */
export async function setFiles(name) {
  const references = readReferences();
  const referenceOf = (file) => {
    const text = references.get(file);
    if (text === undefined) throw new Error(`transcripts.tsv has no reference for ${file}`);
    return text;
  };
  const shared = (file) => ({ path: sharedAudio(file), reference: referenceOf(file) });
  if (name in SINGLE) return [shared(SINGLE[name])];
  if (name === 'librispeech-7') return LIBRISPEECH.map(shared);
  const { decodeAudio } = await import(pathToFileURL(distEntry).href);
  const decoded = new Map();
  const samplesOf = async (file) => {
    if (!decoded.has(file)) decoded.set(file, (await decodeAudio(sharedAudio(file))).samples);
    return decoded.get(file);
  };
  // Named for what makes them, so a changed cut, order or seed makes new files instead of reusing old ones.
  const made = createHash('sha256')
    .update(
      JSON.stringify(
        name === 'perturbed'
          ? { LONG_CLIPS, PERTURBATIONS, PERTURB_VERSION }
          : { CUTS, LONG_CLIPS, LONG_SECONDS, GAP_SEED },
      ),
    )
    .digest('hex');
  const dir = join(setsDir, `${name}-${made.slice(0, 12)}`);
  mkdirSync(dir, { recursive: true });
  if (name === 'short-10') {
    const cut = [];
    for (const [file, start, end, reference] of CUTS) {
      const path = join(dir, `${file.replace(/\.\w+$/, '')}-${start.toFixed(2)}-${end.toFixed(2)}.wav`);
      const samples = await samplesOf(file);
      writeWav(path, samples.subarray(Math.round(start * RATE), Math.min(samples.length, Math.round(end * RATE))));
      cut.push({ path, reference });
    }
    return [...SHORT_WHOLE.map(shared), ...cut];
  }
  if (name === 'ten-minutes') {
    const path = join(dir, 'ten-minutes.wav');
    const texts = [];
    const out = new Float32Array(LONG_SECONDS * RATE);
    const gap = uniform(GAP_SEED);
    let at = Math.round(0.5 * RATE);
    for (let i = 0; ; i++) {
      const file = LONG_CLIPS[i % LONG_CLIPS.length];
      const samples = await samplesOf(file);
      if (at + samples.length > out.length) break;
      out.set(samples, at);
      texts.push(referenceOf(file));
      at += samples.length + Math.round((1 + 2 * gap()) * RATE);
    }
    writeWav(path, out);
    return [{ path, reference: texts.join(' ') }];
  }
  if (name === 'perturbed') {
    const files = [];
    for (const copy of Object.keys(PERTURBATIONS)) {
      for (const file of LONG_CLIPS) {
        const path = join(dir, `${file.replace(/\.\w+$/, '')}-${copy}.wav`);
        if (!existsSync(path)) writeWav(path, await perturb(await samplesOf(file), file, copy));
        files.push({ path, reference: referenceOf(file), clip: file, copy });
      }
    }
    return files;
  }
  throw new Error(`unknown audio set "${name}" (known: ${Object.keys(SETS).join(', ')})`);
}
