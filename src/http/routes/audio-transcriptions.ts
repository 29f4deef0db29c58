// POST /v1/audio/transcriptions and /v1/audio/translations: OpenAI's audio API on the engine, with the same upload
// limits, auth and error shape as POST /v1/transcriptions. Shapes: openai npm, resources/audio/*.
import { KNOWN_SPEAKER_LIMITS } from '../../diarize/request.js';
import type { KnownSpeaker } from '../../diarize/types.js';
import type { Segment, SpeechTranscribeOptions, Transcription, VadOptions } from '../../stt/types.js';
import {
  audioDataUrl,
  formBoolean,
  formNumber,
  invalidField,
  missingField,
  uploadDecodeError,
} from '../form-fields.js';
import { toHttpError } from '../http-error.js';
import { readTranscriptionForm } from '../multipart.js';
import { servedModelId } from '../openai/openai-options.js';
import {
  diarizedSegment,
  OPENAI_RESPONSE_FORMATS,
  OPENAI_TRANSLATION_FORMATS,
  type OpenAiResponseFormat,
  type OpenAiTask,
  renderOpenAiTranscription,
  tokenLogprobs,
  tokenUsage,
} from '../openai/transcription-responses.js';
import { sendText } from '../respond.js';
import { type EventStream, startEventStream } from '../sse.js';
import type { Route, RouteContext } from './context.js';

const FILE_FIELD = 'file';
const TRANSLATION_FIELDS = ['model', 'prompt', 'response_format', 'temperature'] as const;
const VAD_FIELDS = {
  'chunking_strategy[type]': 'type',
  'chunking_strategy[threshold]': 'threshold',
  'chunking_strategy[prefix_padding_ms]': 'prefix_padding_ms',
  'chunking_strategy[silence_duration_ms]': 'silence_duration_ms',
} as const;
const TRANSCRIPTION_FIELDS = [
  ...TRANSLATION_FIELDS,
  'language',
  'stream',
  'chunking_strategy',
  ...Object.keys(VAD_FIELDS),
] as const;
const LIST_FIELDS = [
  'timestamp_granularities[]',
  'include[]',
  'known_speaker_names[]',
  'known_speaker_references[]',
] as const;
/** OpenAI's prompt limit is 224 tokens; a few KB of text is ample and still bounded. */
const MAX_FIELD_BYTES = 16 * 1024;
/**
 * A known speaker's clip as a data URL: 2 MB of base64 is 1.5 MB of audio, 47 s of 16 kHz 16-bit WAV (the library
 * takes at most 30 s; compressed formats fit easily). All of a request's clips together: 8 MB, so a request holds at
 * most that much of them as text (and three quarters of it decoded) before the audio budget sees them.
 */
const MAX_REFERENCE_FIELD_BYTES = 2 * 1024 * 1024;
const MAX_REFERENCE_TOTAL_BYTES = 8 * 1024 * 1024;
const KNOWN_SPEAKER_FIELD_LIMITS = {
  'known_speaker_names[]': { maxValues: KNOWN_SPEAKER_LIMITS.maxSpeakers },
  'known_speaker_references[]': {
    maxBytes: MAX_REFERENCE_FIELD_BYTES,
    maxValues: KNOWN_SPEAKER_LIMITS.maxSpeakers,
    maxTotalBytes: MAX_REFERENCE_TOTAL_BYTES,
  },
} as const;

/** `chunking_strategy`: `auto` or a `server_vad` object -> the Silero VAD with those settings. */
function chunkingStrategy(field: (name: string) => string | undefined): boolean | VadOptions | undefined {
  const plain = field('chunking_strategy');
  const type = field('chunking_strategy[type]');
  if (plain !== undefined) {
    if (plain !== 'auto') throw invalidField('chunking_strategy', '"auto" or a server_vad object', plain);
    return true;
  }
  if (type === undefined) {
    const stray = Object.keys(VAD_FIELDS).find((name) => field(name) !== undefined);
    if (stray) throw missingField('chunking_strategy[type]');
    return undefined;
  }
  if (type !== 'server_vad') throw invalidField('chunking_strategy[type]', '"server_vad"', type);
  const vad: VadOptions = {};
  const threshold = formNumber('chunking_strategy[threshold]', field('chunking_strategy[threshold]'), 0, 1);
  if (threshold !== undefined) vad.threshold = threshold;
  const pad = formNumber(
    'chunking_strategy[prefix_padding_ms]',
    field('chunking_strategy[prefix_padding_ms]'),
    0,
    2000,
  );
  if (pad !== undefined) vad.speechPadMs = pad;
  const silence = formNumber(
    'chunking_strategy[silence_duration_ms]',
    field('chunking_strategy[silence_duration_ms]'),
    0,
    10_000,
  );
  if (silence !== undefined) vad.minSilenceMs = silence;
  return vad;
}

