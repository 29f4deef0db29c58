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
//                            | x86-64-v2 (x64 only): SSE4.2 and no AVX, the second build of the x64 platform package,
//                            which its loader picks on CPUs without AVX2
//   VOXMILL_FFMPEG           static (default): FFmpeg built from its pinned source with only what voxmill uses
//                            (scripts/static-ffmpeg.mjs, cached; about 50 s the first time on 2 cores) and linked in, so the addon
//                            loads no libav* of the system | system: the system's FFmpeg shared libraries through
//                            pkg-config (Debian/Ubuntu: libavformat-dev libavcodec-dev libswresample-dev libavutil-dev)
//   VOXMILL_GLIBC            a glibc version (2.28 for a release): builds with zig's clang against that glibc
//                            (scripts/zig-toolchain.mjs, fetched from the Python package index and cached), with libc++
//                            linked in, so the addon loads on any Linux from that glibc on; also cross-compiles for
//                            VOXMILL_TARGET=linux-arm64 without Debian's cross compiler. Needs VOXMILL_FFMPEG=static
//                            and VOXMILL_BLAS=bundled (its default) or none (the system's are built for its own glibc). Unset (default): the system's
//                            compiler, and the addon needs about this system's glibc (on Debian 12, whose glibc is
//                            2.36: GLIBC_2.35)
//   VOXMILL_BLAS             auto (default: OpenBLAS when pkg-config finds it; with VOXMILL_GLIBC bundled, or none for a
//                            GPU build) | openblas
//                            (required) | bundled (scipy-openblas32's OpenBLAS, fetched pinned from the Python package
//                            index and copied beside the addon: what a release ships) | none
//   VOXMILL_CUDA_ARCHS       with VOXMILL_GPU=cuda: CMAKE_CUDA_ARCHITECTURES, e.g. 89-real;90-real. Default: ggml's list
//                            (CUDA 13: 75-virtual;80-virtual;86-real;89-real;90-virtual;120a-real;121a-real), several
//                            times the compile time of one architecture
//   CUDAToolkit_ROOT         with VOXMILL_GPU=cuda: the toolkit's root when its bin/nvcc is not on PATH (CUDACXX also
//                            works). The NVIDIA driver is not needed to build; the addon does not link libcuda
//                            (GGML_CUDA_NO_VMM), so it loads and runs on the CPU where there is no driver, as long as
//                            the CUDA runtime and cuBLAS libraries (libcudart.so.N, libcublas.so.N) are found
//                            With VOXMILL_GPU=vulkan: whisper.cpp needs Vulkan headers 1.3.272 or newer (Debian 12 has
//                            1.3.239): pass newer ones with VOXMILL_CMAKE_ARGS=-DVulkan_INCLUDE_DIR=<dir>
//   VOXMILL_TARGET           linux-arm64: cross-compiles for aarch64 on an x86-64 Debian/Ubuntu machine (Debian's
//                            cross compiler and arm64 OpenBLAS through multiarch: scripts/arm64/setup.sh), into
//                            build-linux-arm64/ with portable CPU code. Unset: this machine
//   VOXMILL_BUILD_DIR        the build folder (default build/, or build-<target>/ with VOXMILL_TARGET); the addon is
//                            <folder>/Release/voxmill.node, loaded from elsewhere with VOXMILL_ADDON_PATH
//   VOXMILL_CMAKE_ARGS       extra -D options, space separated
//   VOXMILL_BUILD_JOBS       parallel compile jobs (default: number of CPUs)
//   ONNX Runtime and espeak-ng are fetched first by scripts/native-deps.mjs (pinned, cached in ~/.cache/voxmill), which
//   has its own settings (VOXMILL_DEPS_CACHE, VOXMILL_DEBIAN_MIRROR, and paths for an offline build)
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundledOpenblas, nativeDeps } from './native-deps.mjs';
import { staticFfmpeg } from './static-ffmpeg.mjs';
import { glibcVersion, zigToolchain } from './zig-toolchain.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(join(root, 'package.json'));
const force = process.argv.includes('--force');

