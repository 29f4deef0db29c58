import type { SpeakerOptions } from '../diarize/types.js';

/** One spoken word with its time span in seconds. */
export interface Word {
  word: string;
  start: number;
  end: number;
  /** With `diarize: true`: the speaker, as on segments. */
  speaker?: string;
}

/** How much timing detail a transcription returns. */
export type TimestampGranularity = 'none' | 'segment' | 'word';

/** A stretch of the transcript with its time span in seconds. */
export interface Segment {
  /** 0-based position in `segments`. */
  id: number;
  start: number;
  end: number;
  text: string;
  /** With `tinydiarize` on a tinydiarize model: whisper predicted a speaker change after this segment. */
  speakerTurnNext?: boolean;
  /**
   * With `diarize: true`: who said it, `speaker_1`, `speaker_2`, ... numbered by first appearance in this result.
   * Absent when no speech was found to attribute it to.
   */
  speaker?: string;
  /** With `segmentDecoding: true`: how whisper decoded it. */
  decoding?: SegmentDecoding;
}

/** How whisper decoded one segment (what OpenAI's `verbose_json` segments report). */
export interface SegmentDecoding {
  /** The text's token ids in the model's vocabulary (timestamp and other special tokens left out). */
  tokens: number[];
  /** Mean natural-log probability of those tokens. */
  avgLogprob: number;
  /**
   * The text's UTF-8 length over its zlib-compressed length, as openai-whisper computes it: above 2.4, the text
   * repeats itself.
   */
  compressionRatio: number;
  /** whisper's probability that the window the segment was decoded in holds no speech. */
  noSpeechProb: number;
  /** Each text token as decoded: its text, its UTF-8 bytes (a character may span tokens) and its log probability. */
  tokenLogprobs: TokenLogprob[];
}

/** One decoded token and how sure whisper was of it (OpenAI's `logprobs` items). */
export interface TokenLogprob {
  /** The token's text (a character split across tokens shows as U+FFFD here; `bytes` has it exactly). */
  token: string;
  bytes: number[];
  /** Natural log of the token's probability. */
  logprob: number;
}

/**
 * The transcription result, as POST /v1/transcriptions returns it: `words` only when
 * `timestamps` is `word`; `segments` when `timestamps` is `segment` or `diarize` is true.
 */
export interface Transcription {
  text: string;
  /** The supplied language hint, else the detected language; `und` when nothing was said and no hint given. */
  language: string;
  /** Audio length in seconds. */
  duration: number;
  words?: Word[];
  segments?: Segment[];
}

/** Segments that are only whisper's non-speech annotations (`[BLANK_AUDIO]`, `(upbeat music)`): dropped or kept. */
export type AnnotationPolicy = 'drop' | 'keep';

/** Voice activity detection settings (Silero VAD). Speech is cut out before decoding; silence is never decoded. */
export interface VadOptions {
  /** Path to a ggml Silero VAD model. Optional where the engine has one configured. */
  model?: string;
  /** Speech probability threshold, 0–1. Default 0.5. */
  threshold?: number;
  /** Shorter speech is dropped, in ms. Default 250. */
  minSpeechMs?: number;
  /** Silence needed to end speech, in ms. Default 100. */
  minSilenceMs?: number;
  /** Longer speech is split, in seconds. Default: no limit. */
  maxSpeechSeconds?: number;
  /** Padding around speech, in ms. Default 300 (so no word is clipped; speech detection alone uses 30). */
  speechPadMs?: number;
  /** Audio kept past each speech end, in seconds. Default 0.1. */
  overlapSeconds?: number;
}

