// Text clean-up, chunking, phoneme ids and request validation: pure functions, no addon, no model.
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { InvalidOptionTypeError, InvalidOptionValueError } from '../../src/errors.js';
import { resolveTtsOptions } from '../../src/tts/config.js';
import { PhonemeIdEncoder } from '../../src/tts/phoneme-ids.js';
import { codePointLength, normalizeLiveSpeechOptions, normalizeSynthesizeOptions } from '../../src/tts/request.js';
import {
  completeTextEnd,
  hasSpeakableText,
  MAX_WORD_CODE_POINTS,
  normalizeText,
  splitIntoChunks,
} from '../../src/tts/text.js';

const cp = (text: string) => [...text].map((c) => c.codePointAt(0)!);

describe('completeTextEnd (text still arriving)', () => {
  it('ends complete sentences only where a later character confirms the cut', () => {
    expect(completeTextEnd('Hello there.')).toBe(0);
    expect(completeTextEnd('Hello there. ')).toBe(0);
    expect(completeTextEnd('Hello there. H')).toBe('Hello there. '.length);
    expect(completeTextEnd('One! Two? Thr')).toBe('One! Two? '.length);
    // A lowercase word after a full stop keeps it inside the sentence, as splitIntoChunks does.
    expect(completeTextEnd('At 5 p.m. o')).toBe(0);
    expect(completeTextEnd('Wait... then')).toBe(0);
    expect(completeTextEnd('First paragraph\n\nSecond')).toBe('First paragraph\n\n'.length);
    expect(completeTextEnd('')).toBe(0);
    // What normalization removes does not hide the lowercase word that keeps an abbreviation in its sentence.
    expect(completeTextEnd('We use it, e.g. **bold** text')).toBe(0);
    expect(completeTextEnd('At 5 p.m. 😀 on Friday')).toBe(0);
    expect(completeTextEnd('Done. **Next** one')).toBe('Done. '.length);
    expect(completeTextEnd('Done. **')).toBe(0);
    expect(completeTextEnd('end.\n\nnext')).toBe('end.\n\n'.length);
    // The search may start later; a cut before `from` (minus two characters) is not looked at.
    expect(completeTextEnd('One. Two. Thr', 6)).toBe('One. Two. '.length);
  });
});

describe('normalizeText', () => {
  it('replaces control characters (a NUL would end the text for espeak) and keeps line breaks', () => {
    expect(normalizeText('he\u0000llo\u0007 wor\u001bld')).toBe('he llo wor ld');
    expect(normalizeText('line one\r\nline two\n\n\n\nnext')).toBe('line one\nline two\n\nnext');
  });

  it('removes emoji, skin tones, flags, joiners and bidi marks', () => {
    expect(normalizeText('👍🏽 hi 🇺🇸 👨‍👩‍👧 there\u200f')).toBe('hi there');
  });

  it('reads URLs as their host name', () => {
    expect(normalizeText('see https://www.example.com/a?b=c&d=e now')).toBe('see example.com now');
    expect(normalizeText('go to www.voxmill.dev/docs')).toBe('go to voxmill.dev');
  });

  it('drops markup runs and collapses repeated punctuation', () => {
    expect(normalizeText('**bold** ## Title ~~~ ok!!! really???')).toBe('bold Title ok! really?');
  });

  it(`cuts words longer than ${MAX_WORD_CODE_POINTS} code points (a 5,000-character word traps espeak's WASM)`, () => {
    const out = normalizeText('supercalifragilistic'.repeat(250));
    const words = out.split(' ');
    expect(Math.max(...words.map((w) => [...w].length))).toBeLessThanOrEqual(MAX_WORD_CODE_POINTS);
    expect(words.join('')).toBe('supercalifragilistic'.repeat(250));
  });

  it('turns lone surrogates into spaces instead of throwing', () => {
    expect(normalizeText('a\ud800b\udc00c')).toBe('a b c');
  });

  it('never throws and never keeps control characters, for 2,000 random strings', () => {
    let seed = 7;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    for (let i = 0; i < 2000; i++) {
      const length = Math.floor(random() * 300);
      let text = '';
      for (let j = 0; j < length; j++) text += String.fromCharCode(Math.floor(random() * 0x10000));
      const out = normalizeText(text);
      expect(/\p{Cc}/u.test(out.replace(/\n/g, ''))).toBe(false);
      expect(out.isWellFormed()).toBe(true);
    }
  });
});