function fail(message) {
  console.error(`voxmill: native build failed: ${message}`);
  process.exit(1);
}

// Targets this script can cross-compile for, each with its CMake toolchain and what it needs installed.
const crossTargets = {
  'linux-arm64': {
    arch: 'arm64',
    toolchain: join(root, 'scripts', 'arm64', 'aarch64-linux-gnu.cmake'),
    compiler: 'aarch64-linux-gnu-g++',
    pkgConfigLibDir: '/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig',
    setup: 'bash scripts/arm64/setup.sh',
  },
};

/** The cross target asked for with VOXMILL_TARGET, or null for a build for this machine. */
function crossTarget() {
  const name = (process.env.VOXMILL_TARGET ?? '').trim().toLowerCase();
  if (name === '' || name === `${process.platform}-${process.arch}`) return null;
  const target = crossTargets[name];
  if (!target) {
    fail(`VOXMILL_TARGET must be one of ${Object.keys(crossTargets).join(', ')} (or unset); received '${name}'`);
  }
  return { name, ...target };
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
  const flags = [`--CD${known[gpu]}=ON`];
  const archs = (process.env.VOXMILL_CUDA_ARCHS ?? '').trim();
  if (archs !== '' && gpu === 'cuda') flags.push(`--CDCMAKE_CUDA_ARCHITECTURES=${archs}`);
  return flags;
}

function cpuTarget(gpu, cross) {
  // With CUDA, GGML_NATIVE also compiles for this machine's GPU alone (CMAKE_CUDA_ARCHITECTURES=native), and fails
  // where there is none. A cross build cannot know the target's CPU: portable.
  const cuda = gpu.some((flag) => flag.includes('GGML_CUDA'));
  const cpu = (process.env.VOXMILL_CPU ?? '').trim().toLowerCase() || (cuda || cross ? 'portable' : 'native');
  if (cpu === 'native' && cross) fail(`VOXMILL_CPU=native cannot cross-compile for ${cross.name}; use portable`);
  if (cpu === 'native' && cuda)
    console.warn("voxmill: VOXMILL_CPU=native with CUDA also builds for this machine's GPU only");
  if (!['native', 'portable', 'x86-64-v2'].includes(cpu)) {
    fail(`VOXMILL_CPU must be native, portable or x86-64-v2; received '${cpu}'`);
  }
  if (cpu === 'x86-64-v2' && (cross ? cross.arch : process.arch) !== 'x64') {
    fail(`VOXMILL_CPU=x86-64-v2 is an x64 level; this build is for ${cross ? cross.arch : process.arch}`);
  }
  return cpu;
}

/** The glibc version asked for with VOXMILL_GLIBC, or '' for the system's compiler. */
function glibcChoice() {
  const value = (process.env.VOXMILL_GLIBC ?? '').trim().toLowerCase();
  if (value === '' || value === 'system') return '';
  try {
    return glibcVersion(value);
  } catch (error) {
    fail(error.message);
  }
}

function blasChoice(glibc, gpu) {
  const fallback = glibc ? (gpu.length > 0 ? 'none' : 'bundled') : 'auto';
  const blas = (process.env.VOXMILL_BLAS ?? '').trim().toLowerCase() || fallback;
  if (!['auto', 'openblas', 'bundled', 'none'].includes(blas))
    fail(`VOXMILL_BLAS must be auto, openblas, bundled or none; received '${blas}'`);
  // The wheels are manylinux ones; and the addon's run path becomes $ORIGIN alone, which a GPU build's libraries
  // found through the build's run path would lose.
  if (blas === 'bundled' && process.platform !== 'linux')
    fail(`VOXMILL_BLAS=bundled is for Linux; this is ${process.platform}`);
  if (blas === 'bundled' && gpu.length > 0)
    fail('VOXMILL_BLAS=bundled is for CPU builds; with VOXMILL_GPU use auto or none');
  if (glibc && !['bundled', 'none'].includes(blas)) {
    fail(
      `VOXMILL_GLIBC=${glibc} cannot link the system's OpenBLAS (built for its own glibc): VOXMILL_BLAS=bundled or none; received ${blas}`,
    );
  }
  return blas;
}

