// The OpenAI-compatible surface without the addon: model and voice names, language names, segment decoding facts
// and every response_format's body.
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_OPENAI_MODELS,
  modelIdFor,
  OPENAI_VOICE_NAMES,
  resolveOpenAiOptions,
  voiceIdFor,
} from '../../src/http/openai/openai-options.js';
import { renderOpenAiTranscription } from '../../src/http/openai/transcription-responses.js';
import type { NativeSegment } from '../../src/native.js';
import { languageName, whisperLanguages } from '../../src/stt/languages.js';
import { compressionRatio, segmentDecoding } from '../../src/stt/segment-decoding.js';
import type { Transcription } from '../../src/stt/types.js';

describe('OpenAI names', () => {
  it('maps OpenAI model names to tiers, merges configured ones over the defaults, and validates them', () => {
    const defaults = resolveOpenAiOptions(undefined);
    const served = ['svc-stt-1', 'svc-stt-1-flash'];
    expect(modelIdFor(defaults, 'whisper-1', served)).toBe('svc-stt-1');
    expect(modelIdFor(defaults, 'tts-1', served)).toBe('svc-tts-1-flash');
    expect(modelIdFor(defaults, 'svc-stt-1-flash', served)).toBe('svc-stt-1-flash');
    // A model configured under an OpenAI name is served as itself.
    expect(modelIdFor(defaults, 'whisper-1', [...served, 'whisper-1'])).toBe('whisper-1');
    const custom = resolveOpenAiOptions({ models: { 'whisper-1': 'svc-stt-1-flash', mine: 'svc-stt-1' } });
    expect(custom.models).toEqual({ ...DEFAULT_OPENAI_MODELS, 'whisper-1': 'svc-stt-1-flash', mine: 'svc-stt-1' });
    expect(() => resolveOpenAiOptions({ models: { 'whisper-1': 3 } })).toThrow(/openai\.models\.whisper-1/);
    expect(() => resolveOpenAiOptions({ voice: {} })).toThrow(/openai\.voice/);
    expect(() => resolveOpenAiOptions('yes')).toThrow(/openai/);
  });

  it('gives each OpenAI voice name an installed voice in turn, unless the table or an installed id says', () => {
    const options = resolveOpenAiOptions({ voices: { nova: 'en_US-b' } });
    const installed = ['en_US-a', 'en_US-b', 'en_US-c'];
    expect(voiceIdFor(options, 'alloy', installed)).toBe('en_US-a');
    expect(voiceIdFor(options, 'ash', installed)).toBe('en_US-b');
    expect(voiceIdFor(options, 'ballad', installed)).toBe('en_US-c');
    expect(voiceIdFor(options, 'coral', installed)).toBe('en_US-a');
    expect(voiceIdFor(options, 'nova', installed)).toBe('en_US-b');
    expect(voiceIdFor(options, 'en_US-c', installed)).toBe('en_US-c');
    expect(voiceIdFor(options, 'someone', installed)).toBe('someone');
    expect(voiceIdFor(options, 'alloy', [])).toBe('alloy');
    expect(OPENAI_VOICE_NAMES).toHaveLength(13);
  });

  it('names every whisper language in English, as verbose_json reports it', () => {
    expect(languageName('en')).toBe('english');
    expect(languageName('yue')).toBe('cantonese');
    expect(languageName('und')).toBe('und');
    expect(whisperLanguages).toHaveLength(100);
    for (const code of whisperLanguages) expect(languageName(code)).toMatch(/^[a-z ]+$/u);
  });
});

const token = (id: number, p: number, special = false) => ({
  id,
  p,
  start: 0,
  end: 0,
  dtw: -1,
  special,
  byteLength: 1,
});

describe('segment decoding', () => {
  it('averages the log probability of text tokens only and keeps their ids', () => {
    const native: NativeSegment = {
      start: 0,
      end: 1,
      text: ' Hello',
      speakerTurnNext: false,
      noSpeechProb: 0.25,
      // "[_BEG_]", " Hel", "lo", "[_TT_50]": bytes back to back, special tokens' included.
      tokenBytes: Buffer.from('[_BEG_] Hello[_TT_50]'),
      tokens: [
        { ...token(50364, 0.01, true), byteLength: 7 },
        { ...token(15947, 0.5), byteLength: 4 },
        { ...token(11, 0.25), byteLength: 2 },
        { ...token(50414, 0.9, true), byteLength: 8 },
      ],
    };
    const decoding = segmentDecoding(native, 'Hello');
    expect(decoding.tokens).toEqual([15947, 11]);
    expect(decoding.tokenLogprobs).toEqual([
      { token: ' Hel', bytes: [32, 72, 101, 108], logprob: Math.log(0.5) },
      { token: 'lo', bytes: [108, 111], logprob: Math.log(0.25) },
    ]);
    expect(decoding.avgLogprob).toBeCloseTo((Math.log(0.5) + Math.log(0.25)) / 2, 10);
    expect(decoding.noSpeechProb).toBe(0.25);
    expect(decoding.compressionRatio).toBe(compressionRatio('Hello'));
  });

  it('computes the compression ratio as openai-whisper does: repeats compress, and score above 2.4', () => {
    expect(compressionRatio('')).toBe(0);
    expect(compressionRatio('The quick brown fox jumps over the lazy dog.')).toBeLessThan(1.2);
    expect(compressionRatio('I am fine. '.repeat(20))).toBeGreaterThan(2.4);
  });
});

