#!/usr/bin/env node
// Builds whisper.cpp's own `whisper-cli` (and its quantizer, `whisper-quantize`) from the same source tree the addon
// is built from (whisper-cpp-src, or VOXMILL_WHISPER_CPP_DIR), with the addon's build flags (its CPU code and BLAS
// included), into bench/build-cli/.
// The benchmarks compare the binding against this binary, so both must come from one tree.
//
//   node bench/build-whisper-cli.mjs [--force] [--openmp] [--patched]   prints the binary's path (build output goes to stderr)
//   import { ensureWhisperCli } from './build-whisper-cli.mjs'
//
// --openmp / ensureWhisperCli({ openmp: true }) builds a second variant with -DGGML_OPENMP=ON into
// bench/build-cli-openmp/ (needs the compiler's OpenMP runtime, libgomp with g++). whisper.cpp's whisper_vad()
// makes its Silero context with whisper_vad_default_context_params() (4 threads, whatever -t says); without
// OpenMP ggml's barrier threads spin, so on a machine with fewer than 4 cores `whisper-cli --vad` crawls
// (more than 120 s for a 30 s file on 2 cores). OpenMP's barriers stop spinning and sleep when there are more
// threads than cores, so the VAD-on runs use this variant; everything else keeps the addon's flags.
//
// --patched / ensureWhisperCli({ patched: true }) builds a variant into bench/build-cli-patched/ from a copy of the
// tree with the addon's patched sources laid over it (build/voxmill-patched/: native/whisper-patches.cmake's output),
// so whisper-cli's per-stage timings show the kernels voxmill runs (bench/stage-profile.mjs), and the accuracy and soak
// tiers' word-for-word parity compares the same arithmetic (patch 0005 changes the encoder's rounding). The plain build
// stays upstream's whisper-cli, the peer the speed benchmarks compare against.
//
// Environment:
//   VOXMILL_WHISPER_CPP_DIR  another whisper.cpp checkout instead of whisper-cpp-src
//   VOXMILL_BUILD_JOBS       parallel compile jobs (default: number of CPUs)
//
// whisper-cli is configured through a generated wrapper project that add_subdirectory()s the tree exactly like the
// addon's CMakeLists.txt does and then includes native/ggml-cpu-amx.cmake (AMX left out of native builds), so it runs
// the addon's kernels. Configured standalone (-S <tree>), whisper.cpp's top CMakeLists.txt would also write
// bindings/javascript/package.json.tmp into its source tree, which fails on a read-only tree (a root-owned global
// node_modules); through the wrapper nothing is written into the tree.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { benchArgs, flag, isEntry, root } from './lib.mjs';

export const buildDir = join(root, 'bench', 'build-cli');
export const openmpBuildDir = join(root, 'bench', 'build-cli-openmp');
export const patchedBuildDir = join(root, 'bench', 'build-cli-patched');
const exe = process.platform === 'win32' ? 'whisper-cli.exe' : 'whisper-cli';
// Single-config generators put it in bin/, multi-config ones (Visual Studio, Xcode) in bin/Release/.
const candidates = (dir) => [join(dir, 'bin', exe), join(dir, 'bin', 'Release', exe)];

// The addon's CPU code and BLAS as the built addon itself reports them (versions(): cpuTarget, blas), so whisper-cli
// is compiled like the addon that runs beside it, whatever the environment says now. VOXMILL_ADDON_PATH, as
// src/native.ts reads it, else build/Release/voxmill.node.
let builtAddon;
function addonBuild() {
  if (builtAddon === undefined) {
    const path = process.env.VOXMILL_ADDON_PATH || join(root, 'build', 'Release', 'voxmill.node');
    if (!existsSync(path)) throw new Error(`${path} is missing: build the addon first (npm run build:native)`);
    const { cpuTarget, blas } = createRequire(import.meta.url)(path).versions();
    builtAddon = {
      cpu: cpuTarget === 'native' ? 'native' : 'portable',
      blas: blas === 'openblas' ? 'openblas' : 'none',
    };
  }
  return builtAddon;
}
/** The addon's settings (CMakeLists.txt at the repository root), so the two builds are comparable. */
const flagsFor = (cpu, blas) => [
  '-DCMAKE_BUILD_TYPE=Release',
  `-DVOXMILL_CPU=${cpu}`,
  `-DGGML_NATIVE=${cpu === 'native' ? 'ON' : 'OFF'}`,
  // As CMakeLists.txt does: the x86-64 baseline set explicitly, since a folder configured native first caches it OFF.
  ...(cpu === 'portable' ? ['SSE42', 'AVX', 'AVX2', 'BMI2', 'FMA', 'F16C'].map((isa) => `-DGGML_${isa}=ON`) : []),
  ...(blas === 'openblas' ? ['-DGGML_BLAS=ON', '-DGGML_BLAS_VENDOR=OpenBLAS'] : ['-DGGML_BLAS=OFF']),
  '-DGGML_OPENMP=OFF',
  '-DGGML_LLAMAFILE=ON',
  '-DBUILD_SHARED_LIBS=OFF',
  '-DCMAKE_POSITION_INDEPENDENT_CODE=ON',
  '-DWHISPER_BUILD_TESTS=OFF',
  '-DWHISPER_BUILD_EXAMPLES=ON',
  '-DWHISPER_BUILD_SERVER=OFF',
  '-DWHISPER_ALL_WARNINGS=OFF',
  '-DWHISPER_SDL2=OFF',
  '-DWHISPER_CURL=OFF',
];

