// One transcription on a loaded model: native call with events, then the result in the shape the speech API returns.

import type { DecodedAudio } from '../audio/decode.js';
import { detectSpeechRegionsInPlace } from '../audio/speech-regions.js';
import { InvalidOptionValueError, VoxmillError } from '../errors.js';
import type {
  NativeModelInfo,
  NativeSegment,
  NativeSpeechSpan,
  NativeTranscribeEvent,
  NativeTranscribeJob,
  NativeTranscribeParams,
  NativeTranscription,
  NativeVadParams,
  NativeWhisperModel,
} from '../native.js';
import type { LiveThreadCount } from '../util/cpu-budget.js';
import { runJob } from '../util/job.js';
import { isAnnotationOnly } from './annotations.js';
import { DEFAULT_FITTED_CONTEXT_SECONDS, fittedContext, fittedDecodeFailed } from './fitted-context.js';
import { UNDETERMINED_LANGUAGE } from './languages.js';
import { collapseLoops, findLoops } from './repetition.js';
import type { NormalizedTranscribeOptions } from './request.js';
import { segmentDecoding } from './segment-decoding.js';
import { findSkips, MIN_RECOVERED_WORDS, type SpeechSeconds, speechSecondsIn, wordCount } from './skipped-speech.js';
import { identityTimeMap, startsInSpeech, type TimeMap, timeMapFromSpans } from './time-map.js';
import type { Segment, Transcription } from './types.js';
import { normaliseTimes, wordsFromSegments } from './words.js';

/**
 * English-only models take no other language and cannot translate: say so instead of transcribing nonsense (asked to
 * translate German, tiny.en writes invented English with no warning).
 */
function effectiveLanguage(
  info: NativeModelInfo,
  options: Pick<NormalizedTranscribeOptions, 'language' | 'params'>,
  modelName: string,
): string | undefined {
  const { language } = options;
  if (info.multilingual) return language;
  if (options.params.translate) {
    throw new InvalidOptionValueError(
      'model',
      `a multilingual model to translate (${modelName} is English-only: use one without ".en", such as base or small)`,
      modelName,
    );
  }
  if (language !== undefined && language !== 'en') {
    throw new InvalidOptionValueError('language', `"en" (model ${modelName} is English-only)`, language);
  }
  return 'en';
}

function safely<A extends unknown[]>(callback: ((...args: A) => void) | undefined, ...args: A): void {
  if (!callback) return;
  try {
    callback(...args);
  } catch {
    // A user callback must not break the transcription (documented on the options).
  }
}

/** Segments already on the input's timeline, in the API's shape (empty ones left out, times well-formed). */
export function shapeSegments(
  raw: readonly NativeSegment[],
  duration: number,
  withTurns: boolean,
  withDecoding = false,
): Segment[] {
  const segments: Segment[] = [];
  for (const s of raw) {
    const text = s.text.trim();
    if (text === '') continue;
    const segment: Segment = { id: segments.length, start: s.start, end: s.end, text };
    if (withTurns) segment.speakerTurnNext = s.speakerTurnNext;
    if (withDecoding) segment.decoding = segmentDecoding(s, text);
    segments.push(segment);
  }
  return normaliseTimes(segments, duration);
}

export interface RunTranscriptionInput {
  model: NativeWhisperModel;
  info: NativeModelInfo;
  modelName: string;
  audio: DecodedAudio;
  options: NormalizedTranscribeOptions;
  /** Resolved VAD parameters (model path included), or undefined for no VAD. */
  vad: NativeVadParams | undefined;
  /**
   * A Silero VAD model the skip guard measures speech with when the call runs without VAD (the engine's, when
   * installed); undefined: without VAD the guard does nothing.
   */
  speechModel?: string | undefined;
  /** See RunJobOptions.track. */
  track?: ((settled: Promise<void>) => void) | undefined;
  /** The call's threads as the CPU budget changes them while it runs; absent: `options.params.threads`, fixed. */
  threads?: LiveThreadCount | undefined;
}

/** Starts a native transcription whose graph passes follow `threads` (the budget lends and takes back a thread). */
function startWhisper(
  model: NativeWhisperModel,
  samples: Float32Array,
  params: NativeTranscribeParams,
  events: ((...event: NativeTranscribeEvent) => void) | undefined,
  threads: LiveThreadCount | undefined,
): NativeTranscribeJob {
  if (!threads) return model.transcribe(samples, params, events);
  const job = model.transcribe(samples, { ...params, threads: threads.threads }, events);
  const stop = threads.watch((count) => job.setThreads(count));
  job.promise.then(stop, stop);
  return job;
}

