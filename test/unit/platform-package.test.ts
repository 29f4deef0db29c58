// Which package a prebuilt addon is looked for in, and finding it where npm puts it.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { linuxLibc, platformPackageAddon, platformPackageName } from '../../src/platform-package.js';

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
    expect(platformPackageAddon(voxmill, '@voxmill/linux-x64-gnu')).toBe(join(platform, 'voxmill.node'));
  });
});
