// Which package a prebuilt addon is looked for in, and finding it where npm puts it.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  addonFileForCpu,
  linuxCpuFlags,
  linuxLibc,
  platformPackageAddon,
  platformPackageName,
  X64_PORTABLE_FLAGS,
  X64_V2_FLAGS,
} from '../../src/platform-package.js';

const app = mkdtempSync(join(tmpdir(), 'voxmill-platform-'));
afterAll(() => rmSync(app, { recursive: true, force: true }));

describe('platform packages', () => {
  it('names the package by platform, architecture and (on Linux) C library', () => {
    expect(platformPackageName('linux', 'x64', 'gnu')).toBe('@voxmill/linux-x64-gnu');
    expect(platformPackageName('linux', 'arm64', 'musl')).toBe('@voxmill/linux-arm64-musl');
    expect(platformPackageName('darwin', 'arm64', undefined)).toBe('@voxmill/darwin-arm64');
    expect(platformPackageName('win32', 'x64', 'gnu')).toBe('@voxmill/win32-x64');
  });

  it('reads this process as glibc on Debian', () => {
    expect(linuxLibc()).toBe(process.platform === 'linux' ? 'gnu' : undefined);
  });

  it("finds the addon in the platform package beside voxmill's folder, and nothing when it is absent", () => {
    const voxmill = join(app, 'node_modules', 'voxmill');
    mkdirSync(voxmill, { recursive: true });
    writeFileSync(join(voxmill, 'package.json'), '{"name":"voxmill"}');
    expect(platformPackageAddon(voxmill, '@voxmill/linux-x64-gnu')).toBeUndefined();
    const platform = join(app, 'node_modules', '@voxmill', 'linux-x64-gnu');
    mkdirSync(platform, { recursive: true });
    writeFileSync(join(platform, 'package.json'), '{"name":"@voxmill/linux-x64-gnu"}');
    // A package without its addon (a broken install) is not taken.
    expect(platformPackageAddon(voxmill, '@voxmill/linux-x64-gnu')).toBeUndefined();
    writeFileSync(join(platform, 'voxmill.node'), '');
    expect(platformPackageAddon(voxmill, '@voxmill/linux-x64-gnu', 'voxmill.node')).toBe(
      join(platform, 'voxmill.node'),
    );
    // The build for CPUs without AVX2 is its own file: missing, nothing is taken rather than the other one.
    expect(platformPackageAddon(voxmill, '@voxmill/linux-x64-gnu', 'voxmill-x86-64-v2.node')).toBeUndefined();
    writeFileSync(join(platform, 'voxmill-x86-64-v2.node'), '');
    expect(platformPackageAddon(voxmill, '@voxmill/linux-x64-gnu', 'voxmill-x86-64-v2.node')).toBe(
      join(platform, 'voxmill-x86-64-v2.node'),
    );
  });

  it("reads the CPU's flags from /proc/cpuinfo's first flags line", () => {
    const cpuinfo = 'processor\t: 0\nflags\t\t: fpu sse4_2 avx avx2\n\nprocessor\t: 1\nflags\t\t: other\n';
    expect([...(linuxCpuFlags(cpuinfo) ?? [])]).toEqual(['fpu', 'sse4_2', 'avx', 'avx2']);
    expect(linuxCpuFlags('processor : 0\n')).toBeNull();
    // Every x86-64 CPU has SSE2, where Linux lists x86 flags at all (not x64 Node on an arm64 kernel's emulation).
    const here = process.platform === 'linux' && process.arch === 'x64' ? linuxCpuFlags() : null;
    if (here) expect(here.has('sse2')).toBe(true);
  });

  it('picks the build an x64 CPU runs: AVX2 and the rest, else SSE4.2 with SSSE3 and SSE4.1, else none', () => {
    const nehalem = new Set(['sse2', ...X64_V2_FLAGS, 'popcnt']);
    const haswell = new Set([...nehalem, ...X64_PORTABLE_FLAGS]);
    expect(addonFileForCpu('linux', 'x64', haswell)).toBe('voxmill.node');
    for (const flag of X64_PORTABLE_FLAGS) {
      const without = new Set([...haswell].filter((name) => name !== flag));
      expect(addonFileForCpu('linux', 'x64', without)).toBe('voxmill-x86-64-v2.node');
    }
    // A Core 2 (SSSE3, no SSE4.1/4.2) runs neither, nor is anything loaded when the flags are unknown.
    for (const flag of X64_V2_FLAGS) {
      expect(addonFileForCpu('linux', 'x64', new Set([...nehalem].filter((name) => name !== flag)))).toBeNull();
    }
    expect(addonFileForCpu('linux', 'x64', null)).toBeNull();
    // One build per package elsewhere: arm64's baseline, and macOS/Windows (no /proc/cpuinfo) read no flags.
    expect(addonFileForCpu('linux', 'arm64', null)).toBe('voxmill.node');
    expect(addonFileForCpu('darwin', 'x64', null)).toBe('voxmill.node');
  });

  it('takes no addon from the package when this CPU runs none of its builds', () => {
    const voxmill = join(app, 'node_modules', 'voxmill');
    expect(platformPackageAddon(voxmill, '@voxmill/linux-x64-gnu', null)).toBeUndefined();
  });
});
