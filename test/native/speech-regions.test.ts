import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// Waits for work, and bounds on its latency and on event-loop delay, grow with this machine's slowdown.
import { scaledMs } from '../../scripts/lib/machine-speed.mjs';
import { decodeAudio, WHISPER_SAMPLE_RATE } from '../../src/audio/decode.js';
import { detectSpeechRegions, type SpeechRegion } from '../../src/audio/speech-regions.js';
import { VAD_DEFAULTS } from '../../src/audio/vad-settings.js';
import { InvalidOptionTypeError, InvalidOptionValueError, ModelLoadError } from '../../src/errors.js';
import { type NativeDetectSpeechParams, native } from '../../src/native.js';
import { measureEventLoop } from '../helpers/event-loop.js';
import { fixture, sharedAudio, sharedModel } from '../helpers/paths.js';

const model = sharedModel('whisper/ggml-silero-v6.2.0.bin');

async function samplesOf(path: string): Promise<Float32Array> {
  return (await decodeAudio(path)).samples;
}

/** Sorted, non-overlapping, non-empty, inside [0, duration]. */
function expectWellFormed(regions: SpeechRegion[], duration: number): void {
  let previousEnd = 0;
  for (const region of regions) {
    expect(region.start).toBeGreaterThanOrEqual(previousEnd);
    expect(region.end).toBeGreaterThan(region.start);
    expect(region.end).toBeLessThanOrEqual(duration);
    previousEnd = region.end;
  }
}

const inside = (regions: SpeechRegion[], t: number) => regions.some((r) => r.start <= t && t < r.end);
const speechSeconds = (regions: SpeechRegion[]) => regions.reduce((sum, r) => sum + r.end - r.start, 0);

