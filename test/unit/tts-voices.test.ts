// Voice discovery: configs are validated with the file named, voices are grouped by quality, multi-speaker
// voices list every speaker, and resolution picks the variant the model id asks for.
import { mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { VoiceConfigError, VoiceNotFoundError } from '../../src/errors.js';
import { parseVoiceConfig } from '../../src/tts/voice-config.js';
import { resolveVoice, VoiceDirectoryScanner, voicesOf } from '../../src/tts/voices.js';
import { sharedModel } from '../helpers/paths.js';

const configsOnly = sharedModel('piper/configs-only');
const realConfig = (name: string): Record<string, unknown> =>
  JSON.parse(readFileSync(join(configsOnly, `${name}.onnx.json`), 'utf8'));

const temp = mkdtempSync(join(tmpdir(), 'voxmill-voices-'));
afterAll(() => rmSync(temp, { recursive: true, force: true }));

function voiceDir(files: Record<string, string | object>): string {
  const dir = mkdtempSync(join(temp, 'dir-'));
  for (const [name, content] of Object.entries(files)) {
    writeFileSync(join(dir, name), typeof content === 'string' ? content : JSON.stringify(content));
  }
  return dir;
}

describe('the shared upstream configs (configs-only)', () => {
  it('list the 904 + 109 speaker voices and the four single-speaker voices with their languages', async () => {
    const { variants } = await new VoiceDirectoryScanner([configsOnly]).scan();
    const voices = voicesOf(variants, () => undefined);
    const libritts = voices.filter((v) => v.id.startsWith('en_US-libritts_r#'));
    const vctk = voices.filter((v) => v.id.startsWith('en_GB-vctk#'));
    expect(libritts.length).toBe(904);
    expect(vctk.length).toBe(109);
    expect(new Set(libritts.map((v) => v.id)).size).toBe(904);
    expect(libritts.every((v) => v.languages.join() === 'en-US')).toBe(true);
    expect(vctk.every((v) => v.languages.join() === 'en-GB')).toBe(true);
    expect(vctk.map((v) => v.id)).toContain('en_GB-vctk#p239');
    const single = voices.filter((v) => !v.id.includes('#'));
    expect(single.map((v) => [v.id, v.languages[0]]).sort()).toEqual([
      ['de_DE-thorsten', 'de-DE'],
      ['en_US-lessac', 'en-US'],
      ['es_ES-carlfm', 'es-ES'],
      ['fr_FR-siwis', 'fr-FR'],
    ]);
    expect(voices.length).toBe(904 + 109 + 4);
    for (const voice of voices) {
      expect(voice.styles).toEqual([]);
      expect(['female', 'male', 'neutral']).toContain(voice.gender);
      expect(voice.name.length).toBeGreaterThan(0);
    }
  });

  it('group lessac low and medium into one voice; svc-tts-1 takes medium, svc-tts-1-flash low', async () => {
    const dir = voiceDir({
      'en_US-lessac-low.onnx.json': realConfig('en_US-lessac-low'),
      'en_US-lessac-low.onnx': 'model',
      'en_US-lessac-medium.onnx.json': realConfig('en_US-lessac-medium'),
      'en_US-lessac-medium.onnx': 'model',
    });
    const { variants, problems } = await new VoiceDirectoryScanner([dir]).scan();
    expect(problems).toEqual([]);
    expect(voicesOf(variants, () => ({ gender: 'female' }))).toEqual([
      { id: 'en_US-lessac', name: 'Lessac (en-US)', languages: ['en-US'], styles: [], gender: 'female' },
    ]);
    expect(resolveVoice(variants, 'en_US-lessac', 'best').variant.variantId).toBe('en_US-lessac-medium');
    expect(resolveVoice(variants, 'en_US-lessac', 'fastest').variant.variantId).toBe('en_US-lessac-low');
    // One quality by its file name, whatever the tier prefers; a near miss names the voice id.
    expect(resolveVoice(variants, 'en_US-lessac-low', 'best').variant.variantId).toBe('en_US-lessac-low');
    expect(() => resolveVoice(variants, 'lessac', 'best')).toThrow(/"lessac" \(did you mean "en_US-lessac"\?\)/u);
  });

  it('report a config without its model as a problem naming the missing file, and do not resolve it', async () => {
    const { variants, problems } = await new VoiceDirectoryScanner([configsOnly]).scan();
    expect(problems.length).toBe(7);
    expect(problems.every((p) => p instanceof VoiceConfigError && p.file.endsWith('.onnx'))).toBe(true);
    expect(() => resolveVoice(variants, 'en_US-lessac', 'best')).toThrow(VoiceNotFoundError);
    expect(() => resolveVoice(variants, 'en_US-lessac', 'best')).toThrow(/voxmill models pull en_US-lessac-medium/);
  });
});

describe('speakers', () => {
  const dir = voiceDir({
    'en_GB-vctk-medium.onnx.json': realConfig('en_GB-vctk-medium'),
    'en_GB-vctk-medium.onnx': 'model',
  });

  it('resolve <voice>#<speaker> to the sid of speaker_id_map', async () => {
    const { variants } = await new VoiceDirectoryScanner([dir]).scan();
    expect(resolveVoice(variants, 'en_GB-vctk#p239', 'best').sid).toBe(0);
    expect(resolveVoice(variants, 'en_GB-vctk#p236', 'best').sid).toBe(1);
    // The bare voice id means the first speaker.
    expect(resolveVoice(variants, 'en_GB-vctk', 'best').sid).toBe(0);
    expect(() => resolveVoice(variants, 'en_GB-vctk#nobody', 'best')).toThrow(/no speaker "nobody"/);
    expect(() => resolveVoice(variants, 'en_GB-vctk#P239x', 'best')).toThrow(
      /no speaker "P239x" \(did you mean "p239"/u,
    );
  });

  it('take curated genders per speaker when the catalog has them', async () => {
    const { variants } = await new VoiceDirectoryScanner([dir]).scan();
    const voices = voicesOf(variants, () => ({ gender: 'neutral', speakerGenders: { p239: 'female' } }));
    expect(voices.find((v) => v.id === 'en_GB-vctk#p239')?.gender).toBe('female');
    expect(voices.find((v) => v.id === 'en_GB-vctk#p236')?.gender).toBe('neutral');
  });
});

describe('broken voice files', () => {
  it('are typed errors naming the file, and the good voices beside them still list', async () => {
    const broken = realConfig('en_US-lessac-low');
    const dir = voiceDir({
      'good-low.onnx.json': realConfig('en_US-lessac-low'),
      'good-low.onnx': 'model',
      'notjson-low.onnx.json': '{ this is not json',
      'notjson-low.onnx': 'model',
      'orphan-low.onnx': 'model',
      'nopad-low.onnx.json': { ...broken, phoneme_id_map: { '^': [1], $: [2] } },
      'nopad-low.onnx': 'model',
      // voxmill's word-timing copy of a voice (duration-output.ts): hidden, neither a voice nor a problem.
      '.good-low.onnx.timed-0123456789abcdef.onnx': 'model',
    });
    const { variants, problems } = await new VoiceDirectoryScanner([dir]).scan();
    expect(variants.map((v) => v.variantId)).toEqual(['good-low']);
    const byFile = new Map(problems.map((p) => [p.file.slice(dir.length + 1), p.message]));
    expect(byFile.get('notjson-low.onnx.json')).toMatch(/not valid JSON/);
    expect(byFile.get('orphan-low.onnx.json')).toMatch(/no Piper config/);
    expect(byFile.get('nopad-low.onnx.json')).toMatch(/"_"/);
    expect(problems).toHaveLength(3);
  });

  it('re-read a config only when it changed', async () => {
    const dir = voiceDir({ 'v-low.onnx.json': realConfig('en_US-lessac-low'), 'v-low.onnx': 'model' });
    const scanner = new VoiceDirectoryScanner([dir]);
    expect((await scanner.scan()).problems).toEqual([]);
    writeFileSync(join(dir, 'v-low.onnx.json'), '[]');
    utimesSync(join(dir, 'v-low.onnx.json'), new Date(), new Date(Date.now() + 5000));
    expect((await scanner.scan()).problems[0]?.message).toMatch(/not a JSON object/);
  });

  it('a missing voice directory is not a problem (nothing pulled yet)', async () => {
    const { variants, problems } = await new VoiceDirectoryScanner([join(temp, 'does-not-exist')]).scan();
    expect(variants).toEqual([]);
    expect(problems).toEqual([]);
  });
});

describe('parseVoiceConfig', () => {
  const base = realConfig('en_US-lessac-medium');
  const rejects = (change: Record<string, unknown>, pattern: RegExp) => {
    expect(() => parseVoiceConfig({ ...base, ...change }, '/v/x.onnx.json')).toThrow(pattern);
    expect(() => parseVoiceConfig({ ...base, ...change }, '/v/x.onnx.json')).toThrow(/^\/v\/x\.onnx\.json: /);
  };

  it('reads the fields synthesis needs from a real config', () => {
    const config = parseVoiceConfig(base, 'x');
    expect(config).toMatchObject({
      sampleRate: 22050,
      quality: 'medium',
      espeakVoice: 'en-us',
      languageCode: 'en_US',
      noiseScale: 0.667,
      lengthScale: 1,
      noiseW: 0.8,
      sentenceSilenceSeconds: 0.2,
      numSpeakers: 1,
    });
    expect(config.phonemeIdMap.get('ə'.codePointAt(0)!)).toEqual([59]);
    expect(config.speakers.size).toBe(0);
  });

  it('refuses what would make a broken voice', () => {
    rejects({ audio: { sample_rate: 'fast' } }, /audio\.sample_rate/);
    rejects({ audio: { sample_rate: 22050, quality: 'ultra' } }, /audio\.quality/);
    rejects({ espeak: { voice: '../../etc' } }, /espeak\.voice/);
    rejects({ phoneme_type: 'text' }, /phoneme_type/);
    rejects({ phoneme_id_map: { _: [0], '^': [1], $: [2], a: [999] } }, /outside the model's 256 symbols/);
    rejects({ phoneme_id_map: { _: [0], '^': [1], $: [2], a: [] } }, /non-empty array/);
    rejects({ inference: { noise_scale: 0.6, length_scale: -1, noise_w: 0.8 } }, /length_scale/);
    rejects({ num_speakers: 2, speaker_id_map: { a: 0, b: 2 } }, /outside 0\.\.1/);
    rejects({ num_speakers: 0 }, /num_speakers/);
    expect(() => parseVoiceConfig('nope', 'f')).toThrow(VoiceConfigError);
  });

  it('numbers the speakers of a multi-speaker config without names', () => {
    const config = parseVoiceConfig({ ...base, num_speakers: 3, speaker_id_map: {} }, 'x');
    expect([...config.speakers]).toEqual([
      ['0', 0],
      ['1', 1],
      ['2', 2],
    ]);
  });
});
