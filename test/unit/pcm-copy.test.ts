import { describe, expect, it } from 'vitest';
import { WHISPER_SAMPLE_RATE } from '../../src/audio/decode.js';
import { copyPcm } from '../../src/audio/pcm-copy.js';
import { measureEventLoop } from '../helpers/event-loop.js';

describe('copyPcm', () => {
  it('sanitizes: NaN and ±Infinity become 0, louder values are clipped to [-1, 1]', async () => {
    const from = Float32Array.from([
      0.25,
      -1,
      1,
      1.5,
      -7,
      Number.NaN,
      Number.POSITIVE_INFINITY,
      Number.NEGATIVE_INFINITY,
    ]);
    const copy = await copyPcm(from);
    expect(Array.from(copy)).toEqual([0.25, -1, 1, 1, -1, 0, 0, 0]);
    expect(copy.buffer).not.toBe(from.buffer);
  });

  it('honours an abort between chunks', async () => {
    const controller = new AbortController();
    const pending = copyPcm(new Float32Array(4 << 20), controller.signal);
    controller.abort(new Error('stop'));
    await expect(pending).rejects.toThrow('stop');
  });

  it('copies an hour of samples in many short turns, not one long one', async () => {
    // 57.6 M samples (230 MB). Copied in one turn this takes 70 ms into warm memory and over a second into fresh
    // memory, and a 10 ms interval would fire about never while it runs (ratio near 0). Chunked, the interval keeps
    // firing; a single stall from a busy machine (115 ms was seen in CI) costs a few ticks of a copy this long, so
    // the threshold is the helper's convention for partial blocking rather than a time.
    const hour = new Float32Array(3600 * WHISPER_SAMPLE_RATE).fill(0.5);
    const { result, ratio, ms } = await measureEventLoop(() => copyPcm(hour));
    expect(result.length).toBe(hour.length);
    expect(result[result.length - 1]).toBe(0.5);
    expect(ms).toBeGreaterThan(20); // long enough for the ratio to mean something
    expect(ratio).toBeGreaterThan(0.5);
  });
});
