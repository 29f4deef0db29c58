#!/usr/bin/env node
// Assembles the packages a release publishes: one per platform (@voxmill/linux-x64-gnu, @voxmill/linux-arm64-gnu),
// each holding a built addon, ONNX Runtime's library, espeak-ng's data and the licence notices of everything inside,
// with os, cpu and libc fields so npm installs only the one that matches; and voxmill itself, which lists them as
// optional dependencies at its own exact version and carries no addon of its own.
//
//   node scripts/release/platform-packages.mjs [--target linux-x64=build/Release] [--target linux-arm64=...]
//                                              [--out dist-packages] [--allow-native] [--allow-system-libraries]
//
// Default targets: linux-x64 from build/Release and linux-arm64 from build-linux-arm64/Release, each where present.
// A release build is made with VOXMILL_CPU=portable VOXMILL_BLAS=none (and VOXMILL_TARGET=linux-arm64 for arm64);
// FFmpeg is linked in by default. Refused, naming the reason:
//   - an addon whose ELF machine is not the target's (an x64 build offered as arm64);
//   - one built for this machine's CPU (VOXMILL_CPU=native, or -march=native anywhere in its CMake cache): it would
//     fail with SIGILL on other CPUs; --allow-native packs it anyway, for a test on this machine only;
//   - one that links a library a bare system lacks (the system's FFmpeg, OpenBLAS, CUDA); --allow-system-libraries
//     packs it anyway, for a test on this machine only;
//   - versions that disagree (each platform package is voxmill's version).
// The highest GLIBC symbol version each addon needs is printed and recorded in its package (voxmill.json).
// Writes <out>/<name>-<version>.tgz for each (npm pack) and prints their paths, one a line, last.
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { fetched, PINNED } from '../native-deps.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** What each target is: npm's os/cpu/libc fields and the ELF machine number its addon must carry. */
export const TARGETS = {
  'linux-x64': { os: 'linux', cpu: 'x64', libc: 'glibc', suffix: 'gnu', elfMachine: 0x3e, ort: 'x64' },
  'linux-arm64': { os: 'linux', cpu: 'arm64', libc: 'glibc', suffix: 'gnu', elfMachine: 0xb7, ort: 'arm64' },
};

/** The ELF header's e_machine of a 64-bit little-endian shared object, or a reason it is not one. */
export function elfMachine(bytes) {
  if (bytes.length < 20 || bytes.readUInt32BE(0) !== 0x7f454c46) return 'not an ELF file';
  if (bytes[4] !== 2 || bytes[5] !== 1) return 'not a 64-bit little-endian ELF file';
  return bytes.readUInt16LE(18);
}

/** Why the addon in `releaseDir` (a build folder's Release/) cannot be packed for `target`; null when it can. */
export function refusal(target, releaseDir, { allowNative = false, allowSystemLibraries = false } = {}) {
  const addon = join(releaseDir, 'voxmill.node');
  if (!existsSync(addon)) return `${addon} does not exist`;
  const machine = elfMachine(readFileSync(addon));
  if (machine !== TARGETS[target].elfMachine) {
    return `${addon} is built for another machine (ELF machine ${typeof machine === 'number' ? `0x${machine.toString(16)}` : machine}), not ${target}`;
  }
  const cachePath = join(dirname(releaseDir), 'CMakeCache.txt');
  const cache = existsSync(cachePath) ? readFileSync(cachePath, 'utf8') : '';
  if (!allowNative) {
    if (!/^VOXMILL_CPU:\w+=portable$/m.test(cache)) {
      return `${addon} is not a portable build (VOXMILL_CPU in ${cachePath}): build it with VOXMILL_CPU=portable`;
    }
    if (/-march=native|-mcpu=native|-mtune=native/.test(cache)) {
      return `${addon}'s build asks for -march=native (${cachePath}): it would run only on CPUs like the builder's`;
    }
  }
  if (!allowSystemLibraries) {
    const system = neededLibraries(addon).filter((name) => /^lib(av|sw|openblas|gfortran|cu|vulkan)/.test(name));
    if (system.length > 0) {
      return `${addon} links ${system.join(', ')}, which a bare system lacks: build it with VOXMILL_BLAS=none (FFmpeg static)`;
    }
  }
  for (const beside of ['libonnxruntime.so.1', 'espeak-ng-data/phontab']) {
    if (!existsSync(join(releaseDir, beside))) return `${join(releaseDir, beside)} is missing: rebuild the addon`;
  }
  return null;
}

