// What a speaker-embedding model is fed: each family wants its own spectral front end, picked from the model's input.
//  - Kaldi fbank (WeSpeaker, 3D-Speaker: input [N, T, 80]): torchaudio's kaldi.fbank as their recipes call it: 80
//    log-mel bins up to 8 kHz of 25 ms frames every 10 ms (DC removed, pre-emphasis 0.97, no dither), the log floored
//    at float32's epsilon, mean-normalized over the window. The window is the family's: Povey (Kaldi's default, what
//    3D-Speaker uses) for a model whose input is `x` (sherpa-onnx's 3D-Speaker exports, and
//    scripts/models/campplus-to-onnx.py's CAM++), Hamming (WeSpeaker's recipe) otherwise. Checked against torchaudio
//    by test/unit/kaldi-fbank-reference.test.ts.
//  - GE2E (Resemblyzer's encoder, converted by scripts/models/ge2e-to-onnx.py: input `mels` [N, T, 40]): librosa's
//    melspectrogram as Resemblyzer calls it: a 400-point FFT of periodic-Hann frames centred every 10 ms, power (no
//    log), 40 Slaney-normalized mel bins over 0–8 kHz; each window's audio levelled to -30 dBFS, up or down
//    (Resemblyzer's normalize_volume only raises a whole utterance; here a speaker's level in the mix, which says
//    nothing about who they are, is taken out per window).
//  - SpeechBrain fbank (ECAPA-TDNN, converted by scripts/models/ecapa-to-onnx.py: input `speechbrain_fbank`
//    [N, T, 80]): speechbrain.lobes.features.Fbank(n_mels=80) before its top_db clamp: a 400-point FFT of
//    periodic-Hamming frames centred every 10 ms (zeros outside the audio), power, 80 HTK-mel triangles over 0–8 kHz
//    (SpeechBrain's: symmetric in Hz, peak 1), 10·log10(max(x, 1e-10)). The model's graph applies the clamp
//    (max − 80 dB over the window) and removes the window's mean itself, so prepare() leaves the frames alone.
// Frames are computed once over a stretch of overlapping windows, then sliced per window.

import { FeatureExtractor } from './features.js';
import { Fft } from './fft.js';

const SAMPLE_RATE = 16000;
const HOP = 160;
const SPEECHBRAIN_MELS = 80;

export type SpeakerFrontEndKind = 'kaldi-fbank' | 'ge2e' | 'speechbrain-fbank';

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
 * The front end a model's first input asks for: an input named `speechbrain_fbank` → SpeechBrain fbank, 40 features
 * (or `mels`) → GE2E, 80 → Kaldi fbank.
 * @returns undefined when the input's last dimension is none of these, or `speechbrain_fbank` is not 80 wide (the
 *   caller names the model in its error).
 */
export function frontEndFor(featureDim: number | undefined, inputName: string): SpeakerFrontEnd | undefined {
  if (inputName === 'speechbrain_fbank') {
    return featureDim === undefined || featureDim === SPEECHBRAIN_MELS ? new SpeechBrainFbankFrontEnd() : undefined;
  }
  if (featureDim === 40 || (featureDim === undefined && inputName === 'mels')) return new Ge2eFrontEnd();
  if (featureDim === 80 || featureDim === undefined)
    return new KaldiFbankFrontEnd(inputName === 'x' ? 'povey' : 'hamming');
  return undefined;
}

/** Frames whose window [start, end) covers, one per 10 ms. */
export const framesIn = (start: number, end: number) => Math.max(0, Math.floor((end - start) / HOP));

/** torchaudio.compliance.kaldi.fbank's floor under the mel energies: float32's machine epsilon. */
const KALDI_FLOOR = 1.1920928955078125e-7;

class KaldiFbankFrontEnd implements SpeakerFrontEnd {
  readonly kind = 'kaldi-fbank';
  readonly dimension = 80;
  private readonly extractor: FeatureExtractor;
  private readonly floor: number;

