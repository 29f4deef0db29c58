// The packaged catalog is well formed, and a broken catalog is refused with the entry named.
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { InvalidOptionTypeError, InvalidOptionValueError } from '../../src/errors.js';
import { catalogDefaults, catalogPath, findCatalogEntry, listCatalog, parseCatalog } from '../../src/models/catalog.js';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const rawCatalog = (): { models: Record<string, unknown>[]; defaults: Record<string, string> } =>
  JSON.parse(readFileSync(join(repoRoot, 'models', 'catalog.json'), 'utf8'));

describe('packaged catalog', () => {
  const entries = listCatalog();

  it('is found at <package root>/models/catalog.json', () => {
    expect(catalogPath()).toBe(join(repoRoot, 'models', 'catalog.json'));
  });

  it('lists the tiny, base and small whisper models with their q5_1 and q8_0 variants, and two Silero VADs', () => {
    const ids = entries.map((entry) => entry.id);
    for (const size of ['tiny', 'base', 'small']) {
      for (const language of ['', '.en']) {
        for (const variant of ['', '-q5_1', '-q8_0']) expect(ids).toContain(`${size}${language}${variant}`);
      }
    }
    expect(ids).toContain('silero-v6.2.0');
    expect(ids).toContain('silero-v5.1.2');
  });

  it('has a well-formed url, file, size and digest for every entry', () => {
    for (const entry of entries) {
      expect(entry.url.endsWith(`/${entry.file}`), entry.id).toBe(true);
      expect(entry.url, entry.id).toMatch(
        entry.kind === 'vad'
          ? /^https:\/\/huggingface\.co\/ggml-org\/whisper-vad\/resolve\/main\//
          : /^https:\/\/huggingface\.co\/ggerganov\/whisper\.cpp\/resolve\/main\//,
      );
      expect(entry.file, entry.id).toBe(`ggml-${entry.id}.bin`);
      expect(Number.isSafeInteger(entry.bytes) && entry.bytes > 0, entry.id).toBe(true);
      expect(entry.sha256 === null || /^[0-9a-f]{64}$/.test(entry.sha256), entry.id).toBe(true);
      if (entry.sha1 != null) expect(entry.sha1, entry.id).toMatch(/^[0-9a-f]{40}$/);
      expect(entry.description.length, entry.id).toBeGreaterThan(0);
    }
  });

  it('marks English-only whisper models as not multilingual', () => {
    for (const entry of entries.filter((e) => e.kind === 'whisper')) {
      expect(entry.multilingual, entry.id).toBe(!entry.id.includes('.en'));
    }
  });

  it('has unique ids, files and digests', () => {
    const unique = (values: unknown[]): number => new Set(values).size;
    expect(unique(entries.map((e) => e.id))).toBe(entries.length);
    expect(unique(entries.map((e) => e.file))).toBe(entries.length);
    const digests = entries.map((e) => e.sha256).filter((d) => d !== null);
    expect(unique(digests)).toBe(digests.length);
  });

  it('records the reference hashes and sizes of the shared test-data README', () => {
    expect(findCatalogEntry('tiny.en')).toMatchObject({
      bytes: 77_704_715,
      sha256: '921e4cf8686fdd993dcd081a5da5b6c365bfde1162e72b08d75ac75289920b1f',
      sha1: 'c78c86eb1a8faa21b369bcd33207cc90d64ae9df',
    });
    expect(findCatalogEntry('silero-v6.2.0')).toMatchObject({
      bytes: 885_098,
      sha256: '2aa269b785eeb53a82983a20501ddf7c1d9c48e33ab63a41391ac6c9f7fb6987',
    });
  });

  it('maps the service ids to existing entries of the right kind', () => {
    const defaults = catalogDefaults();
    expect(defaults).toEqual({ 'svc-stt-1': 'base', 'svc-stt-1-flash': 'tiny-q5_1', vad: 'silero-v6.2.0' });
    expect(findCatalogEntry(defaults['svc-stt-1']!)?.kind).toBe('whisper');
    expect(findCatalogEntry(defaults['svc-stt-1-flash']!)?.kind).toBe('whisper');
    expect(findCatalogEntry(defaults.vad!)?.kind).toBe('vad');
  });

  it('returns undefined for an id it does not have', () => {
    expect(findCatalogEntry('large-v9')).toBeUndefined();
  });
});

describe('parseCatalog', () => {
  it('accepts the packaged document', () => {
    expect(parseCatalog(rawCatalog()).models.length).toBe(listCatalog().length);
  });

  it('names the entry and field of a malformed sha256', () => {
    const doc = rawCatalog();
    doc.models[1] = { ...doc.models[1], sha256: 'ABC' };
    expect(() => parseCatalog(doc, 'catalog.json')).toThrow(InvalidOptionValueError);
    expect(() => parseCatalog(doc, 'catalog.json')).toThrow(/catalog\.json: models\[1\] \("tiny-q5_1"\)\.sha256/);
  });

  it('requires sha256 to be present, even if null', () => {
    const doc = rawCatalog();
    const { sha256: _dropped, ...rest } = doc.models[0]!;
    doc.models[0] = rest;
    expect(() => parseCatalog(doc)).toThrow(/\("tiny"\)\.sha256/);
  });

  it('refuses non-positive sizes, non-http URLs, path-like file names and unknown kinds', () => {
    const broken: Record<string, unknown>[] = [
      { bytes: 0 },
      { bytes: 1.5 },
      { url: 'ftp://example.com/x.bin' },
      { file: 'dir/ggml-tiny.bin' },
      { file: '.hidden' },
      { kind: 'tts' },
    ];
    for (const change of broken) {
      const doc = rawCatalog();
      doc.models[0] = { ...doc.models[0], ...change };
      expect(() => parseCatalog(doc), JSON.stringify(change)).toThrow(/models\[0\] \("tiny"\)/);
    }
  });

  it('requires multilingual on whisper entries', () => {
    const doc = rawCatalog();
    const { multilingual: _dropped, ...rest } = doc.models[0]!;
    doc.models[0] = rest;
    expect(() => parseCatalog(doc)).toThrow(InvalidOptionTypeError);
  });

  it('refuses duplicate ids and defaults that point nowhere', () => {
    const duplicated = rawCatalog();
    duplicated.models.push({ ...duplicated.models[0], file: 'ggml-other.bin' });
    expect(() => parseCatalog(duplicated)).toThrow(/duplicate id/);

    const dangling = rawCatalog();
    dangling.defaults['svc-stt-1'] = 'medium';
    expect(() => parseCatalog(dangling)).toThrow(/defaults\["svc-stt-1"\]/);
  });
});
