#!/usr/bin/env node
// Checks a set written by make-devset.mjs without listening to it: every WAV is 16 kHz mono 16-bit with the manifest's
// duration; every RTTM line parses (SPEAKER <file> 1 <start> <dur> <NA> <NA> <speaker> <NA> <NA>, three decimals,
// inside the file, only the manifest's speakers, each of them present); speech and overlap seconds recomputed from the
// RTTM match the manifest, with overlap 5-15% of speech; conversations last 90-150 s; the variants share their
// conversation's RTTM. Levels: in the clean files each speaker's solo speech (RTTM minus everyone else's) is at -26
// dBFS + its offset (+ the peak scaling) within 4 dB (6 dB with 1-3 s of solo speech), the time outside the RTTM is at
// least 20 dB under the speech; the noise files' SNR is the manifest's within 1.5 dB; the reverb files keep the clean
// speech level within 1.5 dB. Exits 1 on any failure.
//
//   node scripts/diarize-devset/check-devset.mjs [DIR]      (default test/fixtures/diarize-dev)
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { RATE, toDb } from './dsp.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const dir = resolve(process.argv[2] ?? join(root, 'test/fixtures/diarize-dev'));
const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8'));
const failures = [];
const fail = (name, message) => failures.push(`${name}: ${message}`);

function readWav(name) {
  const bytes = readFileSync(join(dir, `${name}.wav`));
  const ok =
    bytes.toString('ascii', 0, 4) === 'RIFF' &&
    bytes.toString('ascii', 8, 12) === 'WAVE' &&
    bytes.readUInt16LE(20) === 1 &&
    bytes.readUInt16LE(22) === 1 &&
    bytes.readUInt32LE(24) === RATE &&
    bytes.readUInt16LE(34) === 16 &&
    bytes.toString('ascii', 36, 40) === 'data' &&
    bytes.readUInt32LE(40) === bytes.length - 44;
  if (!ok) fail(name, 'not a 16 kHz mono 16-bit WAV with a 44-byte header');
  return new Int16Array(bytes.buffer.slice(bytes.byteOffset + 44, bytes.byteOffset + bytes.length));
}

const RTTM_LINE = /^SPEAKER (\S+) 1 (\d+\.\d{3}) (\d+\.\d{3}) <NA> <NA> (\S+) <NA> <NA>$/;

/** Segments in whole milliseconds. */
function readRttm(entry) {
  const text = readFileSync(join(dir, `${entry.name}.rttm`), 'utf8');
  if (!text.endsWith('\n')) fail(entry.name, 'RTTM does not end with a newline');
  const segments = [];
  for (const line of text.trimEnd().split('\n')) {
    const m = RTTM_LINE.exec(line);
    if (!m) {
      fail(entry.name, `bad RTTM line: ${line}`);
      continue;
    }
    if (m[1] !== entry.name) fail(entry.name, `RTTM file id ${m[1]}`);
    const start = Math.round(Number(m[2]) * 1000);
    const end = start + Math.round(Number(m[3]) * 1000);
    if (end <= start || end > Math.round(entry.duration * 1000)) fail(entry.name, `segment outside the file: ${line}`);
    if (!entry.speakers.includes(m[4])) fail(entry.name, `unknown speaker ${m[4]}`);
    segments.push({ speaker: m[4], start, end });
  }
  for (const s of entry.speakers)
    if (!segments.some((x) => x.speaker === s)) fail(entry.name, `speaker ${s} never speaks`);
  return segments;
}

/** Per millisecond, how many speakers speak (and who, when one). */
function activity(segments, ms) {
  const count = new Uint8Array(ms);
  const who = new Array(ms);
  for (const s of segments) {
    for (let t = s.start; t < s.end; t++) {
      count[t]++;
      who[t] = s.speaker;
    }
  }
  return { count, who };
}

const power = (pcm, fromMs, toMs) => {
  let sum = 0;
  for (let i = fromMs * 16; i < Math.min(pcm.length, toMs * 16); i++) sum += (pcm[i] / 32768) ** 2;
  return sum;
};

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const percentile = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))];

/** Speech (>= 1 speaker) and non-speech (0, at least 100 ms from any speech) power per sample. */
function speechAndRest(pcm, count) {
  let speech = 0;
  let speechN = 0;
  let rest = 0;
  let restN = 0;
  for (let t = 0; t < count.length; t++) {
    const p = power(pcm, t, t + 1);
    if (count[t] > 0) {
      speech += p;
      speechN += 16;
    } else {
      let near = false;
      for (let d = -100; d <= 100 && !near; d += 10) near = (count[t + d] ?? 0) > 0;
      if (!near) {
        rest += p;
        restN += 16;
      }
    }
  }
  return { speech: speech / Math.max(1, speechN), rest: restN > 0 ? rest / restN : undefined };
}