function ffmpegChoice(glibc) {
  const ffmpeg = (process.env.VOXMILL_FFMPEG ?? '').trim().toLowerCase() || 'static';
  if (!['static', 'system'].includes(ffmpeg)) fail(`VOXMILL_FFMPEG must be static or system; received '${ffmpeg}'`);
  if (glibc && ffmpeg === 'system') {
    fail(`VOXMILL_GLIBC=${glibc} links FFmpeg in (VOXMILL_FFMPEG=static): the system's is built for its own glibc`);
  }
  return ffmpeg;
}

/** zig caches its own compiles: a compiler launcher from the environment (CI's ccache) is left out of zig builds. */
function withoutLaunchers(env) {
  const { CMAKE_C_COMPILER_LAUNCHER, CMAKE_CXX_COMPILER_LAUNCHER, ...rest } = env;
  return rest;
}

/**
 * A build folder configured with another compiler (zig's for another glibc, or the system's) is configured afresh:
 * CMake does not change the compiler of a configured folder.
 */
function forgetOtherCompiler(buildDir, compiler) {
  const cachePath = join(buildDir, 'CMakeCache.txt');
  if (!existsSync(cachePath)) return;
  const cache = readFileSync(cachePath, 'utf8');
  const cached = /^CMAKE_CXX_COMPILER:[A-Z]+=(.*)$/m.exec(cache)?.[1] ?? '';
  const zigBuilt = /^VOXMILL_ZIG:BOOL=ON$/m.test(cache);
  if (compiler ? cached === compiler : !zigBuilt) return;
  console.log(`voxmill: ${buildDir} was configured with another compiler (${cached}); configuring it afresh`);
  rmSync(cachePath);
  rmSync(join(buildDir, 'CMakeFiles'), { recursive: true, force: true });
}

function checkTools(cross, ffmpeg, glibc) {
  const cmake = spawnSync('cmake', ['--version'], { encoding: 'utf8' });
  if (cmake.status !== 0) fail('cmake not found. On Debian/Ubuntu: apt-get install cmake');
  if (cross && !glibc) {
    const compiler = spawnSync(cross.compiler, ['--version']);
    if (compiler.error || compiler.status !== 0) fail(`${cross.compiler} not found; run ${cross.setup}`);
  }
  if (ffmpeg === 'static') return;
  const pkg = spawnSync('pkg-config', ['--exists', 'libavformat', 'libavcodec', 'libswresample', 'libavutil'], {
    env: cross ? { ...process.env, PKG_CONFIG_LIBDIR: cross.pkgConfigLibDir, PKG_CONFIG_PATH: '' } : process.env,
  });
  if (pkg.error || pkg.status !== 0) {
    fail(
      cross
        ? `FFmpeg development libraries for ${cross.name} not found (VOXMILL_FFMPEG=system); run ${cross.setup} --system-ffmpeg`
        : 'FFmpeg development libraries not found (VOXMILL_FFMPEG=system): apt-get install pkg-config libavformat-dev libavcodec-dev libswresample-dev libavutil-dev',
    );
  }
}

// A release packs voxmill without an addon (scripts/release/platform-packages.mjs): `prepare` builds none then.
if (process.env.VOXMILL_PACK_WITHOUT_ADDON === '1') {
  console.log('voxmill: no native build for a package without an addon (VOXMILL_PACK_WITHOUT_ADDON=1)');
  process.exit(0);
}
const cross = crossTarget();
const buildDir = resolve(root, process.env.VOXMILL_BUILD_DIR || (cross ? `build-${cross.name}` : 'build'));
const addon = join(buildDir, 'Release', 'voxmill.node');

