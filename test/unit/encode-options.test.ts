import { describe, expect, it } from 'vitest';
import {
  checkSampleRate,
  contentTypeOf,
  defaultSampleRate,
  isSpeechFormat,
  OPUS_SAMPLE_RATES,
  SPEECH_FORMATS,
  SPEECH_SAMPLE_RATES,
  sampleRatesOf,
} from '../../src/audio/formats.js';
import { InvalidOptionTypeError, InvalidOptionValueError } from '../../src/errors.js';

describe('speech formats', () => {
  it('lists the six formats and recognises only them', () => {
    expect([...SPEECH_FORMATS]).toEqual(['mp3', 'wav', 'opus', 'pcm16', 'aac', 'flac']);
    for (const format of SPEECH_FORMATS) expect(isSpeechFormat(format)).toBe(true);
    for (const other of ['MP3', 'ogg', 'm4a', '', 3, null]) expect(isSpeechFormat(other)).toBe(false);
  });

  it('names the content type of each, pcm16 with its rate', () => {
    expect(contentTypeOf('mp3', 22050)).toBe('audio/mpeg');
    expect(contentTypeOf('wav', 22050)).toBe('audio/wav');
    expect(contentTypeOf('opus', 24000)).toBe('audio/ogg; codecs=opus');
    expect(contentTypeOf('pcm16', 22050)).toBe('audio/L16; rate=22050; channels=1');
    expect(contentTypeOf('pcm16', 8000)).toBe('audio/L16; rate=8000; channels=1');
  });

  it('offers Opus only the rates both lists share', () => {
    expect(sampleRatesOf('opus')).toEqual([8000, 16000, 24000, 48000]);
    expect(sampleRatesOf('mp3')).toEqual([...SPEECH_SAMPLE_RATES]);
    expect(OPUS_SAMPLE_RATES).toContain(12000);
  });
});

describe('defaultSampleRate', () => {
  it("keeps the voice's rate where the format carries it", () => {
    for (const format of ['mp3', 'wav', 'pcm16'] as const) {
      expect(defaultSampleRate(format, 22050)).toBe(22050);
      expect(defaultSampleRate(format, 16000)).toBe(16000);
    }
    expect(defaultSampleRate('opus', 16000)).toBe(16000);
    expect(defaultSampleRate('opus', 24000)).toBe(24000);
  });

  it('moves Opus up to the next rate it has', () => {
    expect(defaultSampleRate('opus', 22050)).toBe(24000);
    expect(defaultSampleRate('opus', 44100)).toBe(48000);
    expect(defaultSampleRate('opus', 11025)).toBe(16000);
  });

  it('caps at 48000 and rounds odd voice rates up', () => {
    expect(defaultSampleRate('opus', 96000)).toBe(48000);
    expect(defaultSampleRate('mp3', 96000)).toBe(48000);
    expect(defaultSampleRate('wav', 11025)).toBe(16000);
  });
});

describe('checkSampleRate', () => {
  it('accepts every offered rate, and Opus its own', () => {
    for (const rate of SPEECH_SAMPLE_RATES) expect(checkSampleRate('mp3', rate)).toBe(rate);
    for (const rate of [8000, 16000, 24000, 48000]) expect(checkSampleRate('opus', rate)).toBe(rate);
  });

  it.each([
    ['wav', 11025],
    ['pcm16', 96000],
    ['mp3', 22050.5],
    ['mp3', 0],
  ] as const)('refuses %s at %s Hz with InvalidOptionValueError', (format, rate) => {
    expect(() => checkSampleRate(format, rate)).toThrow(InvalidOptionValueError);
  });

  it.each([22050, 44100, 12000])('refuses opus at %s Hz and says why', (rate) => {
    let caught: unknown;
    try {
      checkSampleRate('opus', rate, 'sample_rate');
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(InvalidOptionValueError);
    const error = caught as InvalidOptionValueError;
    expect(error.param).toBe('sample_rate');
    expect(error.received).toBe(rate);
    expect(error.message).toContain('8000, 16000, 24000, 48000');
    expect(error.message).toMatch(/Opus has no 22050 or 44100/);
  });

  it('refuses non-numbers with InvalidOptionTypeError, naming the parameter', () => {
    for (const value of ['22050', null, undefined, Number.NaN]) {
      expect(() => checkSampleRate('wav', value)).toThrow(InvalidOptionTypeError);
    }
    expect(() => checkSampleRate('wav', '16000')).toThrow(/^sampleRate must be a number/);
  });
});