describe('splitIntoChunks', () => {
  it('splits at sentence ends and blank lines', () => {
    expect(splitIntoChunks('Hello there. How are you? Fine!\n\nNext part')).toEqual([
      'Hello there.',
      'How are you?',
      'Fine!',
      'Next part',
    ]);
  });

  it('cuts a long sentence at a comma, else a space, within the limit', () => {
    const text = `${'word '.repeat(30)}, and ${'more '.repeat(30)}`.trim();
    const chunks = splitIntoChunks(text, 100);
    expect(chunks.every((c) => codePointLength(c) <= 100)).toBe(true);
    expect(chunks.join(' ').replace(/\s+/g, ' ')).toBe(text.replace(/\s+/g, ' '));
    expect(splitIntoChunks('x'.repeat(250), 100).map((c) => c.length)).toEqual([100, 100, 50]);
  });

  it('cuts only where espeak-ng ends a sentence: not before a lowercase word, never at an ellipsis', () => {
    expect(splitIntoChunks('Meet at 5 p.m. on Friday. Mr. Smith comes, e.g. with snacks, cups etc. and more.')).toEqual(
      ['Meet at 5 p.m. on Friday.', 'Mr.', 'Smith comes, e.g. with snacks, cups etc. and more.'],
    );
    expect(splitIntoChunks(normalizeText('Wait... Are you serious?! Yes.. No'))).toEqual([
      'Wait… Are you serious?!',
      'Yes.',
      'No',
    ]);
    expect(splitIntoChunks('Stop! then go. (Quietly.) 5 more')).toEqual(['Stop!', 'then go.', '(Quietly.) 5 more']);
    expect(splitIntoChunks('at 5 p.m.  \n on Friday')).toEqual(['at 5 p.m.  \n on Friday']);
  });

  it('reads a run of dots as espeak-ng does, as one ellipsis, and phonemizes every chunk as the whole text', () => {
    expect(normalizeText('so.... on... and.. then')).toBe('so… on… and. then');
    const phonemizer = createRequire(import.meta.url)('piper-phonemize') as {
      phonemize(text: string, voice: string): number[][];
    };
    const texts = [
      'Mr. Smith met Dr. Jones at 5 p.m. on Friday. Bring snacks, drinks, etc. to the party, e.g. chips and soda.',
      'Wait... are you serious? Wait... Are you serious? Stop! then go. He left. "Why?" she asked.',
      'It costs $3.50 on Jan. 5th, 2024. I live in the U.S. now. I live in the U.S. Now what? Next part',
    ];
    // Not a blank line: espeak ends the sentence there too but drops its ! ? or . ("what?\n\nNext" is read "what"),
    // where a chunk keeps it.
    for (const text of texts) {
      const normalized = normalizeText(text);
      const whole = phonemizer.phonemize(normalized, 'en-us');
      const chunked = splitIntoChunks(normalized).flatMap((chunk) => phonemizer.phonemize(chunk, 'en-us'));
      expect(chunked, text).toEqual(whole);
    }
  });

  it('keeps the first chunk to the first sentence so the first audio comes early', () => {
    const text = `First sentence. ${'Then a lot more text. '.repeat(200)}`;
    expect(splitIntoChunks(normalizeText(text))[0]).toBe('First sentence.');
  });
});

describe('hasSpeakableText', () => {
  it('needs a letter or a digit', () => {
    expect(hasSpeakableText('...!?')).toBe(false);
    expect(hasSpeakableText('')).toBe(false);
    expect(hasSpeakableText('42')).toBe(true);
    expect(hasSpeakableText('שלום')).toBe(true);
  });
});

describe('PhonemeIdEncoder', () => {
  const tables = {
    idMap: [
      [cp('_')[0]!, [0]],
      [cp('^')[0]!, [1]],
      [cp('$')[0]!, [2]],
      [cp('a')[0]!, [14]],
      [cp('b')[0]!, [15]],
      [cp('ɐ')[0]!, [50]],
    ] as Array<[number, number[]]>,
    phonemeMap: [[cp('x')[0]!, cp('ab')]] as Array<[number, number[]]>,
  };

  it("follows Piper's convention: ^ _ then each phoneme followed by _, then $", () => {
    expect(new PhonemeIdEncoder(tables).encode(cp('abɐ'))).toEqual([1, 0, 14, 0, 15, 0, 50, 0, 2]);
  });

  it('drops and counts unknown phonemes, and applies phoneme_map first', () => {
    const encoder = new PhonemeIdEncoder(tables);
    expect(encoder.encode(cp('aZZx'))).toEqual([1, 0, 14, 0, 14, 0, 15, 0, 2]);
    expect([...encoder.missing]).toEqual([[cp('Z')[0], 2]]);
  });

  it('knows a sentence with no phonemes', () => {
    const encoder = new PhonemeIdEncoder(tables);
    expect(encoder.isEmpty(encoder.encode(cp('??')))).toBe(true);
    expect(encoder.isEmpty(encoder.encode(cp('a')))).toBe(false);
  });
});

