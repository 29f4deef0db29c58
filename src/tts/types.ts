// Public types of text-to-speech.

import type { Readable } from 'node:stream';
import type { SpeechFormat } from '../audio/formats.js';
import type { TtsModelId } from '../tiers.js';

/**
 * A voice's gender as curated in the catalog (Piper configs carry none). `neutral` is also what voices the
 * catalog does not describe report, and what a multi-speaker voice's speakers report unless curated one by one.
 */
export type VoiceGender = 'female' | 'male' | 'neutral';

/** A voice usable with `synthesize()`, as GET /v1/voices lists it. */
export interface Voice {
  /** `en_US-lessac`, or `<voice>#<speaker>` for each speaker of a multi-speaker voice (`en_GB-vctk#p239`). */
  id: string;
  /** Display name: dataset and language (`Lessac (en-US)`), plus the speaker for multi-speaker voices. */
  name: string;
  /** BCP 47 tags from the config's language code (`en_US` -> `en-US`). */
  languages: string[];
  /** Delivery styles. Piper voices have none, so always empty. */
  styles: string[];
  gender: VoiceGender;
}

/** Options of `Speech.synthesize()`. */
export interface SynthesizeOptions {
  /** `svc-tts-1`: the best installed quality of the voice; `svc-tts-1-flash`: the fastest. Default `svc-tts-1`. */
  model?: TtsModelId;
  /** A voice id from `listVoices()`. */
  voice: string;
  /** Text, 1 to 5,000 characters counted as Unicode code points (the engine's `maxInputChars`). */
  input: string;
  /** Default `mp3`. */
  format?: SpeechFormat;
  /** 0.5 to 2.0; the voice's length scale is divided by it. Default 1. */
  speed?: number;
  /**
   * Output rate in Hz: 8000, 16000, 22050, 24000, 44100 or 48000 (Opus: not 22050 or 44100). Default the voice's
   * native rate (Opus: the nearest Opus rate above it).
   */
  sampleRate?: number;
  /**
   * Piper's generator noise (`noise_scale`), 0 to 10: how much the voice varies from one synthesis to the next.
   * 0, with `noiseW` 0, makes the same text give the same audio. Default the voice's `inference.noise_scale`.
   */
  noiseScale?: number;
  /** Piper's phoneme-duration noise (`noise_w`), 0 to 10. Default the voice's `inference.noise_w`. */
  noiseW?: number;
  /**
   * Piper's `length_scale`, 0.05 to 20: how long each phoneme lasts (above 1: slower). Default the voice's
   * `inference.length_scale`. `speed` divides it, as it divides the voice's own.
   */
  lengthScale?: number;
  /** Seconds of silence between sentences, 0 to 10. Default the voice's `inference.sentence_silence`, else 0.2. */
  sentenceSilence?: number;
  /**
   * `'word'`: report when each word of the input is spoken ({@link SpokenWord}), from the voice's own phoneme
   * durations: the stream's `words` event and `words` list, `synthesizeToBuffer`'s `words`. The voice's graph is
   * edited to return them on first use (cached beside the voice as a hidden file). Default `'none'`.
   */
  timestamps?: 'none' | 'word';
  /**
   * Rewrite numbers, dates, times, money, units and abbreviations in words before phonemizing, with the voice
   * language's normalizer (built in: English; `tts.normalizers` adds others). Word timings then name the words
   * spoken (`$3.50` is `three`, `dollars`, ...). Default true.
   */
  normalize?: boolean;
  /**
   * Scale each sentence's audio to a peak of full scale, as Piper's own runtime does (piper-tts's `normalize_audio`,
   * on by default there): the same loudness as piper-tts for the same voice. Off, the voice's raw output level, which
   * for en_US-joe-medium is 5.6 dB quieter. Default true.
   */
  normalizeAudio?: boolean;
  /**
   * `'int8'`: run the voice with its convolution weights quantized to int8 (made on first use from the voice file and
   * cached beside it as a hidden file, like word timings' graph): faster and smaller, a little less exact; a voice
   * with nothing to quantize runs in float. `'fp32'`: the voice's own weights. Default the tier's: `svc-tts-1` fp32,
   * `svc-tts-1-flash` int8 (the engine's `tts.precision` changes them).
   */
  precision?: 'fp32' | 'int8';
  /** Stops synthesis (the ONNX run in flight is cancelled) and frees its place. */
  signal?: AbortSignal;
}

