// Where tests find their inputs. `../shared` (read-only, never committed) is located through one
// setting, VOXMILL_TEST_DATA; generated fixtures live in test/fixtures (git-ignored, made by
// `npm run fixtures`, which `npm test` runs first).
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

function locateSharedData(): string {
  const dir = resolve(repoRoot, process.env.VOXMILL_TEST_DATA ?? '../shared');
  if (!existsSync(join(dir, 'models', 'MANIFEST.json'))) {
    throw new Error(
      `test data not found at ${dir} (no models/MANIFEST.json). Set VOXMILL_TEST_DATA to the shared test-data ` +
        'directory (default: ../shared beside the checkout).',
    );
  }
  return dir;
}

export const sharedDir = locateSharedData();
export const sharedAudio = (name: string): string => join(sharedDir, 'audio', name);
export const sharedModel = (name: string): string => join(sharedDir, 'models', name);
export const fixturesDir = join(repoRoot, 'test', 'fixtures');

/** A generated fixture; fails loudly when `npm run fixtures` has not made it. */
export function fixture(relative: string): string {
  const path = join(fixturesDir, relative);
  if (!existsSync(path)) {
    throw new Error(`fixture ${path} is missing: run 'npm run fixtures' (npm test does it first)`);
  }
  return path;
}
