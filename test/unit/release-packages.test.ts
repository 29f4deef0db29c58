// The release refuses a platform package whose addon would not run where npm installs it.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { elfMachine, refusal } from '../../scripts/release/platform-packages.mjs';

const scratch = mkdtempSync(join(tmpdir(), 'voxmill-release-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** A build folder whose Release/ holds an addon with this ELF machine, beside a CMake cache with these lines. */
function buildFolder(name: string, machine: number, cache: string): string {
  const release = join(scratch, name, 'Release');
  mkdirSync(join(release, 'espeak-ng-data'), { recursive: true });
  const header = Buffer.alloc(64);
  header.writeUInt32BE(0x7f454c46, 0);
  header[4] = 2; // 64-bit
  header[5] = 1; // little-endian
  header.writeUInt16LE(machine, 18);
  writeFileSync(join(release, 'voxmill.node'), header);
  writeFileSync(join(release, 'libonnxruntime.so.1'), '');
  writeFileSync(join(release, 'espeak-ng-data', 'phontab'), '');
  writeFileSync(join(scratch, name, 'CMakeCache.txt'), cache);
  return release;
}
// The library check reads the addon with readelf; these fake addons are only headers.
const skipLibraries = { allowSystemLibraries: true };

describe('scripts/release/platform-packages.mjs', () => {
  it('reads the ELF machine, and names what is not a 64-bit ELF file', () => {
    const header = Buffer.alloc(64);
    header.writeUInt32BE(0x7f454c46, 0);
    header[4] = 2;
    header[5] = 1;
    header.writeUInt16LE(0xb7, 18);
    expect(elfMachine(header)).toBe(0xb7);
    expect(elfMachine(Buffer.from('MZ not an ELF file at all'))).toBe('not an ELF file');
  });

  it('packs a portable x64 build for linux-x64 and refuses it for linux-arm64', () => {
    const release = buildFolder('x64', 0x3e, 'VOXMILL_CPU:STRING=portable\n');
    expect(refusal('linux-x64', release, skipLibraries)).toBeNull();
    expect(refusal('linux-arm64', release, skipLibraries)).toMatch(/another machine \(ELF machine 0x3e\)/);
  });

  it('refuses a build for this machine, unless allowed for a test here', () => {
    const native = buildFolder('native', 0x3e, 'VOXMILL_CPU:STRING=native\n');
    expect(refusal('linux-x64', native, skipLibraries)).toMatch(/not a portable build/);
    expect(refusal('linux-x64', native, { ...skipLibraries, allowNative: true })).toBeNull();
    const march = buildFolder('march', 0x3e, 'VOXMILL_CPU:STRING=portable\nCMAKE_CXX_FLAGS:STRING=-O2 -march=native\n');
    expect(refusal('linux-x64', march, skipLibraries)).toMatch(/-march=native/);
  });
});
