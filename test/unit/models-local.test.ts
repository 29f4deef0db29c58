// `voxmill models add`: a whisper ggml file or a Piper voice checked by its header and config, copied into the
// models directory with its sha256 and size, and found by id afterwards.
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ModelLocator } from '../../src/engine/model-locator.js';
import { ModelNotFoundError } from '../../src/errors.js';
import { addLocalModel, listLocalModels, localModelPath } from '../../src/models/local.js';
import { fixture } from '../helpers/paths.js';

const dirs: string[] = [];
function scratch(): string {
  const dir = mkdtempSync(join(tmpdir(), 'voxmill-local-'));
  dirs.push(dir);
  return dir;
}
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const ggml = fixture('models/ggml-tiny.en-random.bin');
const sha256 = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');

describe('addLocalModel', () => {
  it('adds a whisper ggml file under its id with sha256 and size, and the locator finds it by id', async () => {
    const dir = scratch();
    const added = await addLocalModel(ggml, { dir });
    expect(added).toMatchObject({ id: 'tiny.en-random', kind: 'whisper', sha256: sha256(ggml), source: ggml });
    expect(added.path).toBe(localModelPath('tiny.en-random', dir));
    expect(sha256(added.path)).toBe(added.sha256);
    expect(await listLocalModels(dir)).toEqual([added]);
    expect(new ModelLocator(dir).requireInstalled('svc-stt-1', 'tiny.en-random')).toBe(added.path);
    expect(() => new ModelLocator(dir).locate('nothing-added')).toThrow(/voxmill models add/u);
    // The installed models and the folder are the operator's hint, never in the message an HTTP client may read.
    const missing = (() => {
      try {
        new ModelLocator(dir).requireInstalled('svc-stt-1', 'base', 'whisper');
      } catch (error) {
        return error as ModelNotFoundError;
      }
    })();
    expect(missing).toBeInstanceOf(ModelNotFoundError);
    expect(missing?.message).not.toContain('tiny.en-random');
    expect(missing?.hint).toBe(
      `installed speech-to-text models in ${dir}: tiny.en-random (name one as the model; on the command line: -m <id>)`,
    );
    expect(new ModelLocator(dir).installedWhisperModels()).toEqual(['tiny.en-random']);
    // Again under the same id: refused unless forced.
    await expect(addLocalModel(ggml, { dir })).rejects.toMatchObject({ param: 'id' });
    await expect(addLocalModel(ggml, { dir, force: true })).resolves.toMatchObject({ id: 'tiny.en-random' });
    await expect(addLocalModel(ggml, { dir, id: 'mine' })).resolves.toMatchObject({ id: 'mine' });
  });

  it('refuses what is not a whisper model, an id that is a catalog or service id, and a bad id', async () => {
    const dir = scratch();
    const text = join(dir, 'notes.bin');
    writeFileSync(text, 'not a model at all, but long enough to hold a header');
    await expect(addLocalModel(text, { dir })).rejects.toThrow(/^file must be a whisper\.cpp ggml model/u);
    await expect(addLocalModel(ggml, { dir, id: 'base.en' })).rejects.toMatchObject({ param: 'id' });
    await expect(addLocalModel(ggml, { dir, id: 'svc-stt-1' })).rejects.toMatchObject({ param: 'id' });
    await expect(addLocalModel(ggml, { dir, id: '../escape' })).rejects.toMatchObject({ param: 'id' });
    await expect(addLocalModel(join(dir, 'missing.bin'), { dir })).rejects.toMatchObject({ param: 'file' });
    expect(existsSync(join(dir, 'local'))).toBe(false);
  });

  it('adds a Piper voice with its config under its own name; refuses one without a config or an id', async () => {
    const dir = scratch();
    const voice = fixture('voices/en_US-fixture-low.onnx');
    const added = await addLocalModel(voice, { dir });
    expect(added).toMatchObject({
      id: 'en_US-fixture-low',
      kind: 'piper-voice',
      path: join(dir, 'en_US-fixture-low.onnx'),
    });
    expect(readFileSync(join(dir, 'en_US-fixture-low.onnx.json'), 'utf8')).toBe(readFileSync(`${voice}.json`, 'utf8'));
    await expect(addLocalModel(voice, { dir, id: 'x' })).rejects.toMatchObject({ param: 'id' });
    const bare = join(scratch(), 'lonely.onnx');
    writeFileSync(bare, Buffer.from([0x08, 0x07]));
    await expect(addLocalModel(bare, { dir })).rejects.toThrow(/lonely\.onnx\.json/u);
  });
});
