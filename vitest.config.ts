import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';
import { slowdown } from './scripts/lib/machine-speed.mjs';

// Time limits were set on the reference machine (scripts/lib/machine-speed.mjs); on a slower or busier one they grow
// by its measured slowdown. Measured once here (CI measures at its start and exports VOXMILL_SLOWDOWN) and put into
// the environment the test processes inherit, where the tests read it for their own limits.
const SLOWDOWN = slowdown();
const scaled = (ms: number) => Math.round(ms * SLOWDOWN);

// Two test files at a time (one on a 1-core machine). The work in them takes one thread each by default (the
// engine's default budget leaves a core to the host), so two files fill a 2-core machine: measured on 2 cores, the
// addon tiers took 281 s with two files at a time against 470 s one at a time; the accuracy tier's sampled files,
// 425 s of them, ran in 306 s. Limits that
// a busy CPU stretches (event-loop latency, stalls, deadlines) scale with SLOWDOWN, and the slowdown of a file that
// shares the machine with another is within what those limits allow (checked with two busy loops beside the run).
const PARALLEL_FILES = Math.min(2, availableParallelism());

// The native, http and e2e tiers load the addon in forked processes (a native crash fails the file instead of the
// runner). Memory, long audio, long loops and parity are the soak tier's. Tests in every tier print nothing
// (test/setup/no-prints.ts).
const noPrints = 'test/setup/no-prints.ts';
const addonTier = {
  pool: 'forks' as const,
  maxWorkers: PARALLEL_FILES,
  testTimeout: scaled(120_000),
  hookTimeout: scaled(300_000),
  setupFiles: [noPrints],
};

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          pool: 'threads',
          maxWorkers: PARALLEL_FILES,
          testTimeout: scaled(5_000),
          hookTimeout: scaled(10_000),
          setupFiles: [noPrints],
        },
      },
      {
        test: {
          name: 'native',
          include: ['test/native/**/*.test.ts'],
          ...addonTier,
        },
      },
      {
        // The /v1 handler in Express 5, Express 4 and a bare server, and `voxmill serve` as a process.
        test: {
          name: 'http',
          include: ['test/http/**/*.test.ts'],
          ...addonTier,
        },
      },
      {
        // The public API end to end: createSpeech(), the synthesis and diarization workers, the CLI.
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          ...addonTier,
        },
      },
      {
        // Real weights and real peers (`npm run models:test`, `bash scripts/peers-setup.sh`): word error rates,
        // timestamps and voices checked against faster-whisper, whisper-cli and piper-tts (`npm run test:accuracy`;
        // `npm run test:accuracy:full` runs every clip, sentence and format combination, VOXMILL_TEST_FULL=1).
        test: {
          name: 'accuracy',
          include: ['test/accuracy/**/*.test.ts'],
          pool: 'forks',
          maxWorkers: PARALLEL_FILES,
          testTimeout: scaled(600_000),
          hookTimeout: scaled(1_200_000),
          setupFiles: [noPrints],
        },
      },
      {
        // Jobs across processes on a real Redis (redis-server): workers killed and Redis restarted mid-run, cancels
        // (`npm run test:scale`; `npm run test:scale:full` runs 200 jobs per run); not part of `npm test`, CI runs it.
        test: {
          name: 'scale',
          include: ['test/scale/**/*.test.ts'],
          pool: 'forks',
          fileParallelism: false,
          testTimeout: scaled(900_000),
          hookTimeout: scaled(120_000),
          setupFiles: [noPrints],
        },
      },
      {
        // Memory (RSS over hundreds of calls), long audio, 1,000-cycle loops, output parity with whisper-cli and
        // thousands of requests against `voxmill serve` (`npm run test:soak`; `npm run soak` runs 10,000); not part of
        // `npm test`, CI runs it. One file at a time: RSS and memory levels are measured.
        test: {
          name: 'soak',
          include: ['test/soak/**/*.test.ts'],
          pool: 'forks',
          fileParallelism: false,
          testTimeout: scaled(1_800_000),
          hookTimeout: scaled(300_000),
          setupFiles: [noPrints],
        },
      },
    ],
  },
});