/**
 * `known_speaker_names[]` with `known_speaker_references[]` (one audio data URL per name, in order): the library's
 * `diarize.knownSpeakers`, so only with `diarized_json` (the library needs an embedding model, or answers 400).
 */
function knownSpeakersOf(lists: Map<string, string[]>, format: OpenAiResponseFormat): KnownSpeaker[] {
  const names = lists.get('known_speaker_names[]') ?? [];
  const references = lists.get('known_speaker_references[]') ?? [];
  if (names.length === 0 && references.length === 0) return [];
  if (format !== 'diarized_json') {
    throw invalidField('known_speaker_names[]', 'given only with response_format diarized_json', format);
  }
  if (names.length !== references.length) {
    throw invalidField(
      'known_speaker_references[]',
      `one audio data URL per known_speaker_names[] value (${names.length})`,
      `${references.length} values`,
    );
  }
  return names.map((name, index) => ({
    name,
    audio: audioDataUrl('known_speaker_references[]', references[index] as string),
  }));
}

interface OpenAiRequest {
  options: SpeechTranscribeOptions;
  format: OpenAiResponseFormat;
  granularities: Set<'word' | 'segment'>;
  temperature: number;
  stream: boolean;
  /** `include[]=logprobs`: each token's log probability (json, and the stream's done event). */
  logprobs: boolean;
}

function parseRequest(
  task: OpenAiTask,
  fields: Map<string, string>,
  lists: Map<string, string[]>,
  ctx: RouteContext,
): OpenAiRequest {
  // An empty optional field is an HTML form's way of leaving it out.
  const field = (name: string) => fields.get(name) || undefined;
  const name = field('model');
  if (name === undefined) throw missingField('model');
  const model = servedModelId(ctx.options.openai, name, ctx.options.speech.modelIds);
  const allowed: readonly string[] = task === 'translate' ? OPENAI_TRANSLATION_FORMATS : OPENAI_RESPONSE_FORMATS;
  const format = (field('response_format') ?? 'json') as OpenAiResponseFormat;
  if (!allowed.includes(format)) throw invalidField('response_format', `one of ${allowed.join(', ')}`, format);

  const granularityValues = lists.get('timestamp_granularities[]') ?? [];
  for (const value of granularityValues) {
    if (value !== 'word' && value !== 'segment') {
      throw invalidField('timestamp_granularities[]', 'word or segment', value);
    }
  }
  if (granularityValues.length > 0 && format !== 'verbose_json') {
    throw invalidField('timestamp_granularities[]', 'given only with response_format verbose_json', format);
  }
  const granularities = new Set(
    (granularityValues.length > 0 ? granularityValues : ['segment']) as Array<'word' | 'segment'>,
  );
  for (const value of lists.get('include[]') ?? []) {
    if (value !== 'logprobs') throw invalidField('include[]', 'logprobs', value);
  }
  const logprobs = lists.has('include[]');
  const knownSpeakers = knownSpeakersOf(lists, format);
  const stream = formBoolean('stream', field('stream')) ?? false;
  // As OpenAI: log probabilities come with json (streamed or not) only.
  if (logprobs && format !== 'json') {
    throw invalidField('include[]', 'given only with response_format json', format);
  }
  if (stream && !['json', 'text', 'diarized_json'].includes(format)) {
    throw invalidField('stream', 'false with response_format srt, vtt or verbose_json', 'true');
  }
  const temperature = formNumber('temperature', field('temperature'), 0, 1) ?? 0;
  const diarize = format === 'diarized_json';
  const words = granularities.has('word') && format === 'verbose_json';
  const needsSegments = format === 'srt' || format === 'vtt' || format === 'verbose_json' || diarize || stream;
  const options: SpeechTranscribeOptions = {
    model,
    timestamps: words ? 'word' : needsSegments ? 'segment' : 'none',
    translate: task === 'translate',
    temperature,
    segmentDecoding: format === 'verbose_json' || stream || logprobs,
    maxDurationSeconds: ctx.options.maxAudioSeconds,
    signal: ctx.signal,
  };
  if (diarize) options.diarize = knownSpeakers.length > 0 ? { knownSpeakers } : true;
  const language = field('language');
  if (language !== undefined) options.language = language;
  const prompt = field('prompt');
  if (prompt !== undefined) options.prompt = prompt;
  if (task === 'transcribe') {
    const vad = chunkingStrategy(field);
    if (vad !== undefined) options.vad = vad;
  }
  return { options, format, granularities, temperature, stream, logprobs };
}

