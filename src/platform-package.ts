// The npm package that carries the prebuilt addon for one platform (@voxmill/linux-x64-gnu and the like, an
// optional dependency of voxmill that npm installs only where its os, cpu and libc fields match), and how to find it.
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

/** The C library of this Linux process: gnu (glibc) or musl; undefined off Linux. */
export function linuxLibc(): 'gnu' | 'musl' | undefined {
  if (process.platform !== 'linux') return undefined;
  // Node's report names the glibc it runs on; a musl build of Node has no such field.
  const header = (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)?.header;
  return header?.glibcVersionRuntime ? 'gnu' : 'musl';
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