describe('normalizeSynthesizeOptions (spec 4.3 and section 8)', () => {
  const ok = { voice: 'en_US-lessac', input: 'Hello.' };

  it('applies the defaults: svc-tts-1, mp3, speed 1, the voice rate', () => {
    expect(normalizeSynthesizeOptions(ok)).toEqual({
      model: 'svc-tts-1',
      voice: 'en_US-lessac',
      input: 'Hello.',
      format: 'mp3',
      speed: 1,
      sampleRate: undefined,
      noiseScale: undefined,
      noiseW: undefined,
      lengthScale: undefined,
      sentenceSilence: undefined,
      timestamps: 'none',
      normalize: true,
      normalizeAudio: true,
      precision: undefined,
      signal: undefined,
    });
  });

  it("accepts precision fp32|int8 (undefined: the tier's), and tts.precision per tier, naming each when wrong", () => {
    expect(normalizeSynthesizeOptions({ ...ok, precision: 'int8' })).toMatchObject({ precision: 'int8' });
    expect(() => normalizeSynthesizeOptions({ ...ok, precision: 'int4' })).toThrow(/^precision must be one of/);
    expect(() => normalizeSynthesizeOptions({ ...ok, precision: 8 })).toThrow(InvalidOptionTypeError);
    expect(resolveTtsOptions({}).precision).toEqual({ 'svc-tts-1': 'fp32', 'svc-tts-1-flash': 'int8' });
    expect(resolveTtsOptions({ precision: { 'svc-tts-1-flash': 'fp32' } }).precision).toEqual({
      'svc-tts-1': 'fp32',
      'svc-tts-1-flash': 'fp32',
    });
    expect(() => resolveTtsOptions({ precision: { 'svc-tts-1': 'int16' } })).toThrow(
      /^tts\.precision\.svc-tts-1 must be one of/,
    );
    expect(() => resolveTtsOptions({ precision: { 'tts-1': 'int8' } })).toThrow(/tts\.precision/);
    expect(() => resolveTtsOptions({ precision: 'int8' })).toThrow(InvalidOptionTypeError);
  });

  it('accepts lengthScale 0.05-20, sentenceSilence 0-10 s and timestamps none|word, naming each when wrong', () => {
    expect(
      normalizeSynthesizeOptions({ ...ok, lengthScale: 1.5, sentenceSilence: 0, timestamps: 'word' }),
    ).toMatchObject({ lengthScale: 1.5, sentenceSilence: 0, timestamps: 'word' });
    expect(() => normalizeSynthesizeOptions({ ...ok, lengthScale: 0.04 })).toThrow(
      /^lengthScale must be between 0.05 and 20/,
    );
    expect(() => normalizeSynthesizeOptions({ ...ok, lengthScale: 21 })).toThrow(InvalidOptionValueError);
    expect(() => normalizeSynthesizeOptions({ ...ok, sentenceSilence: -0.1 })).toThrow(
      /^sentenceSilence must be between 0 and 10/,
    );
    expect(() => normalizeSynthesizeOptions({ ...ok, sentenceSilence: '1' })).toThrow(InvalidOptionTypeError);
    expect(() => normalizeSynthesizeOptions({ ...ok, timestamps: 'segment' })).toThrow(/^timestamps must be/);
    // A live speech has no word timings (yet): the option is refused, not ignored.
    expect(() => normalizeLiveSpeechOptions({ voice: 'en_US-lessac', timestamps: 'word' })).toThrow(/timestamps/);
  });

  it('accepts noiseScale and noiseW from 0 to 10 (0 makes synthesis repeatable), naming either when wrong', () => {
    expect(normalizeSynthesizeOptions({ ...ok, noiseScale: 0, noiseW: 0 })).toMatchObject({ noiseScale: 0, noiseW: 0 });
    expect(normalizeSynthesizeOptions({ ...ok, noiseScale: 10, noiseW: 0.8 })).toMatchObject({
      noiseScale: 10,
      noiseW: 0.8,
    });
    for (const key of ['noiseScale', 'noiseW']) {
      for (const value of [-0.01, 10.01, Number.POSITIVE_INFINITY]) {
        expect(() => normalizeSynthesizeOptions({ ...ok, [key]: value }), `${key} ${value}`).toThrow(
          new RegExp(`^${key} must be between 0 and 10`),
        );
      }
      expect(() => normalizeSynthesizeOptions({ ...ok, [key]: '0' })).toThrow(InvalidOptionTypeError);
      expect(() => normalizeSynthesizeOptions({ ...ok, [key]: Number.NaN })).toThrow(InvalidOptionTypeError);
      expect(() => normalizeSynthesizeOptions({ ...ok, [key]: -1 })).toThrow(InvalidOptionValueError);
    }
  });

  it('counts input in code points: 5,000 emoji pass, 5,001 characters do not, empty does not', () => {
    expect(() => normalizeSynthesizeOptions({ ...ok, input: '😀'.repeat(5000) })).not.toThrow();
    expect(() => normalizeSynthesizeOptions({ ...ok, input: 'a'.repeat(5001) })).toThrow(/input must be 1 to 5000/);
    expect(() => normalizeSynthesizeOptions({ ...ok, input: '' })).toThrow(InvalidOptionValueError);
    expect(() => normalizeSynthesizeOptions({ ...ok, input: 42 })).toThrow(InvalidOptionTypeError);
  });

  it('accepts speed 0.25 to 4.0 inclusive and nothing else', () => {
    expect(normalizeSynthesizeOptions({ ...ok, speed: 0.25 }).speed).toBe(0.25);
    expect(normalizeSynthesizeOptions({ ...ok, speed: 4 }).speed).toBe(4);
    for (const speed of [0.24, 4.01, 0, -1, Number.POSITIVE_INFINITY]) {
      expect(() => normalizeSynthesizeOptions({ ...ok, speed }), String(speed)).toThrow(/speed/);
    }
    expect(() => normalizeSynthesizeOptions({ ...ok, speed: '1' })).toThrow(InvalidOptionTypeError);
    expect(() => normalizeSynthesizeOptions({ ...ok, speed: Number.NaN })).toThrow(InvalidOptionTypeError);
  });

  it('checks format, model, voice, sample rate and unknown keys, naming each', () => {
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ format: 'ogg' }, /^format must be one of mp3, wav, opus, pcm16, aac, flac/],
      [{ model: 'svc-tts-2' }, /^model must be one of svc-tts-1, svc-tts-1-flash/],
      [{ voice: '' }, /^voice must be/],
      [{ voice: 7 }, /^voice must be a voice id string/],
      [{ sampleRate: 11025 }, /^sampleRate must be one of/],
      [{ format: 'opus', sampleRate: 22050 }, /^sampleRate must be one of 8000, 16000, 24000, 48000 for opus/],
      [{ sample_rate: 8000 }, /options\.sample_rate/],
    ];
    for (const [change, pattern] of cases) {
      expect(() => normalizeSynthesizeOptions({ ...ok, ...change }), JSON.stringify(change)).toThrow(pattern);
    }
    expect(normalizeSynthesizeOptions({ ...ok, format: 'opus', sampleRate: 48000 }).sampleRate).toBe(48000);
  });
});

