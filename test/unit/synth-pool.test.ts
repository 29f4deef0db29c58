// The worker pool survives its workers: one that exits, throws, stalls or reports a poisoned phonemizer fails its
// job with a typed SynthesisError and is replaced; the next job runs on a fresh worker. The real worker runs from its
// TypeScript source.
import { afterEach, describe, expect, it } from 'vitest';
import { scaledMs } from '../../scripts/lib/machine-speed.mjs';
import { QueueFullError, SynthesisError } from '../../src/errors.js';
import { defaultWorkerUrl, SynthPool } from '../../src/tts/synth-pool.js';
import type { SynthJob } from '../../src/tts/worker-protocol.js';

const workerUrl = new URL('../helpers/workers/scripted-worker.mjs', import.meta.url);
let pool: SynthPool | undefined;

function makePool(overrides: Partial<ConstructorParameters<typeof SynthPool>[0]> = {}): SynthPool {
  pool = new SynthPool({
    size: 1,
    maxQueue: 4,
    lookahead: 2,
    // Short, for the worker that stalls (it never answers, so it fails whatever the value), and grown with this
    // machine's slowdown: every other job, a fresh worker's startup included, must answer within it.
    stallTimeoutMs: scaledMs(300),
    intraOpThreads: 1,
    memoryArena: true,
    sessionIdleMs: 0,
    onnxRuntime: 'auto',
    workerUrl,
    ...overrides,
  });
  return pool;
}

afterEach(async () => {
  await pool?.close();
  pool = undefined;
});

const job = (text: string, jobId = 1): SynthJob => ({
  jobId,
  modelPath: '/none.onnx',
  espeakVoice: 'en-us',
  tables: { idMap: [], phonemeMap: [] },
  sampleRate: 22050,
  sentenceSilenceSeconds: 0.2,
  noiseScale: 0.667,
  lengthScale: 1,
  noiseW: 0.8,
  sid: undefined,
  chunks: [text],
  credit: 0,
  wordTimes: false,
});

async function run(p: SynthPool, text: string): Promise<number> {
  const lease = await p.acquire();
  try {
    let samples = 0;
    for await (const chunk of lease.run(job(text))) samples += chunk.samples.length;
    return samples;
  } finally {
    lease.release();
  }
}

describe('SynthPool', () => {
  it('runs a job and yields its audio', async () => {
    expect(await run(makePool(), 'hello')).toBe(100);
  });

  for (const [text, code] of [
    ['exit', 'TTS_WORKER_DIED'],
    ['throw', 'TTS_WORKER_DIED'],
    ['stall', 'TTS_WORKER_STALLED'],
    ['fatal', 'SYNTHESIS_FAILED'],
  ] as const) {
    it(`a worker that does "${text}" fails the job with ${code} and is replaced`, async () => {
      const p = makePool();
      const failure = await run(p, text).catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(SynthesisError);
      expect((failure as SynthesisError).code).toBe(code);
      expect(p.replacedWorkers).toBe(1);
      expect(p.active).toBe(0);
      expect(await run(p, 'hello')).toBe(100);
    });
  }

  it('admits at most size + maxQueue jobs', async () => {
    const p = makePool({ maxQueue: 1 });
    const held = await p.acquire();
    const waiting = p.acquire();
    await expect(p.acquire()).rejects.toBeInstanceOf(QueueFullError);
    held.release();
    (await waiting).release();
  });

  it('a waiting job can be aborted', async () => {
    const p = makePool();
    const held = await p.acquire();
    const controller = new AbortController();
    const waiting = p.acquire(controller.signal);
    controller.abort(new Error('gave up'));
    await expect(waiting).rejects.toThrow('gave up');
    expect(p.pending).toBe(0);
    held.release();
  });
});

describe('the real synthesis worker', () => {
  it('runs from its TypeScript source when the library does (never from a stale dist/)', async () => {
    expect(defaultWorkerUrl().pathname.endsWith('/src/tts/synth-worker.ts')).toBe(true);
    // No voice model needed: the worker itself answers that it cannot load one.
    const p = makePool({ workerUrl: undefined, stallTimeoutMs: scaledMs(60_000) });
    const failure = await run(p, 'hello').catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(SynthesisError);
    expect(failure).toMatchObject({ code: 'MODEL_LOAD_FAILED' });
    expect((failure as Error).message).toContain('cannot load voice model /none.onnx');
  });
});
