import { defineConfig } from 'vitest/config';

// Unit tests (no addon, no models) run in parallel. The native, http and e2e tiers load the addon in forked
// processes (a native crash fails the file instead of the runner) one file at a time, across the three projects
// (vitest runs every file whose project has no file parallelism in one sequential group, after the parallel ones):
// they measure event-loop latency on a 2-core machine, where parallel files would skew it. Memory, long audio,
// long loops and parity are the soak tier's. Tests in every tier print nothing (test/setup/no-prints.ts).
const noPrints = 'test/setup/no-prints.ts';
const addonTier = {
  pool: 'forks' as const,
  fileParallelism: false,
  testTimeout: 120_000,
  hookTimeout: 300_000,
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
        // timestamps and voices checked against faster-whisper, whisper-cli and piper-tts (`npm run test:accuracy`).
        test: {
          name: 'accuracy',
          include: ['test/accuracy/**/*.test.ts'],
          pool: 'forks',
          fileParallelism: false,
          testTimeout: 600_000,
          hookTimeout: 1_200_000,
          setupFiles: [noPrints],
        },
      },
      {
        // Jobs across processes on a real Redis (redis-server): workers killed and Redis restarted mid-run, cancels
        // (`npm run test:scale`); not part of `npm test`, CI runs it.
        test: {
          name: 'scale',
          include: ['test/scale/**/*.test.ts'],
          pool: 'forks',
          fileParallelism: false,
          testTimeout: 900_000,
          hookTimeout: 120_000,
          setupFiles: [noPrints],
        },
      },
      {
        // Memory (RSS over hundreds of calls), long audio, 1,000-cycle loops, output parity with whisper-cli and
        // thousands of requests against `voxmill serve` (`npm run test:soak`); not part of `npm test`, CI runs it.
        test: {
          name: 'soak',
          include: ['test/soak/**/*.test.ts'],
          pool: 'forks',
          fileParallelism: false,
          testTimeout: 1_800_000,
          hookTimeout: 300_000,
          setupFiles: [noPrints],
        },
      },
    ],
  },
});
