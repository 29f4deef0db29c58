// The small pieces of the HTTP layer: container sniffing, key matching, the OpenAPI document, the serve config.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Validator } from '@seriousme/openapi-schema-validator';
import { describe, expect, it } from 'vitest';
import { SPEC_SPEECH_FORMATS } from '../../src/audio/formats.js';
import { apiKeysFromEnv, parseServeConfig } from '../../src/cli/serve-config.js';
import { sniffAudioContainer } from '../../src/http/audio-sniff.js';
import { keyMatcher } from '../../src/http/auth.js';
import { OPENAPI_DOCUMENT_URL } from '../../src/http/routes/openapi.js';
import { SPEECH_SAMPLE_RATES, TTS_MODEL_IDS } from '../../src/index.js';
import { AUDIO_HEADS } from '../helpers/fake-speech-engine.js';
import { sharedAudio } from '../helpers/paths.js';

describe('sniffAudioContainer', () => {
  it.each([
    ['jfk.wav', 'wav'],
    ['jfk.mp3', 'mp3'],
    ['jfk.flac', 'flac'],
    ['jfk.ogg', 'ogg'],
    ['jfk.opus', 'ogg'],
    ['LJ001-0002.mp3', 'mp3'],
    ['gaenswein15.mp3', 'mp3'],
  ])('tells %s is %s from its bytes', (file, container) => {
    expect(sniffAudioContainer(readFileSync(sharedAudio(file)).subarray(0, 12))).toBe(container);
  });

  it('tells m4a, webm, bare mp3 frames and ADTS AAC apart, and refuses the rest', () => {
    expect(sniffAudioContainer(AUDIO_HEADS.m4a)).toBe('m4a');
    expect(sniffAudioContainer(AUDIO_HEADS.webm)).toBe('webm');
    expect(sniffAudioContainer(Buffer.from([0xff, 0xfb, 0x90, 0x64]))).toBe('mp3');
    expect(sniffAudioContainer(Buffer.from([0xff, 0xf1, 0x50, 0x80]))).toBe('aac');
    expect(sniffAudioContainer(Buffer.from('RIFF\0\0\0\0AVI LIST', 'latin1'))).toBeUndefined();
    expect(sniffAudioContainer(Buffer.from('%PDF-1.7 xxxxxx'))).toBeUndefined();
    expect(sniffAudioContainer(Buffer.alloc(0))).toBeUndefined();
  });
});

describe('keyMatcher', () => {
  it('matches exactly one of the keys, whatever their lengths, and says which', () => {
    const matches = keyMatcher(['short', 'a-much-longer-key-of-another-length']);
    expect(matches('short')).toBe(0);
    expect(matches('a-much-longer-key-of-another-length')).toBe(1);
    for (const wrong of ['shor', 'shortt', 'SHORT', '', 'a-much-longer-key-of-another-lengt']) {
      expect(matches(wrong), wrong).toBe(-1);
    }
  });
});

describe('openapi.json', () => {
  const document = JSON.parse(readFileSync(OPENAPI_DOCUMENT_URL, 'utf8'));

  it('is a valid OpenAPI 3.1 document', async () => {
    const validator = new Validator();
    const result = await validator.validate(join(new URL('.', OPENAPI_DOCUMENT_URL).pathname, 'openapi.json'));
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
  });

  it("lists the library's own models, formats and sample rates", () => {
    const speech = document.components.schemas.SpeechRequest.properties;
    expect(speech.model.enum).toEqual([...TTS_MODEL_IDS]);
    expect(speech.format.enum).toEqual([...SPEC_SPEECH_FORMATS]);
    expect(speech.sample_rate.enum).toEqual([...SPEECH_SAMPLE_RATES]);
  });
});

describe('serve config', () => {
  it('splits server keys from createSpeech options', () => {
    const config = parseServeConfig({
      apiKeys: ['k'],
      port: 9000,
      host: '0.0.0.0',
      http: { limits: { maxFileBytes: 10 } },
      threads: 2,
      models: { 'svc-stt-1': 'base.en' },
    });
    expect(config).toEqual({
      apiKeys: ['k'],
      port: 9000,
      host: '0.0.0.0',
      http: { limits: { maxFileBytes: 10 } },
      speech: { threads: 2, models: { 'svc-stt-1': 'base.en' } },
    });
  });

  it('names the key at fault', () => {
    expect(() => parseServeConfig([])).toThrow(/^config must be a JSON object/);
    expect(() => parseServeConfig({ port: 70000 })).toThrow(/^port must be between 0 and 65535/);
    expect(() => parseServeConfig({ apiKeys: 'k' })).toThrow(/^apiKeys must be/);
    expect(() => parseServeConfig({ apiKeys: [''] })).toThrow(/^apiKeys must be/);
    expect(() => parseServeConfig({ http: { limit: {} } })).toThrow(/http\.limit/);
    expect(() => parseServeConfig({ host: ' ' })).toThrow(/^host must be an address/);
    expect(parseServeConfig({ tls: { cert: 'c.pem', key: 'k.pem' } }).tls).toEqual({ cert: 'c.pem', key: 'k.pem' });
    expect(() => parseServeConfig({ tls: { cert: 'c.pem' } })).toThrow(/^tls must be both \{ cert, key \}/);
    expect(() => parseServeConfig({ tls: { cert: 'c.pem', key: 'k.pem', ca: 'x' } })).toThrow(/tls\.ca/);
  });

  it('reads VOXMILL_API_KEYS as a comma-separated list', () => {
    expect(apiKeysFromEnv(undefined)).toBeUndefined();
    expect(apiKeysFromEnv(' a, b ,,c ')).toEqual(['a', 'b', 'c']);
    expect(apiKeysFromEnv('')).toBeUndefined();
    expect(apiKeysFromEnv(' , ')).toBeUndefined();
  });
});
