// Short-time spectral features of 16 kHz speech: Kaldi-style log-mel filterbank energies (what speaker-embedding
// models take) and MFCCs (their cosine transform, the built-in speaker features). 25 ms frames every 10 ms, DC
// removed, pre-emphasis 0.97, a 512-point FFT. The window, the top of the filterbank and the log's floor are options:
// speaker-embedding models want torchaudio's kaldi.fbank exactly (Povey or Hamming window, filters up to 8 kHz, a
// float32-epsilon floor); the built-in MFCCs keep what they were calibrated with. Pure arithmetic, for a worker thread.

import { Fft } from './fft.js';

export const FRAME_SHIFT_SECONDS = 0.01;
const SAMPLE_RATE = 16000;
const FRAME_LENGTH = 400; // 25 ms
const FRAME_SHIFT = 160; // 10 ms
const FFT_SIZE = 512;
const PREEMPHASIS = 0.97;
/** How the frames are windowed and the energies floored (see FeatureExtractor). */
export interface FeatureOptions {
  /** Kaldi's window: `povey` (its default, 3D-Speaker's) or `hamming` (WeSpeaker's, the built-in MFCCs'). */
  window: 'povey' | 'hamming';
  /** Top of the mel filterbank in Hz (torchaudio's kaldi.fbank: the Nyquist frequency, 8000). */
  highHz: number;
  /** Floor under the mel energies before the log (torchaudio: float32's epsilon). */
  floor: number;
}

/**
 * The built-in MFCCs' settings: a Hamming window, filters up to 7.6 kHz and a 1e-10 floor (the clustering thresholds
 * of the built-in features were chosen with these).
 */
const MFCC_FEATURES: FeatureOptions = { window: 'hamming', highHz: 7600, floor: 1e-10 };

const melOf = (hz: number) => 1127 * Math.log(1 + hz / 700);

/** Triangular mel filters over the FFT bins (Kaldi's), 20 Hz to `highHz`. */
function melFilters(count: number, highHz: number): Array<{ first: number; weights: Float64Array }> {
  const low = melOf(20);
  const high = melOf(highHz);
  const step = (high - low) / (count + 1);
  const filters: Array<{ first: number; weights: Float64Array }> = [];
  for (let m = 0; m < count; m++) {
    const left = low + m * step;
    const center = left + step;
    const right = center + step;
    const weights: number[] = [];
    let first = -1;
    for (let bin = 0; bin <= FFT_SIZE / 2; bin++) {
      const mel = melOf((bin * SAMPLE_RATE) / FFT_SIZE);
      const w = mel > left && mel < right ? (mel <= center ? (mel - left) / step : (right - mel) / step) : 0;
      if (w > 0) {
        if (first < 0) first = bin;
        weights.push(w);
      } else if (first >= 0) {
        break;
      }
    }
    filters.push({ first: Math.max(first, 0), weights: Float64Array.from(weights) });
  }
  return filters;
}

/** Computes log-mel energies (and, optionally, MFCCs) of 25 ms frames every 10 ms. */
export class FeatureExtractor {
  private readonly fft = new Fft(FFT_SIZE);
  private readonly window = new Float64Array(FRAME_LENGTH);
  private readonly filters: Array<{ first: number; weights: Float64Array }>;
  private readonly dct: Float64Array | undefined;
  private readonly re = new Float64Array(FFT_SIZE);
  private readonly im = new Float64Array(FFT_SIZE);
  private readonly floor: number;

  /**
   * @param melBins filterbank size (80 for speaker-embedding models, 40 as the MFCC basis)
   * @param cepstra MFCCs per frame, c1..cN (c0, the loudness, says little about who speaks); 0 for log-mel only
   * @param options window, filterbank top and floor; the built-in MFCCs' by default
   */
  constructor(
    readonly melBins: number,
    readonly cepstra = 0,
    options: FeatureOptions = MFCC_FEATURES,
  ) {
    for (let i = 0; i < FRAME_LENGTH; i++) {
      const cosine = Math.cos((2 * Math.PI * i) / (FRAME_LENGTH - 1));
      this.window[i] = options.window === 'povey' ? (0.5 - 0.5 * cosine) ** 0.85 : 0.54 - 0.46 * cosine;
    }
    this.floor = options.floor;
    this.filters = melFilters(melBins, options.highHz);
    if (cepstra > 0) {
      this.dct = new Float64Array(cepstra * melBins);
      for (let c = 0; c < cepstra; c++) {
        for (let m = 0; m < melBins; m++) {
          this.dct[c * melBins + m] = Math.cos((Math.PI * (c + 1) * (m + 0.5)) / melBins);
        }
      }
    }
  }

  /** Values per frame: the MFCCs when asked for, else the log-mel energies. */
  get dimension(): number {
    return this.cepstra > 0 ? this.cepstra : this.melBins;
  }

  /** Frames whose 25 ms window fits in [start, end) samples. */
  static frameCount(samples: number): number {
    return samples < FRAME_LENGTH ? 0 : 1 + Math.floor((samples - FRAME_LENGTH) / FRAME_SHIFT);
  }

  /** Features of the frames of `samples[start, end)`, frame-major, `dimension` values each. */
  compute(samples: Float32Array, start: number, end: number): Float32Array {
    const frames = FeatureExtractor.frameCount(end - start);
    const out = new Float32Array(frames * this.dimension);
    const logMel = new Float64Array(this.melBins);
    const re = this.re;
    const im = this.im;
    for (let f = 0; f < frames; f++) {
      const offset = start + f * FRAME_SHIFT;
      let mean = 0;
      for (let i = 0; i < FRAME_LENGTH; i++) mean += samples[offset + i] as number;
      mean /= FRAME_LENGTH;
      let previous = (samples[offset] as number) - mean;
      for (let i = 0; i < FFT_SIZE; i++) {
        if (i < FRAME_LENGTH) {
          const x = (samples[offset + i] as number) - mean;
          re[i] = (x - PREEMPHASIS * previous) * (this.window[i] as number);
          previous = x;
        } else {
          re[i] = 0;
        }
        im[i] = 0;
      }
      this.fft.transform(re, im);
      for (let m = 0; m < this.melBins; m++) {
        const { first, weights } = this.filters[m] as { first: number; weights: Float64Array };
        let energy = 0;
        for (let k = 0; k < weights.length; k++) {
          const bin = first + k;
          energy += (weights[k] as number) * ((re[bin] as number) ** 2 + (im[bin] as number) ** 2);
        }
        logMel[m] = Math.log(Math.max(energy, this.floor));
      }
      const row = f * this.dimension;
      if (this.dct) {
        for (let c = 0; c < this.cepstra; c++) {
          let sum = 0;
          for (let m = 0; m < this.melBins; m++)
            sum += (this.dct[c * this.melBins + m] as number) * (logMel[m] as number);
          out[row + c] = sum;
        }
      } else {
        for (let m = 0; m < this.melBins; m++) out[row + m] = logMel[m] as number;
      }
    }
    return out;
  }
}

/** Frame index of a time in seconds, and back. */
export const frameAt = (seconds: number) => Math.round(seconds / FRAME_SHIFT_SECONDS);
export const secondsAt = (frame: number) => frame * FRAME_SHIFT_SECONDS;
export { FRAME_LENGTH, FRAME_SHIFT, SAMPLE_RATE };