const cleanLevels = new Map();
const rttmOf = new Map();
for (const entry of manifest.files) {
  const pcm = readWav(entry.name);
  const duration = pcm.length / RATE;
  if (Math.abs(duration - entry.duration) > 0.001)
    fail(entry.name, `duration ${duration} != manifest ${entry.duration}`);
  if (!entry.minutes && (duration < 90 || duration > 150)) fail(entry.name, `duration ${duration} s outside 90-150 s`);
  const segments = readRttm(entry);
  const body = readFileSync(join(dir, `${entry.name}.rttm`), 'utf8').replaceAll(` ${entry.name} `, ' X ');
  if (!rttmOf.has(entry.base)) rttmOf.set(entry.base, body);
  else if (rttmOf.get(entry.base) !== body) fail(entry.name, `RTTM differs from ${entry.base}'s`);

  const ms = Math.round(entry.duration * 1000);
  const { count, who } = activity(segments, ms);
  let speechMs = 0;
  let overlapMs = 0;
  for (const c of count) {
    if (c >= 1) speechMs++;
    if (c >= 2) overlapMs++;
  }
  const ratio = overlapMs / speechMs;
  if (Math.abs(speechMs / 1000 - entry.speechSeconds) > 0.002) fail(entry.name, `speech ${speechMs / 1000} s`);
  if (Math.abs(overlapMs / 1000 - entry.overlapSeconds) > 0.002) fail(entry.name, `overlap ${overlapMs / 1000} s`);
  if (ratio < 0.05 || ratio > 0.15) fail(entry.name, `overlap ${(ratio * 100).toFixed(1)}% outside 5-15%`);

  const levels = speechAndRest(pcm, count);
  const note = [];
  if (entry.variant === 'clean') {
    // Each speaker's solo speech (their RTTM minus everyone else's), pooled, against the expected level: within 4 dB
    // with at least 3 s of it, 6 dB with 1-3 s (a short clip's solo part may be only its loudest word), not checked
    // under 1 s. The RTTM's merged pauses make it read about 1 dB low (the level is set on voiced frames). Segments
    // with 0.2 s or more of solo speech are also compared one by one for the printed spread.
    const deviations = [];
    const pooled = {};
    for (const s of segments) {
      let p = 0;
      let n = 0;
      for (let t = s.start; t < s.end; t++) {
        if (count[t] === 1 && who[t] === s.speaker) {
          p += power(pcm, t, t + 1);
          n += 16;
        }
      }
      const expected = -26 + entry.levelsDb[s.speaker] + entry.peakGainDb;
      const sum = pooled[s.speaker] ?? { p: 0, n: 0, expected };
      pooled[s.speaker] = { p: sum.p + p, n: sum.n + n, expected };
      if (n >= 0.2 * RATE) deviations.push(toDb(Math.sqrt(p / n)) - expected);
    }
    const speakerDeviations = [];
    for (const [speaker, { p, n, expected }] of Object.entries(pooled)) {
      const d = toDb(Math.sqrt(p / Math.max(1, n))) - expected;
      speakerDeviations.push(d);
      if (n >= RATE && Math.abs(d) > (n >= 3 * RATE ? 4 : 6)) {
        fail(entry.name, `${speaker}: solo speech ${d.toFixed(1)} dB from its level (${(n / RATE).toFixed(1)} s)`);
      }
    }
    const snr = levels.rest === undefined ? Infinity : 10 * Math.log10(levels.speech / Math.max(levels.rest, 1e-20));
    if (snr < 20) fail(entry.name, `non-speech only ${snr.toFixed(1)} dB under speech`);
    cleanLevels.set(entry.base, toDb(Math.sqrt(levels.speech)) - entry.peakGainDb);
    note.push(
      `speakers vs their level: ${speakerDeviations.map((d) => d.toFixed(1)).join(' ')} dB; segments: median ${median(deviations).toFixed(1)} dB, ` +
        `p5 ${percentile(deviations, 0.05).toFixed(1)}, p95 ${percentile(deviations, 0.95).toFixed(1)} (n ${deviations.length}); ` +
        `non-speech ${snr === Infinity ? 'silent' : `${snr.toFixed(0)} dB under speech`}`,
    );
  } else if (entry.variant === 'noise') {
    const snr = 10 * Math.log10(Math.max(1e-12, levels.speech - levels.rest) / levels.rest);
    if (Math.abs(snr - entry.snrDb) > 1.5) fail(entry.name, `measured SNR ${snr.toFixed(1)} dB vs ${entry.snrDb}`);
    note.push(`measured SNR ${snr.toFixed(1)} dB (manifest ${entry.snrDb})`);
  } else if (entry.variant === 'reverb' && cleanLevels.has(entry.base)) {
    const d = toDb(Math.sqrt(levels.speech)) - entry.peakGainDb - cleanLevels.get(entry.base);
    if (Math.abs(d) > 1.5) fail(entry.name, `speech level ${d.toFixed(1)} dB from the clean file's`);
    note.push(`speech level ${d >= 0 ? '+' : ''}${d.toFixed(2)} dB vs clean`);
  }
  console.log(
    `${entry.name.padEnd(22)} ${segments.length} RTTM lines, overlap ${(ratio * 100).toFixed(1)}%  ${note.join('  ')}`,
  );
}
if (failures.length > 0) {
  console.log(`\n${failures.length} failures:\n${failures.join('\n')}`);
  process.exit(1);
}
console.log(`\nall ${manifest.files.length} files pass`);
