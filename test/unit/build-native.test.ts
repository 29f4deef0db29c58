// The native build's failures must say what is missing and how to get it.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { repoRoot } from '../helpers/paths.js';

const script = join(repoRoot, 'scripts', 'build-native.mjs');
// A PATH holding only node: no cmake, no pkg-config.
const bareBin = mkdtempSync(join(tmpdir(), 'voxmill-bin-'));
symlinkSync(process.execPath, join(bareBin, 'node'));

afterAll(() => rmSync(bareBin, { recursive: true, force: true }));

function build(env: Record<string, string>): { status: number | null; stderr: string } {
  const result = spawnSync(process.execPath, [script, '--force'], {
    env: { PATH: `${bareBin}:${dirname(process.execPath)}`, HOME: tmpdir(), ...env },
    encoding: 'utf8',
  });
  return { status: result.status, stderr: result.stderr };
}

describe('scripts/build-native.mjs', () => {
  it('names cmake when it is missing', () => {
    const { status, stderr } = build({ PATH: bareBin });
    expect(status).toBe(1);
    expect(stderr).toContain('cmake not found');
    expect(stderr).toContain('apt-get install cmake');
  });

  it('rejects an unknown GPU backend by name', () => {
    const { status, stderr } = build({ PATH: bareBin, VOXMILL_GPU: 'quantum' });
    expect(status).toBe(1);
    expect(stderr).toContain("VOXMILL_GPU must be one of cuda, vulkan, metal; received 'quantum'");
  });

  it('rejects an unknown VOXMILL_FFMPEG by name', () => {
    const { status, stderr } = build({ PATH: bareBin, VOXMILL_FFMPEG: 'shared' });
    expect(status).toBe(1);
    expect(stderr).toContain("VOXMILL_FFMPEG must be static or system; received 'shared'");
  });

  it('rejects a VOXMILL_WHISPER_CPP_DIR that is not a whisper.cpp tree', () => {
    const { status, stderr } = build({ PATH: bareBin, VOXMILL_WHISPER_CPP_DIR: tmpdir() });
    expect(status).toBe(1);
    expect(stderr).toContain('is not a whisper.cpp tree');
  });
});