  constructor(window: 'povey' | 'hamming') {
    // WeSpeaker's recipe scales the samples by 2^15 before kaldi.fbank, 3D-Speaker's does not: the same floor on
    // their energies is float32's epsilon divided by 2^30 on samples in [-1, 1] (the constant log offset itself is
    // taken out by the mean normalization).
    this.floor = window === 'povey' ? KALDI_FLOOR : KALDI_FLOOR / 2 ** 30;
    this.extractor = new FeatureExtractor(80, 0, { window, highHz: SAMPLE_RATE / 2, floor: this.floor });
  }

  frames(samples: Float32Array, start: number, end: number): Float32Array {
    // Kaldi frames start at their first sample (no centring); the last 240 samples of the stretch complete the
    // final frame, so the stretch is read past `end` where the audio allows.
    const stop = Math.min(samples.length, end + 400 - HOP);
    const frames = this.extractor.compute(samples, start, stop);
    const wanted = framesIn(start, end) * this.dimension;
    if (frames.length >= wanted) return frames.subarray(0, wanted);
    // At the end of the audio the last frames cannot be whole: they repeat the last one there is (zeros would be
    // a loud log-mel value, not silence), or are the floor when there is none.
    const padded = new Float32Array(wanted).fill(Math.log(this.floor));
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

// The centred front ends (GE2E, SpeechBrain) share one STFT: 400-point frames (25 ms) every 160 samples.
const FFT_SIZE = 400;
const BINS = FFT_SIZE / 2 + 1;

const GE2E_MELS = 40;
const GE2E_TARGET_DBFS = -30;
// A near-silent window is not raised by more than this (Resemblyzer does not cap; its input has no silence left).
const GE2E_MAX_GAIN_DB = 30;

const slaneyMel = (hz: number) => (hz < 1000 ? (3 * hz) / 200 : 15 + (27 * Math.log(hz / 1000)) / Math.log(6.4));
const slaneyHz = (mel: number) => (mel < 15 ? (200 * mel) / 3 : 1000 * Math.exp(((mel - 15) * Math.log(6.4)) / 27));

/** librosa.filters.mel(sr=16000, n_fft=400, n_mels=40) (Slaney scale and area normalization): [mel][bin]. */
export function slaneyFilterbank(): Float64Array[] {
  const top = slaneyMel(SAMPLE_RATE / 2);
  const points = Array.from({ length: GE2E_MELS + 2 }, (_, i) => slaneyHz((top * i) / (GE2E_MELS + 1)));
  return Array.from({ length: GE2E_MELS }, (_, m) => {
    const [left, center, right] = [points[m] as number, points[m + 1] as number, points[m + 2] as number];
    const weights = new Float64Array(BINS);
    for (let k = 0; k < BINS; k++) {
      const hz = (k * SAMPLE_RATE) / FFT_SIZE;
      const rising = (hz - left) / (center - left);
      const falling = (right - hz) / (right - center);
      weights[k] = Math.max(0, Math.min(rising, falling)) * (2 / (right - left));
    }
    return weights;
  });
}

const SPEECHBRAIN_AMIN = 1e-10;

/**
 * speechbrain.processing.features.Filterbank(n_mels=80, f_min=0, f_max=8000, n_fft=400) (triangular, frozen):
 * [mel][bin]. HTK mel scale; 82 points evenly spaced in mel; filter m is centred on point m + 1 and its half-width on
 * both sides is the gap to point m (SpeechBrain's triangles are symmetric in Hz); peak 1, no area normalization.
 */
export function speechbrainFilterbank(): Float64Array[] {
  const toMel = (hz: number) => 2595 * Math.log10(1 + hz / 700);
  const toHz = (mel: number) => 700 * (10 ** (mel / 2595) - 1);
  const top = toMel(SAMPLE_RATE / 2);
  const points = Array.from({ length: SPEECHBRAIN_MELS + 2 }, (_, i) => toHz((top * i) / (SPEECHBRAIN_MELS + 1)));
  return Array.from({ length: SPEECHBRAIN_MELS }, (_, m) => {
    const center = points[m + 1] as number;
    const band = center - (points[m] as number);
    const weights = new Float64Array(BINS);
    for (let k = 0; k < BINS; k++) {
      const slope = ((k * SAMPLE_RATE) / FFT_SIZE - center) / band;
      weights[k] = Math.max(0, Math.min(1 + slope, 1 - slope));
    }
    return weights;
  });
}

/**
 * Mel energies of centred STFT frames (librosa's and torch.stft's center=True with zero padding): frame f of the
 * window [start, end) spans the 400 samples around start + 160 f, audio outside `samples` being zero; its power
 * spectrum (re² + im², 201 bins) goes through the filterbank, and `map` turns each energy into the feature.
 */
class CentredMelFrames {
  private readonly fft = new Fft(FFT_SIZE);
  private readonly re = new Float64Array(FFT_SIZE);
  private readonly im = new Float64Array(FFT_SIZE);
  /** Each filter's first non-zero bin and its weights from there to its last non-zero one. */
  private readonly filters: { first: number; weights: Float64Array }[];

  constructor(
    private readonly window: Float64Array,
    filterbank: Float64Array[],
    private readonly map: (energy: number) => number,
  ) {
    this.filters = filterbank.map((weights) => {
      let first = 0;
      while (first < weights.length && weights[first] === 0) first++;
      let last = weights.length - 1;
      while (last > first && weights[last] === 0) last--;
      return { first, weights: weights.slice(first, last + 1) };
    });
  }

  compute(samples: Float32Array, start: number, end: number): Float32Array {
    const count = framesIn(start, end);
    const mels = this.filters.length;
    const out = new Float32Array(count * mels);
    const re = this.re;
    const im = this.im;
    const window = this.window;
    for (let f = 0; f < count; f++) {
      const first = start + f * HOP - FFT_SIZE / 2;
      for (let i = 0; i < FFT_SIZE; i++) {
        const at = first + i;
        re[i] = at >= 0 && at < samples.length ? (samples[at] as number) * (window[i] as number) : 0;
        im[i] = 0;
      }
      this.fft.transform(re, im);
      for (let m = 0; m < mels; m++) {
        const { first: bin, weights } = this.filters[m] as { first: number; weights: Float64Array };
        let energy = 0;
        for (let k = 0; k < weights.length; k++) {
          energy += (weights[k] as number) * ((re[bin + k] as number) ** 2 + (im[bin + k] as number) ** 2);
        }
        out[f * mels + m] = this.map(energy);
      }
    }
    return out;
  }
}

/** A periodic cosine window of FFT_SIZE points: a − (1 − a)·cos(2πn / N) (Hann: a = 0.5, Hamming: a = 0.54). */
const periodicWindow = (a: number) =>
  Float64Array.from({ length: FFT_SIZE }, (_, n) => a - (1 - a) * Math.cos((2 * Math.PI * n) / FFT_SIZE));

class Ge2eFrontEnd implements SpeakerFrontEnd {
  readonly kind = 'ge2e';
  readonly dimension = GE2E_MELS;
  // librosa.feature.melspectrogram as Resemblyzer calls it: periodic Hann (scipy hann(400, sym=False)), linear power.
  private readonly mel = new CentredMelFrames(periodicWindow(0.5), slaneyFilterbank(), (energy) => energy);

  frames(samples: Float32Array, start: number, end: number): Float32Array {
    return this.mel.compute(samples, start, end);
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

class SpeechBrainFbankFrontEnd implements SpeakerFrontEnd {
  readonly kind = 'speechbrain-fbank';
  readonly dimension = SPEECHBRAIN_MELS;
  // SpeechBrain's STFT: torch.hamming_window(400) (periodic), center=True with pad_mode="constant"; power spectrum;
  // Filterbank's dB (ref 1, amin 1e-10) without the top_db clamp, which the model's graph applies per window.
  private readonly mel = new CentredMelFrames(
    periodicWindow(0.54),
    speechbrainFilterbank(),
    (energy) => 10 * Math.log10(Math.max(energy, SPEECHBRAIN_AMIN)),
  );

  frames(samples: Float32Array, start: number, end: number): Float32Array {
    return this.mel.compute(samples, start, end);
  }

  /** Nothing: the graph clamps to 80 dB below the window's peak and removes the window's mean over frames. */
  prepare(): void {}
}