/** Options of one transcription. Every option is validated; errors name the option and the value received. */
export interface TranscribeOptions {
  /** ISO-639-1 hint (e.g. `en`, `de`); omitted or `auto` detects the language. */
  language?: string;
  /** `none`, `segment` (default) or `word`. */
  timestamps?: TimestampGranularity;
  /**
   * Label speakers (`Speech.transcribe` only): `true`, or the speaker counts to expect and the speakers to recognize
   * by name. Each segment gets `speaker` (`speaker_1`, ... by first appearance, or a known speaker's name) and is split
   * where the speaker changes; segments are always returned.
   */
  diarize?: boolean | SpeakerOptions;
  /** Translate to English instead of transcribing. Default false. */
  translate?: boolean;
  /** Text that conditions the decoder (spelling of names, style). At most 2,000 characters. */
  prompt?: string;
  /** CPU threads for this call, 1–64. Default: min(4, available cores - 1), at least 1. */
  threads?: number;
  /** 1 = greedy decoding; 2–16 = beam search width. Default depends on the model tier. */
  beamSize?: number;
  /** Candidates sampled at each fallback temperature (greedy), 1–16. Default 5. */
  bestOf?: number;
  /** Initial temperature, 0–1. Default 0. */
  temperature?: number;
  /** Temperature step when decoding fails its quality checks, 0–1; 0 disables fallback. Default 0.2. */
  temperatureIncrement?: number;
  /** Probability above which a window counts as silence, 0–1. Default 0.6. */
  noSpeechThreshold?: number;
  /** Entropy above which decoding falls back to a higher temperature. Default 2.4. */
  entropyThreshold?: number;
  /** Average log probability below which decoding falls back. Default -1. */
  logprobThreshold?: number;
  /**
   * Voice activity detection: only the speech it finds is decoded, and times still refer to the input. true uses
   * the configured VAD model with the transcription defaults (see {@link VadOptions}); false decodes everything.
   * Default: the engine's `vad` (on when the VAD model is installed).
   */
  vad?: boolean | VadOptions;
  /** tinydiarize speaker-turn detection (only models trained for it, e.g. small.en-tdrz). Default false. */
  tinydiarize?: boolean;
  /**
   * Suppress whisper's non-speech tokens: sound descriptions such as `[BLANK_AUDIO]` or `(upbeat music)`, music
   * notes, and the brackets and symbols they start with. Default: the model id's (false: suppressed, whisper says other words instead, BENCHMARKS.md "Invented words").
   */
  suppressNonSpeech?: boolean;
  /**
   * Give each 30 s window the text of the windows before it as context (better continuity, but a window that went
   * wrong can pass its mistake on). false: each window gets only `prompt`. Default: the model id's (true).
   */
  conditionOnPreviousText?: boolean;
  /**
   * Find text that loops (a phrase repeated over and over, a segment repeating the one before it) and decode that
   * stretch again without the text before it; a loop that survives is cut to its first occurrence.
   * Default: the model id's (true).
   */
  repetitionGuard?: boolean;
  /**
   * Find stretches where the decoder skipped speech (a segment of a few words over many seconds of speech, or seconds
   * of speech between two segments with no text: whisper's timestamps jumped over it) and decode each again on its
   * own; what that recovers replaces the stretch when it holds at least 3 more words and does not loop. Speech is
   * measured by the VAD: the call's own, or without VAD the engine's VAD model when it is installed (`createSpeech`;
   * `WhisperModel.transcribe` without `vad` has none, and the guard then does nothing). Nothing before the first
   * segment or after the last, no stretch over 30 s and none across an annotation is looked at; up to 16 stretches a
   * call. Default: the model id's (true).
   */
  skipGuard?: boolean;
  /**
   * Audio shorter than this many seconds is encoded with a shorter context than whisper's 30 s window, which a short
   * clip otherwise pays for in full: its length and 1.28 s more, at least 15.36 s (BENCHMARKS.md, "Short clips,
   * second pass"). Should that decode repeat itself or run past a token limit for its length, the clip is decoded
   * again with the full window, so the result is never worse than a loop. 0 turns it off. Default 10 (0-30).
   */
  fittedContextSeconds?: number;
  /**
   * Segments made only of non-speech annotations (`[BLANK_AUDIO]`, `(upbeat music)`, `*sigh*`, ♪): `drop`
   * (default) leaves them out of `text`, `segments`, `words` and `onSegment`; `keep` returns them. An annotation
   * inside a segment with speech in it stays either way.
   */
  annotations?: AnnotationPolicy;
  /**
   * Add {@link SegmentDecoding} (`decoding`) to each segment: token ids, log probability, compression ratio. Segments
   * are then returned whatever `timestamps` says. Default false.
   */
  segmentDecoding?: boolean;
  /** Reject longer audio with AudioTooLongError; checked while decoding. Default: the engine's (3 hours). */
  maxDurationSeconds?: number;
  /** Cancels decoding, waiting, and a running transcription (promptly, via whisper's abort callback). */
  signal?: AbortSignal;
  /** Progress of the decoder, 0–1. Exceptions thrown by the callback are ignored. */
  onProgress?: (fraction: number) => void;
  /**
   * Each segment as soon as whisper finishes it (annotation-only ones left out). A loop the repetition guard repairs
   * afterwards is reported as whisper first wrote it, and speech the skip guard recovers not at all; the result holds
   * the repaired text. Exceptions thrown by the callback are ignored.
   */
  onSegment?: (segment: Segment) => void;
}