/**
 * A word of the input and when it is spoken, in seconds from the start of the audio (`speed`, pauses between
 * sentences and the output rate accounted for). `word` is the input's word with its outer punctuation trimmed
 * (`"friend."` -> `friend`); numbers and symbols keep the form written (`$3.50`). A word the voice gives no sound
 * of has `start === end`.
 */
export interface SpokenWord {
  word: string;
  start: number;
  end: number;
}

/** Options of `Speech.createLiveSpeech`: those of `synthesize` but the text, which is written as it arrives. */
export interface LiveSpeechOptions extends Omit<SynthesizeOptions, 'input' | 'signal' | 'timestamps'> {
  /**
   * Complete sentences waiting for a worker before `write()` holds the writer back (returns false until `drain`),
   * 1 to 1000. Default 4.
   */
  maxPendingSentences?: number;
  /** Ends the live speech: synthesis stops and the stream is destroyed with the signal's reason. */
  signal?: AbortSignal;
}

/** A sentence of a live speech whose audio has started: `start` is its place in the stream's audio, in seconds. */
export interface LiveSentence {
  /** 0, 1, 2, ... in the order written. */
  index: number;
  /** The sentence as spoken (normalized). */
  text: string;
  start: number;
}

/** Facts about a synthesis, known before the first byte. */
export interface SpeechAudioInfo {
  format: SpeechFormat;
  /** MIME type for the format (`audio/mpeg`, `audio/wav`, `audio/ogg; codecs=opus`, `audio/L16; rate=...`). */
  contentType: string;
  sampleRate: number;
  /** The voice variant that speaks (`en_US-lessac-medium`) and the speaker's sid, if any. */
  variant: string;
  speaker: number | undefined;
}

/** How far a synthesis has come, updated as each sentence's audio arrives from the worker. */
export interface SynthesisProgress {
  /** Sentences synthesized and handed to the encoder so far. */
  sentences: number;
  /** Seconds of audio synthesized so far, pauses included. */
  seconds: number;
}

/**
 * The audio as it is produced: a byte stream (also an async iterable of Buffers) with the facts of
 * {@link SpeechAudioInfo}. Destroying it cancels synthesis. Errors arrive as the stream's `error` event.
 */
export type SpeechStream = Readable &
  SpeechAudioInfo & {
    readonly progress: Readonly<SynthesisProgress>;
    /**
     * With `timestamps: 'word'`, the words spoken so far, growing as each sentence's audio arrives (before its bytes
     * are pushed); each sentence's words are also emitted as a `words` event (`SpokenWord[]`). Empty otherwise.
     */
    readonly words: readonly SpokenWord[];
  };

/** The whole audio in one Buffer, with its length fields final (wav, mp3). */
export interface SpeechAudio extends SpeechAudioInfo {
  audio: Buffer;
  /** Seconds of audio synthesized (before encoding). */
  duration: number;
  /** With `timestamps: 'word'`, when each word is spoken; absent otherwise. */
  words?: SpokenWord[];
}

/** Options of `listVoices()`. */
export interface ListVoicesOptions {
  /** Also list voices whose config is there but whose `.onnx` is not (they cannot speak). Default false. */
  includeUninstalled?: boolean;
}

/** What the text-to-speech side of the engine is doing. */
export interface TtsStatus {
  /**
   * Syntheses that can run at once (`tts.workers`). Until 0.2 these were worker threads; synthesis now runs in the
   * native addon and starts no thread of its own.
   */
  workers: number;
  /** Syntheses running, and waiting for their turn. */
  active: number;
  pending: number;
  /** @deprecated Always 0: there are no synthesis worker threads to replace. */
  replacedWorkers: number;
  /** Voices loaded now (each an ONNX model in the addon, released after `tts.sessionIdleMs` unused). */
  voices: number;
}
