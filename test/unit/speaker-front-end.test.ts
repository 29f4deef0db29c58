// The speaker-embedding front ends without a model: the mixed-radix FFT against a plain DFT, the Slaney filterbank
// against librosa's properties, and the window embedder's stretches, batches and order with a fake model.
import { describe, expect, it } from 'vitest';
import { Fft } from '../../src/diarize/fft.js';
import type { EmbeddingWindow } from '../../src/diarize/pipeline.js';
import { frontEndFor, slaneyFilterbank } from '../../src/diarize/speaker-front-end.js';
import { EMBEDDING_BATCH, embedWindows } from '../../src/diarize/window-embedder.js';

function naiveDft(re: Float64Array, im: Float64Array): [Float64Array, Float64Array] {
  const n = re.length;
  const outRe = new Float64Array(n);
  const outIm = new Float64Array(n);
  for (let k = 0; k < n; k++) {
    for (let t = 0; t < n; t++) {
      const angle = (-2 * Math.PI * k * t) / n;
      outRe[k] = (outRe[k] as number) + (re[t] as number) * Math.cos(angle) - (im[t] as number) * Math.sin(angle);
      outIm[k] = (outIm[k] as number) + (re[t] as number) * Math.sin(angle) + (im[t] as number) * Math.cos(angle);
    }
  }
  return [outRe, outIm];
}

describe('Fft', () => {
  it.each([1, 2, 7, 12, 49, 400, 512])('matches a plain DFT at size %i', (n) => {
    let seed = n;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31 - 0.5;
    };
    const re = Float64Array.from({ length: n }, random);
    const im = Float64Array.from({ length: n }, random);
    const [expectRe, expectIm] = naiveDft(re, im);
    new Fft(n).transform(re, im);
    for (let k = 0; k < n; k++) {
      expect(re[k]).toBeCloseTo(expectRe[k] as number, 9);
      expect(im[k]).toBeCloseTo(expectIm[k] as number, 9);
    }
  });

  it('refuses a size that is not a positive integer', () => {
    expect(() => new Fft(0)).toThrow(RangeError);
    expect(() => new Fft(2.5)).toThrow(RangeError);
  });
});

describe('GE2E front end', () => {
  it('has 40 Slaney filters over 201 bins, each with unit area in Hz / 2 (librosa norm="slaney")', () => {
    const bank = slaneyFilterbank();
    expect(bank).toHaveLength(40);
    for (const weights of bank) {
      expect(weights).toHaveLength(201);
      expect(weights.some((w) => w > 0)).toBe(true);
    }
    // Below 1 kHz the Slaney scale is linear: the first filters are equally wide (200/3 Hz per mel step).
    const width = (w: Float64Array) => w.filter((v) => v > 0).length;
    expect(width(bank[1] as Float64Array)).toBe(width(bank[2] as Float64Array));
  });

  it('is chosen by the model input: 40 features (or `mels`) is GE2E, 80 is Kaldi fbank, others none', () => {
    expect(frontEndFor(40, 'x')?.kind).toBe('ge2e');
    expect(frontEndFor(undefined, 'mels')?.kind).toBe('ge2e');
    expect(frontEndFor(80, 'feats')?.kind).toBe('kaldi-fbank');
    expect(frontEndFor(undefined, 'feats')?.kind).toBe('kaldi-fbank');
    expect(frontEndFor(64, 'feats')).toBeUndefined();
  });

  it('levels each window to -30 dBFS: the same voice 10 dB quieter gives the same features', () => {
    const frontEnd = frontEndFor(40, 'mels')!;
    const loud = Float32Array.from({ length: 16000 }, (_, i) => 0.3 * Math.sin(i / 5) * Math.sin(i / 900));
    const quiet = loud.map((v) => v / Math.sqrt(10));
    const a = frontEnd.frames(loud, 0, 16000);
    const b = frontEnd.frames(quiet, 0, 16000);
    frontEnd.prepare(a, loud);
    frontEnd.prepare(b, quiet);
    for (let i = 0; i < a.length; i += 97) expect(b[i]).toBeCloseTo(a[i] as number, 4);
  });
});

