import { defineConfig } from 'vitest/config';

// Unit tests (no addon, no models) run in parallel. Native and end-to-end tests load the addon in
// forked processes (a native crash fails the file instead of the runner) one file at a time: they
// measure event-loop latency, memory and speed on a 2-core machine, where parallel files would skew both.
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          pool: 'threads',
        },
      },
      {
        test: {
          name: 'native',
          include: ['test/native/**/*.test.ts', 'test/http/**/*.test.ts', 'test/e2e/**/*.test.ts'],
          pool: 'forks',
          fileParallelism: false,
          testTimeout: 120_000,
          hookTimeout: 300_000,
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
        },
      },
      {
        // Long runs against `voxmill serve` (`npm run test:soak`); not part of `npm test`, CI runs it on its own.
        test: {
          name: 'soak',
          include: ['test/soak/**/*.test.ts'],
          pool: 'forks',
          fileParallelism: false,
          testTimeout: 1_800_000,
        },
      },
    ],
  },
});
