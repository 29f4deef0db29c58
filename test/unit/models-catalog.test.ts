// The packaged catalog is well formed, and a broken catalog is refused with the entry named.
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { InvalidOptionTypeError, InvalidOptionValueError } from '../../src/errors.js';
import {
  catalogDefaults,
  catalogPath,
  catalogVoice,
  findCatalogEntry,
  listCatalog,
  parseCatalog,
  withCompanions,
} from '../../src/models/catalog.js';
import { sharedDir } from '../helpers/paths.js';

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
      // The segmentation model's upstream name is a bare model.onnx (in a repository named for it).
      if (entry.kind === 'speaker-segmentation') expect(entry.url, entry.id).toMatch(/\/model\.onnx$/);
      else expect(entry.url.endsWith(`/${entry.file}`), entry.id).toBe(true);
      const piper = entry.kind === 'piper-voice' || entry.kind === 'piper-config';
      expect(entry.url, entry.id).toMatch(
        entry.kind === 'vad'
          ? /^https:\/\/huggingface\.co\/ggml-org\/whisper-vad\/resolve\/main\//
          : piper
            ? /^https:\/\/huggingface\.co\/rhasspy\/piper-voices\/resolve\/v1\.0\.0\/[a-z]{2}\/[a-z]{2}_[A-Z]{2}\//
            : entry.kind === 'speaker-embedding'
              ? /^https:\/\/github\.com\/k2-fsa\/sherpa-onnx\/releases\/download\/speaker-recongition-models\//
              : entry.kind === 'speaker-segmentation'
                ? /^https:\/\/huggingface\.co\/csukuangfj\/sherpa-onnx-pyannote-segmentation-3-0\/resolve\/[0-9a-f]{40}\//
                : /^https:\/\/huggingface\.co\/ggerganov\/whisper\.cpp\/resolve\/main\//,
      );
      if (entry.kind === 'piper-voice') expect(entry.file, entry.id).toBe(`${entry.id}.onnx`);
      else if (entry.kind === 'piper-config') expect(entry.file, entry.id).toBe(entry.id);
      // Ids cannot hold '+': upstream's CAM++ is spelt CAMpp in its id.
      else if (entry.kind === 'speaker-embedding' || entry.kind === 'speaker-segmentation')
        expect(entry.file.replace('++', 'pp'), entry.id).toBe(`${entry.id}.onnx`);
      else expect(entry.file, entry.id).toBe(`ggml-${entry.id}.bin`);
      if (entry.kind === 'speaker-embedding') expect(entry.embedding, entry.id).toBeDefined();
      else expect(entry.embedding, entry.id).toBeUndefined();
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
    expect(defaults).toEqual({
      'svc-stt-1': 'base',
      'svc-stt-1-flash': 'tiny-q5_1',
      vad: 'silero-v6.2.0',
      'svc-tts-1': 'en_US-lessac-medium',
      'svc-tts-1-flash': 'en_US-lessac-low',
    });
    expect(findCatalogEntry(defaults['svc-tts-1']!)?.kind).toBe('piper-voice');
    expect(findCatalogEntry(defaults['svc-stt-1']!)?.kind).toBe('whisper');
    expect(findCatalogEntry(defaults['svc-stt-1-flash']!)?.kind).toBe('whisper');
    expect(findCatalogEntry(defaults.vad!)?.kind).toBe('vad');
  });

  it('lists the Piper voices of the shared configs with the upstream sizes and sha256, each pulling its config', () => {
    const manifest = JSON.parse(readFileSync(join(sharedDir, 'models', 'MANIFEST.json'), 'utf8')) as Array<{
      file: string;
      bytes: number;
      sha256: string;
      upstream?: { onnx_file: string; onnx_bytes: number; onnx_sha256: string } | null;
    }>;
    const voices = manifest.filter((item) => item.file.startsWith('models/piper/configs-only/'));
    expect(voices.length).toBe(7);
    for (const item of voices) {
      const upstream = item.upstream!;
      const id = upstream.onnx_file.replace(/\.onnx$/, '');
      const model = findCatalogEntry(id);
      expect(model, id).toMatchObject({
        kind: 'piper-voice',
        bytes: upstream.onnx_bytes,
        sha256: upstream.onnx_sha256,
      });
      expect(model?.companions).toEqual([`${id}.onnx.json`]);
      expect(withCompanions(model!).map((e) => e.id)).toEqual([id, `${id}.onnx.json`]);
      expect(findCatalogEntry(`${id}.onnx.json`)).toMatchObject({
        kind: 'piper-config',
        bytes: item.bytes,
        sha256: item.sha256,
      });
      expect(['female', 'male', 'neutral']).toContain(model?.voice?.gender);
      expect(id.startsWith(`${model?.voice?.id}-`)).toBe(true);
    }
    expect(catalogVoice('en_US-lessac')).toMatchObject({ gender: 'female' });
    expect(catalogVoice('de_DE-thorsten')).toMatchObject({ gender: 'male' });
    expect(catalogVoice('en_US-libritts_r')).toMatchObject({ gender: 'neutral' });
  });

  it('lists sherpa-onnx speaker-embedding models with their fbank contract, sizes and sha256', () => {
    const embedders = entries.filter((e) => e.kind === 'speaker-embedding');
    const facts = Object.fromEntries(
      embedders.map((e) => [e.file, { bytes: e.bytes, sha256: e.sha256, dim: e.embedding?.dim }]),
    );
    expect(facts).toEqual({
      'wespeaker_en_voxceleb_resnet34.onnx': {
        bytes: 26_534_365,
        sha256: '5ef208a9da1453335308a6b6f4e6dfbd7e183a38b604de0a57664f45d257fe94',
        dim: 256,
      },
      'wespeaker_en_voxceleb_resnet34_LM.onnx': {
        bytes: 26_530_550,
        sha256: 'e9848563da86f263117134dfd7ad63c92355b37de492b55e325400c9d9c39012',
        dim: 256,
      },
      'wespeaker_en_voxceleb_CAM++.onnx': {
        bytes: 29_292_684,
        sha256: 'c46fad10b5f81e1aa4a60c162714208577093655076c5450f8c469e522ec54ef',
        dim: 512,
      },
      '3dspeaker_speech_campplus_sv_en_voxceleb_16k.onnx': {
        bytes: 29_596_978,
        sha256: '357a834f702b80161e5b981182c038e18553c1f2ca752ed6cec2052365d4129b',
        dim: 512,
      },
      '3dspeaker_speech_eres2net_sv_en_voxceleb_16k.onnx': {
        bytes: 26_485_263,
        sha256: 'c59158379255ad66e161679cca6af8d52d51e389e3224ab7d7a7baae295c2db5',
        dim: 192,
      },
      '3dspeaker_speech_campplus_sv_zh_en_16k-common_advanced.onnx': {
        bytes: 28_281_164,
        sha256: 'aa3cfc16963a10586a9393f5035d6d6b57e98d358b347f80c2a30bf4f00ceba2',
        dim: 192,
      },
      '3dspeaker_speech_eres2net_base_sv_zh-cn_3dspeaker_16k.onnx': {
        bytes: 39_593_761,
        sha256: '1a331345f04805badbb495c775a6ddffcdd1a732567d5ec8b3d5749e3c7a5e4b',
        dim: 512,
      },
    });
    for (const entry of embedders) {
      expect(entry.embedding, entry.id).toMatchObject({ sampleRate: 16000, featureDim: 80 });
      // The description carries the tensor names and the embedding size.
      expect(entry.description, entry.id).toMatch(/Input `(feats|x)` float32 \[N, T, 80\]/);
      expect(entry.description, entry.id).toContain(`[N, ${entry.embedding?.dim}]`);
    }
    // TitaNet takes [N, 80, T] plus a length: not this contract, so not listed.
    expect(embedders.some((e) => e.file.includes('titanet'))).toBe(false);
    expect(findCatalogEntry('wespeaker_en_voxceleb_CAMpp')?.url).toMatch(/\/wespeaker_en_voxceleb_CAM\+\+\.onnx$/);
  });

  it('gives speaker-embedding models no service default', () => {
    for (const id of Object.values(catalogDefaults())) {
      expect(findCatalogEntry(id)?.kind, id).not.toBe('speaker-embedding');
    }
  });

  it('lists pyannote segmentation-3.0 (sherpa-onnx export, pinned revision) with its sha256 and licence', () => {
    const entry = findCatalogEntry('pyannote-segmentation-3.0');
    expect(entry).toMatchObject({
      kind: 'speaker-segmentation',
      file: 'pyannote-segmentation-3.0.onnx',
      bytes: 5992913,
      sha256: '220ad67ca923bef2fa91f2390c786097bf305bceb5e261d4af67b38e938e1079',
      license: 'MIT',
    });
    expect(entry?.url).toMatch(/\/resolve\/[0-9a-f]{40}\/model\.onnx$/);
    // The diarization default's embedding model (the same 3D-Speaker CAM++ that models:test converts) says its licence.
    expect(findCatalogEntry('3dspeaker_speech_campplus_sv_zh_en_16k-common_advanced')?.license).toBe('Apache-2.0');
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

  it('refuses companions that are not catalog ids and Piper voices without voice facts', () => {
    const dangling = rawCatalog();
    const voiceIndex = dangling.models.findIndex((m) => m.kind === 'piper-voice');
    dangling.models[voiceIndex] = { ...dangling.models[voiceIndex], companions: ['nope.onnx.json'] };
    expect(() => parseCatalog(dangling)).toThrow(/companions/);
    const noFacts = rawCatalog();
    noFacts.models[voiceIndex] = { ...noFacts.models[voiceIndex], voice: undefined };
    expect(() => parseCatalog(noFacts)).toThrow(/\.voice/);
    const badGender = rawCatalog();
    badGender.models[voiceIndex] = {
      ...badGender.models[voiceIndex],
      voice: { id: 'x', quality: 'low', gender: 'robot' },
    };
    expect(() => parseCatalog(badGender)).toThrow(/voice\.gender/);
  });

  it('takes an optional licence, a non-empty string', () => {
    const doc = rawCatalog();
    doc.models[0] = { ...doc.models[0], license: 7 };
    expect(() => parseCatalog(doc)).toThrow(/\.license must be a licence id/);
    doc.models[0] = { ...doc.models[0], license: 'MIT' };
    expect(parseCatalog(doc).models[0]?.license).toBe('MIT');
  });

  it('requires a valid embedding contract on speaker-embedding entries', () => {
    const index = rawCatalog().models.findIndex((m) => m.kind === 'speaker-embedding');
    const id = rawCatalog().models[index]!.id as string;
    const withEmbedding = (embedding: unknown) => {
      const doc = rawCatalog();
      doc.models[index] = { ...doc.models[index], embedding };
      return doc;
    };
    expect(() => parseCatalog(withEmbedding(undefined))).toThrow(InvalidOptionTypeError);
    expect(() => parseCatalog(withEmbedding(undefined))).toThrow(new RegExp(`\\("${id}"\\)\\.embedding`));
    expect(() => parseCatalog(withEmbedding('256'))).toThrow(/\.embedding must be an object/);
    const good = { sampleRate: 16000, featureDim: 80, dim: 256 };
    expect(parseCatalog(withEmbedding(good)).models[index]?.embedding).toEqual(good);
    for (const [field, value] of [
      ['dim', 0],
      ['dim', 25.6],
      ['dim', '256'],
      ['featureDim', undefined],
      ['sampleRate', 16],
    ] as const) {
      expect(() => parseCatalog(withEmbedding({ ...good, [field]: value })), `${field}=${value}`).toThrow(
        new RegExp(`\\.embedding\\.${field} must be an integer`),
      );
    }
    // A '+' is allowed in file names (upstream CAM++), not in ids.
    const plusId = rawCatalog();
    plusId.models[index] = { ...plusId.models[index], id: 'CAM++' };
    expect(() => parseCatalog(plusId)).toThrow(/\.id must be/);
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
