// The long matrices of the slow tiers run a sample in CI and in full from scripts (`npm run test:accuracy:full`,
// `npm run test:scale:full`, ...), which set VOXMILL_TEST_FULL=1. A sample keeps every kind of case once (each format,
// each rate, each category), so what CI checks stays the same in kind; the full run is for closing notes and releases.

/** VOXMILL_TEST_FULL=1: every case of every matrix. */
export const FULL_TESTS = process.env.VOXMILL_TEST_FULL === '1';

/** All of `cases` under VOXMILL_TEST_FULL=1, else the ones `inSample` keeps. */
export function ciSample<T>(cases: readonly T[], inSample: (item: T, index: number) => boolean): T[] {
  return FULL_TESTS ? [...cases] : cases.filter(inSample);
}

/** `full` under VOXMILL_TEST_FULL=1, else `sample`: a count or a bound that goes with the sample's size. */
export function ciScoped<T>(full: T, sample: T): T {
  return FULL_TESTS ? full : sample;
}