/** `segment` with its times (and its tokens') moved through `map` (times of -1, "none", stay). */
function remapSegment(segment: NativeSegment, map: TimeMap): NativeSegment {
  const at = (t: number) => (t < 0 ? t : map(t));
  return {
    ...segment,
    start: map(segment.start),
    end: map(segment.end),
    tokens: segment.tokens.map((token) => ({
      ...token,
      start: at(token.start),
      end: at(token.end),
      dtw: at(token.dtw),
    })),
  };
}

const SAMPLE_RATE = 16_000;
/** Audio taken on each side of a looping stretch when it is decoded again (whisper's segment times can be late). */
const LOOP_MARGIN_SECONDS = 0.5;
/** whisper.cpp skips input under 100 ms; a window is padded with silence to at least this long. */
const MIN_WINDOW_SECONDS = 1;
/** Shorter windows (segment times past the audio's end) are not decoded again. */
const MIN_REDECODE_SECONDS = 0.1;
/** Loops decoded again per call (each costs a 30 s encoder pass); further ones are only cut back. */
const MAX_REDECODED_LOOPS = 32;

type Decode = (samples: Float32Array, params: NativeTranscribeParams) => Promise<NativeTranscription>;

/**
 * Input [from, to] decoded on its own, without the text before it, through the same VAD as the call (when it has one,
 * so silence in it is cut the same way): its non-empty segments, on the input's timeline.
 */
async function decodeStretch(
  samples: Float32Array,
  from: number,
  to: number,
  params: NativeTranscribeParams,
  decode: Decode,
): Promise<NativeSegment[]> {
  const window = samples.subarray(Math.floor(from * SAMPLE_RATE), Math.ceil(to * SAMPLE_RATE));
  const padded = new Float32Array(Math.max(window.length, MIN_WINDOW_SECONDS * SAMPLE_RATE));
  padded.set(window);
  const again = await decode(padded, {
    ...params,
    conditionOnPreviousText: false,
    progressEvents: false,
    segmentEvents: false,
  });
  // Through the window's own VAD cut (when the call has one), then onto the input's timeline.
  const inWindow = again.vad ? timeMapFromSpans(again.speech) : identityTimeMap;
  const shift = (t: number) => Math.min(to, from + inWindow(t));
  return again.segments.filter((s) => s.text.trim() !== '').map((s) => remapSegment(s, shift));
}

/**
 * Decodes each looping stretch again on its own, without the text before it (where loops come from), and keeps that
 * instead; a loop still there is cut back to its first occurrence. Segments are on the input's timeline.
 */
async function repairLoops(
  segments: NativeSegment[],
  samples: Float32Array,
  params: NativeTranscribeParams,
  decode: Decode,
  signal: AbortSignal | undefined,
): Promise<NativeSegment[]> {
  const loops = findLoops(segments);
  if (loops.length === 0) return segments;
  const duration = samples.length / SAMPLE_RATE;
  const out: NativeSegment[] = [];
  let next = 0;
  for (const [index, { first, last }] of loops.entries()) {
    out.push(...segments.slice(next, first));
    next = last + 1;
    const looping = segments.slice(first, last + 1);
    const from = Math.max(segments[first - 1]?.end ?? 0, segments[first]!.start - LOOP_MARGIN_SECONDS, 0);
    const to = Math.min(segments[last + 1]?.start ?? duration, segments[last]!.end + LOOP_MARGIN_SECONDS, duration);
    // Past the limit, or with no audio to decode again (times past the end), the loop is only cut back.
    if (index >= MAX_REDECODED_LOOPS || to - from < MIN_REDECODE_SECONDS) {
      out.push(...collapseLoops(looping));
      continue;
    }
    let redecoded: NativeSegment[];
    try {
      redecoded = await decodeStretch(samples, from, to, params, decode);
    } catch (error) {
      // The call itself succeeded: a failed second look keeps its text, cut back; only an abort ends the call.
      if (signal?.aborted) throw error;
      out.push(...collapseLoops(looping));
      continue;
    }
    // Nothing heard the second time: keep the first occurrence rather than lose the stretch.
    const kept = redecoded.length > 0 ? redecoded : looping;
    out.push(...(findLoops(kept).length > 0 ? collapseLoops(kept) : kept));
  }
  out.push(...segments.slice(next));
  return out;
}

/** Skipped stretches decoded again per call (each costs an encoder pass); further ones stay as they are. */
const MAX_REDECODED_SKIPS = 16;

