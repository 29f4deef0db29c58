// pullModel from a local mirror directory: same verification and atomic rename as a download.
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ChecksumMismatchError, DownloadError } from '../../src/errors.js';
import { type PullProgress, pullModel } from '../../src/models/store.js';
import { randomModel, type TempDir, tempDir, testEntry } from './models-test-server.js';

const data = randomModel(2 * 1024 * 1024 + 5);
const FILE = 'ggml-test.bin';
// The entry's URL must never be used when a mirror is given; nothing listens on port 9.
const entry = testEntry(data, `http://127.0.0.1:9/${FILE}`);

let root: TempDir;
let mirror: string;
let models: string;

beforeEach(async () => {
  root = await tempDir();
  mirror = join(root.path, 'mirror');
  models = join(root.path, 'models');
  await mkdir(mirror);
});

afterEach(async () => {
  await root.remove();
});

describe('pullModel from a mirror directory', () => {
  it('copies, verifies and installs the file, reporting progress', async () => {
    await writeFile(join(mirror, FILE), data);
    const progress: PullProgress[] = [];
    const result = await pullModel(entry, { dir: models, from: mirror, onProgress: (p) => progress.push(p) });

    expect(result).toMatchObject({ source: join(mirror, FILE), verifiedBy: 'sha256', alreadyInstalled: false });
    expect((await readFile(join(models, FILE))).equals(data)).toBe(true);
    expect(existsSync(join(models, `${FILE}.part`))).toBe(false);
    expect(progress.at(-1)).toEqual({ receivedBytes: data.length, totalBytes: data.length });
  });

  it('accepts the mirror as a file: URL', async () => {
    await writeFile(join(mirror, FILE), data);
    await pullModel(entry, { dir: models, from: pathToFileURL(mirror).href });
    expect((await readFile(join(models, FILE))).equals(data)).toBe(true);
  });

  it('rejects a mirror file with the right size but wrong bytes and leaves nothing behind', async () => {
    const wrong = Buffer.from(data);
    wrong[wrong.length - 1] = (wrong[wrong.length - 1]! + 1) % 256;
    await writeFile(join(mirror, FILE), wrong);

    const error = await pullModel(entry, { dir: models, from: mirror }).catch((e) => e);
    expect(error).toBeInstanceOf(ChecksumMismatchError);
    expect(error.expected).toBe(entry.sha256);
    expect(existsSync(join(models, FILE))).toBe(false);
    expect(existsSync(join(models, `${FILE}.part`))).toBe(false);
  });

  it('rejects a mirror file of the wrong size before copying it', async () => {
    await writeFile(join(mirror, FILE), data.subarray(1));
    await expect(pullModel(entry, { dir: models, from: mirror })).rejects.toThrow(/has \d+ bytes/);
    expect(existsSync(join(models, `${FILE}.part`))).toBe(false);
  });

  it('names the missing file when the mirror lacks it', async () => {
    const error = await pullModel(entry, { dir: models, from: mirror }).catch((e) => e);
    expect(error).toBeInstanceOf(DownloadError);
    expect(error.message).toContain(join(mirror, FILE));
    expect(error.message).toContain('does not exist');
  });

  it('stops with the abort reason and removes the partial copy', async () => {
    await writeFile(join(mirror, FILE), data);
    const controller = new AbortController();
    const reason = new Error('stop copying');
    const pull = pullModel(entry, {
      dir: models,
      from: mirror,
      signal: controller.signal,
      onProgress: () => controller.abort(reason),
    });
    await expect(pull).rejects.toBe(reason);
    expect(existsSync(join(models, FILE))).toBe(false);
    expect(existsSync(join(models, `${FILE}.part`))).toBe(false);
  });
});