describe('response formats', () => {
  const transcription: Transcription = {
    text: 'Hello there. General Kenobi.',
    language: 'en',
    duration: 4.2,
    words: [{ word: 'Hello', start: 0.1, end: 0.5, speaker: 'speaker_1' }],
    segments: [
      {
        id: 0,
        start: 0,
        end: 1.5,
        text: 'Hello there.',
        speaker: 'speaker_1',
        decoding: {
          tokens: [1, 2],
          avgLogprob: -0.2,
          compressionRatio: 1.1,
          noSpeechProb: 0.01,
          tokenLogprobs: [
            { token: ' Hello', bytes: [32, 72, 101, 108, 108, 111], logprob: -0.1 },
            { token: ' there.', bytes: [32, 116, 104, 101, 114, 101, 46], logprob: -0.3 },
          ],
        },
      },
      { id: 1, start: 31.25, end: 33, text: 'General Kenobi.' },
    ],
  };
  const render = (format: Parameters<typeof renderOpenAiTranscription>[1]['format'], extra = {}) =>
    renderOpenAiTranscription(transcription, {
      task: 'transcribe',
      format,
      granularities: new Set(['segment']),
      temperature: 0.2,
      ...extra,
    });

  it('json: text and usage in whole seconds; a translation has text only', () => {
    expect(JSON.parse(render('json').body)).toEqual({
      text: transcription.text,
      usage: { type: 'duration', seconds: 5 },
    });
    expect(JSON.parse(render('json', { task: 'translate' }).body)).toEqual({ text: transcription.text });
    const withLogprobs = JSON.parse(render('json', { logprobs: true }).body);
    expect(withLogprobs.logprobs).toEqual([
      { token: ' Hello', bytes: [32, 72, 101, 108, 108, 111], logprob: -0.1 },
      { token: ' there.', bytes: [32, 116, 104, 101, 114, 101, 46], logprob: -0.3 },
    ]);
    expect(render('json').contentType).toBe('application/json; charset=utf-8');
  });

  it('text, srt and vtt as plain text', () => {
    expect(render('text')).toEqual({ contentType: 'text/plain; charset=utf-8', body: `${transcription.text}\n` });
    expect(render('srt').body).toBe(
      '1\n00:00:00,000 --> 00:00:01,500\nHello there.\n\n2\n00:00:31,250 --> 00:00:33,000\nGeneral Kenobi.\n',
    );
    expect(render('vtt').body).toBe(
      'WEBVTT\n\n00:00:00.000 --> 00:00:01.500\nHello there.\n\n00:00:31.250 --> 00:00:33.000\nGeneral Kenobi.\n',
    );
  });

  it('verbose_json: every TranscriptionSegment field, words only when asked, the language by name', () => {
    const body = JSON.parse(render('verbose_json').body);
    expect(body).toMatchObject({ task: 'transcribe', language: 'english', duration: 4.2, text: transcription.text });
    expect(body).not.toHaveProperty('words');
    expect(body.segments[0]).toEqual({
      id: 0,
      seek: 0,
      start: 0,
      end: 1.5,
      text: 'Hello there.',
      tokens: [1, 2],
      temperature: 0.2,
      avg_logprob: -0.2,
      compression_ratio: 1.1,
      no_speech_prob: 0.01,
    });
    expect(body.segments[1].seek).toBe(3000);
    const words = JSON.parse(render('verbose_json', { granularities: new Set(['word']) }).body);
    expect(words).not.toHaveProperty('segments');
    expect(words.words).toEqual([{ word: 'Hello', start: 0.1, end: 0.5 }]);
  });

  it('diarized_json: transcript.text.segment items with speakers', () => {
    const body = JSON.parse(render('diarized_json').body);
    expect(body.task).toBe('transcribe');
    expect(body.segments).toEqual([
      { type: 'transcript.text.segment', id: 'seg_0', start: 0, end: 1.5, text: 'Hello there.', speaker: 'speaker_1' },
      {
        type: 'transcript.text.segment',
        id: 'seg_1',
        start: 31.25,
        end: 33,
        text: 'General Kenobi.',
        speaker: 'unknown',
      },
    ]);
  });
});