/** How one speech-to-text model id is served (`createSpeech({ models: { [id]: ... } })`). */
export interface SttModelConfig {
  /** A catalog id (`base.en`, `tiny-q5_1`, ...; see `voxmill models list`) or a path to a ggml model file. */
  model: string;
  /** Default beam width for this id: 1 = greedy. svc-stt-1-flash: 1; svc-stt-1 and every other id: 5. */
  beamSize?: number;
  /** Default CPU threads per transcription. Default: the engine's `threads`. */
  threads?: number;
  /** Transcriptions running at once on this model. Default: the engine's `concurrency`. */
  concurrency?: number;
  /** Transcriptions waiting beyond those; more fail with QueueFullError. Default: the engine's `maxQueue`. */
  maxQueue?: number;
  /**
   * DTW word timestamps (where whisper.cpp has a preset for the model), fixed when the model loads. Used only by calls
   * that ask for word times (`timestamps: 'word'`, diarization, live finals): those run without flash attention and
   * with a 128 MB scratch buffer, about 30% slower; the model's other calls keep flash attention.
   * Default: true for svc-stt-1 and custom ids (accuracy), false for svc-stt-1-flash (speed).
   */
  dtw?: boolean;
  /**
   * The decoder's weights, fixed when the model loads: `'int8'` (an f16 file's decoder matrices in q8_0: faster
   * decoding, less memory) or `'full'` (the file's own type). See {@link WhisperLoadOptions.decoderPrecision}.
   * Default `'full'`.
   */
  decoderPrecision?: 'int8' | 'full';
  /**
   * Greedy steps rank the vocabulary on an int8 copy of the projection and recompute the deciding logits from the
   * file's weights, fixed when the model loads: the f16 tokens, faster greedy decoding, the copy's memory (21 MB
   * for tiny, 28 for base). See {@link WhisperLoadOptions.greedyInt8Vocabulary} for the margins. Default true.
   */
  greedyInt8Vocabulary?: boolean;
  /** Default of {@link TranscribeOptions.suppressNonSpeech} for this id. Default false. */
  suppressNonSpeech?: boolean;
  /** Default of {@link TranscribeOptions.conditionOnPreviousText} for this id. Default true. */
  conditionOnPreviousText?: boolean;
  /** Default of {@link TranscribeOptions.repetitionGuard} for this id. Default true. */
  repetitionGuard?: boolean;
  /** Default of {@link TranscribeOptions.skipGuard} for this id. Default true. */
  skipGuard?: boolean;
}

/** A transcription request to the engine: {@link TranscribeOptions} plus the model id. */
export interface SpeechTranscribeOptions extends TranscribeOptions {
  /** A configured model id. Default `svc-stt-1`. */
  model?: string;
}
