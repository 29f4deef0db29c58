#!/usr/bin/env node
// Runs before `npm pack` / `npm publish` (prepack): copies the addon built here into prebuilds/<platform>-<arch>/,
// which the package ships. npm 11 runs no dependency's install script unless the app allows it, so an app that
// installs voxmill gets no compiled addon of its own; src/native.ts then loads this one. It is an N-API addon (one
// build serves every Node version) linked to the system's FFmpeg shared libraries: the ones it needs are written
// beside it (voxmill.json) and named in the error when they are missing. What the addon opens beside itself ships with
// it: ONNX Runtime's library (libonnxruntime.so.1), espeak-ng's data (espeak-ng-data/) and a bundled OpenBLAS
// (VOXMILL_BLAS=bundled: libscipy_openblas.so and the libraries it loads beside it).
import { spawnSync } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { besideLibraries } from './release/binary-inspect.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const addon = join(root, 'build', 'Release', 'voxmill.node');
const target = join(root, 'prebuilds', `${process.platform}-${process.arch}`);

// A release packs voxmill without an addon: the platform packages carry it (scripts/release/platform-packages.mjs).
if (process.env.VOXMILL_PACK_WITHOUT_ADDON === '1') {
  rmSync(join(root, 'prebuilds'), { recursive: true, force: true });
  console.log('voxmill: prepack: no prebuilt addon in this package (VOXMILL_PACK_WITHOUT_ADDON=1)');
  process.exit(0);
}
if (!existsSync(addon)) {
  console.error(`voxmill: prepack: ${addon} is missing; run npm run build:native first`);
  process.exit(1);
}
// The libraries it links (its direct NEEDED entries): the FFmpeg ones are recorded for the message when one is missing.
const readelf = spawnSync('readelf', ['-d', addon], { encoding: 'utf8' });
const linked = [...(readelf.stdout ?? '').matchAll(/\(NEEDED\)\s+Shared library: \[([^\]]+)\]/g)].map(
  (match) => match[1],
);
// The package ships the plain CPU build: not one linked to a GPU runtime or a sanitizer (VOXMILL_GPU, ASan builds).
const special = linked.filter((name) => /cuda|cublas|vulkan|asan|ubsan/i.test(name));
if (special.length > 0) {
  rmSync(join(root, 'prebuilds'), { recursive: true, force: true });
  console.error(`voxmill: prepack: ${addon} links ${special.join(', ')}; rebuild it plainly (npm run build:native)`);
  process.exit(1);
}
// A native build (VOXMILL_CPU=native, the default of a source build) runs only on CPUs with this machine's instruction
// sets: a package is made from it only when VOXMILL_PACK_NATIVE=1 says it stays here (the tarball test sets it), and
// never for `npm publish`. (`npm publish x.tgz` runs no prepack: publish from the folder, or check the tarball.)
const { cpuTarget = 'unknown' } = createRequire(import.meta.url)(addon).versions();
// (x86-64-v2, SSE4.2, runs on more CPUs than portable does.)
if (cpuTarget !== 'portable' && cpuTarget !== 'x86-64-v2') {
  if (process.env.npm_command === 'publish' || process.env.VOXMILL_PACK_NATIVE !== '1') {
    console.error(
      `voxmill: prepack: ${addon} is a ${cpuTarget} build, which runs on CPUs like this one only; pack a portable one ` +
        '(VOXMILL_CPU=portable VOXMILL_GLIBC=2.28 npm run build:native), or set VOXMILL_PACK_NATIVE=1 to pack it for this machine',
    );
    process.exit(1);
  }
  console.warn(`voxmill: prepack: ${addon} is a ${cpuTarget} build: this package runs on CPUs like this one only`);
}
const needed = linked.filter((name) => /^lib(av|sw|openblas)/.test(name));
// Libraries that live beside the addon (a bundled OpenBLAS, VOXMILL_BLAS=bundled) ship beside it.
const beside = besideLibraries(addon);
rmSync(join(root, 'prebuilds'), { recursive: true, force: true });
mkdirSync(target, { recursive: true });
copyFileSync(addon, join(target, 'voxmill.node'));
for (const file of ['libonnxruntime.so.1', 'espeak-ng-data', ...beside]) {
  const from = join(dirname(addon), file);
  if (!existsSync(from)) {
    console.error(`voxmill: prepack: ${from} is missing; rebuild the addon (npm run build:native)`);
    process.exit(1);
  }
  cpSync(from, join(target, file), { recursive: true });
}
writeFileSync(join(target, 'voxmill.json'), `${JSON.stringify({ libraries: needed, cpu: cpuTarget }, null, 2)}\n`);
console.log(
  `voxmill: prepack: ${target}/voxmill.node (${cpuTarget} CPU code; links ${needed.join(', ') || 'unknown'})`,
);
