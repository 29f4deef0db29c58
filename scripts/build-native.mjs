#!/usr/bin/env node
// Builds the C++ addon with cmake-js, offline. Runs as the package's install script.
//
// Environment:
//   VOXMILL_WHISPER_CPP_DIR  another whisper.cpp checkout (newer, or a GPU build) instead of whisper-cpp-src
//   VOXMILL_GPU              cuda | vulkan | metal: passes GGML_<X>=ON to the whisper.cpp build
//   VOXMILL_CPU              native (default) | portable: native compiles ggml for this machine's CPU (-march=native:
//                            AVX-512 where it has it); portable: the x86-64 AVX2/FMA/F16C baseline (arm64: the
//                            compiler's), for an addon that must run on other machines (a prebuilt package, a
//                            container image). With VOXMILL_GPU=cuda the default is portable: native would also build
//                            for this machine's GPU only, and fail where there is none (a container build)
//   VOXMILL_BLAS             auto (default: OpenBLAS when pkg-config finds it) | openblas (required) | none
//   VOXMILL_CMAKE_ARGS       extra -D options, space separated
//   VOXMILL_BUILD_JOBS       parallel compile jobs (default: number of CPUs)
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(join(root, 'package.json'));
const force = process.argv.includes('--force');
const addon = join(root, 'build', 'Release', 'voxmill.node');

function fail(message) {
  console.error(`voxmill: native build failed: ${message}`);
  process.exit(1);
}

function whisperTree() {
  const fromEnv = process.env.VOXMILL_WHISPER_CPP_DIR;
  if (fromEnv) {
    if (!existsSync(join(fromEnv, 'include', 'whisper.h'))) {
      fail(`VOXMILL_WHISPER_CPP_DIR=${fromEnv} is not a whisper.cpp tree (no include/whisper.h)`);
    }
    return resolve(fromEnv);
  }
  try {
    return join(dirname(require.resolve('whisper-cpp-src/package.json')), 'cpp', 'whisper.cpp');
  } catch {
    fail('the whisper-cpp-src package is missing; run npm install (it is an alias of nodejs-whisper@0.3.1)');
  }
}

function gpuFlags() {
  const gpu = (process.env.VOXMILL_GPU ?? '').trim().toLowerCase();
  if (gpu === '' || gpu === 'none' || gpu === 'cpu') return [];
  const known = { cuda: 'GGML_CUDA', vulkan: 'GGML_VULKAN', metal: 'GGML_METAL' };
  if (!(gpu in known)) fail(`VOXMILL_GPU must be one of cuda, vulkan, metal; received '${gpu}'`);
  return [`--CD${known[gpu]}=ON`];
}

function cpuTarget(gpu) {
  // With CUDA, GGML_NATIVE also compiles for this machine's GPU alone (CMAKE_CUDA_ARCHITECTURES=native), and fails
  // where there is none.
  const cuda = gpu.some((flag) => flag.includes('GGML_CUDA'));
  const cpu = (process.env.VOXMILL_CPU ?? '').trim().toLowerCase() || (cuda ? 'portable' : 'native');
  if (cpu === 'native' && cuda)
    console.warn("voxmill: VOXMILL_CPU=native with CUDA also builds for this machine's GPU only");
  if (cpu !== 'native' && cpu !== 'portable') fail(`VOXMILL_CPU must be native or portable; received '${cpu}'`);
  return cpu;
}

function blasChoice() {
  const blas = (process.env.VOXMILL_BLAS ?? '').trim().toLowerCase() || 'auto';
  if (!['auto', 'openblas', 'none'].includes(blas))
    fail(`VOXMILL_BLAS must be auto, openblas or none; received '${blas}'`);
  return blas;
}

function checkTools() {
  const cmake = spawnSync('cmake', ['--version'], { encoding: 'utf8' });
  if (cmake.status !== 0) fail('cmake not found. On Debian/Ubuntu: apt-get install cmake');
  const pkg = spawnSync('pkg-config', ['--exists', 'libavformat', 'libavcodec', 'libswresample', 'libavutil']);
  if (pkg.error || pkg.status !== 0) {
    fail(
      'FFmpeg development libraries not found: apt-get install pkg-config libavformat-dev libavcodec-dev libswresample-dev libavutil-dev',
    );
  }
}

if (!force && existsSync(addon)) {
  console.log(`voxmill: native addon present at ${addon} (npm run build:native rebuilds it)`);
  process.exit(0);
}
// An installed package ships a prebuilt addon for its platform (scripts/prebuild.mjs): when it loads here (the FFmpeg
// libraries it links are installed), there is nothing to compile.
const prebuilt = join(root, 'prebuilds', `${process.platform}-${process.arch}`, 'voxmill.node');
if (!force && existsSync(prebuilt)) {
  const probe = spawnSync(process.execPath, ['-e', `require(${JSON.stringify(prebuilt)})`], { encoding: 'utf8' });
  if (probe.status === 0) {
    console.log(`voxmill: using the prebuilt addon ${prebuilt} (npm run build:native builds one here)`);
    process.exit(0);
  }
  console.log(`voxmill: the prebuilt addon does not load here (${probe.stderr.trim().split('\n')[0]}); building one`);
}
// Configuration mistakes first: they are quicker to fix than missing packages.
const whisperDir = whisperTree();
const gpu = gpuFlags();
const cpu = cpuTarget(gpu);
const blas = blasChoice();
checkTools();
const cmakeJs = join(dirname(require.resolve('cmake-js/package.json')), 'bin', 'cmake-js');
const nodeAddonApi = dirname(require.resolve('node-addon-api/package.json'));
const jobs = process.env.VOXMILL_BUILD_JOBS ?? String(availableParallelism());
const extra = (process.env.VOXMILL_CMAKE_ARGS ?? '')
  .split(/\s+/)
  .filter(Boolean)
  .map((arg) => arg.replace(/^-D/, '--CD'));
// Configured every time, then built: `cmake-js compile` on an existing build folder only builds, so the -D options
// (VOXMILL_CPU, VOXMILL_BLAS, VOXMILL_GPU) of a later run would not reach CMake's cache.
const defines = [
  `--CDWHISPER_CPP_DIR=${whisperDir}`,
  `--CDNODE_ADDON_API_DIR=${nodeAddonApi}`,
  `--CDVOXMILL_CPU=${cpu}`,
  `--CDVOXMILL_BLAS=${blas}`,
  ...gpu,
  ...extra,
];
const started = Date.now();
for (const step of [
  ['configure', ...defines],
  ['build', '--parallel', jobs],
]) {
  const result = spawnSync(process.execPath, [cmakeJs, step[0], '--directory', root, ...step.slice(1)], {
    stdio: 'inherit',
    cwd: root,
  });
  if (result.status !== 0) fail(`cmake-js ${step[0]} exited with ${result.status ?? result.signal}`);
}
console.log(
  `voxmill: native addon (${cpu} CPU code, VOXMILL_BLAS=${blas}) built in ${((Date.now() - started) / 1000).toFixed(1)} s`,
);
