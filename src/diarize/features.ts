// Short-time spectral features of 16 kHz speech: Kaldi-style log-mel filterbank energies (what speaker-embedding
// models take) and MFCCs (their cosine transform, the built-in speaker features). 25 ms Hamming frames every
// 10 ms, pre-emphasis 0.97, a 512-point FFT. Pure arithmetic, for a worker thread.

import { Fft } from './fft.js';

export const FRAME_SHIFT_SECONDS = 0.01;
const SAMPLE_RATE = 16000;
const FRAME_LENGTH = 400; // 25 ms
const FRAME_SHIFT = 160; // 10 ms
const FFT_SIZE = 512;
const PREEMPHASIS = 0.97;
// Floor under the mel energies: keeps digital silence finite without dominating quiet speech.
const ENERGY_FLOOR = 1e-10;

const melOf = (hz: number) => 1127 * Math.log(1 + hz / 700);

/** Triangular mel filters over the FFT bins, 20 Hz to 7.6 kHz (Kaldi's defaults for 16 kHz). */
function melFilters(count: number): Array<{ first: number; weights: Float64Array }> {
  const low = melOf(20);
  const high = melOf(7600);
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

  /**
   * @param melBins filterbank size (80 for speaker-embedding models, 40 as the MFCC basis)
   * @param cepstra MFCCs per frame, c1..cN (c0, the loudness, says little about who speaks); 0 for log-mel only
   */
  constructor(
    readonly melBins: number,
    readonly cepstra = 0,
  ) {
    for (let i = 0; i < FRAME_LENGTH; i++)
      this.window[i] = 0.54 - 0.46 * Math.cos((2 * Math.PI * i) / (FRAME_LENGTH - 1));
    this.filters = melFilters(melBins);
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
        logMel[m] = Math.log(Math.max(energy, ENERGY_FLOOR));
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
