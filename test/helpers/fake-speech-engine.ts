// An engine with the handler's view of Speech (SpeechEngine) and no addon or model: it records calls and answers
// with canned results, so the handler's routing, parsing, auth and error mapping are tested on their own.
import { Readable } from 'node:stream';
import type {
  AudioInput,
  SpeechEngine,
  SpeechStream,
  SynthesizeOptions,
  Transcription,
  Voice,
} from '../../src/index.js';
import type { SpeechTranscribeOptions } from '../../src/stt/types.js';

export const FAKE_VOICES: Voice[] = [
  { id: 'en_US-fake', name: 'Fake (en-US)', languages: ['en-US'], styles: [], gender: 'female' },
];

export class FakeSpeechEngine implements SpeechEngine {
  readonly transcribeCalls: { input: AudioInput; options: SpeechTranscribeOptions }[] = [];
  readonly synthesizeCalls: SynthesizeOptions[] = [];
  /** Replaces the canned transcription (throw to simulate library errors). */
  onTranscribe: ((input: AudioInput, options: SpeechTranscribeOptions) => Promise<Transcription>) | undefined;
  /** Replaces the canned audio chunks. */
  onSynthesize: ((options: SynthesizeOptions) => Promise<SpeechStream>) | undefined;

  get modelIds(): string[] {
    return ['svc-stt-1', 'svc-stt-1-flash'];
  }

  async listVoices(): Promise<Voice[]> {
    return FAKE_VOICES;
  }

  async transcribe(input: AudioInput, options: SpeechTranscribeOptions = {}): Promise<Transcription> {
    this.transcribeCalls.push({ input, options });
    if (this.onTranscribe) return this.onTranscribe(input, options);
    const result: Transcription = { text: 'hello', language: options.language ?? 'en', duration: 1 };
    if (options.timestamps === 'word') result.words = [{ word: 'hello', start: 0, end: 1 }];
    if (options.timestamps !== 'none' && options.timestamps !== 'word') {
      result.segments = [{ id: 0, start: 0, end: 1, text: 'hello' }];
    }
    return result;
  }

  async synthesize(options: SynthesizeOptions): Promise<SpeechStream> {
    this.synthesizeCalls.push(options);
    if (this.onSynthesize) return this.onSynthesize(options);
    return fakeSpeechStream([Buffer.from('ID3fake'), Buffer.from('audio')]);
  }
}

/** A SpeechStream of the given chunks (or any Readable made into one). */
export function fakeSpeechStream(source: Buffer[] | Readable): SpeechStream {
  const stream = Array.isArray(source) ? Readable.from(source, { objectMode: false }) : source;
  return Object.assign(stream, {
    format: 'mp3' as const,
    contentType: 'audio/mpeg',
    sampleRate: 22050,
    variant: 'en_US-fake-medium',
    speaker: undefined,
    progress: { sentences: 0, seconds: 0 },
  }) as SpeechStream;
}

/** A minimal valid-looking file of each container, by its magic bytes. */
export const AUDIO_HEADS = {
  wav: Buffer.concat([Buffer.from('RIFF\x24\x00\x00\x00WAVEfmt ', 'latin1'), Buffer.alloc(32)]),
  mp3: Buffer.concat([Buffer.from('ID3\x04\x00\x00\x00\x00\x00\x00', 'latin1'), Buffer.alloc(32)]),
  m4a: Buffer.concat([Buffer.from('\x00\x00\x00\x20ftypM4A ', 'latin1'), Buffer.alloc(32)]),
  flac: Buffer.concat([Buffer.from('fLaC', 'latin1'), Buffer.alloc(40)]),
  ogg: Buffer.concat([Buffer.from('OggS', 'latin1'), Buffer.alloc(40)]),
  webm: Buffer.concat([Buffer.from([0x1a, 0x45, 0xdf, 0xa3]), Buffer.alloc(40)]),
  aac: Buffer.concat([Buffer.from([0xff, 0xf1, 0x50, 0x80]), Buffer.alloc(40)]),
};