function whisperTree() {
  const fromEnv = process.env.VOXMILL_WHISPER_CPP_DIR;
  if (fromEnv) {
    const dir = resolve(fromEnv);
    if (!existsSync(join(dir, 'include', 'whisper.h'))) {
      throw new Error(`VOXMILL_WHISPER_CPP_DIR=${fromEnv} is not a whisper.cpp tree (no include/whisper.h)`);
    }
    return dir;
  }
  const require = createRequire(join(root, 'package.json'));
  let pkg;
  try {
    pkg = require.resolve('whisper-cpp-src/package.json');
  } catch {
    throw new Error('the whisper-cpp-src package is missing; run npm install (it is an alias of nodejs-whisper@0.3.1)');
  }
  return join(dirname(pkg), 'cpp', 'whisper.cpp');
}

/** The addon's build folder: where VOXMILL_ADDON_PATH's addon (or build/Release/voxmill.node) was built. */
const addonBuildDir = () =>
  process.env.VOXMILL_ADDON_PATH ? dirname(dirname(resolve(process.env.VOXMILL_ADDON_PATH))) : join(root, 'build');

/** The files the addon's configure patched (native/whisper-patches.cmake lists them), relative to the tree. */
function patchedFiles() {
  const list = join(addonBuildDir(), 'voxmill-patched', 'files.txt');
  if (!existsSync(list)) throw new Error(`${list} is missing: build the addon first (npm run build:native)`);
  return readFileSync(list, 'utf8').split('\n').filter(Boolean);
}

/** A hash of the addon's patched sources, so the patched whisper-cli is built again when they change. */
function patchedSourcesHash() {
  const hash = createHash('sha256');
  for (const file of patchedFiles())
    hash.update(file).update(readFileSync(join(addonBuildDir(), 'voxmill-patched', file)));
  return hash.digest('hex').slice(0, 16);
}

/** A copy of `tree`, made writable, with the addon's patched sources laid over it, made afresh. */
function patchedTree(tree) {
  const copy = join(patchedBuildDir, 'tree');
  rmSync(copy, { recursive: true, force: true });
  cpSync(tree, copy, { recursive: true });
  // A read-only tree (a root-owned global node_modules) copies read-only: let the overlay and the next rmSync in.
  spawnSync('chmod', ['-R', 'u+w', copy]);
  for (const file of patchedFiles()) cpSync(join(addonBuildDir(), 'voxmill-patched', file), join(copy, file));
  return copy;
}

