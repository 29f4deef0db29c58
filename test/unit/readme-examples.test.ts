// The README's runnable examples: every ```js block that starts with a `// <name>.mjs` comment is meant to be saved
// as that file, so it must be plain JavaScript (no TypeScript syntax such as `!` or type annotations).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../helpers/paths.js';

const readme = readFileSync(join(repoRoot, 'README.md'), 'utf8');
const files = [...readme.matchAll(/```js\n(\/\/ ([\w.-]+\.mjs)\b[^\n]*\n[\s\S]*?)```/gu)].map(([, code, name]) => ({
  name: name as string,
  code: code as string,
}));

describe('README examples', () => {
  it('has the Express example as a .mjs file', () => {
    expect(files.map((f) => f.name)).toContain('server.mjs');
  });

  it.each(files)('$name parses as an ES module', ({ name, code }) => {
    const dir = mkdtempSync(join(tmpdir(), 'voxmill-readme-'));
    try {
      writeFileSync(join(dir, name), code);
      // --check parses without running (or resolving imports): a syntax error exits non-zero and throws here.
      expect(() => execFileSync(process.execPath, ['--check', join(dir, name)], { stdio: 'pipe' })).not.toThrow();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