if (!force && existsSync(addon)) {
  console.log(`voxmill: native addon present at ${addon} (npm run build:native rebuilds it)`);
  process.exit(0);
}
// An installed package ships a prebuilt addon for its platform (scripts/prebuild.mjs): when it loads here (the FFmpeg
// libraries it links are installed), there is nothing to compile.
const prebuilt = join(root, 'prebuilds', `${process.platform}-${process.arch}`, 'voxmill.node');
if (!force && !cross && existsSync(prebuilt)) {
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
const cpu = cpuTarget(gpu, cross);
const glibc = glibcChoice();
const blas = blasChoice(glibc, gpu);
const ffmpeg = ffmpegChoice(glibc);
checkTools(cross, ffmpeg, glibc);
const arch = cross ? cross.arch : process.arch;
let zig = null;
if (glibc) {
  try {
    zig = await zigToolchain(arch, glibc);
  } catch (error) {
    fail(`zig (VOXMILL_GLIBC=${glibc}) could not be fetched: ${error.message}`);
  }
}
forgetOtherCompiler(buildDir, zig?.cxx ?? '');
let deps;
try {
  deps = await nativeDeps(arch);
} catch (error) {
  fail(`ONNX Runtime and espeak-ng could not be fetched: ${error.message}`);
}
let openblasDir = '';
if (blas === 'bundled') {
  try {
    openblasDir = await bundledOpenblas(arch);
  } catch (error) {
    fail(`OpenBLAS (VOXMILL_BLAS=bundled) could not be fetched: ${error.message}`);
  }
}
let ffmpegDir = '';
if (ffmpeg === 'static') {
  const ffmpegStarted = Date.now();
  try {
    ffmpegDir = await staticFfmpeg(arch, glibc);
  } catch (error) {
    fail(`FFmpeg could not be built (VOXMILL_FFMPEG=system uses the system's instead): ${error.message}`);
  }
  const seconds = (Date.now() - ffmpegStarted) / 1000;
  if (seconds > 1) console.log(`voxmill: FFmpeg built in ${seconds.toFixed(1)} s (${ffmpegDir})`);
}
const cmakeJs = join(dirname(require.resolve('cmake-js/package.json')), 'bin', 'cmake-js');
const nodeAddonApi = dirname(require.resolve('node-addon-api/package.json'));
const jobs = process.env.VOXMILL_BUILD_JOBS || String(availableParallelism());
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
  `--CDVOXMILL_OPENBLAS_DIR=${openblasDir}`,
  // Always passed, empty for the system's: CMake's cache would otherwise keep an earlier build's choice.
  `--CDVOXMILL_FFMPEG_DIR=${ffmpegDir}`,
  ...Object.entries(deps).map(([name, path]) => `--CD${name}=${path}`),
  ...(zig || cross ? [`--CDCMAKE_TOOLCHAIN_FILE=${zig ? zig.cmakeToolchain : cross.toolchain}`] : []),
  ...gpu,
  ...extra,
];
const started = Date.now();
for (const step of [
  ['configure', ...defines],
  ['build', '--parallel', jobs],
]) {
  const where = ['--directory', root, '--out', buildDir, ...(cross ? ['--arch', cross.arch] : [])];
  const result = spawnSync(process.execPath, [cmakeJs, step[0], ...where, ...step.slice(1)], {
    stdio: 'inherit',
    cwd: root,
    env: zig ? withoutLaunchers(process.env) : process.env,
  });
  if (result.status !== 0) fail(`cmake-js ${step[0]} exited with ${result.status ?? result.signal}`);
}
console.log(
  `voxmill: native addon ${addon} (${cross ? `${cross.name}, ` : ''}${zig ? `zig for glibc ${glibc}, ` : ''}${cpu} CPU code, VOXMILL_BLAS=${blas}, ${ffmpeg} FFmpeg) built in ${((Date.now() - started) / 1000).toFixed(1)} s`,
);
