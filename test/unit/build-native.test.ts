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

  it('rejects a VOXMILL_GLIBC that is not a glibc version from 2.28 on, by name', () => {
    for (const value of ['2.27', 'latest', '3.0']) {
      const { status, stderr } = build({ PATH: bareBin, VOXMILL_GLIBC: value });
      expect(status).toBe(1);
      expect(stderr).toContain(`VOXMILL_GLIBC must be a glibc version from 2.28 on, like 2.28; received '${value}'`);
    }
  });

  it("refuses what a build for an older glibc cannot link: the system's FFmpeg and OpenBLAS", () => {
    const ffmpeg = build({ PATH: bareBin, VOXMILL_GLIBC: '2.28', VOXMILL_FFMPEG: 'system' });
    expect(ffmpeg.status).toBe(1);
    expect(ffmpeg.stderr).toContain('VOXMILL_GLIBC=2.28 links FFmpeg in (VOXMILL_FFMPEG=static)');
    const blas = build({ PATH: bareBin, VOXMILL_GLIBC: '2.28', VOXMILL_BLAS: 'openblas' });
    expect(blas.status).toBe(1);
    expect(blas.stderr).toContain(
      "VOXMILL_GLIBC=2.28 cannot link the system's OpenBLAS (built for its own glibc): VOXMILL_BLAS=bundled or none; received openblas",
    );
  });

  it('takes VOXMILL_BLAS=bundled for CPU builds only, and names the values it takes', () => {
    const gpu = build({ PATH: bareBin, VOXMILL_BLAS: 'bundled', VOXMILL_GPU: 'cuda' });
    expect(gpu.status).toBe(1);
    expect(gpu.stderr).toContain('VOXMILL_BLAS=bundled is for CPU builds; with VOXMILL_GPU use auto or none');
    const unknown = build({ PATH: bareBin, VOXMILL_BLAS: 'mkl' });
    expect(unknown.stderr).toContain("VOXMILL_BLAS must be auto, openblas, bundled or none; received 'mkl'");
  });

  it('accepts VOXMILL_CPU=x86-64-v2 only for an x64 build', () => {
    const arm = build({ PATH: bareBin, VOXMILL_CPU: 'x86-64-v2', VOXMILL_TARGET: 'linux-arm64' });
    expect(arm.status).toBe(1);
    expect(arm.stderr).toContain('VOXMILL_CPU=x86-64-v2 is an x64 level; this build is for arm64');
    const unknown = build({ PATH: bareBin, VOXMILL_CPU: 'x86-64-v4' });
    expect(unknown.stderr).toContain("VOXMILL_CPU must be native, portable or x86-64-v2; received 'x86-64-v4'");
  });

  it('rejects a VOXMILL_WHISPER_CPP_DIR that is not a whisper.cpp tree', () => {
    const { status, stderr } = build({ PATH: bareBin, VOXMILL_WHISPER_CPP_DIR: tmpdir() });
    expect(status).toBe(1);
    expect(stderr).toContain('is not a whisper.cpp tree');
  });
});
