#!/usr/bin/env node
// Checks (or with --fix, applies) clang-format on the C++ sources in native/ and its subfolders (native/fuzz/).
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

const dir = new URL('../native/', import.meta.url).pathname;
const files = readdirSync(dir, { recursive: true })
  .filter((f) => /\.(cc|h)$/.test(f))
  .map((f) => join(dir, f));
const args = process.argv.includes('--fix') ? ['-i', ...files] : ['--dry-run', '--Werror', ...files];
const result = spawnSync('clang-format', args, { stdio: 'inherit' });
if (result.error) {
  console.error('clang-format not found: apt-get install clang-format');
  process.exit(1);
}
process.exit(result.status ?? 1);