describe('detectSpeechRegions', () => {
  let jfk: Float32Array;
  let gb0: Float32Array;
  beforeAll(async () => {
    jfk = await samplesOf(sharedAudio('jfk.wav'));
    gb0 = await samplesOf(sharedAudio('gb0.wav'));
  });

  it('jfk.wav: the four stretches whisper.cpp finds, covering the loud (spoken) parts and not the pauses', async () => {
    const duration = jfk.length / WHISPER_SAMPLE_RATE;
    const regions = await detectSpeechRegions(jfk, { model });
    // whisper.cpp's tests/test-vad.cpp asserts 4 segments for jfk with the default settings.
    expect(regions).toHaveLength(4);
    expectWellFormed(regions, duration);
    // Every 100 ms frame loud enough to be speech is inside a region; most quiet frames are outside.
    const frame = WHISPER_SAMPLE_RATE / 10;
    let loud = 0;
    let loudInside = 0;
    let quiet = 0;
    let quietOutside = 0;
    for (let start = 0; start + frame <= jfk.length; start += frame) {
      let energy = 0;
      for (let i = start; i < start + frame; i++) energy += jfk[i]! ** 2;
      const rms = Math.sqrt(energy / frame);
      const t = (start + frame / 2) / WHISPER_SAMPLE_RATE;
      if (rms > 0.05) {
        loud++;
        if (inside(regions, t)) loudInside++;
      } else if (rms < 0.01) {
        quiet++;
        if (!inside(regions, t)) quietOutside++;
      }
    }
    expect(loud).toBeGreaterThan(40);
    expect(loudInside / loud).toBeGreaterThanOrEqual(0.95);
    expect(quiet).toBeGreaterThan(5);
    expect(quietOutside / quiet).toBeGreaterThanOrEqual(0.5);
    expect(speechSeconds(regions)).toBeLessThan(0.9 * duration);
  });

  it('matches whisper.cpp’s own segmentation (whisper_vad_segments_from_samples) exactly', async () => {
    const settings: Partial<Omit<NativeDetectSpeechParams, 'modelPath'>>[] = [
      {},
      { threshold: 0.3, speechPadMs: 0 },
      { threshold: 0.8, minSilenceMs: 500, minSpeechMs: 100 },
      { maxSpeechSeconds: 3, speechPadMs: 200 },
      { maxSpeechSeconds: 3, minSilenceMs: 1000 },
    ];
    const inputs = [jfk, gb0, await samplesOf(sharedAudio('pyannote_sample.wav'))];
    for (const samples of inputs) {
      for (const setting of settings) {
        const params = { modelPath: model, ...VAD_DEFAULTS, ...setting };
        const ours = await native().detectSpeech(samples, params).promise;
        const whisper = await native().detectSpeech(samples, { ...params, whisperSegmentation: true }).promise;
        expect(ours, JSON.stringify(setting)).toEqual(whisper);
      }
    }
  });

  it('settings change the result the way they say', async () => {
    const base = await detectSpeechRegions(gb0, { model });
    const strict = await detectSpeechRegions(gb0, { model, threshold: 0.9 });
    expect(speechSeconds(strict)).toBeLessThan(speechSeconds(base));
    // whisper.cpp re-joins stretches split less than 200 ms apart, so the limit shows with long minSilenceMs.
    const long = await detectSpeechRegions(gb0, { model, minSilenceMs: 1000 });
    const split = await detectSpeechRegions(gb0, { model, minSilenceMs: 1000, maxSpeechSeconds: 3 });
    expect(split.length).toBeGreaterThan(2 * long.length);
    const padded = await detectSpeechRegions(jfk, { model, speechPadMs: 300 });
    const unpadded = await detectSpeechRegions(jfk, { model, speechPadMs: 0 });
    expect(speechSeconds(padded)).toBeGreaterThan(speechSeconds(unpadded));
  });

  it('60 s of silence has no speech', async () => {
    const silence = await samplesOf(fixture('audio/silence-60s.wav'));
    expect(silence.length).toBe(60 * WHISPER_SAMPLE_RATE);
    expect(await detectSpeechRegions(silence, { model })).toEqual([]);
  });

  it('0.1 s of speech, and no samples at all, give [] without error', async () => {
    const tenth = jfk.slice(WHISPER_SAMPLE_RATE, WHISPER_SAMPLE_RATE + WHISPER_SAMPLE_RATE / 10);
    expect(await detectSpeechRegions(tenth, { model })).toEqual([]);
    expect(await detectSpeechRegions(new Float32Array(0), { model })).toEqual([]);
    // The last partial window counts: 0.3 s of speech is enough with minSpeechMs 100.
    const short = jfk.slice(WHISPER_SAMPLE_RATE / 2, WHISPER_SAMPLE_RATE / 2 + 4800);
    const regions = await detectSpeechRegions(short, { model, minSpeechMs: 100 });
    expect(regions.length).toBe(1);
    expectWellFormed(regions, 0.3);
  });

  it('keeps a 10 ms interval ticking while it works on gb0.wav (127 s)', async () => {
    const { result, ratio } = await measureEventLoop(() => detectSpeechRegions(gb0, { model }));
    // 0.95-0.98 alone, 0.78-0.84 under load (see measureEventLoop).
    expect(ratio).toBeGreaterThanOrEqual(0.6);
    expect(result.length).toBeGreaterThan(10);
    expectWellFormed(result, gb0.length / WHISPER_SAMPLE_RATE);
    expect(speechSeconds(result)).toBeGreaterThan(60);
  });

  describe('bad models give ModelLoadError and never take the process down', () => {
    let dir: string;
    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), 'voxmill-vad-'));
    });
    afterAll(async () => {
      await rm(dir, { recursive: true, force: true });
    });

    it('a missing file', async () => {
      const path = join(dir, 'missing.bin');
      const error = await detectSpeechRegions(jfk, { model: path }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ModelLoadError);
      expect(error).toMatchObject({ code: 'MODEL_LOAD_FAILED' });
      expect((error as Error).message).toContain(path);
      // The caller's stack, not an empty native one.
      expect((error as Error).stack).toContain('speech-regions.test.ts');
    });

    it.each([
      // whisper.cpp's loader trusts the header: these made it abort the process before the layout check.
      ['a whisper model', () => readFileSync(sharedModel('whisper/for-tests-ggml-tiny.bin'))],
      ['a truncated VAD model', () => readFileSync(model).subarray(0, 5000)],
      ['a VAD model with a corrupt tensor type', () => corrupt(readFileSync(model), 'tensor type')],
      ['a VAD model with a bad tensor name', () => corrupt(readFileSync(model), 'name')],
      ['a wav file', () => readFileSync(sharedAudio('jfk.wav'))],
    ])('%s', async (_name, bytes) => {
      const path = join(dir, 'bad.bin');
      await writeFile(path, bytes());
      const error = await detectSpeechRegions(jfk, { model: path }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ModelLoadError);
      expect((error as Error).message).toContain(path);
    });
  });

  it('rejects bad options naming the option', async () => {
    await expect(detectSpeechRegions(jfk, { model, threshold: 2 })).rejects.toMatchObject({
      constructor: InvalidOptionValueError,
      param: 'threshold',
    });
    await expect(detectSpeechRegions(jfk, { model, minSpeechMs: 1.5 })).rejects.toMatchObject({
      param: 'minSpeechMs',
    });
    await expect(detectSpeechRegions(jfk, { model, treshold: 0.2 } as never)).rejects.toMatchObject({
      param: 'options.treshold',
    });
    await expect(detectSpeechRegions(jfk, {} as never)).rejects.toMatchObject({
      constructor: InvalidOptionTypeError,
      param: 'model',
    });
    await expect(detectSpeechRegions(new Int16Array(10) as never, { model })).rejects.toMatchObject({
      constructor: InvalidOptionTypeError,
      param: 'samples',
    });
    await expect(detectSpeechRegions(jfk, { model, signal: 'stop' as never })).rejects.toMatchObject({
      param: 'signal',
    });
  });

  // The in-place variant over all of it, with its memory, is the soak tier's (test/soak/long-audio.test.ts).
  describe('two hours of audio (gb0.wav repeated)', () => {
    const seconds = 7200;
    let long: Float32Array;
    beforeAll(() => {
      long = new Float32Array(seconds * WHISPER_SAMPLE_RATE);
      for (let at = 0; at < long.length; at += gb0.length) {
        long.set(gb0.subarray(0, Math.min(gb0.length, long.length - at)), at);
      }
    });
    afterAll(() => {
      long = new Float32Array(0);
    });

    it('the public function works on its own copy, made without blocking the event loop', async () => {
      const delay = monitorEventLoopDelay({ resolution: 1 });
      delay.enable();
      const controller = new AbortController();
      // Aborted once the copy is done and the native job runs: only the copy is under test here.
      const pending = detectSpeechRegions(long, { model, signal: controller.signal });
      const copying = performance.now();
      while (performance.now() - copying < scaledMs(5000) && delay.count < 2)
        await new Promise((r) => setTimeout(r, 1));
      await new Promise((r) => setTimeout(r, scaledMs(1500)));
      controller.abort();
      await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
      delay.disable();
      // 7,200 s of samples (461 MB). Copied in one turn into fresh memory this takes 0.45-2.5 s (slowdown 1-1.5), so a
      // 250 ms bound catches the public function copying without chunks, while leaving room for the OS taking this
      // thread off a core while the other test file runs on both (115 ms was seen in CI with 4 MiB chunks; the chunks
      // are 1 MiB now). That the copy takes many turns, not one, is test/unit/pcm-copy.test.ts's tick count.
      expect(delay.max / 1e6).toBeLessThan(scaledMs(250));
    });

    it('abort() stops the native work at its next block, long before the end', async () => {
      const job = native().detectSpeech(long, { ...VAD_DEFAULTS, modelPath: model });
      const started = performance.now();
      setTimeout(() => job.abort(), 200);
      const error = await job.promise.catch((e: unknown) => e);
      const ms = performance.now() - started;
      expect(error).toMatchObject({ code: 'ABORTED' });
      expect(ms).toBeLessThan(scaledMs(2000));
    });

    it('aborting the signal rejects with its reason', async () => {
      const controller = new AbortController();
      const reason = new Error('no longer needed');
      const pending = detectSpeechRegions(long, { model, signal: controller.signal });
      setTimeout(() => controller.abort(reason), 100);
      await expect(pending).rejects.toBe(reason);
      const already = AbortSignal.abort(new Error('before the start'));
      await expect(detectSpeechRegions(jfk, { model, signal: already })).rejects.toBe(already.reason);
    });
  });
});

/** Damages one field of the first tensor record of a ggml Silero file (its layout is checked before loading). */
function corrupt(bytes: Buffer, field: 'tensor type' | 'name'): Buffer {
  const copy = Buffer.from(bytes);
  const name = copy.indexOf('_model.encoder.0.reparam_conv.weight');
  // Record: n_dims, name length, type, ne[n_dims], name, data (here n_dims = 3).
  if (field === 'tensor type') copy.writeInt32LE(77, name - 4 * 4);
  else copy[name + 2] = 0x21;
  return copy;
}