describe('embedWindows', () => {
  const samples = Float32Array.from({ length: 16000 * 20 }, (_, i) => Math.sin(i / 7) * 0.1);
  const windows: EmbeddingWindow[] = [];
  // Two stretches of 1.5 s windows every 0.25 s, and a short lone window (a different length).
  for (let s = 0; s + 24000 <= 16000 * 8; s += 4000) windows.push({ startSample: s, endSample: s + 24000 });
  windows.push({ startSample: 16000 * 10, endSample: 16000 * 10 + 8000 });
  for (let s = 16000 * 12; s + 24000 <= 16000 * 20; s += 4000) windows.push({ startSample: s, endSample: s + 24000 });

  it('returns one unit vector per window in order, from batches of at most EMBEDDING_BATCH', async () => {
    const frontEnd = frontEndFor(80, 'feats')!;
    const batches: number[] = [];
    // The fake model's embedding is [1, frames / 1000]: each vector says how long its window was.
    const run = async (_input: Float32Array, batch: number, frames: number) => {
      batches.push(batch);
      const out = new Float32Array(batch * 2);
      for (let b = 0; b < batch; b++) {
        out[b * 2] = 1;
        out[b * 2 + 1] = frames / 1000;
      }
      return out;
    };
    const vectors = await embedWindows(samples, windows, frontEnd, run, async () => undefined);
    expect(vectors).toHaveLength(windows.length);
    expect(Math.max(...batches)).toBeLessThanOrEqual(EMBEDDING_BATCH);
    expect(batches.reduce((a, b) => a + b, 0)).toBe(windows.length);
    for (const v of vectors) expect(Math.hypot(...v)).toBeCloseTo(1, 5);
    vectors.forEach((v, i) => {
      const w = windows[i] as EmbeddingWindow;
      expect(v[1]! / v[0]!).toBeCloseTo((w.endSample - w.startSample) / 160 / 1000, 6);
    });
  });

  it('gives a window the model answers NaN or Infinity for the zero vector (it matches nothing)', async () => {
    const run = async (_input: Float32Array, batch: number) => {
      const out = new Float32Array(batch * 2).fill(1);
      out[0] = Number.NaN;
      if (batch > 1) out[3] = Number.POSITIVE_INFINITY;
      return out;
    };
    const vectors = await embedWindows(samples, windows.slice(0, 3), frontEndFor(80, 'feats')!, run, async () => {});
    expect([...(vectors[0] as Float32Array)]).toEqual([0, 0]);
    expect([...(vectors[1] as Float32Array)]).toEqual([0, 0]);
    expect(Math.hypot(...(vectors[2] as Float32Array))).toBeCloseTo(1, 5);
  });

  it('sends one window a call to a model with a fixed batch of 1', async () => {
    const batches: number[] = [];
    const run = async (_input: Float32Array, batch: number) => {
      batches.push(batch);
      return new Float32Array(batch).fill(1);
    };
    await embedWindows(samples, windows.slice(0, 5), frontEndFor(80, 'feats')!, run, async () => undefined, 1);
    expect(batches).toEqual([1, 1, 1, 1, 1]);
  });

  it('pads frames past the end of the audio with the last whole frame, not zeros', () => {
    const frontEnd = frontEndFor(80, 'feats')!;
    const frames = frontEnd.frames(samples, samples.length - 16000, samples.length);
    const last = frames.subarray(frames.length - 80);
    const lastWhole = frames.subarray(frames.length - 3 * 80, frames.length - 2 * 80);
    expect(Array.from(last)).toEqual(Array.from(lastWhole));
  });

  it('gives the same frames whether a window is embedded alone or inside a stretch', async () => {
    const frontEnd = frontEndFor(40, 'mels')!;
    const seen: Float32Array[] = [];
    const run = async (input: Float32Array, batch: number) => {
      seen.push(input.slice());
      return new Float32Array(batch).fill(1);
    };
    await embedWindows(samples, windows.slice(0, 3), frontEnd, run, async () => undefined);
    await embedWindows(samples, windows.slice(2, 3), frontEnd, run, async () => undefined);
    const stretchThird = (seen[0] as Float32Array).subarray(2 * 150 * 40, 3 * 150 * 40);
    expect(Array.from(seen[1] as Float32Array)).toEqual(Array.from(stretchThird));
  });
});