/** The shared libraries an ELF file names (DT_NEEDED), through binutils' readelf. */
export function neededLibraries(file) {
  const readelf = spawnSync('readelf', ['-d', file], { encoding: 'utf8' });
  if (readelf.status !== 0) throw new Error(`readelf -d ${file} failed: ${readelf.stderr}`);
  return [...readelf.stdout.matchAll(/\(NEEDED\)\s+Shared library: \[([^\]]+)\]/g)].map((match) => match[1]);
}

/** The highest GLIBC_x.y symbol version an ELF file needs. */
export function highestGlibc(file) {
  const readelf = spawnSync('readelf', ['-V', '--wide', file], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  const versions = [
    ...new Set([...(readelf.stdout ?? '').matchAll(/GLIBC_(\d+)\.(\d+)/g)].map((m) => `${m[1]}.${m[2]}`)),
  ];
  versions.sort((a, b) => {
    const [x, y] = [a.split('.').map(Number), b.split('.').map(Number)];
    return x[0] - y[0] || x[1] - y[1];
  });
  return versions.at(-1) ?? 'none';
}

/** One member of an archive (tar, tar.gz, tar.xz, zip), as text. */
function memberOf(archive, member) {
  const scratch = mkdtempSync(join(tmpdir(), 'voxmill-licence-'));
  try {
    const result = spawnSync('cmake', ['-E', 'tar', 'xf', archive, member], { cwd: scratch, encoding: 'utf8' });
    if (result.status !== 0) throw new Error(`cannot read ${member} from ${archive}: ${result.stderr}`);
    return readFileSync(join(scratch, member), 'utf8');
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** The licence notices of everything a platform package holds, as files for its LICENSES/ folder. */
async function licenceNotices(ortArch) {
  const whisperPackage = createRequire(join(root, 'package.json')).resolve('whisper-cpp-src/package.json');
  const whisper = join(dirname(whisperPackage), 'cpp', 'whisper.cpp', 'LICENSE');
  return {
    'whisper.cpp.txt': readFileSync(whisper, 'utf8'),
    'espeak-ng.txt': memberOf(await fetched(PINNED.espeakSource), 'espeak-ng-1.52.0+dfsg/COPYING'),
    'espeak-ng-data.txt':
      'espeak-ng-data/ is the data of espeak-ng 1.52.0 as piper-phonemize 1.4.11 ships it (npm), GPL-3.0-or-later: ' +
      'see espeak-ng.txt.\n',
    'onnxruntime.txt': memberOf(await fetched(PINNED.ortLibrary[ortArch]), 'onnxruntime/LICENSE'),
    'onnxruntime-third-party-notices.txt': memberOf(
      await fetched(PINNED.ortLibrary[ortArch]),
      'onnxruntime/ThirdPartyNotices.txt',
    ),
    'ffmpeg.txt': memberOf(await fetched(PINNED.ffmpegSource), 'ffmpeg-5.1.9/COPYING.LGPLv2.1'),
    'lame.txt': memberOf(await fetched(PINNED.lameSource), 'lame-3.100/COPYING'),
    'opus.txt': memberOf(await fetched(PINNED.opusSource), 'opus-1.3.1/COPYING'),
  };
}

/** `npm pack` of a folder into an empty scratch folder, moved to `destination`; the tarball's path. */
function npmPack(folder, destination, { env = process.env, scripts = false } = {}) {
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const scratch = mkdtempSync(join(tmpdir(), 'voxmill-pack-'));
  try {
    // Lifecycle scripts print to stdout too: the tarball is found in the folder, not parsed from the output.
    const args = ['pack', folder, '--pack-destination', scratch, '--silent', ...(scripts ? [] : ['--ignore-scripts'])];
    const packed = spawnSync(npm, args, {
      encoding: 'utf8',
      env,
      shell: process.platform === 'win32',
    });
    const made = readdirSync(scratch).filter((name) => name.endsWith('.tgz'));
    if (packed.status !== 0 || made.length !== 1) throw new Error(`npm pack ${folder} failed: ${packed.stderr}`);
    cpSync(join(scratch, made[0]), join(destination, made[0]));
    return join(destination, made[0]);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** Builds every package; returns the paths of the tarballs. */
export async function assemble({ targets, out, allowNative = false, allowSystemLibraries = false }) {
  if (Object.keys(targets).length === 0) {
    throw new Error('no build folder to pack: build one (VOXMILL_CPU=portable VOXMILL_BLAS=none) or pass --target');
  }
  const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  const { version } = manifest;
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  const tarballs = [];
  const optionalDependencies = {};
  for (const [target, releaseDir] of Object.entries(targets)) {
    const why = refusal(target, releaseDir, { allowNative, allowSystemLibraries });
    if (why) throw new Error(`${target}: ${why}`);
    const spec = TARGETS[target];
    const name = `@voxmill/${target}-${spec.suffix}`;
    const folder = join(out, `${target}-${spec.suffix}`);
    mkdirSync(join(folder, 'LICENSES'), { recursive: true });
    for (const file of ['voxmill.node', 'libonnxruntime.so.1', 'espeak-ng-data']) {
      cpSync(join(releaseDir, file), join(folder, file), { recursive: true });
    }
    for (const [file, text] of Object.entries(await licenceNotices(spec.ort))) {
      writeFileSync(join(folder, 'LICENSES', file), text);
    }
    const glibc = highestGlibc(join(folder, 'voxmill.node'));
    const needed = neededLibraries(join(folder, 'voxmill.node'));
    writeFileSync(join(folder, 'voxmill.json'), `${JSON.stringify({ target, glibc, libraries: needed }, null, 2)}\n`);
    writeFileSync(
      join(folder, 'package.json'),
      `${JSON.stringify(
        {
          name,
          version,
          description: `voxmill's native addon for ${target} (${spec.libc}), with ONNX Runtime's library and espeak-ng's data`,
          license: manifest.license,
          os: [spec.os],
          cpu: [spec.cpu],
          libc: [spec.libc],
          files: ['voxmill.node', 'libonnxruntime.so.1', 'espeak-ng-data', 'LICENSES', 'voxmill.json'],
          repository: manifest.repository,
        },
        null,
        2,
      )}\n`,
    );
    optionalDependencies[name] = version;
    tarballs.push(npmPack(folder, out));
    console.error(`${name}@${version}: glibc ${glibc}; links ${needed.join(', ')}`);
  }
  // voxmill itself: the checkout's pack, its manifest given the platform packages at its exact version.
  const staging = mkdtempSync(join(tmpdir(), 'voxmill-release-'));
  try {
    // The checkout's own pack runs its scripts (dist/ compiled, no prebuilds/); the repack below runs none.
    const packed = npmPack(root, staging, { env: { ...process.env, VOXMILL_PACK_WITHOUT_ADDON: '1' }, scripts: true });
    const unpacked = join(staging, 'unpacked');
    mkdirSync(unpacked);
    const untar = spawnSync('tar', ['xzf', packed, '-C', unpacked]);
    if (untar.status !== 0) throw new Error(`cannot unpack ${packed}`);
    const packageJson = join(unpacked, 'package', 'package.json');
    const published = JSON.parse(readFileSync(packageJson, 'utf8'));
    published.optionalDependencies = { ...published.optionalDependencies, ...optionalDependencies };
    for (const [name, range] of Object.entries(published.optionalDependencies)) {
      if (name.startsWith('@voxmill/') && range !== version) throw new Error(`${name} is at ${range}, not ${version}`);
    }
    if (published.scripts?.install || published.scripts?.postinstall || published.scripts?.preinstall) {
      throw new Error('voxmill must publish no install script');
    }
    // Its scripts build a checkout (prepare, prepack): an installed package runs none of them.
    delete published.scripts.prepare;
    delete published.scripts.prepack;
    writeFileSync(packageJson, `${JSON.stringify(published, null, 2)}\n`);
    rmSync(join(unpacked, 'package', 'prebuilds'), { recursive: true, force: true });
    tarballs.unshift(npmPack(join(unpacked, 'package'), out));
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  return tarballs;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const args = process.argv.slice(2);
  const targets = {};
  let out = join(root, 'dist-packages');
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--target') {
      const [target, dir] = (args[++i] ?? '').split('=');
      if (!TARGETS[target] || !dir) {
        console.error(`--target takes ${Object.keys(TARGETS).join('|')}=<build folder>/Release; received '${args[i]}'`);
        process.exit(2);
      }
      targets[target] = resolve(dir);
    } else if (args[i] === '--out') out = resolve(args[++i] ?? '');
    else if (!['--allow-native', '--allow-system-libraries'].includes(args[i])) {
      console.error(`unknown option ${args[i]}`);
      process.exit(2);
    }
  }
  if (Object.keys(targets).length === 0) {
    for (const [target, dir] of [
      ['linux-x64', 'build/Release'],
      ['linux-arm64', 'build-linux-arm64/Release'],
    ]) {
      if (existsSync(join(root, dir, 'voxmill.node'))) targets[target] = join(root, dir);
    }
  }
  try {
    const tarballs = await assemble({
      targets,
      out,
      allowNative: args.includes('--allow-native'),
      allowSystemLibraries: args.includes('--allow-system-libraries'),
    });
    for (const tarball of tarballs) console.log(tarball);
  } catch (error) {
    console.error(`voxmill: release: ${error.message}`);
    process.exit(1);
  }
}
