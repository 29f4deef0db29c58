// The synthesis pool's admission: at most size + maxQueue syntheses, a waiting one abortable. Synthesis itself is
// native (espeak-ng and ONNX Runtime in the addon), so it is tested in the e2e tier (test/e2e/tts.test.ts).
import { afterEach, describe, expect, it } from 'vitest';
import { QueueFullError } from '../../src/errors.js';
import { SynthPool } from '../../src/tts/synth-pool.js';

let pool: SynthPool | undefined;

function makePool(overrides: Partial<ConstructorParameters<typeof SynthPool>[0]> = {}): SynthPool {
  pool = new SynthPool({
    size: 1,
    maxQueue: 4,
    lookahead: 2,
    stallTimeoutMs: 60_000,
    intraOpThreads: 1,
    memoryArena: true,
    sessionIdleMs: 0,
    ...overrides,
  });
  return pool;
}

afterEach(async () => {
  await pool?.close();
  pool = undefined;
});

describe('SynthPool', () => {
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
