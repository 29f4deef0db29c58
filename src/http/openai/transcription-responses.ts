// A voxmill transcription in the shapes OpenAI's audio API returns (`response_format`), field by field as the
// official SDK types them (openai npm: resources/audio/transcriptions.ts, translations.ts).
import { languageName } from '../../stt/languages.js';
import { toSrt, toVtt } from '../../stt/subtitles.js';
import type { Segment, TokenLogprob, Transcription } from '../../stt/types.js';

export const OPENAI_RESPONSE_FORMATS = ['json', 'text', 'srt', 'vtt', 'verbose_json', 'diarized_json'] as const;
export type OpenAiResponseFormat = (typeof OPENAI_RESPONSE_FORMATS)[number];
/** Translations have no diarized_json. */
export const OPENAI_TRANSLATION_FORMATS = ['json', 'text', 'srt', 'vtt', 'verbose_json'] as const;

export type OpenAiTask = 'transcribe' | 'translate';

/** whisper's encoder positions per second of audio (1,500 per 30 s window): the audio's "input tokens". */
const AUDIO_TOKENS_PER_SECOND = 50;

/** `usage` of a transcription billed by duration: whole seconds, rounded up. */
export function durationUsage(duration: number): { type: 'duration'; seconds: number } {
  return { type: 'duration', seconds: Math.ceil(duration) };
}

/** `usage` of a streamed transcription, in tokens: the audio's encoder positions in, the text's tokens out. */
export function tokenUsage(transcription: Transcription) {
  const audio = Math.ceil(transcription.duration * AUDIO_TOKENS_PER_SECOND);
  const output = (transcription.segments ?? []).reduce((sum, s) => sum + (s.decoding?.tokens.length ?? 0), 0);
  return {
    type: 'tokens' as const,
    input_tokens: audio,
    output_tokens: output,
    total_tokens: audio + output,
    input_token_details: { audio_tokens: audio, text_tokens: 0 },
  };
}

/** Every text token of the transcription with its log probability, in order (OpenAI's `logprobs`). */
export function tokenLogprobs(transcription: Transcription): TokenLogprob[] {
  return (transcription.segments ?? []).flatMap((segment) => segment.decoding?.tokenLogprobs ?? []);
}

/** The 30 s window (in 10 ms frames, as openai-whisper's `seek`) a segment starts in. */
function seekOf(segment: Segment): number {
  return Math.floor(segment.start / 30) * 3000;
}

function verboseSegment(segment: Segment, temperature: number) {
  const decoding = segment.decoding;
  return {
    id: segment.id,
    seek: seekOf(segment),
    start: segment.start,
    end: segment.end,
    text: segment.text,
    tokens: decoding?.tokens ?? [],
    temperature,
    avg_logprob: decoding?.avgLogprob ?? 0,
    compression_ratio: decoding?.compressionRatio ?? 0,
    no_speech_prob: decoding?.noSpeechProb ?? 0,
  };
}

export interface RenderedResponse {
  contentType: string;
  body: string;
}

const JSON_TYPE = 'application/json; charset=utf-8';
const TEXT_TYPE = 'text/plain; charset=utf-8';

export interface RenderOptions {
  task: OpenAiTask;
  format: OpenAiResponseFormat;
  /** `timestamp_granularities[]` (verbose_json): words and/or segments; default segments. */
  granularities: ReadonlySet<'word' | 'segment'>;
  /** The request's temperature (whisper.cpp does not report the one each segment was finally decoded at). */
  temperature: number;
  /** json: add `logprobs`, each token's. */
  logprobs?: boolean;
}

/** The body OpenAI would send for `transcription` in `format`. */
export function renderOpenAiTranscription(transcription: Transcription, options: RenderOptions): RenderedResponse {
  const { text, duration } = transcription;
  const segments = transcription.segments ?? [];
  switch (options.format) {
    case 'text':
      return { contentType: TEXT_TYPE, body: `${text}\n` };
    case 'srt':
      return { contentType: TEXT_TYPE, body: toSrt(segments) };
    case 'vtt':
      return { contentType: TEXT_TYPE, body: toVtt(segments) };
    case 'verbose_json': {
      const body: Record<string, unknown> = {
        task: options.task,
        language: languageName(transcription.language),
        duration,
        text,
      };
      if (options.granularities.has('segment')) {
        body.segments = segments.map((s) => verboseSegment(s, options.temperature));
      }
      if (options.granularities.has('word')) {
        body.words = (transcription.words ?? []).map(({ word, start, end }) => ({ word, start, end }));
      }
      if (options.task === 'transcribe') body.usage = durationUsage(duration);
      return { contentType: JSON_TYPE, body: JSON.stringify(body) };
    }
    case 'diarized_json':
      return {
        contentType: JSON_TYPE,
        body: JSON.stringify({
          task: 'transcribe',
          duration,
          text,
          segments: segments.map((s) => diarizedSegment(s)),
          usage: durationUsage(duration),
        }),
      };
    default: {
      const body: Record<string, unknown> = { text };
      if (options.logprobs) body.logprobs = tokenLogprobs(transcription);
      if (options.task === 'transcribe') body.usage = durationUsage(duration);
      return { contentType: JSON_TYPE, body: JSON.stringify(body) };
    }
  }
}

/** A diarized segment, as OpenAI's `transcript.text.segment`: speaker labels are voxmill's (`speaker_1`, ...). */
export function diarizedSegment(segment: Segment) {
  return {
    type: 'transcript.text.segment' as const,
    id: `seg_${segment.id}`,
    start: segment.start,
    end: segment.end,
    text: segment.text,
    speaker: segment.speaker ?? 'unknown',
  };
}
