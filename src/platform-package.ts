// The npm package that carries the prebuilt addon for one platform (@voxmill/linux-x64-gnu and the like, an
// optional dependency of voxmill that npm installs only where its os, cpu and libc fields match), and how to find it.
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

let glibc: string | null | undefined;
let cpuFlags: Set<string> | null | undefined;

/**
 * The x86-64 instruction sets the x64 package's `voxmill.node` is compiled for (VOXMILL_CPU=portable). A CPU without
 * one of them gets the package's `voxmill-x86-64-v2.node` instead: the other would stop the whole process with SIGILL
 * at the first AVX2 instruction.
 */
export const X64_PORTABLE_FLAGS = ['avx', 'avx2', 'fma', 'f16c', 'bmi2'] as const;

/** What `voxmill-x86-64-v2.node` (VOXMILL_CPU=x86-64-v2) runs: ggml's SSE4.2 build uses SSSE3 and SSE4.1 too. */
export const X64_V2_FLAGS = ['ssse3', 'sse4_1', 'sse4_2'] as const;

/**
 * The CPU's feature flags as Linux reports them (the first `flags` line of /proc/cpuinfo: only what the kernel lets
 * programs use), or null when they cannot be read. Read once.
 */
export function linuxCpuFlags(cpuinfo?: string): Set<string> | null {
  if (cpuinfo === undefined && cpuFlags !== undefined) return cpuFlags;
  let text = cpuinfo;
  if (text === undefined) {
    try {
      text = readFileSync('/proc/cpuinfo', 'utf8');
    } catch {
      text = '';
    }
  }
  const line = /^flags\s*:(.*)$/m.exec(text)?.[1];
  const flags = line === undefined ? null : new Set(line.trim().split(/\s+/));
  if (cpuinfo === undefined) cpuFlags = flags;
  return flags;
}

/**
 * The file in a platform package of the addon build that runs on this CPU: `voxmill.node`, or on Linux x64 without
 * AVX2 `voxmill-x86-64-v2.node`; null on an x86-64 CPU that runs neither (no SSE4.2: Core 2, K10, the first Atoms),
 * or whose flags cannot be read, where loading either could stop the process with SIGILL.
 */
export function addonFileForCpu(
  platform: string = process.platform,
  arch: string = process.arch,
  flags: Set<string> | null = platform === 'linux' && arch === 'x64' ? linuxCpuFlags() : null,
): string | null {
  // One build per package elsewhere: arm64's is the architecture's baseline.
  if (platform !== 'linux' || arch !== 'x64') return 'voxmill.node';
  if (!flags) return null;
  if (X64_PORTABLE_FLAGS.every((flag) => flags.has(flag))) return 'voxmill.node';
  return X64_V2_FLAGS.every((flag) => flags.has(flag)) ? 'voxmill-x86-64-v2.node' : null;
}

/**
 * The glibc version this Linux process runs on ("2.36"), or null for musl or off Linux. Read once from Node's
 * diagnostic report, with its network part left out (enumerating interfaces and resolving names can take seconds on
 * a busy host); the host's own report setting is put back.
 */
export function linuxGlibc(): string | null {
  if (glibc !== undefined) return glibc;
  glibc = null;
  const report = process.platform === 'linux' ? process.report : undefined;
  if (report) {
    const settings = report as { excludeNetwork?: boolean };
    const excludeNetwork = settings.excludeNetwork;
    settings.excludeNetwork = true;
    try {
      const header = (report.getReport() as { header?: { glibcVersionRuntime?: string } }).header;
      glibc = header?.glibcVersionRuntime ?? null;
    } finally {
      settings.excludeNetwork = excludeNetwork;
    }
  }
  return glibc;
}

/** The C library of this Linux process: gnu (glibc) or musl; undefined off Linux. */
export function linuxLibc(): 'gnu' | 'musl' | undefined {
  if (process.platform !== 'linux') return undefined;
  return linuxGlibc() ? 'gnu' : 'musl';
}

/** `@voxmill/<platform>-<arch>[-<libc>]`: the package a prebuilt addon for this process would be in. */
export function platformPackageName(
  platform: string = process.platform,
  arch: string = process.arch,
  libc: string | undefined = linuxLibc(),
): string {
  return `@voxmill/${platform}-${arch}${platform === 'linux' && libc ? `-${libc}` : ''}`;
}

/**
 * The addon in this platform's package that fits this CPU (addonFileForCpu) when the package is installed where
 * `packageRoot` (voxmill's folder) resolves packages from; undefined when it is not.
 */
export function platformPackageAddon(
  packageRoot: string,
  name: string = platformPackageName(),
  file: string | null = addonFileForCpu(),
): string | undefined {
  if (!file) return undefined;
  try {
    const manifest = createRequire(join(packageRoot, 'package.json')).resolve(`${name}/package.json`);
    const addon = join(dirname(manifest), file);
    return existsSync(addon) ? addon : undefined;
  } catch {
    return undefined;
  }
}
