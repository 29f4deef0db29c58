// The package's version, read once from its package.json, for `voxmill --version` and `voxmill doctor`.
import { readFileSync } from 'node:fs';

export const packageVersion = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;
