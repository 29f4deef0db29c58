// The native tier: its files run in a process's main thread (forks), where `process.env` is the C library's.
import { isMainThread } from 'node:worker_threads';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { native } from '../../src/native.js';
import {
  OPENBLAS_THREAD_TIMEOUT,
  OPENBLAS_TIMEOUT_VARIABLE as VARIABLE,
  withOpenBlasIdleSleep,
} from '../../src/util/openblas-idle.js';

// The real function, watched: what the environment held while the addon's dlopen ran (OpenBLAS's constructor reads
// it then, and only then).
const seenDuringLoads = vi.hoisted(() => [] as (string | undefined)[]);
vi.mock('../../src/util/openblas-idle.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../src/util/openblas-idle.js')>();
  return {
    ...real,
    withOpenBlasIdleSleep: <T>(load: () => T): T =>
      real.withOpenBlasIdleSleep(() => {
        seenDuringLoads.push(process.env[real.OPENBLAS_TIMEOUT_VARIABLE]);
        return load();
      }),
  };
});
const hostValue = process.env[VARIABLE];
afterEach(() => {
  if (hostValue === undefined) delete process.env[VARIABLE];
  else process.env[VARIABLE] = hostValue;
});

describe('OpenBLAS idle threads while the addon loads', () => {
  it('loads the addon with the variable set, and leaves nothing in the environment', () => {
    expect(isMainThread).toBe(true);
    delete process.env[VARIABLE];
    seenDuringLoads.length = 0;
    expect(typeof native().markProcessExiting).toBe('function');
    expect(seenDuringLoads).toEqual([OPENBLAS_THREAD_TIMEOUT]);
    expect(process.env[VARIABLE]).toBeUndefined();
  });

  it('sets the variable for the load only, so the host environment never keeps it', () => {
    delete process.env[VARIABLE];
    const seen = withOpenBlasIdleSleep(() => process.env[VARIABLE]);
    expect(seen).toBe(OPENBLAS_THREAD_TIMEOUT);
    expect(process.env[VARIABLE]).toBeUndefined();
  });

  it('takes the variable away again when the load throws', () => {
    delete process.env[VARIABLE];
    expect(() =>
      withOpenBlasIdleSleep(() => {
        throw new Error('dlopen failed');
      }),
    ).toThrow('dlopen failed');
    expect(process.env[VARIABLE]).toBeUndefined();
  });

  it('leaves a value the host set alone, during the load and after it', () => {
    process.env[VARIABLE] = '28';
    expect(withOpenBlasIdleSleep(() => process.env[VARIABLE])).toBe('28');
    expect(process.env[VARIABLE]).toBe('28');
  });
});
