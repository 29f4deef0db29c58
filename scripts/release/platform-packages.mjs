#!/usr/bin/env node
// Assembles the packages a release publishes: one per platform (@voxmill/linux-x64-gnu, @voxmill/linux-arm64-gnu),
// each holding a built addon (linux-x64: two, voxmill.node and voxmill-x86-64-v2.node: CPU_VARIANTS), ONNX Runtime's
// library, espeak-ng's data and the licence notices of everything inside, with os, cpu and libc fields so npm
// installs only the one that matches; and voxmill itself, which lists them as optional dependencies at its own exact
// version and carries no addon of its own. darwin-arm64, darwin-x64 and win32-x64 (@voxmill/darwin-arm64, ...) are
// known targets whose addons are recognised, but they are refused until they can be assembled: TARGETS' `pending`
// says why (docs/macos-windows.md).
//
//   node scripts/release/platform-packages.mjs [--target <target>=<build folder>/Release]...
//          [--variant <target>:<cpu>=<build folder>/Release]... [--out dist-packages] [--allow-native]
//          [--allow-system-libraries] [--allow-newer-glibc] [--allow-single-variant]
//   node scripts/release/platform-packages.mjs --voxmill-for <tarball or folder>... [--out dist-packages]
//   node scripts/release/platform-packages.mjs --check <tarball or folder>... [--require <target>]...
//
// Default targets: this machine's (linux-x64 here) from build/Release and linux-arm64 from build-linux-arm64/Release,
// each where present; no default variants. A release build is made with VOXMILL_CPU=portable VOXMILL_GLIBC=2.28 (and
// VOXMILL_TARGET=linux-arm64 for arm64); FFmpeg is linked in, and OpenBLAS bundled (VOXMILL_BLAS=bundled: scipy-openblas32's
// library, its libgfortran and libquadmath beside the addon, packed with it), by default. linux-x64's package
// also carries a second build, made with VOXMILL_CPU=x86-64-v2 into another build folder and given as
// --variant linux-x64:x86-64-v2=build-release-x64-v2/Release: packed as voxmill-x86-64-v2.node beside voxmill.node,
// for x86-64 CPUs without AVX2 (src/platform-package.ts picks one by the CPU's flags). What is read off the binaries
// (machine, linked libraries, GLIBC_/GLIBCXX_ versions) is scripts/release/binary-inspect.mjs's. Refused, naming the
// reason:
//   - an addon whose binary format or machine is not the target's: ELF e_machine, Mach-O cputype, PE Machine (an x64
//     build offered as arm64, a Linux build offered as darwin). A universal (fat) Mach-O file is refused too: a
//     package holds one architecture, since npm installs one package per cpu;
//   - one built for this machine's CPU (VOXMILL_CPU=native, or -march=native anywhere in its CMake cache): it would
//     fail with SIGILL on other CPUs; --allow-native packs it anyway, for a test on this machine only;
//   - a linux-x64 addon without its x86-64-v2 variant: alone it would fail with SIGILL on x86-64 CPUs without AVX2;
//     --allow-single-variant (or --allow-native) packs it anyway. A variant whose CMake cache does not say its
//     VOXMILL_CPU (VOXMILL_CPU:STRING=x86-64-v2), or that a target does not list in CPU_VARIANTS, or given without its
//     target's --target, is refused too; a variant gets every check the addon gets (machine, -march=native,
//     libraries, glibc and libstdc++ versions), and --allow-* waive them for it as for the addon;
//   - one that links a library a bare system lacks (Linux: the system's FFmpeg, OpenBLAS, CUDA; macOS: anything
//     outside /usr/lib and /System, such as Homebrew's FFmpeg; Windows: FFmpeg, OpenBLAS or CUDA DLLs);
//     --allow-system-libraries packs it anyway, for a test on this machine only;
//   - a Linux addon, or the ONNX Runtime library beside it, that needs a GLIBC_ symbol version above GLIBC_CEILING
//     (2.28: the onnxruntime wheels' manylinux_2_28, Debian 10, RHEL 8), or a GLIBCXX_ (libstdc++) one above
//     GLIBCXX_CEILING (3.4.25: gcc 8's, the same systems'; an addon built with zig's clang needs none, one built with
//     gcc on Debian 12 needs 3.4.29, ONNX Runtime's library 3.4.22): it would not load on older systems;
//     --allow-newer-glibc packs it anyway, for a test on this machine only. CXXABI_ versions are not checked;
//   - an ONNX Runtime library beside the addon of another format or machine than the addon's;
//   - a target that cannot be assembled yet (darwin, win32);
//   - versions that disagree (each platform package is voxmill's version).
// The highest GLIBC_ and GLIBCXX_ versions each Linux addon needs are printed and recorded in its package's
// voxmill.json, with its VOXMILL_CPU, the libraries it links and its CPU variants (each one's file, VOXMILL_CPU,
// versions and libraries). An addon built with zig's clang (VOXMILL_ZIG:BOOL=ON in its CMake cache) has LLVM's
// libc++, libc++abi and libunwind and zig's compiler_rt linked in: their notices (LICENSES/libcxx.txt, libcxxabi.txt,
// libunwind.txt, and zig.txt, zig's licence, compiler_rt's) are read from the pinned zig wheel of this machine
// (PINNED.zig), and the package is refused when none is pinned for it.
// Writes <out>/<name>-<version>.tgz for each (npm pack) and prints their paths, one a line, last.
//
// --voxmill-for packs voxmill alone (as above, the same code), listing the platform packages in the tarballs given (a
// folder is searched for .tgz files: a CI job's downloaded artifacts) and nothing else: the one voxmill a release
// publishes beside them, where each build leg packed a voxmill listing only its own. Each is read for its
// package.json and voxmill.json: it must be a known target's package (voxmill.json's target, or its os/cpu/libc),
// at the checkout's version, given once; voxmill's own tarball among them is refused (delete the legs' first).
// Writes <out>/voxmill-<version>.tgz, removing nothing else there, and prints its path.
//
// --check reads the package.json inside each tarball given (folders searched as above) and fails unless they are all
// at one version, every voxmill among them lists at exactly that version the platform packages among them, no more
// and no fewer, the voxmill manifests among them are the same (the difference is named), each platform package's
// os/cpu/libc fields are its target's, and each --require'd target has a package among them.
import { spawnSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { gunzipSync } from 'node:zlib';
import { fetched, OPENBLAS_LICENCE_MEMBER, PINNED } from '../native-deps.mjs';
import {
  besideLibraries,
  binaryMachine,
  describeMachine,
  foreignLibraries,
  GLIBC_CEILING,
  glibcAboveCeiling,
  glibcxxAboveCeiling,
  libcNeeds,
  neededLibraries,
} from './binary-inspect.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

// The file beside the addon that src/native.ts (nativeAssets) opens as ONNX Runtime, on every OS today: dlopen opens
// a Mach-O dylib under this name as well. A Windows port would rename it (onnxruntime.dll) in src/native.ts,
// CMakeLists.txt and here together.
const ORT_FILE = 'libonnxruntime.so.1';
// The bundled OpenBLAS (VOXMILL_BLAS=bundled, a release's default): scipy-openblas32's library, with its libgfortran
// and libquadmath, beside the addon (besideLibraries finds them).
const BUNDLED_OPENBLAS = 'libscipy_openblas.so';
const DARWIN_PENDING =
  'scripts/native-deps.mjs pins ONNX Runtime only as Linux (manylinux) wheels, so neither the library a release ' +
  'ships beside the addon nor its licence notices exist for macOS';

/**
 * What each target is: npm's os/cpu/libc fields (libc only on Linux), the package name's suffix, the binary format
 * and machine its addon must carry (ELF e_machine, Mach-O cputype, PE Machine), the architecture of the pinned ONNX
 * Runtime library (PINNED.ortLibrary), and, for a target that cannot be assembled yet, why.
 */
export const TARGETS = {
  'linux-x64': { os: 'linux', cpu: 'x64', libc: 'glibc', suffix: 'gnu', format: 'elf', machine: 0x3e, ort: 'x64' },
  'linux-arm64': {
    os: 'linux',
    cpu: 'arm64',
    libc: 'glibc',
    suffix: 'gnu',
    format: 'elf',
    machine: 0xb7,
    ort: 'arm64',
  },
  'darwin-arm64': {
    os: 'darwin',
    cpu: 'arm64',
    libc: null,
    suffix: null,
    format: 'macho',
    machine: 0x0100000c,
    ort: null,
    pending: `${DARWIN_PENDING} (onnxruntime-node 1.30.0 carries a darwin-arm64 dylib, which is not pinned)`,
  },
  'darwin-x64': {
    os: 'darwin',
    cpu: 'x64',
    libc: null,
    suffix: null,
    format: 'macho',
    machine: 0x01000007,
    ort: null,
    pending: `${DARWIN_PENDING} (onnxruntime-node 1.30.0 carries no darwin-x64 library at all)`,
  },
  'win32-x64': {
    os: 'win32',
    cpu: 'x64',
    libc: null,
    suffix: null,
    format: 'pe',
    machine: 0x8664,
    ort: null,
    pending:
      'the addon does not build on Windows yet (native/onnx_core.cc opens ONNX Runtime with dlopen, ' +
      'native/regular_file.h uses POSIX open/fstat/fdopen), and scripts/native-deps.mjs pins no Windows ONNX Runtime',
  },
};

/** The npm package of a target: `@voxmill/<target>[-<suffix>]`, as src/platform-package.ts names it. */
export function packageName(target) {
  const { suffix } = TARGETS[target];
  return `@voxmill/${target}${suffix ? `-${suffix}` : ''}`;
}

/**
 * The builds of the addon besides its voxmill.node (VOXMILL_CPU=portable) that a target's package must carry, by
 * their VOXMILL_CPU, each packed as voxmill-<cpu>.node (variantFile); src/platform-package.ts picks the one this CPU
 * runs by its flags. linux-x64: x86-64-v2 (SSE4.2, no AVX), for x86-64 CPUs without AVX2, where the portable build's
 * AVX2/FMA/F16C/BMI2 code would stop the process with SIGILL.
 */
export const CPU_VARIANTS = { 'linux-x64': ['x86-64-v2'] };

// The CPUs each variant is for, for messages.
const VARIANT_CPUS = {
  'x86-64-v2': 'x86-64 CPUs without AVX2 (its VOXMILL_CPU=portable code uses AVX2, FMA, F16C and BMI2)',
};

/** The file a CPU variant of the addon is in a package: `voxmill-<cpu>.node`, beside voxmill.node. */
export function variantFile(cpu) {
  return `voxmill-${cpu}.node`;
}

/** The CMake cache of the build folder above `releaseDir` (its Release/): its path, and its text ('' when none). */
function buildCache(releaseDir) {
  const path = join(dirname(releaseDir), 'CMakeCache.txt');
  return { path, text: existsSync(path) ? readFileSync(path, 'utf8') : '' };
}

/**
 * Whether the addon in `releaseDir` was built with zig's clang (VOXMILL_ZIG), which links libc++, libc++abi, libunwind
 * and zig's compiler_rt in.
 */
export function zigBuilt(releaseDir) {
  return /^VOXMILL_ZIG:BOOL=ON$/m.test(buildCache(releaseDir).text);
}

/**
 * Why the addon in `releaseDir`, which must have been built with VOXMILL_CPU=`cpu`, cannot go into `target`'s package
 * (its format and machine, its CPU code, the libraries it links); null when it can. Every addon a package carries is
 * checked so, each CPU variant too. The glibc ceilings are libcRefusal's.
 */
function addonRefusal(target, releaseDir, cpu, { allowNative, allowSystemLibraries }) {
  const spec = TARGETS[target];
  const addon = join(releaseDir, 'voxmill.node');
  if (!existsSync(addon)) return `${addon} does not exist`;
  const bytes = readFileSync(addon);
  const found = binaryMachine(bytes);
  if (typeof found === 'string') return `${addon} is ${found}, not an addon for ${target}`;
  if (found.format !== spec.format || found.machine !== spec.machine) {
    return `${addon} is built for another machine (${describeMachine(found)}), not ${target} (${describeMachine(spec)})`;
  }
  const { path: cachePath, text: cache } = buildCache(releaseDir);
  if (!allowNative) {
    if (!new RegExp(`^VOXMILL_CPU:\\w+=${cpu.replace(/[^\w]/g, '\\$&')}$`, 'm').test(cache)) {
      const article = /^[aeiox]/.test(cpu) ? 'an' : 'a';
      return `${addon} is not ${article} ${cpu} build (VOXMILL_CPU in ${cachePath}): build it with VOXMILL_CPU=${cpu}`;
    }
    if (/-march=native|-mcpu=native|-mtune=native/.test(cache)) {
      return `${addon}'s build asks for -march=native (${cachePath}): it would run only on CPUs like the builder's`;
    }
  }
  // A library beside the addon (the bundled OpenBLAS) ships with it; the others must be on every system.
  const beside = besideLibraries(addon);
  if (!allowSystemLibraries) {
    const system = foreignLibraries(
      found.format,
      neededLibraries(addon, bytes).filter((name) => !beside.includes(name)),
    );
    if (system.length > 0) {
      return (
        `${addon} links ${system.join(', ')}, which a bare system lacks: build it with VOXMILL_BLAS=bundled or none ` +
        '(FFmpeg static)'
      );
    }
  }
  for (const name of beside) {
    const library = binaryMachine(readFileSync(join(releaseDir, name)));
    if (typeof library === 'string' || library.format !== found.format || library.machine !== found.machine) {
      const what = typeof library === 'string' ? library : `built for ${describeMachine(library)}`;
      return `${join(releaseDir, name)}, which the addon links, is ${what}: rebuild the addon`;
    }
  }
  return null;
}

/**
 * Why a CPU variant's libraries beside it (its bundled OpenBLAS) cannot share the package's folder with the addon's:
 * one the addon's build does not have, or a different file under the same name; null when they are the same.
 */
function besideMismatch(releaseDir, variantDir) {
  for (const name of besideLibraries(join(variantDir, 'voxmill.node'))) {
    const ours = join(releaseDir, name);
    if (!existsSync(ours) || !readFileSync(ours).equals(readFileSync(join(variantDir, name)))) {
      return `it links ${name}, which ${releaseDir} has ${existsSync(ours) ? 'in another build' : 'not'}: build both with the same VOXMILL_BLAS`;
    }
  }
  return null;
}

/** Why a Linux binary needs too new a glibc (GLIBC_) or libstdc++ (GLIBCXX_) for a release; null when it does not. */
function libcRefusal(file) {
  const { glibc, glibcxx } = libcNeeds(file);
  const aboveGlibc = glibcAboveCeiling(glibc);
  if (aboveGlibc) {
    return (
      `${file} ${aboveGlibc}: it would not load where glibc is older (Debian 10, RHEL 8); build it where glibc is ` +
      `${GLIBC_CEILING} (a manylinux_2_28 container), or pass --allow-newer-glibc to pack it for a test on this machine only`
    );
  }
  const aboveGlibcxx = glibcxxAboveCeiling(glibcxx);
  if (aboveGlibcxx) {
    return (
      `${file} ${aboveGlibcxx}: it would not load where libstdc++ is older (gcc 8's: Debian 10, RHEL 8); build ` +
      `it with zig's clang (VOXMILL_GLIBC=${GLIBC_CEILING}, which links libc++ in and needs no libstdc++) or with ` +
      'gcc 8, or pass --allow-newer-glibc to pack it for a test on this machine only'
    );
  }
  return null;
}

/**
 * Why the addon in `releaseDir` (a build folder's Release/) cannot be packed for `target`, with `variants` (its CPU
 * variants' Release/ folders, by VOXMILL_CPU); null when it can.
 */
export function refusal(
  target,
  releaseDir,
  {
    allowNative = false,
    allowSystemLibraries = false,
    allowNewerGlibc = false,
    allowSingleVariant = false,
    variants = {},
  } = {},
) {
  const spec = TARGETS[target];
  if (!spec) return `unknown target '${target}' (one of ${Object.keys(TARGETS).join(', ')})`;
  const checks = { allowNative, allowSystemLibraries };
  const addonWhy = addonRefusal(target, releaseDir, 'portable', checks);
  if (addonWhy) return addonWhy;
  const addon = join(releaseDir, 'voxmill.node');
  const found = binaryMachine(readFileSync(addon));
  const ort = join(releaseDir, ORT_FILE);
  for (const beside of [ort, join(releaseDir, 'espeak-ng-data', 'phontab')]) {
    if (!existsSync(beside)) return `${beside} is missing: rebuild the addon`;
  }
  // The build copies whatever VOXMILL_ORT_LIBRARY named: off Linux, that is the Linux library unless overridden.
  const ortFound = binaryMachine(readFileSync(ort));
  if (typeof ortFound === 'string' || ortFound.format !== found.format || ortFound.machine !== found.machine) {
    const what = typeof ortFound === 'string' ? ortFound : `built for ${describeMachine(ortFound)}`;
    const fix =
      spec.os === 'linux'
        ? 'rebuild the addon'
        : 'scripts/native-deps.mjs fetches Linux libraries only (docs/macos-windows.md)';
    return `${ort} is ${what}, not a library for the addon's ${describeMachine(found)}: ${fix}`;
  }
  const checkLibc = spec.libc === 'glibc' && !allowNewerGlibc;
  const beside = besideLibraries(addon).map((name) => join(releaseDir, name));
  for (const file of checkLibc ? [addon, ort, ...beside] : []) {
    const why = libcRefusal(file);
    if (why) return why;
  }
  const known = CPU_VARIANTS[target] ?? [];
  for (const [cpu, dir] of Object.entries(variants)) {
    if (!known.includes(cpu)) {
      return (
        `--variant ${target}:${cpu}: ${target}'s package has no ${cpu} build (its variants: ` +
        `${known.join(', ') || 'none'}), and src/platform-package.ts would never load one`
      );
    }
    const why =
      addonRefusal(target, dir, cpu, checks) ??
      (checkLibc ? libcRefusal(join(dir, 'voxmill.node')) : null) ??
      besideMismatch(releaseDir, dir);
    if (why) return `the ${cpu} variant: ${why}`;
  }
  const missing = known.filter((cpu) => !variants[cpu]);
  if (missing.length > 0 && !allowNative && !allowSingleVariant) {
    const cpu = missing[0];
    return (
      `${addon} alone would crash with SIGILL on ${VARIANT_CPUS[cpu]}: build the addon again with VOXMILL_CPU=${cpu} ` +
      `into another build folder and pass --variant ${target}:${cpu}=<dir>/Release, or pass --allow-single-variant ` +
      'to pack it without one'
    );
  }
  if (spec.pending) return `${target} cannot be assembled yet: ${spec.pending}`;
  return null;
}

/**
 * The text of `member` in a gzipped tarball (npm pack's: ustar, with pax or GNU headers for long names), or
 * undefined when it has none. Read here, not by a tar program: Windows runners have two that read paths differently.
 */
export function tarballMember(tarball, member) {
  const tar = gunzipSync(readFileSync(tarball));
  let longName;
  for (let at = 0; at + 512 <= tar.length; ) {
    const header = tar.subarray(at, at + 512);
    if (header.every((byte) => byte === 0)) break;
    const field = (from, length) => {
      const text = header.toString('utf8', from, from + length);
      const end = text.indexOf('\0');
      return end < 0 ? text : text.slice(0, end);
    };
    const size = Number.parseInt(field(124, 12).trim() || '0', 8);
    const type = field(156, 1) || '0';
    const prefix = header.toString('latin1', 257, 263) === 'ustar\0' ? field(345, 155) : '';
    const name = longName ?? (prefix ? `${prefix}/${field(0, 100)}` : field(0, 100));
    const body = tar.subarray(at + 512, at + 512 + size);
    longName = undefined;
    if (type === 'x') longName = /(?:^|\n)\d+ path=([^\n]*)\n/.exec(body.toString('utf8'))?.[1];
    else if (type === 'L') longName = body.toString('utf8').replace(/\0.*$/s, '');
    else if (type === '0' && name === member) return body.toString('utf8');
    at += 512 + Math.ceil(size / 512) * 512;
  }
  return undefined;
}

/** A JSON value as text with its objects' keys sorted, so that two manifests compare by content, not key order. */
function canonical(value) {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    const keys = Object.keys(value).sort();
    return `{${keys.map((key) => `${JSON.stringify(key)}:${canonical(value[key])}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'undefined';
}

/** A manifest field's value for a message: absent, or its JSON (cut short). */
function shown(value) {
  if (value === undefined) return 'absent';
  const text = JSON.stringify(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

/**
 * How two manifests differ, field by field (an object field, such as optionalDependencies, entry by entry), as
 * `field: <a's> vs <b's>` lines; empty when they are the same.
 */
export function manifestDifferences(a, b) {
  const differences = [];
  const plain = (value) => value !== null && typeof value === 'object' && !Array.isArray(value);
  for (const field of [...new Set([...Object.keys(a), ...Object.keys(b)])].sort()) {
    if (canonical(a[field]) === canonical(b[field])) continue;
    if (plain(a[field]) && plain(b[field])) {
      for (const key of [...new Set([...Object.keys(a[field]), ...Object.keys(b[field])])].sort()) {
        if (canonical(a[field][key]) !== canonical(b[field][key])) {
          differences.push(`${field}[${JSON.stringify(key)}]: ${shown(a[field][key])} vs ${shown(b[field][key])}`);
        }
      }
    } else differences.push(`${field}: ${shown(a[field])} vs ${shown(b[field])}`);
  }
  return differences;
}

/**
 * What disagrees among a release's package manifests (voxmill's and the platform packages'), `sources` naming where
 * each was read (its tarball) for the messages: versions; voxmill's optional dependencies on the platform packages
 * (each at exactly its version, and the set of them exactly the platform packages among the manifests, neither more
 * nor fewer); two voxmill manifests that differ; each platform package's os/cpu/libc. An empty list when they agree.
 */
export function releaseDisagreements(manifests, sources = []) {
  const problems = [];
  const label = (i) => `${manifests[i].name}@${manifests[i].version}${sources[i] ? ` (${sources[i]})` : ''}`;
  const versions = [...new Set(manifests.map((manifest) => manifest.version))];
  if (!manifests.some((manifest) => manifest.name === 'voxmill')) problems.push('no voxmill package among them');
  if (versions.length > 1) {
    problems.push(
      `versions disagree: ${manifests.map((manifest) => `${manifest.name}@${manifest.version}`).join(', ')}`,
    );
  }
  const platformPackages = [
    ...new Set(manifests.map((manifest) => manifest.name).filter((name) => name?.startsWith('@voxmill/'))),
  ].sort();
  const voxmills = manifests.flatMap((manifest, i) => (manifest.name === 'voxmill' ? [i] : []));
  for (const i of voxmills) {
    const manifest = manifests[i];
    const listed = Object.entries(manifest.optionalDependencies ?? {}).filter(([name]) => name.startsWith('@voxmill/'));
    for (const [name, range] of listed) {
      if (range !== manifest.version) problems.push(`${label(i)} lists ${name} at ${range}`);
    }
    const names = new Set(listed.map(([name]) => name));
    const extra = [...names].filter((name) => !platformPackages.includes(name)).sort();
    const missing = platformPackages.filter((name) => !names.has(name));
    if (extra.length > 0) {
      problems.push(`${label(i)} lists ${extra.join(', ')}, which no package among them is`);
    }
    if (missing.length > 0) {
      problems.push(
        `${label(i)} does not list ${missing.join(', ')}, which ${missing.length > 1 ? 'are' : 'is'} among them`,
      );
    }
  }
  for (const i of voxmills.slice(1)) {
    const first = voxmills[0];
    const differences = manifestDifferences(manifests[first], manifests[i]);
    if (differences.length > 0) {
      const which = sources[first] && sources[i] ? `${sources[first]} vs ${sources[i]}` : `#${first + 1} vs #${i + 1}`;
      problems.push(`the voxmill manifests differ (${which}): ${differences.join('; ')}`);
    }
  }
  for (const manifest of manifests.filter((each) => each.name?.startsWith('@voxmill/'))) {
    const target = Object.keys(TARGETS).find((each) => packageName(each) === manifest.name);
    if (!target) {
      problems.push(`${manifest.name} is no known target's package`);
      continue;
    }
    for (const problem of fieldDisagreements(manifest, target)) problems.push(problem);
  }
  return problems;
}

/** Where a platform package's npm os/cpu/libc fields are not `target`'s (what npm installs it by). */
function fieldDisagreements(manifest, target) {
  const spec = TARGETS[target];
  const expected = { os: [spec.os], cpu: [spec.cpu], libc: spec.libc ? [spec.libc] : undefined };
  return Object.entries(expected)
    .filter(([field, value]) => JSON.stringify(manifest[field]) !== JSON.stringify(value))
    .map(
      ([field, value]) =>
        `${manifest.name}'s ${field} is ${JSON.stringify(manifest[field])}, not ${JSON.stringify(value)}`,
    );
}

/** The .tgz files among `paths`, folders searched through. */
function tarballsIn(paths) {
  return paths.flatMap((path) => {
    if (!statSync(path).isDirectory()) return [path];
    return readdirSync(path, { recursive: true, encoding: 'utf8' })
      .filter((name) => name.endsWith('.tgz'))
      .map((name) => join(path, name))
      .sort();
  });
}

/** A tarball's name for messages: its path from the working folder. */
function sourceOf(tarball) {
  const path = relative(process.cwd(), tarball);
  return path && !path.startsWith('..') ? path : tarball;
}

/** The JSON of `member` in a tarball (package/package.json, package/voxmill.json); undefined when it has none. */
function tarballJson(tarball, member) {
  const text = tarballMember(tarball, member);
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new Error(`${tarball}'s ${member} is not JSON: ${error.message}`);
  }
}

/** Each tarball's package.json. */
function manifestsOf(tarballs) {
  return tarballs.map((tarball) => {
    const manifest = tarballJson(tarball, 'package/package.json');
    if (manifest === undefined) throw new Error(`${tarball} has no package/package.json`);
    return manifest;
  });
}

/**
 * --check: each tarball's manifest, then what disagrees among them, and which of the `required` targets has no
 * package among them (thrown). Returns the manifests.
 */
export function checkRelease(paths, { required = [] } = {}) {
  const tarballs = tarballsIn(paths);
  if (tarballs.length === 0) throw new Error(`no .tgz files in ${paths.join(', ') || '(nothing given)'}`);
  const manifests = manifestsOf(tarballs);
  const problems = releaseDisagreements(manifests, tarballs.map(sourceOf));
  for (const target of required) {
    if (!TARGETS[target]) problems.push(`--require ${target}: not a target (${Object.keys(TARGETS).join(', ')})`);
    else if (!manifests.some((manifest) => manifest.name === packageName(target))) {
      problems.push(`no ${packageName(target)} among them (--require ${target})`);
    }
  }
  if (problems.length > 0) throw new Error(`the release's packages disagree:\n  ${problems.join('\n  ')}`);
  return manifests;
}

/**
 * --voxmill-for: the optional dependencies voxmill at `version` lists for these platform packages, each given as
 * { source, manifest, record } (the tarball, its package.json, its voxmill.json or undefined): { name: version },
 * by name. Each must be a platform package at exactly `version`, of a known target (voxmill.json's `target`, or the
 * target whose os/cpu/libc fields its package.json carries), named as that target's package and carrying its
 * os/cpu/libc, and given once. Throws, naming every problem.
 */
export function platformListing(packages, version) {
  if (packages.length === 0) throw new Error('no platform packages given to list');
  const problems = [];
  const given = new Map();
  for (const { source, manifest, record } of packages) {
    const { name } = manifest;
    const what = `${name}@${manifest.version} (${source})`;
    if (!name?.startsWith('@voxmill/')) {
      problems.push(
        name === 'voxmill'
          ? `${source} is voxmill's own tarball, not a platform package: leave it out (each leg's lists its own only)`
          : `${what} is not a platform package (@voxmill/*)`,
      );
      continue;
    }
    const byFields = Object.keys(TARGETS).find((target) => fieldDisagreements(manifest, target).length === 0);
    const target = record?.target ?? byFields;
    if (!target || !TARGETS[target]) {
      problems.push(
        record?.target
          ? `${what}: its voxmill.json names the target '${record.target}', which is not one (${Object.keys(TARGETS).join(', ')})`
          : `${what} has no voxmill.json and its os/cpu/libc (${shown(manifest.os)}, ${shown(manifest.cpu)}, ${shown(manifest.libc)}) are no target's`,
      );
      continue;
    }
    if (name !== packageName(target)) problems.push(`${what} is ${target}'s package, which is ${packageName(target)}`);
    for (const problem of fieldDisagreements(manifest, target)) problems.push(`${problem} (${source})`);
    if (manifest.version !== version) problems.push(`${what} is not at voxmill's version ${version}`);
    if (given.has(name)) problems.push(`${name} is given twice: ${given.get(name)} and ${source}`);
    else given.set(name, source);
  }
  if (problems.length > 0) {
    throw new Error(`cannot list these platform packages in voxmill@${version}:\n  ${problems.join('\n  ')}`);
  }
  return Object.fromEntries([...given.keys()].sort().map((name) => [name, version]));
}

/**
 * The manifest voxmill publishes: the checkout's packed package.json `manifest` with `optionalDependencies` (the
 * platform packages, at its exact version) added, and without the scripts that build a checkout (prepare, prepack).
 * Thrown: an optional dependency on a platform package at another version, or an install script.
 */
export function publishedManifest(manifest, optionalDependencies) {
  const published = structuredClone(manifest);
  published.optionalDependencies = { ...published.optionalDependencies, ...optionalDependencies };
  for (const [name, range] of Object.entries(published.optionalDependencies)) {
    if (name.startsWith('@voxmill/') && range !== published.version) {
      throw new Error(`${name} is at ${range}, not ${published.version}`);
    }
  }
  if (published.scripts?.install || published.scripts?.postinstall || published.scripts?.preinstall) {
    throw new Error('voxmill must publish no install script');
  }
  // Its scripts build a checkout (prepare, prepack): an installed package runs none of them.
  if (published.scripts) {
    delete published.scripts.prepare;
    delete published.scripts.prepack;
  }
  return published;
}

/** One member of an archive (tar, tar.gz, tar.xz, zip: a wheel), as text. */
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

/**
 * The pinned zig wheel of the machine `arch` (this one's: zig runs where the addon is built, for every target), whose
 * lib/ holds the licence notices of the libc++, libc++abi and libunwind it links into an addon (and whose LICENSE is
 * its compiler_rt's); thrown when none is pinned.
 */
export function zigWheel(arch = process.arch) {
  const wheel = PINNED.zig?.[arch];
  if (!wheel?.file) throw new Error(zigWheelMissing(arch));
  return wheel;
}

/** Why a zig-built addon's libc++ notices cannot be read on the machine `arch`: no zig wheel is pinned for it. */
function zigWheelMissing(arch) {
  const pinned = Object.keys(PINNED.zig ?? {}).filter((key) => key !== 'version');
  return (
    `the addon was built with zig's clang (VOXMILL_ZIG:BOOL=ON in its CMake cache), which links LLVM's libc++, ` +
    `libc++abi and libunwind and zig's compiler_rt into it, but scripts/native-deps.mjs pins no zig for this machine (${arch}; PINNED.zig has ` +
    `${pinned.join(', ') || 'none'}) to read their licence notices from: assemble the packages on one of those`
  );
}

/**
 * The licence notices of everything a platform package holds, as files for its LICENSES/ folder; with `zig` (an addon
 * built with zig's clang), those of what zig links into it too: LLVM's libc++, libc++abi and libunwind (libcxx.txt,
 * libcxxabi.txt, libunwind.txt) and zig's compiler_rt (zig.txt: zig's own licence).
 */
async function licenceNotices(ortArch, { zig = false, openblas = false } = {}) {
  const whisperPackage = createRequire(join(root, 'package.json')).resolve('whisper-cpp-src/package.json');
  const whisper = join(dirname(whisperPackage), 'cpp', 'whisper.cpp', 'LICENSE');
  const zigNotices = {};
  if (zig) {
    const wheel = await fetched(zigWheel());
    zigNotices['libcxx.txt'] = memberOf(wheel, 'ziglang/lib/libcxx/LICENSE.TXT');
    zigNotices['libcxxabi.txt'] = memberOf(wheel, 'ziglang/lib/libcxxabi/LICENSE.TXT');
    zigNotices['libunwind.txt'] = memberOf(wheel, 'ziglang/lib/libunwind/LICENSE.TXT');
    // compiler_rt, zig's own (lib/compiler_rt/), is under zig's licence.
    zigNotices['zig.txt'] = memberOf(wheel, 'ziglang/LICENSE');
  }
  const openblasNotices = {};
  if (openblas) {
    // OpenBLAS's, LAPACK's, libgfortran's (GPL-3.0 with the GCC runtime library exception) and libquadmath's
    // (LGPL-2.1+) notices, as the wheel they come from carries them.
    openblasNotices['openblas.txt'] = memberOf(await fetched(PINNED.openblas[ortArch]), OPENBLAS_LICENCE_MEMBER);
  }
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
    ...zigNotices,
    ...openblasNotices,
  };
}

/**
 * What a target's package holds of its build folders: each file and folder copied in, as [from, its name in the
 * package] (voxmill.node, each CPU variant's voxmill.node as voxmill-<cpu>.node, ONNX Runtime's library, espeak-ng's
 * data), and its package.json `files` list: those, with the LICENSES/ and voxmill.json written beside them.
 */
export function packageContents(releaseDir, variants = {}) {
  const copies = [
    [join(releaseDir, 'voxmill.node'), 'voxmill.node'],
    ...Object.keys(variants)
      .sort()
      .map((cpu) => [join(variants[cpu], 'voxmill.node'), variantFile(cpu)]),
    ...besideLibraries(join(releaseDir, 'voxmill.node')).map((name) => [join(releaseDir, name), name]),
    [join(releaseDir, ORT_FILE), ORT_FILE],
    [join(releaseDir, 'espeak-ng-data'), 'espeak-ng-data'],
  ];
  return { copies, files: [...copies.map(([, name]) => name), 'LICENSES', 'voxmill.json'] };
}

/** What voxmill.json records of an addon: its VOXMILL_CPU, the highest glibc and libstdc++ versions, the libraries. */
function addonRecord(releaseDir, file, spec) {
  const cpu = /^VOXMILL_CPU:\w+=(.*)$/m.exec(buildCache(releaseDir).text)?.[1];
  const needs = spec.libc === 'glibc' ? libcNeeds(file) : undefined;
  return {
    cpu,
    glibc: needs?.glibc.highest,
    glibcxx: needs?.glibcxx.highest,
    libraries: neededLibraries(file),
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

/**
 * voxmill itself, packed into `out`: the checkout's pack (its scripts run: dist/ compiled, no prebuilds/), repacked
 * with publishedManifest's package.json listing `optionalDependencies` (the platform packages at its exact version)
 * and no addon. Returns the tarball's path, <out>/voxmill-<version>.tgz.
 */
function packVoxmill(optionalDependencies, out) {
  const staging = mkdtempSync(join(tmpdir(), 'voxmill-release-'));
  try {
    // The checkout's own pack runs its scripts (dist/ compiled, no prebuilds/); the repack below runs none.
    const packed = npmPack(root, staging, { env: { ...process.env, VOXMILL_PACK_WITHOUT_ADDON: '1' }, scripts: true });
    const unpacked = join(staging, 'unpacked');
    mkdirSync(unpacked);
    // Relative paths, in the staging folder: GNU tar (Git's, on a Windows runner) reads "C:\..." as a remote host.
    const untar = spawnSync('tar', ['xzf', basename(packed), '-C', 'unpacked'], { cwd: staging });
    if (untar.status !== 0) throw new Error(`cannot unpack ${packed}`);
    const packageJson = join(unpacked, 'package', 'package.json');
    const published = publishedManifest(JSON.parse(readFileSync(packageJson, 'utf8')), optionalDependencies);
    writeFileSync(packageJson, `${JSON.stringify(published, null, 2)}\n`);
    rmSync(join(unpacked, 'package', 'prebuilds'), { recursive: true, force: true });
    return npmPack(join(unpacked, 'package'), out);
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

/**
 * --voxmill-for: voxmill alone, packed into `out` (created if need be; nothing in it is removed), listing the
 * platform packages in the tarballs of `paths` (folders searched through) at its exact version: platformListing reads
 * their package.json and voxmill.json, and refuses any not at the checkout's version. Returns the tarball's path.
 */
export function voxmillFor(paths, { out }) {
  const tarballs = tarballsIn(paths);
  if (tarballs.length === 0) throw new Error(`no .tgz files in ${paths.join(', ') || '(nothing given)'}`);
  const packages = tarballs.map((tarball) => ({
    source: sourceOf(tarball),
    manifest: manifestsOf([tarball])[0],
    record: tarballJson(tarball, 'package/voxmill.json'),
  }));
  const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  const optionalDependencies = platformListing(packages, version);
  mkdirSync(out, { recursive: true });
  return packVoxmill(optionalDependencies, out);
}

/**
 * Builds every package: one per target of `targets` (its build folder's Release/), with the CPU variants `variants`
 * gives it (by target, then VOXMILL_CPU: their Release/ folders); returns the paths of the tarballs.
 */
export async function assemble({
  targets,
  variants = {},
  out,
  allowNative = false,
  allowSystemLibraries = false,
  allowNewerGlibc = false,
  allowSingleVariant = false,
}) {
  if (Object.keys(targets).length === 0) {
    throw new Error('no build folder to pack: build one (VOXMILL_CPU=portable VOXMILL_GLIBC=2.28) or pass --target');
  }
  for (const [target, builds] of Object.entries(variants)) {
    if (!targets[target]) {
      const given = Object.keys(builds).map((cpu) => `--variant ${target}:${cpu}`);
      throw new Error(`${given.join(', ')}: no --target ${target} to pack beside`);
    }
  }
  const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  const { version } = manifest;
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  const tarballs = [];
  const optionalDependencies = {};
  for (const [target, releaseDir] of Object.entries(targets)) {
    const builds = variants[target] ?? {};
    const why = refusal(target, releaseDir, {
      allowNative,
      allowSystemLibraries,
      allowNewerGlibc,
      allowSingleVariant,
      variants: builds,
    });
    if (why) throw new Error(`${target}: ${why}`);
    // Before anything is written: the notices of the libc++ linked into a zig-built addon need a pinned zig wheel.
    const zig = [releaseDir, ...Object.values(builds)].some(zigBuilt);
    if (zig && !PINNED.zig?.[process.arch]?.file) throw new Error(`${target}: ${zigWheelMissing(process.arch)}`);
    const spec = TARGETS[target];
    const name = packageName(target);
    const folder = join(out, name.slice('@voxmill/'.length));
    mkdirSync(join(folder, 'LICENSES'), { recursive: true });
    const { copies, files } = packageContents(releaseDir, builds);
    for (const [from, file] of copies) cpSync(from, join(folder, file), { recursive: true });
    const openblas = copies.some(([, name]) => name === BUNDLED_OPENBLAS);
    for (const [file, text] of Object.entries(await licenceNotices(spec.ort, { zig, openblas }))) {
      writeFileSync(join(folder, 'LICENSES', file), text);
    }
    const { cpu, glibc, glibcxx, libraries: needed } = addonRecord(releaseDir, join(folder, 'voxmill.node'), spec);
    const cpuVariants = Object.fromEntries(
      Object.keys(builds)
        .sort()
        .map((variant) => [
          variant,
          { file: variantFile(variant), ...addonRecord(builds[variant], join(folder, variantFile(variant)), spec) },
        ]),
    );
    writeFileSync(
      join(folder, 'voxmill.json'),
      `${JSON.stringify({ target, cpu, glibc, glibcxx, libraries: needed, variants: cpuVariants }, null, 2)}\n`,
    );
    writeFileSync(
      join(folder, 'package.json'),
      `${JSON.stringify(
        {
          name,
          version,
          description: `voxmill's native addon for ${target}${spec.libc ? ` (${spec.libc})` : ''}, with ONNX Runtime's library and espeak-ng's data`,
          license: manifest.license,
          os: [spec.os],
          cpu: [spec.cpu],
          ...(spec.libc ? { libc: [spec.libc] } : {}),
          files,
          repository: manifest.repository,
        },
        null,
        2,
      )}\n`,
    );
    optionalDependencies[name] = version;
    tarballs.push(npmPack(folder, out));
    const also = Object.values(cpuVariants).map((each) => each.file);
    console.error(
      `${name}@${version}: ${glibc ? `glibc ${glibc}, GLIBCXX ${glibcxx}; ` : ''}links ${needed.join(', ')}` +
        (also.length > 0 ? `; with ${also.join(', ')}` : ''),
    );
  }
  tarballs.unshift(packVoxmill(optionalDependencies, out));
  return tarballs;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const args = process.argv.slice(2);
  if (args[0] === '--check') {
    const paths = [];
    const required = [];
    for (let i = 1; i < args.length; i++) {
      if (args[i] === '--require') required.push(args[++i] ?? '');
      else paths.push(resolve(args[i]));
    }
    try {
      const manifests = checkRelease(paths, { required });
      const names = [...new Set(manifests.map((manifest) => manifest.name))].sort();
      console.error(
        `voxmill: release: ${manifests.length} tarballs agree at ${manifests[0].version}: ${names.join(', ')}`,
      );
    } catch (error) {
      console.error(`voxmill: release: ${error.message}`);
      process.exit(1);
    }
    process.exit(0);
  }
  if (args[0] === '--voxmill-for') {
    const paths = [];
    let out = join(root, 'dist-packages');
    for (let i = 1; i < args.length; i++) {
      if (args[i] === '--out') out = resolve(args[++i] ?? '');
      else if (args[i].startsWith('--')) {
        console.error(`--voxmill-for takes <tarball or folder>... [--out <folder>]; received '${args[i]}'`);
        process.exit(2);
      } else paths.push(resolve(args[i]));
    }
    try {
      console.log(voxmillFor(paths, { out }));
    } catch (error) {
      console.error(`voxmill: release: ${error.message}`);
      process.exit(1);
    }
    process.exit(0);
  }
  const targets = {};
  const variants = {};
  let out = join(root, 'dist-packages');
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--target') {
      const [target, dir] = (args[++i] ?? '').split('=');
      if (!TARGETS[target] || !dir) {
        console.error(`--target takes ${Object.keys(TARGETS).join('|')}=<build folder>/Release; received '${args[i]}'`);
        process.exit(2);
      }
      targets[target] = resolve(dir);
    } else if (args[i] === '--variant') {
      const given = args[++i] ?? '';
      const at = given.indexOf('=');
      const [target, cpu] = (at < 0 ? '' : given.slice(0, at)).split(':');
      const dir = at < 0 ? '' : given.slice(at + 1);
      if (!TARGETS[target] || !cpu || !dir) {
        const known = Object.entries(CPU_VARIANTS).flatMap(([each, cpus]) => cpus.map((one) => `${each}:${one}`));
        console.error(
          `--variant takes <target>:<cpu>=<build folder>/Release (${known.join(', ')}); received '${given}'`,
        );
        process.exit(2);
      }
      variants[target] = { ...variants[target], [cpu]: resolve(dir) };
    } else if (args[i] === '--out') out = resolve(args[++i] ?? '');
    else if (
      !['--allow-native', '--allow-system-libraries', '--allow-newer-glibc', '--allow-single-variant'].includes(args[i])
    ) {
      console.error(`unknown option ${args[i]}`);
      process.exit(2);
    }
  }
  if (Object.keys(targets).length === 0) {
    for (const [target, dir] of [
      [`${process.platform}-${process.arch}`, 'build/Release'],
      ['linux-arm64', 'build-linux-arm64/Release'],
    ]) {
      if (TARGETS[target] && !targets[target] && existsSync(join(root, dir, 'voxmill.node'))) {
        targets[target] = join(root, dir);
      }
    }
  }
  try {
    const tarballs = await assemble({
      targets,
      variants,
      out,
      allowNative: args.includes('--allow-native'),
      allowSystemLibraries: args.includes('--allow-system-libraries'),
      allowNewerGlibc: args.includes('--allow-newer-glibc'),
      allowSingleVariant: args.includes('--allow-single-variant'),
    });
    for (const tarball of tarballs) console.log(tarball);
  } catch (error) {
    console.error(`voxmill: release: ${error.message}`);
    process.exit(1);
  }
}
