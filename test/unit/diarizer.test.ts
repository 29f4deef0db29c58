// The diarization worker's host: results come back, a dead or stalled worker fails its job with a typed error and is
// replaced, heartbeats keep a long job alive, abort answers at once with the signal's reason, the queue is bounded,
// close ends the thread; and the real worker runs from its TypeScript source.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { scaledMs } from '../../scripts/lib/machine-speed.mjs';
import { Diarizer } from '../../src/diarize/diarizer.js';
import { DiarizationError, QueueFullError } from '../../src/errors.js';
import { workerScriptUrl } from '../../src/util/worker-thread.js';
import { defaultDiarizeSettings } from '../helpers/diarize-settings.js';

const workerUrl = new URL('../helpers/workers/scripted-diarize-worker.mjs', import.meta.url);
const settings = defaultDiarizeSettings;
let diarizer: Diarizer | undefined;
afterEach(async () => {
  await diarizer?.close();
  diarizer = undefined;
});

const make = (maxQueue = 4, stallTimeoutMs?: number) => {
  diarizer = new Diarizer({ intraOpThreads: 1, maxQueue, workerUrl, stallTimeoutMs });
  return diarizer;
};
const samples = new Float32Array(32000);
const NO_MODELS = { embedding: undefined, segmentation: undefined };

describe('Diarizer', () => {
  it('hands the samples over and returns the turns', async () => {
    expect(await make().run(samples, [{ start: 0, end: 2 }], settings, NO_MODELS)).toEqual([
      { start: 0, end: 2, speaker: 'speaker_1' },
    ]);
  });

  it('a worker that dies fails its job with DIARIZATION_WORKER_DIED, and the next job gets a new worker', async () => {
    const d = make();
    const failure = await d.run(samples, [{ start: 1, end: 2 }], settings, NO_MODELS).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(DiarizationError);
    expect((failure as DiarizationError).code).toBe('DIARIZATION_WORKER_DIED');
    expect(await d.run(samples, [{ start: 0, end: 2 }], settings, NO_MODELS)).toHaveLength(1);
  });

  it('a job that hears nothing for the stall timeout fails with DIARIZATION_WORKER_STALLED; a new worker follows', async () => {
    // The job that stalls never answers, so it fails whatever the timeout; the first, a worker's startup included, must
    // answer within it, so it grows with this machine's slowdown.
    const d = make(4, scaledMs(500));
    expect(await d.run(samples, [{ start: 0, end: 2 }], settings, NO_MODELS)).toHaveLength(1); // worker started
    const failure = await d.run(samples, [{ start: 2, end: 3 }], settings, NO_MODELS).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(DiarizationError);
    expect((failure as DiarizationError).code).toBe('DIARIZATION_WORKER_STALLED');
    expect(d.active).toBe(0);
    expect(await d.run(samples, [{ start: 0, end: 2 }], settings, NO_MODELS)).toHaveLength(1);
  });

  it('progress heartbeats keep a job longer than the stall timeout alive', async () => {
    // Not scaled: the scripted job's 1.2 s of heartbeats must outlast it.
    const d = make(4, 500);
    expect(await d.run(samples, [{ start: 0, end: 2 }], settings, NO_MODELS)).toHaveLength(1);
    expect(await d.run(samples, [{ start: 3, end: 4 }], settings, NO_MODELS)).toEqual([]);
  });

  it('abort answers at once with the reason, and frees the queue', async () => {
    const d = make(0);
    const controller = new AbortController();
    const pending = d.run(samples, [{ start: 2, end: 3 }], settings, NO_MODELS, controller.signal);
    await new Promise((resolve) => setTimeout(resolve, 50));
    await expect(d.run(samples, [{ start: 0, end: 2 }], settings, NO_MODELS)).rejects.toBeInstanceOf(QueueFullError);
    const reason = new Error('stop');
    controller.abort(reason);
    await expect(pending).rejects.toBe(reason);
    // The slot is held until the worker confirms it stopped, so jobs never overlap in the worker.
    await vi.waitFor(() => expect(d.active).toBe(0), { timeout: scaledMs(500), interval: 10 });
    expect(await d.run(samples, [{ start: 0, end: 2 }], settings, NO_MODELS)).toHaveLength(1);
  });

  it('close fails what is running with SPEECH_CLOSED', async () => {
    const d = make();
    const outcome = d.run(samples, [{ start: 2, end: 3 }], settings, NO_MODELS).catch((error: unknown) => error);
    await new Promise((resolve) => setTimeout(resolve, 50));
    await d.close();
    expect(await outcome).toMatchObject({ code: 'SPEECH_CLOSED' });
  });
});

describe('the real diarization worker', () => {
  it('runs from its TypeScript source when the library does (never from a stale dist/)', async () => {
    const sibling = new URL('../../src/diarize/diarize-worker.js', import.meta.url);
    const script = workerScriptUrl(sibling, (message) => new DiarizationError(message));
    expect(script.pathname.endsWith('/src/diarize/diarize-worker.ts')).toBe(true);
    diarizer = new Diarizer({ intraOpThreads: 1, maxQueue: 1 });
    // Two voices, 8 s each: a low hum and a bright buzz.
    const pcm = new Float32Array(16000 * 16);
    for (let i = 0; i < pcm.length; i++) {
      const f = i < pcm.length / 2 ? 140 : 1900;
      pcm[i] = 0.3 * Math.sin((2 * Math.PI * f * i) / 16000) + 0.05 * Math.sin(i * 0.37) * Math.sin(i * 0.0011);
    }
    const turns = await diarizer.run(pcm, [{ start: 0, end: 16 }], settings, NO_MODELS);
    expect(turns.length).toBeGreaterThan(0);
    expect(turns[0]?.start).toBeGreaterThanOrEqual(0);
    expect(turns.at(-1)?.end).toBeLessThanOrEqual(16.01);
  });
});
