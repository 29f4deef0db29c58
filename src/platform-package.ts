// The npm package that carries the prebuilt addon for one platform (@voxmill/linux-x64-gnu and the like, an
// optional dependency of voxmill that npm installs only where its os, cpu and libc fields match), and how to find it.
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

let glibc: string | null | undefined;

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
 * The addon in this platform's package when it is installed where `packageRoot` (voxmill's folder) resolves packages
 * from; undefined when it is not.
 */
export function platformPackageAddon(packageRoot: string, name: string = platformPackageName()): string | undefined {
  try {
    const manifest = createRequire(join(packageRoot, 'package.json')).resolve(`${name}/package.json`);
    const addon = join(dirname(manifest), 'voxmill.node');
    return existsSync(addon) ? addon : undefined;
  } catch {
    return undefined;
  }
}
