// What a speaker-embedding model is fed: each family wants its own spectral front end, picked from the model's input.
//  - Kaldi fbank (WeSpeaker, 3D-Speaker: input [N, T, 80]): 80 log-mel bins, 25 ms Hamming frames every 10 ms,
//    mean-normalized over the window.
//  - GE2E (Resemblyzer's encoder, converted by scripts/models/ge2e-to-onnx.py: input `mels` [N, T, 40]): librosa's
//    melspectrogram as Resemblyzer calls it: a 400-point FFT of periodic-Hann frames centred every 10 ms, power (no
//    log), 40 Slaney-normalized mel bins over 0–8 kHz; each window's audio levelled to -30 dBFS, up or down
//    (Resemblyzer's normalize_volume only raises a whole utterance; here a speaker's level in the mix, which says
//    nothing about who they are, is taken out per window).
// Frames are computed once over a stretch of overlapping windows, then sliced per window.

import { FeatureExtractor } from './features.js';
import { Fft } from './fft.js';

const SAMPLE_RATE = 16000;
const HOP = 160;

export type SpeakerFrontEndKind = 'kaldi-fbank' | 'ge2e';

export interface SpeakerFrontEnd {
  readonly kind: SpeakerFrontEndKind;
  /** Values per frame. */
  readonly dimension: number;
  /** Frames of `samples` on the 10 ms grid from `start`, for the window [start, end): frame-major. */
  frames(samples: Float32Array, start: number, end: number): Float32Array;
  /** Turns a window's slice of frames (from `frames`) into the model's input, in place. */
  prepare(frames: Float32Array, windowSamples: Float32Array): void;
}

/**
 * The front end a model's first input asks for: 40 features → GE2E, 80 → Kaldi fbank.
 * @returns undefined when the input's last dimension is neither (the caller names the model in its error).
 */
export function frontEndFor(featureDim: number | undefined, inputName: string): SpeakerFrontEnd | undefined {
  if (featureDim === 40 || (featureDim === undefined && inputName === 'mels')) return new Ge2eFrontEnd();
  if (featureDim === 80 || featureDim === undefined) return new KaldiFbankFrontEnd();
  return undefined;
}

/** Frames whose window [start, end) covers, one per 10 ms. */
export const framesIn = (start: number, end: number) => Math.max(0, Math.floor((end - start) / HOP));

class KaldiFbankFrontEnd implements SpeakerFrontEnd {
  readonly kind = 'kaldi-fbank';
  readonly dimension = 80;
  private readonly extractor = new FeatureExtractor(80);

  frames(samples: Float32Array, start: number, end: number): Float32Array {
    // Kaldi frames start at their first sample (no centring); the last 240 samples of the stretch complete the
    // final frame, so the stretch is read past `end` where the audio allows.
    const stop = Math.min(samples.length, end + 400 - HOP);
    const frames = this.extractor.compute(samples, start, stop);
    const wanted = framesIn(start, end) * this.dimension;
    if (frames.length >= wanted) return frames.subarray(0, wanted);
    // At the end of the audio the last frames cannot be whole: they repeat the last one there is (zeros would be
    // a loud log-mel value, not silence), or are the floor when there is none.
    const padded = new Float32Array(wanted).fill(Math.log(1e-10));
    padded.set(frames);
    const d = this.dimension;
    if (frames.length >= d) {
      const last = frames.subarray(frames.length - d);
      for (let at = frames.length; at < wanted; at += d) padded.set(last, at);
    }
    return padded;
  }

  prepare(frames: Float32Array): void {
    const d = this.dimension;
    const count = frames.length / d;
    for (let m = 0; m < d; m++) {
      let mean = 0;
      for (let f = 0; f < count; f++) mean += frames[f * d + m] as number;
      mean /= Math.max(count, 1);
      for (let f = 0; f < count; f++) frames[f * d + m] = (frames[f * d + m] as number) - mean;
    }
  }
}

const GE2E_FFT = 400;
const GE2E_MELS = 40;
const GE2E_TARGET_DBFS = -30;
// A near-silent window is not raised by more than this (Resemblyzer does not cap; its input has no silence left).
const GE2E_MAX_GAIN_DB = 30;

