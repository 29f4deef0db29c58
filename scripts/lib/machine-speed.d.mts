// Types of scripts/lib/machine-speed.mjs, which vitest.config.ts, the tests and the CI scripts share.
export const REFERENCE_MS: number;
export function measureWorkloadMs(rounds?: number): number;
export function measureSlowdown(): number;
export function slowdown(): number;
export function scaledMs(ms: number): number;