/** Words of segments, annotations ("(music)") left out: the text counted whole (wordCount rounds per call). */
const spokenWords = (list: readonly NativeSegment[]) =>
  wordCount(
    list
      .filter((s) => !isAnnotationOnly(s.text))
      .map((s) => s.text)
      .join(' '),
  );

/**
 * Decodes each stretch where speech was skipped (stt/skipped-speech.ts) again on its own and keeps that when it holds
 * MIN_RECOVERED_WORDS more words than the stretch had and does not loop; otherwise the stretch stays as it was.
 * Seconds of speech come from the call's VAD stretches (`speech`) when it ran with VAD, else from `speechModel` run
 * over each stretch; with neither, nothing is done. `covered`: where whisper wrote only annotations.
 */
async function repairSkips(
  segments: NativeSegment[],
  samples: Float32Array,
  measure: { speech: readonly NativeSpeechSpan[] } | { speechModel: string } | undefined,
  covered: readonly NativeSegment[],
  params: NativeTranscribeParams,
  decode: Decode,
  signal: AbortSignal | undefined,
): Promise<NativeSegment[]> {
  if (!measure) return segments;
  const speechSeconds: SpeechSeconds =
    'speech' in measure
      ? (from, to) => speechSecondsIn(measure.speech, from, to)
      : async (from, to) => {
          const stretch = samples.subarray(Math.floor(from * SAMPLE_RATE), Math.ceil(to * SAMPLE_RATE));
          try {
            const regions = await detectSpeechRegionsInPlace(stretch, {
              model: measure.speechModel,
              ...(signal ? { signal } : {}),
            });
            return regions.reduce((sum, region) => sum + region.end - region.start, 0);
          } catch (error) {
            // The transcription is done: a VAD that fails (a damaged model file) leaves it as it is; an abort ends it.
            if (signal?.aborted) throw error;
            return 0;
          }
        };
  const skips = await findSkips(segments, speechSeconds, covered, MAX_REDECODED_SKIPS);
  if (skips.length === 0) return segments;
  const out: NativeSegment[] = [];
  let next = 0;
  for (const { from, to, first, last } of skips) {
    out.push(...segments.slice(next, first));
    next = last + 1;
    const replaced = segments.slice(first, last + 1);
    let redecoded: NativeSegment[] = [];
    try {
      redecoded = await decodeStretch(samples, from, to, params, decode);
    } catch (error) {
      // A failed second look keeps the stretch as it was; only an abort ends the call.
      if (signal?.aborted) throw error;
    }
    const recovered =
      spokenWords(redecoded) - spokenWords(replaced) >= MIN_RECOVERED_WORDS && findLoops(redecoded).length === 0;
    out.push(...(recovered ? redecoded : replaced));
  }
  out.push(...segments.slice(next));
  return out;
}

/** Failures of a fitted decode after which the full window decodes the clip instead. */
const FITTED_FALLBACK_CODES: ReadonlySet<string> = new Set([
  'TOKEN_LIMIT',
  'CONTEXT_TOO_SHORT',
  'TRANSCRIPTION_FAILED',
]);

/**
 * A short clip decoded with an encoder context fitted to its length (stt/fitted-context.ts), without events; or
 * undefined when the clip is not short, or when that decode failed (its token limit, a VAD pass longer than the
 * context) or repeats itself, and the full window must decode it instead.
 */
async function decodeFitted(
  seconds: number,
  below: number,
  params: NativeTranscribeParams,
  decode: (params: NativeTranscribeParams) => Promise<NativeTranscription>,
): Promise<NativeTranscription | undefined> {
  const fitted = fittedContext(seconds, below);
  if (!fitted) return undefined;
  try {
    const result = await decode({ ...params, ...fitted, progressEvents: false, segmentEvents: false });
    return fittedDecodeFailed(result.segments) ? undefined : result;
  } catch (error) {
    if (error instanceof VoxmillError && FITTED_FALLBACK_CODES.has(error.code)) return undefined;
    throw error;
  }
}

/** Audio with no samples: nothing was said, so empty text (whisper is not run). */
function emptyTranscription(language: string | undefined, options: NormalizedTranscribeOptions): Transcription {
  const transcription: Transcription = { text: '', language: language ?? UNDETERMINED_LANGUAGE, duration: 0 };
  if (options.timestamps === 'word' || options.diarize) transcription.words = [];
  if (options.timestamps === 'segment' || options.diarize) transcription.segments = [];
  return transcription;
}