const slaneyMel = (hz: number) => (hz < 1000 ? (3 * hz) / 200 : 15 + (27 * Math.log(hz / 1000)) / Math.log(6.4));
const slaneyHz = (mel: number) => (mel < 15 ? (200 * mel) / 3 : 1000 * Math.exp(((mel - 15) * Math.log(6.4)) / 27));

/** librosa.filters.mel(sr=16000, n_fft=400, n_mels=40) (Slaney scale and area normalization): [mel][bin]. */
export function slaneyFilterbank(): Float64Array[] {
  const bins = GE2E_FFT / 2 + 1;
  const top = slaneyMel(SAMPLE_RATE / 2);
  const points = Array.from({ length: GE2E_MELS + 2 }, (_, i) => slaneyHz((top * i) / (GE2E_MELS + 1)));
  return Array.from({ length: GE2E_MELS }, (_, m) => {
    const [left, center, right] = [points[m] as number, points[m + 1] as number, points[m + 2] as number];
    const weights = new Float64Array(bins);
    for (let k = 0; k < bins; k++) {
      const hz = (k * SAMPLE_RATE) / GE2E_FFT;
      const rising = (hz - left) / (center - left);
      const falling = (right - hz) / (right - center);
      weights[k] = Math.max(0, Math.min(rising, falling)) * (2 / (right - left));
    }
    return weights;
  });
}

class Ge2eFrontEnd implements SpeakerFrontEnd {
  readonly kind = 'ge2e';
  readonly dimension = GE2E_MELS;
  private readonly fft = new Fft(GE2E_FFT);
  private readonly window = Float64Array.from(
    { length: GE2E_FFT },
    (_, i) => 0.5 - 0.5 * Math.cos((2 * Math.PI * i) / GE2E_FFT),
  );
  private readonly filters = slaneyFilterbank().map((weights) => {
    let first = 0;
    while (first < weights.length && weights[first] === 0) first++;
    let last = weights.length - 1;
    while (last > first && weights[last] === 0) last--;
    return { first, weights: weights.slice(first, last + 1) };
  });
  private readonly re = new Float64Array(GE2E_FFT);
  private readonly im = new Float64Array(GE2E_FFT);

  frames(samples: Float32Array, start: number, end: number): Float32Array {
    const count = framesIn(start, end);
    const out = new Float32Array(count * GE2E_MELS);
    const re = this.re;
    const im = this.im;
    const window = this.window;
    for (let f = 0; f < count; f++) {
      // Centred frames (librosa's center=True): frame f spans ±200 samples around start + 160 f; audio outside
      // the file is zero, as librosa's padding is.
      const first = start + f * HOP - GE2E_FFT / 2;
      for (let i = 0; i < GE2E_FFT; i++) {
        const at = first + i;
        re[i] = at >= 0 && at < samples.length ? (samples[at] as number) * (window[i] as number) : 0;
        im[i] = 0;
      }
      this.fft.transform(re, im);
      for (let m = 0; m < GE2E_MELS; m++) {
        const { first: bin, weights } = this.filters[m] as { first: number; weights: Float64Array };
        let energy = 0;
        for (let k = 0; k < weights.length; k++) {
          energy += (weights[k] as number) * ((re[bin + k] as number) ** 2 + (im[bin + k] as number) ** 2);
        }
        out[f * GE2E_MELS + m] = energy;
      }
    }
    return out;
  }

  prepare(frames: Float32Array, windowSamples: Float32Array): void {
    let square = 0;
    for (const v of windowSamples) square += v * v;
    const rms = Math.sqrt(square / Math.max(1, windowSamples.length));
    const dbfs = 20 * Math.log10(Math.max(rms, 1e-10));
    const gainDb = Math.min(GE2E_MAX_GAIN_DB, GE2E_TARGET_DBFS - dbfs);
    // Mel energies are power: a gain of g dB on the samples is 10^(g/10) on them.
    const scale = 10 ** (gainDb / 10);
    for (let i = 0; i < frames.length; i++) frames[i] = (frames[i] as number) * scale;
  }
}
