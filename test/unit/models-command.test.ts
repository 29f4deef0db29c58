// `voxmill models ...` through commander, with captured output and exit status.
import { existsSync } from 'node:fs';
import { mkdir, open } from 'node:fs/promises';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { Command } from 'commander';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
// A test's own time limit grows with this machine's slowdown.
import { scaledMs } from '../../scripts/lib/machine-speed.mjs';
import { formatBytes, registerModelsCommand } from '../../src/cli/models-command.js';
import { findCatalogEntry, listCatalog } from '../../src/models/catalog.js';
import { type TempDir, tempDir } from './models-test-server.js';

class Capture extends Writable {
  text = '';
  override _write(chunk: Buffer, _encoding: BufferEncoding, done: () => void): void {
    this.text += chunk.toString();
    done();
  }
}

interface Run {
  stdout: string;
  stderr: string;
  exitCode: number | undefined;
}

async function voxmill(...args: string[]): Promise<Run> {
  const stdout = new Capture();
  const stderr = new Capture();
  let exitCode: number | undefined;
  const program = new Command('voxmill').exitOverride();
  registerModelsCommand(program, { stdout, stderr, setExitCode: (code) => (exitCode = code) });
  await program.parseAsync(args, { from: 'user' });
  return { stdout: stdout.text, stderr: stderr.text, exitCode };
}

/** A sparse file of the entry's exact size: "installed" as far as the size check goes, costs no disk. */
async function fakeInstall(dir: string, id: string): Promise<string> {
  const entry = findCatalogEntry(id)!;
  const path = join(dir, entry.file);
  const handle = await open(path, 'w');
  await handle.truncate(entry.bytes);
  await handle.close();
  return path;
}

let dir: TempDir;

beforeEach(async () => {
  dir = await tempDir();
});
afterEach(async () => {
  await dir.remove();
});

describe('voxmill models list', () => {
  it('prints a table with size, installed state and the services each model backs', async () => {
    await fakeInstall(dir.path, 'tiny-q5_1');
    const run = await voxmill('models', 'list', '--dir', dir.path);

    expect(run.exitCode).toBeUndefined();
    const lines = run.stdout.split('\n');
    expect(lines[0]).toMatch(/^ID\s+KIND\s+SIZE\s+INSTALLED\s+DEFAULT FOR$/);
    expect(lines.find((l) => l.startsWith('tiny-q5_1 '))).toMatch(/whisper\s+32\.2 MB\s+yes\s+svc-stt-1-flash$/);
    expect(lines.find((l) => l.startsWith('base '))).toMatch(/\bno\s+svc-stt-1$/);
    expect(lines.find((l) => l.startsWith('silero-v6.2.0 '))).toMatch(/^silero-v6\.2\.0\s+vad\s+885\.1 kB\s+no\s+vad$/);
    expect(run.stdout).toContain(`models directory: ${dir.path}`);
  });

  it('prints JSON with --json', async () => {
    const path = await fakeInstall(dir.path, 'base');
    const run = await voxmill('models', 'list', '--dir', dir.path, '--json');
    const rows = JSON.parse(run.stdout) as { id: string; installed: boolean; path: string | null }[];
    expect(rows).toHaveLength(listCatalog().length);
    expect(rows.find((r) => r.id === 'base')).toMatchObject({ installed: true, path });
    expect(rows.find((r) => r.id === 'tiny')).toMatchObject({ installed: false, path: null });
  });
});

describe('voxmill models path', () => {
  it('prints the path of an installed model, service ids included', async () => {
    const path = await fakeInstall(dir.path, 'silero-v6.2.0');
    const run = await voxmill('models', 'path', 'vad', '--dir', dir.path);
    expect(run).toEqual({ stdout: `${path}\n`, stderr: '', exitCode: undefined });
  });

  it('fails with one line and status 1 when the model is not installed', async () => {
    const run = await voxmill('models', 'path', 'base', '--dir', dir.path);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(/^voxmill: base is not installed in .*; run: voxmill models pull base\n$/);
    expect(run.exitCode).toBe(1);
  });
});

describe('voxmill models pull', () => {
  it('fails with one line and status 1 for an unknown id, before pulling anything', async () => {
    const run = await voxmill('models', 'pull', 'tiny', 'nope', '--dir', dir.path, '--from', dir.path);
    expect(run.stderr).toMatch(/^voxmill: unknown model "nope"; the catalog has: .*\n$/);
    expect(run.exitCode).toBe(1);
  });

  it('reports a mirror file with the wrong bytes in one line and installs nothing', async () => {
    const mirror = join(dir.path, 'mirror');
    const models = join(dir.path, 'models');
    await mkdir(mirror);
    await fakeInstall(mirror, 'silero-v6.2.0'); // right size, all zeros
    const run = await voxmill('models', 'pull', 'silero-v6.2.0', '--dir', models, '--from', mirror);

    expect(run.exitCode).toBe(1);
    expect(run.stderr.split('\n').filter((l) => l.startsWith('voxmill:'))).toEqual([
      expect.stringMatching(/^voxmill: sha256 of ggml-silero-v6\.2\.0\.bin is [0-9a-f]{64}, expected 2aa269b7/),
    ]);
    expect(run.stderr).toContain('silero-v6.2.0: 100%'); // plain progress lines when stderr is not a terminal
    expect(existsSync(join(models, 'ggml-silero-v6.2.0.bin'))).toBe(false);
  });

  it('names --from and models add when the model host cannot be reached', { timeout: scaledMs(30_000) }, async () => {
    // Nothing listens on port 9 of this machine: each connection is refused at once (after 3 retries, 6 s).
    const run = await voxmill('models', 'pull', 'silero-v6.2.0', '--dir', dir.path, '--from', 'http://127.0.0.1:9/');
    expect(run.exitCode).toBe(1);
    expect(run.stderr).toMatch(/voxmill models pull <id> --from <dir>.*voxmill models add <file>/u);
  });

  it('says so when the model is already installed', async () => {
    const path = await fakeInstall(dir.path, 'tiny.en');
    const run = await voxmill('models', 'pull', 'tiny.en', '--dir', dir.path);
    expect(run.exitCode).toBeUndefined();
    expect(run.stdout).toBe(`tiny.en: already installed at ${path} (size checked only)\n`);
  });
});

describe('formatBytes', () => {
  it('uses decimal units', () => {
    expect(formatBytes(999)).toBe('999 B');
    expect(formatBytes(885_098)).toBe('885.1 kB');
    expect(formatBytes(147_951_465)).toBe('148.0 MB');
    expect(formatBytes(1_533_763_059)).toBe('1.5 GB');
  });
});
