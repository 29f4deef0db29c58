// The streaming resampler for live input: right frequency and level, no aliasing, pieces equal to the whole.
import { describe, expect, it } from 'vitest';
import { StreamResampler } from '../../src/audio/resample.js';

const tone = (hz: number, rate: number, seconds: number) =>
  Float32Array.from({ length: Math.round(rate * seconds) }, (_, i) => Math.sin((2 * Math.PI * hz * i) / rate));

/** Amplitude of `hz` in `samples` (a single-bin DFT over whole periods in the middle). */
function level(samples: Float32Array, hz: number, rate: number): number {
  const start = Math.floor(samples.length / 4);
  const n = Math.floor(samples.length / 2);
  let re = 0;
  let im = 0;
  for (let i = 0; i < n; i++) {
    re += (samples[start + i] as number) * Math.cos((2 * Math.PI * hz * i) / rate);
    im += (samples[start + i] as number) * Math.sin((2 * Math.PI * hz * i) / rate);
  }
  return (2 * Math.hypot(re, im)) / n;
}

describe('StreamResampler', () => {
  it.each([
    [48000, 16000],
    [24000, 16000],
    [8000, 16000],
    [44100, 16000],
  ])('%i Hz to %i Hz keeps a 1 kHz tone at its level and the length in proportion', (from, to) => {
    const out = new StreamResampler(from, to).process(tone(1000, from, 1));
    // The output lags by the filter's half length: 16 zero crossings at the lower rate, in output samples.
    const half = Math.ceil(16 / (Math.min(1, to / from) * 0.9));
    expect(Math.abs(out.length - to)).toBeLessThanOrEqual(Math.ceil((half * to) / from) + 2);
    expect(level(out, 1000, to)).toBeGreaterThan(0.97);
    expect(level(out, 1000, to)).toBeLessThan(1.03);
  });

  it('removes what would fold back: a 10 kHz tone at 48 kHz is gone at 16 kHz (below -40 dB at its alias)', () => {
    const out = new StreamResampler(48000, 16000).process(tone(10000, 48000, 1));
    expect(level(out, 6000, 16000)).toBeLessThan(0.01);
  });

  it('gives the same output for pieces of any size as for the whole', () => {
    const input = tone(440, 24000, 0.5);
    const whole = new StreamResampler(24000, 16000).process(input);
    const resampler = new StreamResampler(24000, 16000);
    const parts: number[] = [];
    for (let i = 0; i < input.length; i += 37) parts.push(...resampler.process(input.subarray(i, i + 37)));
    expect(parts.length).toBe(whole.length);
    parts.forEach((v, i) => {
      expect(v).toBeCloseTo(whole[i] as number, 5);
    });
    expect(new StreamResampler(16000, 16000).process(input)).toEqual(input);
  });
});
