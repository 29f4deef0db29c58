// Caller-supplied PCM is copied before any native job reads it: a worker thread holding a raw pointer into the
// caller's Float32Array would read freed memory if the caller transferred or detached it (after an abort has
// already answered, say). The copy also makes the samples safe for whisper.cpp: NaN and ±Infinity become 0 and
// louder values are clipped to [-1, 1], as the decoder does for encoded audio.
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { InvalidOptionValueError } from '../errors.js';

/**
 * Samples copied per event-loop turn: 256 Ki samples (1 MiB) take 0.3–3 ms on one core (the upper end when the copy
 * lands in memory the process has not touched yet), so a busy machine that hands the thread a third of a core still
 * answers within about 10 ms. 1 Mi samples took up to 12 ms into fresh memory, and 115 ms was seen in CI under load.
 */
const CHUNK_SAMPLES = 1 << 18;

function copySanitized(from: Float32Array, to: Float32Array, start: number, end: number): void {
  for (let i = start; i < end; i++) {
    const v = from[i] as number;
    if (v >= -1 && v <= 1) to[i] = v;
    else if (Number.isFinite(v)) to[i] = v > 0 ? 1 : -1;
    else to[i] = 0; // NaN, ±Infinity
  }
}

/**
 * A private, sanitized copy of `samples`, made in chunks so hours of PCM never block the event loop for more than
 * a few milliseconds. Fails with InvalidOptionValueError when the caller detaches the array mid-copy.
 */
export async function copyPcm(samples: Float32Array, signal?: AbortSignal): Promise<Float32Array> {
  const length = samples.length;
  const copy = new Float32Array(length);
  for (let start = 0; start < length; start += CHUNK_SAMPLES) {
    if (start > 0) {
      await yieldToEventLoop();
      signal?.throwIfAborted();
      if (samples.length !== length) {
        throw new InvalidOptionValueError(
          'input',
          'a Float32Array left untouched while it is read (it was detached or transferred)',
          `an array of ${samples.length} samples, ${length} before`,
        );
      }
    }
    copySanitized(samples, copy, start, Math.min(length, start + CHUNK_SAMPLES));
  }
  return copy;
}
