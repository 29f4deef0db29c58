#!/usr/bin/env node
// A C and C++ compiler that targets an old glibc, for a prebuilt addon that loads on every Linux from that glibc on
// (VOXMILL_GLIBC of scripts/build-native.mjs; releases use 2.28: Debian 10, RHEL 8, Ubuntu 20.04 and later).
//
// Debian 12's gcc links against its own glibc 2.36, and the addon then needs GLIBC_2.34/2.35 symbols (dlopen and the
// pthread calls moved into libc in 2.34, hypot got a new version in 2.35), which older systems lack. zig's clang links
// against stubs of any glibc version it knows, and brings libc++ and libc++abi, linked in statically, so the addon
// needs no libstdc++ of the system either. zig comes from the Python package index (the `ziglang` wheels), pinned
// by version and sha256 like every other dependency, and is cached beside them.
//
//   node scripts/zig-toolchain.mjs [--arch x64|arm64] [--glibc 2.28]   prints the CMake toolchain file
//   import { zigToolchain } from './zig-toolchain.mjs'                   { cc, cxx, ar, ranlib, cmakeToolchain, ... }
//
// The compilers are small shell scripts (<cache>/zig-<version>/<triple>/cc, c++, ar, ranlib), because CMake and
// FFmpeg's configure take a compiler as one program, not `zig cc -target ...`. They turn off what zig cc does on its
// own in an unoptimised compile (UBSan traps), so a configure check behaves as with gcc. zig's own cache of compiled
// libc++ and glibc stubs is <cache>/zig-cache (ZIG_GLOBAL_CACHE_DIR overrides it).
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { cacheDir, PINNED, unpacked } from './native-deps.mjs';

/** zig's name of each architecture, and CMake's. */
const ARCHES = {
  x64: { zig: 'x86_64', cmake: 'x86_64' },
  arm64: { zig: 'aarch64', cmake: 'aarch64' },
};

/** The lowest glibc a build may target: zig knows older ones, but ONNX Runtime's library beside the addon needs 2.28. */
export const OLDEST_GLIBC = '2.28';

/** Checks a glibc version given by a user ("2.28"); returns it or throws naming the value. */
export function glibcVersion(value) {
  const match = /^2\.(\d{1,2})$/.exec(String(value).trim());
  if (!match || Number(match[1]) < Number(OLDEST_GLIBC.split('.')[1])) {
    throw new Error(`VOXMILL_GLIBC must be a glibc version from ${OLDEST_GLIBC} on, like 2.28; received '${value}'`);
  }
  return `2.${Number(match[1])}`;
}

/** The zig executable for this machine, unpacked from its pinned wheel when missing. */
async function zigExecutable() {
  const wheel = PINNED.zig[process.arch];
  if (!wheel) throw new Error(`no zig is pinned for a ${process.arch} build machine (x64 and arm64 are)`);
  const zig = join(await unpacked(`zig-${PINNED.zig.version}-${process.arch}`, wheel, 'ziglang'), 'zig');
  chmodSync(zig, 0o755);
  return zig;
}

/** Writes `text` to `path` unless it is there already: a rewritten compiler would look new to every build cache. */
function writeUnlessSame(path, text, mode = 0o644) {
  if (!existsSync(path) || readFileSync(path, 'utf8') !== text) writeFileSync(path, text);
  chmodSync(path, mode);
}

/** The compilers, archiver and CMake toolchain file that build for linux-`arch` against glibc `glibc`. */
export async function zigToolchain(arch = process.arch, glibc = '2.28') {
  if (!ARCHES[arch]) throw new Error(`zig builds for x64 and arm64 here, not '${arch}'`);
  const version = glibcVersion(glibc);
  const zig = await zigExecutable();
  const triple = `${ARCHES[arch].zig}-linux-gnu.${version}`;
  const dir = join(cacheDir(), `zig-${PINNED.zig.version}`, triple);
  mkdirSync(dir, { recursive: true });
  const zigCache = process.env.ZIG_GLOBAL_CACHE_DIR || join(cacheDir(), 'zig-cache');
  const env = `export ZIG_GLOBAL_CACHE_DIR="\${ZIG_GLOBAL_CACHE_DIR:-${zigCache}}"\n`;
  const tool = (name, command, versionCommand = '') => {
    const path = join(dir, name);
    // `--version` alone (ggml's CMake asks it): zig's clang refuses a triple with a glibc version there (exit 1).
    const version = versionCommand
      ? `if [ "$#" = 1 ] && [ "$1" = --version ]; then exec "${zig}" ${versionCommand} --version; fi\n`
      : '';
    writeUnlessSame(path, `#!/bin/sh\n${env}${version}exec "${zig}" ${command} "$@"\n`, 0o755);
    return path;
  };
  // -fno-sanitize=all: zig cc adds UBSan traps to a compile without -O, which a configure check would trip on.
  const cc = tool('cc', `cc -target ${triple} -fno-sanitize=all`, 'cc');
  const cxx = tool('c++', `c++ -target ${triple} -fno-sanitize=all`, 'c++');
  const ar = tool('ar', 'ar');
  const ranlib = tool('ranlib', 'ranlib');
  const cross = arch !== process.arch;
  const cmakeToolchain = join(dir, 'toolchain.cmake');
  writeUnlessSame(
    cmakeToolchain,
    [
      `# Written by scripts/zig-toolchain.mjs: zig ${PINNED.zig.version} building for ${triple}.`,
      ...(cross ? ['set(CMAKE_SYSTEM_NAME Linux)', `set(CMAKE_SYSTEM_PROCESSOR ${ARCHES[arch].cmake})`] : []),
      `set(CMAKE_C_COMPILER "${cc}")`,
      `set(CMAKE_CXX_COMPILER "${cxx}")`,
      `set(CMAKE_AR "${ar}" CACHE FILEPATH "zig ar")`,
      `set(CMAKE_RANLIB "${ranlib}" CACHE FILEPATH "zig ranlib")`,
      // Nothing of the build machine's may be linked in: its libraries need its newer glibc.
      'set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)',
      'set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)',
      'set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)',
      `set(CMAKE_FIND_ROOT_PATH "${dir}")`,
      'set(VOXMILL_ZIG ON CACHE BOOL "built with scripts/zig-toolchain.mjs")',
      `set(VOXMILL_GLIBC "${version}" CACHE STRING "the glibc the addon is built for")`,
      '',
    ].join('\n'),
  );
  return { zig, triple, glibc: version, version: PINNED.zig.version, cc, cxx, ar, ranlib, cmakeToolchain, cross };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const option = (name, fallback) => {
    const at = process.argv.indexOf(name);
    return at > 0 ? process.argv[at + 1] : fallback;
  };
  try {
    const toolchain = await zigToolchain(option('--arch', process.arch), option('--glibc', '2.28'));
    console.log(toolchain.cmakeToolchain);
  } catch (error) {
    console.error(`voxmill: zig toolchain: ${error.message}`);
    process.exit(1);
  }
}