export async function runTranscription(input: RunTranscriptionInput): Promise<Transcription> {
  const { model, info, audio, options, vad } = input;
  const language = effectiveLanguage(info, options, input.modelName);
  if (audio.samples.length === 0) return emptyTranscription(language, options);
  const params = { ...options.params };
  if (language !== undefined) params.language = language;
  if (vad) params.vad = vad;
  params.progressEvents = options.onProgress !== undefined;
  params.segmentEvents = options.onSegment !== undefined;

  // A segment told to onSegment, on the input's timeline, as whisper finishes it (or, for a fitted decode, after it).
  const tellSegment = (index: number, start: number, end: number, text: string) => {
    if (options.annotations === 'drop' && isAnnotationOnly(text)) return;
    const [segment] = normaliseTimes([{ id: index, start, end, text: text.trim() }], audio.duration);
    safely(options.onSegment, segment!);
  };
  let eventMap: TimeMap = identityTimeMap;
  const onEvent =
    options.onProgress || options.onSegment
      ? (...event: NativeTranscribeEvent) => {
          if (event[0] === 'progress') safely(options.onProgress, Math.min(1, Math.max(0, event[1].progress / 100)));
          else if (event[0] === 'speech') eventMap = timeMapFromSpans(event[1].spans);
          else {
            const { index, start, end, text } = event[1];
            tellSegment(index, eventMap(start), eventMap(end), text);
          }
        }
      : undefined;

  const decode = (samples: Float32Array, withParams: NativeTranscribeParams, events?: typeof onEvent) =>
    runJob(() => startWhisper(model, samples, withParams, events, input.threads), {
      signal: options.signal,
      track: input.track,
    });
  // Language detection encodes a full window whatever the context (whisper.cpp detects before it applies it), so a
  // fitted decode only pays when the language is known.
  const fitted =
    language === undefined
      ? undefined
      : await decodeFitted(
          audio.samples.length / SAMPLE_RATE,
          options.fittedContextSeconds ?? DEFAULT_FITTED_CONTEXT_SECONDS,
          params,
          (withParams) => decode(audio.samples, withParams),
        );
  const result = fitted ?? (await decode(audio.samples, params, onEvent));
  // From here on every time is on the input's timeline (with VAD, whisper saw the speech stretches joined).
  const map = result.vad ? timeMapFromSpans(result.speech) : identityTimeMap;
  const mapped = result.vad ? result.segments.map((segment) => remapSegment(segment, map)) : result.segments;
  // The fitted decode ran without events (it may be thrown away): its segments are told now, as onEvent would have.
  if (fitted) {
    for (const [index, segment] of mapped.entries()) tellSegment(index, segment.start, segment.end, segment.text);
    safely(options.onProgress, 1);
  }
  // Annotations go first, so a run of "(music)" segments is not taken for a loop and decoded again.
  let raw = options.annotations === 'drop' ? mapped.filter((segment) => !isAnnotationOnly(segment.text)) : mapped;
  // A stretch decoded again takes the language found for the whole call, so a short window is not heard as another.
  const again = { ...params, ...(params.language ? {} : result.language ? { language: result.language } : {}) };
  if (options.repetitionGuard) {
    raw = await repairLoops(raw, audio.samples, again, decode, options.signal);
    if (options.annotations === 'drop') raw = raw.filter((segment) => !isAnnotationOnly(segment.text));
  }
  if (options.skipGuard) {
    const measure = result.vad
      ? { speech: result.speech }
      : input.speechModel
        ? { speechModel: input.speechModel }
        : undefined;
    const covered = mapped.filter((segment) => isAnnotationOnly(segment.text));
    raw = await repairSkips(raw, audio.samples, measure, covered, again, decode, options.signal);
    if (options.annotations === 'drop') raw = raw.filter((segment) => !isAnnotationOnly(segment.text));
  }
  const segments = shapeSegments(raw, audio.duration, options.params.tinydiarize === true, options.segmentDecoding);
  const inSpeech = <T extends { start: number; end: number }>(items: T[]): T[] =>
    result.vad && vad ? startsInSpeech(items, result.speech, vad.speechPadMs / 1000) : items;
  inSpeech(segments);
  const transcription: Transcription = {
    // Raw texts carry their own spacing (none between CJK segments), so join them as whisper wrote them.
    text: raw
      .map((s) => s.text)
      .join('')
      .trim(),
    language: language ?? (result.language || UNDETERMINED_LANGUAGE),
    duration: audio.duration,
  };
  // Diarization needs the words to split segments; the caller removes them unless they were asked for.
  if (options.timestamps === 'word' || options.diarize) {
    transcription.words = inSpeech(wordsFromSegments(raw, identityTimeMap, audio.duration));
  }
  if (options.timestamps === 'segment' || options.diarize || options.segmentDecoding) {
    transcription.segments = segments;
  }
  return transcription;
}
