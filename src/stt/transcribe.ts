// One transcription on a loaded model: native call with events, then the result in the shape the speech API returns.

import type { DecodedAudio } from '../audio/decode.js';
import { InvalidOptionValueError } from '../errors.js';
import type {
  NativeModelInfo,
  NativeSegment,
  NativeTranscribeEvent,
  NativeVadParams,
  NativeWhisperModel,
} from '../native.js';
import { runJob } from '../util/job.js';
import { UNDETERMINED_LANGUAGE } from './languages.js';
import type { NormalizedTranscribeOptions } from './request.js';
import { identityTimeMap, type TimeMap, timeMapFromSpans } from './time-map.js';
import type { Segment, Transcription } from './types.js';
import { normaliseTimes, wordsFromSegments } from './words.js';

/** English-only models take no other language: say so instead of transcribing nonsense. */
function effectiveLanguage(info: NativeModelInfo, language: string | undefined, modelName: string): string | undefined {
  if (info.multilingual) return language;
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

export function shapeSegments(
  raw: readonly NativeSegment[],
  map: TimeMap,
  duration: number,
  withTurns: boolean,
): Segment[] {
  const segments: Segment[] = [];
  for (const s of raw) {
    const text = s.text.trim();
    if (text === '') continue;
    const segment: Segment = { id: segments.length, start: map(s.start), end: map(s.end), text };
    if (withTurns) segment.speakerTurnNext = s.speakerTurnNext;
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
  /** See RunJobOptions.track. */
  track?: ((settled: Promise<void>) => void) | undefined;
}

export async function runTranscription(input: RunTranscriptionInput): Promise<Transcription> {
  const { model, info, audio, options, vad } = input;
  const language = effectiveLanguage(info, options.language, input.modelName);
  const params = { ...options.params };
  if (language !== undefined) params.language = language;
  if (vad) params.vad = vad;
  params.progressEvents = options.onProgress !== undefined;
  params.segmentEvents = options.onSegment !== undefined;

  let eventMap: TimeMap = identityTimeMap;
  const onEvent =
    options.onProgress || options.onSegment
      ? (...event: NativeTranscribeEvent) => {
          if (event[0] === 'progress') safely(options.onProgress, Math.min(1, Math.max(0, event[1].progress / 100)));
          else if (event[0] === 'speech') eventMap = timeMapFromSpans(event[1].spans);
          else {
            const { index, start, end, text } = event[1];
            const [segment] = normaliseTimes(
              [{ id: index, start: eventMap(start), end: eventMap(end), text: text.trim() }],
              audio.duration,
            );
            safely(options.onSegment, segment!);
          }
        }
      : undefined;

  const result = await runJob(() => model.transcribe(audio.samples, params, onEvent), {
    signal: options.signal,
    track: input.track,
  });
  const map = result.vad ? timeMapFromSpans(result.speech) : identityTimeMap;
  const segments = shapeSegments(result.segments, map, audio.duration, options.params.tinydiarize === true);
  const transcription: Transcription = {
    // Raw texts carry their own spacing (none between CJK segments), so join them as whisper wrote them.
    text: result.segments
      .map((s) => s.text)
      .join('')
      .trim(),
    language: language ?? (result.language || UNDETERMINED_LANGUAGE),
    duration: audio.duration,
  };
  // Diarization needs the words to split segments; the caller removes them unless they were asked for.
  if (options.timestamps === 'word' || options.diarize) {
    transcription.words = wordsFromSegments(result.segments, map, audio.duration);
  }
  if (options.timestamps === 'segment' || options.diarize) transcription.segments = segments;
  return transcription;
}
