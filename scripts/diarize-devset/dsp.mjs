// Signal helpers for make-devset.mjs: seeded random numbers, 20 ms frame energy and the voiced-frame rule,
// pink/brown noise and mains hum, a synthetic room impulse response, FFT convolution, ffmpeg decoding and
// WAV reading/writing. Everything is deterministic for a given seed.
import { spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync, writeSync } from 'node:fs';
import { uniform } from '../lib/fixture-voices.mjs';
import { pcm16MonoWav } from '../lib/wav.mjs';

export const RATE = 16_000;
/** 20 ms frames: the unit of the voiced-frame rule and of every cut. */
export const FRAME = 320;

export const fromDb = (db) => 10 ** (db / 20);
export const toDb = (linear) => 20 * Math.log10(Math.max(linear, 1e-12));

/** A 32-bit seed from any parts (FNV-1a over their text), so each conversation has its own stream. */
export function seedOf(...parts) {
  let h = 0x811c9dc5;
  for (const ch of parts.join('\u0000')) {
    h ^= ch.codePointAt(0);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/** Seeded random helpers over mulberry32 (scripts/lib/fixture-voices.mjs's `uniform`). */
export function random(seed) {
  const next = uniform(seed);
  return {
    next,
    between: (a, b) => a + (b - a) * next(),
    int: (n) => Math.floor(next() * n),
    /** Standard normal (Box-Muller). */
    gaussian: () => Math.sqrt(-2 * Math.log(1 - next())) * Math.cos(2 * Math.PI * next()),
    /** An index drawn with probability proportional to `weights`. */
    weighted(weights) {
      const total = weights.reduce((a, b) => a + b, 0);
      let x = next() * total;
      for (let i = 0; i < weights.length; i++) {
        x -= weights[i];
        if (x < 0) return i;
      }
      return weights.length - 1;
    },
    shuffle(items) {
      const out = [...items];
      for (let i = out.length - 1; i > 0; i--) {
        const j = Math.floor(next() * (i + 1));
        [out[i], out[j]] = [out[j], out[i]];
      }
      return out;
    },
  };
}

/** RMS of each whole 20 ms frame (a partial last frame is left out). */
export function frameRms(samples) {
  const frames = Math.floor(samples.length / FRAME);
  const rms = new Float32Array(frames);
  for (let f = 0; f < frames; f++) {
    let sum = 0;
    for (let i = f * FRAME; i < (f + 1) * FRAME; i++) sum += samples[i] * samples[i];
    rms[f] = Math.sqrt(sum / FRAME);
  }
  return rms;
}

/** The voiced-frame threshold: max(-45 dBFS, the loudest frame - 35 dB). */
export function voicedThreshold(rms) {
  let peak = 0;
  for (const r of rms) peak = Math.max(peak, r);
  return Math.max(fromDb(-45), peak * fromDb(-35));
}

export function voicedMask(rms, threshold = voicedThreshold(rms)) {
  return Uint8Array.from(rms, (r) => (r > threshold ? 1 : 0));
}

/** [first, last) samples of `samples` from its first to its last voiced frame, with `margin` seconds each side. */
export function voicedBounds(samples, margin) {
  const mask = voicedMask(frameRms(samples));
  const first = mask.indexOf(1);
  if (first === -1) return [0, 0];
  const last = mask.lastIndexOf(1);
  const pad = Math.round(margin * RATE);
  return [Math.max(0, first * FRAME - pad), Math.min(samples.length, (last + 1) * FRAME + pad)];
}

export function concat(parts) {
  const out = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

// --- noise and rooms --------------------------------------------------------------------------------------

/** Pink (1/f) noise: Paul Kellet's economy filter over white noise (as scripts/nonspeech/make-set.mjs). */
export function pinkNoise(length, rand) {
  const out = new Float32Array(length);
  let b0 = 0;
  let b1 = 0;
  let b2 = 0;
  for (let i = 0; i < length; i++) {
    const w = rand.gaussian();
    b0 = 0.99765 * b0 + w * 0.099046;
    b1 = 0.963 * b1 + w * 0.2965164;
    b2 = 0.57 * b2 + w * 1.0526913;
    out[i] = b0 + b1 + b2 + w * 0.1848;
  }
  return out;
}

/** Brown (1/f^2) noise: leaky integration of white noise. */
export function brownNoise(length, rand) {
  const out = new Float32Array(length);
  let last = 0;
  for (let i = 0; i < length; i++) {
    last = 0.995 * last + rand.gaussian() * 0.05;
    out[i] = last;
  }
  return out;
}

/** Mains hum: the fundamental and its odd harmonics. */
export function hum(length, hz) {
  return Float32Array.from({ length }, (_, i) => {
    const t = i / RATE;
    return (
      Math.sin(2 * Math.PI * hz * t) + 0.5 * Math.sin(6 * Math.PI * hz * t) + 0.25 * Math.sin(10 * Math.PI * hz * t)
    );
  });
}

export function rmsOf(samples) {
  let sum = 0;
  for (const s of samples) sum += s * s;
  return Math.sqrt(sum / Math.max(1, samples.length));
}

/**
 * A synthetic room impulse response: a unit direct path at sample 0 (so the RTTM's times stay right), then
 * Gaussian noise from `predelay` seconds on whose amplitude falls 60 dB in `rt60` seconds, scaled so the direct
 * path's energy is `drrDb` above the tail's. Length: rt60 seconds.
 */
export function roomImpulse(rt60, drrDb, predelay, rand) {
  const length = Math.round(rt60 * RATE);
  const ir = new Float32Array(length);
  const start = Math.max(1, Math.round(predelay * RATE));
  let energy = 0;
  for (let i = start; i < length; i++) {
    const t = (i - start) / RATE;
    const onset = Math.min(1, (i - start) / (0.002 * RATE)); // 2 ms rise: no click at the tail's start
    ir[i] = rand.gaussian() * onset * Math.exp((-3 * Math.LN10 * t) / rt60);
    energy += ir[i] * ir[i];
  }
  const scale = Math.sqrt(fromDb(-drrDb) ** 2 / energy);
  for (let i = start; i < length; i++) ir[i] *= scale;
  ir[0] = 1;
  return ir;
}

/** In-place iterative radix-2 FFT (inverse unscaled when `inverse`). */
function fft(re, im, inverse) {
  const n = re.length;
  for (let i = 1, j = 0; i < n; i++) {
    let bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) {
      [re[i], re[j]] = [re[j], re[i]];
      [im[i], im[j]] = [im[j], im[i]];
    }
  }
  for (let size = 2; size <= n; size <<= 1) {
    const half = size >> 1;
    const angle = ((inverse ? 2 : -2) * Math.PI) / size;
    const wr = Math.cos(angle);
    const wi = Math.sin(angle);
    for (let start = 0; start < n; start += size) {
      let cr = 1;
      let ci = 0;
      for (let k = 0; k < half; k++) {
        const a = start + k;
        const b = a + half;
        const tr = re[b] * cr - im[b] * ci;
        const ti = re[b] * ci + im[b] * cr;
        re[b] = re[a] - tr;
        im[b] = im[a] - ti;
        re[a] += tr;
        im[a] += ti;
        const next = cr * wr - ci * wi;
        ci = cr * wi + ci * wr;
        cr = next;
      }
    }
  }
}

/**
 * `x` convolved with the real impulse response `h`, cut to x's length: FFT overlap-add, two blocks of x per
 * complex FFT (one as the real part, one as the imaginary part; h is real, so the two results come back apart).
 */
export function convolve(x, h) {
  let n = 1;
  while (n < 4 * h.length) n <<= 1;
  const block = n - h.length + 1;
  const hr = new Float64Array(n);
  const hi = new Float64Array(n);
  hr.set(h);
  fft(hr, hi, false);
  const out = new Float32Array(x.length);
  const re = new Float64Array(n);
  const im = new Float64Array(n);
  for (let b = 0; b < x.length; b += 2 * block) {
    re.fill(0);
    im.fill(0);
    re.set(x.subarray(b, Math.min(x.length, b + block)));
    if (b + block < x.length) im.set(x.subarray(b + block, Math.min(x.length, b + 2 * block)));
    fft(re, im, false);
    for (let k = 0; k < n; k++) {
      const r = re[k] * hr[k] - im[k] * hi[k];
      im[k] = re[k] * hi[k] + im[k] * hr[k];
      re[k] = r;
    }
    fft(re, im, true);
    for (let k = 0; k < n && b + k < x.length; k++) out[b + k] += re[k] / n;
    for (let k = 0; k < n && b + block + k < x.length; k++) out[b + block + k] += im[k] / n;
  }
  return out;
}

// --- files ------------------------------------------------------------------------------------------------

/** Runs ffmpeg with `args`, `input` on its stdin; resolves with its stdout. */
export function ffmpeg(args, input) {
  return new Promise((resolvePromise, reject) => {
    const child = spawn('ffmpeg', ['-v', 'error', ...args], { stdio: [input ? 'pipe' : 'ignore', 'pipe', 'pipe'] });
    const out = [];
    const err = [];
    child.stdout.on('data', (d) => out.push(d));
    child.stderr.on('data', (d) => err.push(d));
    child.on('error', (e) => reject(new Error(`ffmpeg could not start (${e.message}); install ffmpeg`)));
    child.on('close', (code) => {
      if (code === 0) resolvePromise(Buffer.concat(out));
      else reject(new Error(`ffmpeg ${args.join(' ')} exited ${code}: ${Buffer.concat(err).toString()}`));
    });
    if (input) child.stdin.end(Buffer.from(input.buffer, input.byteOffset, input.byteLength));
  });
}

const floats = (bytes) => {
  const copy = new Uint8Array(bytes.length - (bytes.length % 4));
  copy.set(bytes.subarray(0, copy.length));
  return new Float32Array(copy.buffer);
};

/** Any audio file as 16 kHz mono float32. */
export async function decode(file) {
  return floats(await ffmpeg(['-i', file, '-ac', '1', '-ar', String(RATE), '-f', 'f32le', '-']));
}

/** `samples` at `tempo` times the speed, pitch kept (ffmpeg's atempo). */
export async function atTempo(samples, tempo) {
  const raw = ['-f', 'f32le', '-ar', String(RATE), '-ac', '1'];
  return floats(await ffmpeg([...raw, '-i', '-', '-af', `atempo=${tempo}`, ...raw, '-'], samples));
}

/** A 16-bit mono WAV (scripts/lib/wav.mjs) of `samples` times `gain`. */
export function writeWav(path, samples, gain = 1) {
  const scaled = gain === 1 ? samples : Float32Array.from(samples, (s) => s * gain);
  const fd = openSync(path, 'w');
  try {
    writeSync(fd, pcm16MonoWav(scaled, RATE));
  } finally {
    closeSync(fd);
  }
}

/** The 44-byte header of a 16-bit mono WAV of `total` samples (scripts/lib/wav.mjs's, sizes filled in). */
export function wavHeader(total) {
  const header = pcm16MonoWav(new Float32Array(0), RATE);
  header.writeUInt32LE(36 + total * 2, 4);
  header.writeUInt32LE(total * 2, 40);
  return header;
}

/** A WAV written piece by piece: `total` samples announced in the header, then `write(chunk)` calls. */
export function openWavStream(path, total) {
  const fd = openSync(path, 'w');
  writeSync(fd, wavHeader(total));
  return {
    write: (chunk) => writeSync(fd, pcm16MonoWav(chunk, RATE).subarray(44)),
    close: () => closeSync(fd),
  };
}

/** The samples of a 16-bit mono WAV this script wrote (44-byte header), as floats in [-1, 1). */
export function readWav16(path) {
  const bytes = readFileSync(path);
  const count = (bytes.length - 44) >> 1;
  const out = new Float32Array(count);
  for (let i = 0; i < count; i++) out[i] = bytes.readInt16LE(44 + 2 * i) / 32768;
  return out;
}
