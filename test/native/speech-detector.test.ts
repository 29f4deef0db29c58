// Live speech detection: Silero VAD pushed piece by piece through the addon's VadStream.
import { describe, expect, it } from 'vitest';
import {
  createSpeechDetector,
  detectSpeechRegions,
  InvalidOptionTypeError,
  InvalidOptionValueError,
  ModelLoadError,
  type SpeechEvent,
} from '../../src/index.js';
import { native } from '../../src/native.js';
import { sharedAudio, sharedModel } from '../helpers/paths.js';
import { readPcm16Wav } from '../helpers/wav.js';

const model = sharedModel('whisper/ggml-silero-v6.2.0.bin');
const jfk = readPcm16Wav(sharedAudio('jfk.wav'));

/** Pushes `samples` in pieces of `size` samples (awaiting each) and closes; all events in order. */
async function eventsOf(samples: Float32Array, size: number, settings = {}): Promise<SpeechEvent[]> {
  const detector = createSpeechDetector({ model, ...settings });
  const events: SpeechEvent[] = [];
  for (let i = 0; i < samples.length; i += size) events.push(...(await detector.push(samples.subarray(i, i + size))));
  events.push(...(await detector.close()));
  return events;
}

describe('createSpeechDetector', () => {
  it('finds jfk.wav speech where detectSpeechRegions does, pushed in 20 ms pieces', async () => {
    const events = await eventsOf(jfk, 320, { minSilenceMs: 500 });
    const regions = await detectSpeechRegions(jfk, { model, minSilenceMs: 500 });
    expect(events.length).toBeGreaterThanOrEqual(2);
    expect(events[0]?.type).toBe('speech_started');
    expect(events.at(-1)?.type).toBe('speech_stopped');
    for (let i = 1; i < events.length; i++) {
      expect(events[i]?.type).not.toBe(events[i - 1]?.type);
      expect(events[i]?.at).toBeGreaterThanOrEqual(events[i - 1]?.at as number);
    }
    expect(Math.abs((events[0]?.at as number) - (regions[0]?.start as number))).toBeLessThan(0.1);
    expect(Math.abs((events.at(-1)?.at as number) - (regions.at(-1)?.end as number))).toBeLessThan(0.15);
  });

  it('gives the same events however the audio is cut (each window is computed once, state carried)', async () => {
    const by20ms = await eventsOf(jfk, 320);
    expect(await eventsOf(jfk, 97)).toEqual(by20ms);
    expect(await eventsOf(jfk, 16000)).toEqual(by20ms);
    expect(await eventsOf(jfk, jfk.length)).toEqual(by20ms);
  });

  it('queues pushes that overlap, and reports nothing in silence', async () => {
    const detector = createSpeechDetector({ model });
    const pieces = [];
    for (let i = 0; i < jfk.length; i += 320) pieces.push(detector.push(jfk.subarray(i, i + 320)));
    const events = (await Promise.all(pieces)).flat();
    events.push(...(await detector.close()));
    expect(events).toEqual(await eventsOf(jfk, 320));
    expect(await eventsOf(new Float32Array(3 * 16000), 320)).toEqual([]);
    expect(detector.speaking).toBe(false);
  });

  it('a start must last minSpeechMs: a 100 ms burst is no speech at 250 ms, and is at 50 ms', async () => {
    // 100 ms of jfk's speech (from 1.0 s) between 2 s of silence on each side.
    const burst = new Float32Array(4.1 * 16000);
    burst.set(jfk.subarray(16000, 17600), 2 * 16000);
    expect(await eventsOf(burst, 320)).toEqual([]);
    const short = await eventsOf(burst, 320, { minSpeechMs: 50 });
    expect(short.map((e) => e.type)).toEqual(['speech_started', 'speech_stopped']);
  });

  it('ends speech at a threshold of 0.1 too (the silence level has a floor), and never starts before the last stop', async () => {
    const withSilence = new Float32Array(jfk.length + 5 * 16000);
    withSilence.set(jfk);
    const low = await eventsOf(withSilence, 320, { threshold: 0.1 });
    expect(low.at(-1)?.type).toBe('speech_stopped');
    expect((low.at(-1)?.at as number) < 11.5).toBe(true);
    const padded = await eventsOf(jfk, 320, { minSilenceMs: 0, speechPadMs: 1000 });
    for (let i = 1; i < padded.length; i++) {
      expect(padded[i]?.at as number).toBeGreaterThanOrEqual(padded[i - 1]?.at as number);
    }
  });

  it('fails with typed errors naming what is wrong, and rejects pushes after close()', async () => {
    expect(() => createSpeechDetector({ model, threshold: 2 })).toThrow(InvalidOptionValueError);
    expect(() => createSpeechDetector({ model, threshold: 2 })).toThrow(/threshold/);
    expect(() => createSpeechDetector({ model: '' })).toThrow(InvalidOptionTypeError);
    expect(() => createSpeechDetector({ model, maxSpeechSeconds: 3 } as never)).toThrow(/maxSpeechSeconds/);
    const missing = createSpeechDetector({ model: '/nonexistent/silero.bin' });
    await expect(missing.push(jfk.subarray(0, 1024))).rejects.toBeInstanceOf(ModelLoadError);
    await missing.close();
    const detector = createSpeechDetector({ model });
    await expect(detector.push([1, 2] as never)).rejects.toBeInstanceOf(InvalidOptionTypeError);
    await detector.push(jfk.subarray(0, 1000));
    await detector.close();
    await expect(detector.push(jfk.subarray(0, 1000))).rejects.toMatchObject({ code: 'VAD_STREAM_CLOSED' });
  });

  it('the addon object: one push at a time, dispose() during a push lets it finish, bad arguments are refused', async () => {
    const stream = new (native().VadStream)({ modelPath: model });
    const running = stream.push(jfk.subarray(0, 48000));
    await expect(stream.push(jfk.subarray(0, 512)).promise).rejects.toMatchObject({ code: 'VAD_STREAM_BUSY' });
    stream.dispose();
    expect((await running.promise).length).toBe(Math.floor(48000 / 512));
    await expect(stream.push(jfk.subarray(0, 512)).promise).rejects.toMatchObject({ code: 'VAD_STREAM_CLOSED' });
    const fresh = new (native().VadStream)({ modelPath: model });
    await expect(fresh.push(new Float32Array(160001)).promise).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(fresh.push(new Float64Array(4) as never).promise).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    // Pieces shorter than a window yield nothing until the window is complete.
    expect((await fresh.push(jfk.subarray(0, 500)).promise).length).toBe(0);
    expect((await fresh.push(jfk.subarray(500, 1100)).promise).length).toBe(2);
    fresh.dispose();
    expect(() => new (native().VadStream)({} as never)).toThrow(/modelPath/);
  });
});