/**
 * SSE: a delta per segment as whisper finishes it, diarized segments at the end, then the full text with usage. The
 * stream (status 200) starts only once whisper runs, so a request that fails before (bad options, a full queue, audio
 * that does not decode) is answered with its own status and JSON error, as OpenAI does and as the SDKs retry on.
 */
async function streamTranscription(
  ctx: RouteContext,
  input: Buffer | string,
  request: OpenAiRequest,
  container: string,
): Promise<void> {
  let events: EventStream | undefined;
  const stream = () => {
    events ??= startEventStream(ctx.res);
    return events;
  };
  let sent = 0;
  try {
    const transcription = await ctx.options.speech.transcribe(input, {
      ...request.options,
      onProgress: () => stream(),
      onSegment: (segment: Segment) => {
        void stream().send({ type: 'transcript.text.delta', delta: sent++ === 0 ? segment.text : ` ${segment.text}` });
      },
    });
    if (request.format === 'diarized_json') {
      for (const segment of transcription.segments ?? []) await stream().send(diarizedSegment(segment));
    }
    await stream().send({
      type: 'transcript.text.done',
      text: transcription.text,
      ...(request.logprobs ? { logprobs: tokenLogprobs(transcription) } : {}),
      usage: tokenUsage(transcription),
    });
  } catch (error) {
    const failure = uploadDecodeError(error, container, FILE_FIELD);
    if (!events) throw failure;
    // The status is sent: the error travels as an event, which the SDKs raise as an APIError.
    if (!ctx.signal.aborted) {
      const httpError = toHttpError(failure, ctx.options.retryAfterSeconds);
      httpError.requestId = ctx.requestId;
      await events.send(httpError.toJSON());
    }
  } finally {
    events?.end();
  }
}

function audioRoute(task: OpenAiTask): Route {
  return async (ctx) => {
    const form = await readTranscriptionForm(ctx.req, {
      fieldNames: task === 'translate' ? TRANSLATION_FIELDS : TRANSCRIPTION_FIELDS,
      listFields: task === 'translate' ? [] : LIST_FIELDS,
      maxFieldBytes: MAX_FIELD_BYTES,
      ...(task === 'transcribe' ? { fieldLimits: KNOWN_SPEAKER_FIELD_LIMITS } : {}),
      fileField: FILE_FIELD,
      maxFileBytes: ctx.options.maxFileBytes,
      audioFormats: ctx.options.audioFormats,
      uploadDir: ctx.options.uploadDir,
      signal: ctx.signal,
    });
    try {
      const request = parseRequest(task, form.fields, form.lists, ctx);
      if (!form.file) throw missingField(FILE_FIELD);
      const { container } = form.file;
      const input = form.file.data ?? (form.file.path as string);
      if (request.stream) {
        await streamTranscription(ctx, input, request, container);
        return;
      }
      const transcription: Transcription = await ctx.options.speech
        .transcribe(input, request.options)
        .catch((error: unknown) => {
          throw uploadDecodeError(error, container, FILE_FIELD);
        });
      const { contentType, body } = renderOpenAiTranscription(transcription, {
        task,
        format: request.format,
        granularities: request.granularities,
        temperature: request.temperature,
        logprobs: request.logprobs,
      });
      sendText(ctx.res, 200, contentType, body);
    } finally {
      await form.file?.dispose().catch(() => undefined);
    }
  };
}

export const audioTranscriptionsRoute = audioRoute('transcribe');
export const audioTranslationsRoute = audioRoute('translate');