describe('resolveTtsOptions', () => {
  it('sizes threads and workers from the CPU budget', () => {
    expect(resolveTtsOptions(undefined, 1)).toMatchObject({
      intraOpThreads: 1,
      workers: 1,
      lookahead: 2,
      memoryArena: true,
    });
    expect(resolveTtsOptions({ memoryArena: false }, 1).memoryArena).toBe(false);
    expect(() => resolveTtsOptions({ memoryArena: 'no' }, 1)).toThrow(/tts.memoryArena/);
    expect(resolveTtsOptions(undefined, 7)).toMatchObject({ intraOpThreads: 4, workers: 1 });
    expect(resolveTtsOptions(undefined, 15)).toMatchObject({ intraOpThreads: 4, workers: 3 });
    expect(resolveTtsOptions({ workers: 2, intraOpThreads: 2 }, 2)).toMatchObject({ workers: 2, intraOpThreads: 2 });
  });

  it('names bad values', () => {
    expect(() => resolveTtsOptions({ workers: 0 })).toThrow(/tts\.workers/);
    expect(() => resolveTtsOptions({ lookahead: 1.5 })).toThrow(/tts\.lookahead/);
    expect(() => resolveTtsOptions({ threads: 2 })).toThrow(/tts\.threads/);
  });
});
