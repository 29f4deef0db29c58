// The store's local side: directories, installed files, model ids and option checking.
import { writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { InvalidOptionTypeError, InvalidOptionValueError, ModelNotFoundError } from '../../src/errors.js';
import { defaultModelsDir, installedPath, isInstalled, pullModel, resolveModelEntry } from '../../src/models/store.js';
import { randomModel, type TempDir, tempDir, testEntry } from './models-test-server.js';

describe('defaultModelsDir', () => {
  it('prefers VOXMILL_MODELS_DIR, resolved to an absolute path', () => {
    expect(defaultModelsDir({ VOXMILL_MODELS_DIR: 'rel/models', XDG_CACHE_HOME: '/xdg' })).toBe(resolve('rel/models'));
  });

  it('uses $XDG_CACHE_HOME/voxmill/models next', () => {
    expect(defaultModelsDir({ XDG_CACHE_HOME: '/var/cache/me' })).toBe('/var/cache/me/voxmill/models');
  });

  it('ignores a relative XDG_CACHE_HOME and falls back to ~/.cache/voxmill/models', () => {
    expect(defaultModelsDir({ XDG_CACHE_HOME: 'relative' })).toBe(join(homedir(), '.cache', 'voxmill', 'models'));
    expect(defaultModelsDir({})).toBe(join(homedir(), '.cache', 'voxmill', 'models'));
  });
});

describe('installed files', () => {
  const data = randomModel(4096);
  const entry = testEntry(data, 'https://example.invalid/ggml-test.bin');
  let dir: TempDir;

  beforeEach(async () => {
    dir = await tempDir();
  });
  afterEach(async () => {
    await dir.remove();
  });

  it('puts the file under its catalog name in the directory', () => {
    expect(installedPath(entry, dir.path)).toBe(join(dir.path, 'ggml-test.bin'));
  });

  it('counts a file as installed only when it has the catalog size', async () => {
    expect(await isInstalled(entry, dir.path)).toBe(false);
    await writeFile(installedPath(entry, dir.path), data.subarray(1));
    expect(await isInstalled(entry, dir.path)).toBe(false);
    await writeFile(installedPath(entry, dir.path), data);
    expect(await isInstalled(entry, dir.path)).toBe(true);
  });
});

describe('resolveModelEntry', () => {
  it('finds catalog ids and service ids', () => {
    expect(resolveModelEntry('tiny.en').file).toBe('ggml-tiny.en.bin');
    expect(resolveModelEntry('svc-stt-1').id).toBe('base');
    expect(resolveModelEntry('vad').kind).toBe('vad');
  });

  it('throws ModelNotFoundError listing the catalog for an unknown id', () => {
    expect(() => resolveModelEntry('huge-v9')).toThrow(ModelNotFoundError);
    expect(() => resolveModelEntry('huge-v9')).toThrow(/tiny\.en/);
  });

  it('validates an injected entry', () => {
    const bad = { ...testEntry(Buffer.alloc(1), 'https://example.invalid/x.bin'), file: '../escape.bin' };
    expect(() => resolveModelEntry(bad)).toThrow(InvalidOptionValueError);
  });
});

describe('pullModel options', () => {
  const entry = testEntry(Buffer.alloc(1), 'https://example.invalid/x.bin');

  it('rejects wrong types and out-of-range values naming the option', async () => {
    await expect(pullModel(entry, { from: 5 as unknown as string })).rejects.toThrow(InvalidOptionTypeError);
    await expect(pullModel(entry, { retries: -1 })).rejects.toThrow(/retries must be an integer >= 0/);
    await expect(pullModel(entry, { idleTimeoutMs: 0 })).rejects.toThrow(InvalidOptionValueError);
    await expect(pullModel(entry, { signal: {} as AbortSignal })).rejects.toThrow(/signal must be an AbortSignal/);
  });
});