function run(command, args) {
  // Build output goes to stderr, so stdout carries only the binary's path.
  const result = spawnSync(command, args, { stdio: ['ignore', 2, 2] });
  if (result.error) throw new Error(`${command} could not start: ${result.error.message}`);
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} failed with status ${result.status}`);
}

/**
 * The source folder to configure: a wrapper project that add_subdirectory()s the tree, as the addon's CMakeLists.txt
 * does, and then applies the addon's CPU-code adjustments (native/ggml-cpu-amx.cmake), so whisper-cli runs the kernels
 * the addon runs. Nothing is written into the tree.
 */
function sourceDir(tree, dir) {
  const wrapper = join(dir, 'wrapper');
  mkdirSync(wrapper, { recursive: true });
  const cmakePath = (path) => path.replaceAll('\\', '/');
  writeFileSync(
    join(wrapper, 'CMakeLists.txt'),
    'cmake_minimum_required(VERSION 3.18)\n' +
      'project(voxmill_whisper_cli C CXX)\n' +
      // whisper.cpp sets CMAKE_RUNTIME_OUTPUT_DIRECTORY to <build>/bin itself.
      `add_subdirectory("${cmakePath(tree)}" whisper.cpp)\n` +
      `include("${cmakePath(join(root, 'native', 'ggml-cpu-amx.cmake'))}")\n`,
  );
  return wrapper;
}

/** whisper.cpp's quantizer (ggml f16 -> q8_0, q5_1, ...), built beside whisper-cli. */
export function quantizeBeside(whisperCli) {
  return join(dirname(whisperCli), process.platform === 'win32' ? 'whisper-quantize.exe' : 'whisper-quantize');
}

function existing(dir) {
  return candidates(dir).find((path) => existsSync(path));
}

/**
 * Returns the path of whisper-cli, building it first when it is missing (or when `force` is set).
 * `openmp` picks the -DGGML_OPENMP=ON variant in bench/build-cli-openmp/ (see the note at the top). `cpu` and `blas`
 * default to the addon's; another pair builds into bench/build-cli-<cpu>-<blas>/ (bench/cpu-peak.mjs compares them).
 * `patched` picks the variant with the addon's patched sources in bench/build-cli-patched/ (see the note at the top).
 * @param {{ force?: boolean, openmp?: boolean, patched?: boolean, cpu?: 'native' | 'portable', blas?: 'openblas' | 'none' }} [options]
 * @returns {string}
 */
export function ensureWhisperCli({ force = false, openmp = false, patched = false, cpu, blas } = {}) {
  if (openmp && patched) throw new Error('the openmp and patched variants are separate builds: ask for one');
  const addon = cpu === undefined || blas === undefined ? addonBuild() : undefined;
  cpu ??= addon.cpu;
  blas ??= addon.blas;
  const asAddon = addon !== undefined && cpu === addon.cpu && blas === addon.blas;
  const dir = openmp
    ? openmpBuildDir
    : patched
      ? patchedBuildDir
      : asAddon
        ? buildDir
        : join(root, 'bench', `build-cli-${cpu}-${blas}`);
  const cmakeFlags = flagsFor(cpu, blas);
  const flags = openmp ? cmakeFlags.map((f) => (f === '-DGGML_OPENMP=OFF' ? '-DGGML_OPENMP=ON' : f)) : cmakeFlags;
  // The CPU code and BLAS the binaries in `dir` were built with: others are built afresh.
  const stamp = join(dir, 'voxmill-cpu.txt');
  // The patched variant is also built afresh when the addon's patched sources changed.
  const patches = patched ? ` ${patchedSourcesHash()}` : '';
  // And when the CPU-code adjustments its wrapper includes changed (a folder built before them, or configured
  // straight from the tree, is built again).
  const adjustments = createHash('sha256')
    .update(readFileSync(join(root, 'native', 'ggml-cpu-amx.cmake')))
    .digest('hex');
  // And when the cmake flags changed (a flag added to flagsFor builds every variant again).
  const flagsHash = createHash('sha256').update(flags.join('\n')).digest('hex').slice(0, 16);
  const target = `${cpu} ${blas} wrapper-${adjustments.slice(0, 16)} flags-${flagsHash}${patches}`;
  const sameTarget = existsSync(stamp) && readFileSync(stamp, 'utf8').trim() === target;
  const found = existing(dir);
  if (found && sameTarget && existsSync(quantizeBeside(found)) && !force) return found;
  const tree = patched ? patchedTree(whisperTree()) : whisperTree();
  const cmake = spawnSync('cmake', ['--version'], { encoding: 'utf8' });
  if (cmake.error || cmake.status !== 0) throw new Error('cmake not found. On Debian/Ubuntu: apt-get install cmake');
  if (force) {
    for (const path of candidates(dir)) rmSync(path, { force: true });
  }
  const source = sourceDir(tree, dir);
  // A cache made from another source folder (the tree vs the wrapper, or another VOXMILL_WHISPER_CPP_DIR)
  // makes cmake refuse to configure: start that build folder afresh.
  const cache = join(dir, 'CMakeCache.txt');
  if (existsSync(cache)) {
    const home = /^CMAKE_HOME_DIRECTORY:INTERNAL=(.*)$/m.exec(readFileSync(cache, 'utf8'))?.[1];
    if (home !== undefined && resolve(home) !== resolve(source)) {
      rmSync(cache, { force: true });
      rmSync(join(dir, 'CMakeFiles'), { recursive: true, force: true });
    }
  }
  run('cmake', ['-S', source, '-B', dir, ...flags]);
  const jobs = process.env.VOXMILL_BUILD_JOBS ?? String(availableParallelism());
  run('cmake', ['--build', dir, '--config', 'Release', '--target', 'whisper-cli', 'whisper-quantize', '-j', jobs]);
  const built = existing(dir);
  if (!built) throw new Error(`the build finished but no whisper-cli was found under ${join(dir, 'bin')}`);
  writeFileSync(stamp, `${target}\n`);
  return built;
}

if (isEntry(import.meta.url)) {
  try {
    const { force, openmp, patched } = benchArgs('node bench/build-whisper-cli.mjs [--force] [--openmp] [--patched]', {
      force: flag.boolean('build again even when a whisper-cli is there'),
      openmp: flag.boolean('the -DGGML_OPENMP=ON variant in bench/build-cli-openmp/ (for --vad on few cores)'),
      patched: flag.boolean("the variant with the addon's patched sources in bench/build-cli-patched/"),
    }).settings;
    console.log(ensureWhisperCli({ force, openmp, patched }));
  } catch (error) {
    console.error(`whisper-cli: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  }
}
