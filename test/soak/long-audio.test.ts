// Long audio: hours of samples through VAD and diarization, with memory bounded by (a fraction of, or a small
// multiple of) the audio itself. In the soak tier, not `npm test`: each run takes tens of seconds and RSS readings
// are only meaningful in a process that does nothing else meanwhile.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeAudio, WHISPER_SAMPLE_RATE } from '../../src/audio/decode.js';
import { detectSpeechRegions, detectSpeechRegionsInPlace, type SpeechRegion } from '../../src/audio/speech-regions.js';
import { createSpeech, type Speech } from '../../src/index.js';
import { peakRss } from '../helpers/event-loop.js';
import { fixture, sharedAudio, sharedModel } from '../helpers/paths.js';

const vadModel = sharedModel('whisper/ggml-silero-v6.2.0.bin');
const speechSeconds = (regions: SpeechRegion[]) => regions.reduce((sum, r) => sum + r.end - r.start, 0);

/** `seconds` of gb0.wav (127 s) repeated, as 16 kHz samples. */
function repeated(gb0: Float32Array, seconds: number): Float32Array {
  const long = new Float32Array(seconds * WHISPER_SAMPLE_RATE);
  for (let at = 0; at < long.length; at += gb0.length) {
    long.set(gb0.subarray(0, Math.min(gb0.length, long.length - at)), at);
  }
  return long;
}

let gb0: Float32Array;
beforeAll(async () => {
  gb0 = (await decodeAudio(sharedAudio('gb0.wav'))).samples;
});

describe('speech regions of two hours (gb0.wav repeated)', () => {
  const seconds = 7200;
  let long: Float32Array;
  beforeAll(() => {
    long = repeated(gb0, seconds);
  });
  afterAll(() => {
    long = new Float32Array(0);
  });

  it("the engine's in-place variant reads the samples where they are: RSS grows by far less than another copy", async () => {
    const before = process.memoryUsage().rss;
    const { result, peak } = await peakRss(() => detectSpeechRegionsInPlace(long, { model: vadModel }));
    expect(peak - before).toBeLessThan(long.byteLength / 20);
    let previousEnd = 0;
    for (const region of result) {
      expect(region.start).toBeGreaterThanOrEqual(previousEnd);
      expect(region.end).toBeGreaterThan(region.start);
      expect(region.end).toBeLessThanOrEqual(seconds);
      previousEnd = region.end;
    }
    // The same speech throughout: about as much of it per copy of gb0 as in gb0 alone.
    const perCopy = speechSeconds(await detectSpeechRegions(gb0, { model: vadModel }));
    const copies = seconds / (gb0.length / WHISPER_SAMPLE_RATE);
    expect(speechSeconds(result) / copies / perCopy).toBeGreaterThan(0.95);
    expect(speechSeconds(result) / copies / perCopy).toBeLessThan(1.05);
    expect(result.at(-1)!.end).toBeGreaterThan(seconds - 130);
  });
});

describe('diarization of 30 minutes (gb0.wav repeated)', () => {
  let speech: Speech | undefined;
  afterAll(async () => {
    await speech?.close();
  });

  it('runs in memory bounded by a small multiple of the audio itself', async () => {
    speech = createSpeech({ vadModel, models: { 'svc-stt-1': fixture('models/ggml-tiny.en-random.bin') } });
    const long = repeated(gb0, 30 * 60);
    const before = process.memoryUsage().rss;
    const { result, peak } = await peakRss(() => (speech as Speech).diarize(long));
    const audioMb = long.byteLength / 2 ** 20;
    const growthMb = (peak - before) / 2 ** 20;
    expect(result.duration).toBeCloseTo(30 * 60, 0);
    expect(result.turns.length).toBeGreaterThan(0);
    // The shared copy of the audio for the worker, plus features: linear in the audio, never quadratic.
    expect(growthMb).toBeLessThan(audioMb * 2.5);
  });
});
