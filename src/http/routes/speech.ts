// POST /v1/speech: JSON in (the fields openapi.json documents), audio streamed out as it is synthesized. Headers
// wait for the first chunk, so a request that fails before any audio exists still gets a JSON error; after that a
// failure cuts the connection (a chunked response without its terminating chunk), which clients see as an error.
// voxmill's fields beyond the spec: the voice's controls (`noise_scale`, `noise_w`, `length_scale`,
// `sentence_silence`), `normalize` (false: no numbers-to-words), `timestamps: "word"` (the answer becomes JSON with the audio in base64 and its words), and
// `stream_format: "sse"` (the audio and the words as events, speech-events.ts).

import { once } from 'node:events';
import type { ServerResponse } from 'node:http';
import { pipeline } from 'node:stream/promises';
import { SPEC_SPEECH_FORMATS } from '../../audio/formats.js';
import { finalizeWavSizes } from '../../audio/wav-sizes.js';
import { SynthesisError } from '../../errors.js';
import { isTtsModelId, TTS_MODEL_IDS } from '../../tiers.js';
import {
  HTTP_LENGTH_SCALE_RANGE,
  HTTP_SENTENCE_SILENCE_RANGE,
  SPEC_SPEED_RANGE,
  SPEECH_TIMESTAMPS,
} from '../../tts/request.js';
import type { SpeechStream, SynthesizeOptions } from '../../tts/types.js';
import {
  booleanOption,
  enumOption,
  numberOption,
  objectOption,
  stringOption,
  unknownKey,
} from '../../util/validate.js';
import { HttpError } from '../http-error.js';
import { readJsonBody } from '../json-body.js';
import { countBytesOut } from '../request-log.js';
import type { RouteContext } from './context.js';
import { sendSpeechEvents } from './speech-events.js';

const FIELDS = [
  'model',
  'voice',
  'input',
  'format',
  'speed',
  'sample_rate',
  'noise_scale',
  'noise_w',
  'length_scale',
  'sentence_silence',
  'timestamps',
  'stream_format',
  'normalize',
] as const;

/** A field the API requires: present (null counts as absent) and a string. */
function requiredString(body: Record<string, unknown>, param: (typeof FIELDS)[number]): string {
  const value = body[param];
  if (value === undefined || value === null) {
    throw new HttpError(400, 'missing_parameter', `${param} is required`, { param });
  }
  return stringOption(param, value) as string;
}

/**
 * The body's shape and the API's own checks, as library options; the library then checks the values (ranges,
 * voices). The shared option checks throw errors naming the JSON field, which answer 400 with it as `param`.
 */
function requestOptions(body: unknown): { options: SynthesizeOptions; streamFormat: 'audio' | 'sse' } {
  const fields = objectOption('body', body);
  const unknown = unknownKey(fields, FIELDS);
  if (unknown !== undefined) {
    throw new HttpError(400, 'unknown_parameter', `unknown field "${unknown}"; known: ${FIELDS.join(', ')}`, {
      param: unknown,
    });
  }
  const model = requiredString(fields, 'model');
  const voice = requiredString(fields, 'voice');
  const input = requiredString(fields, 'input');
  if (!isTtsModelId(model)) {
    throw new HttpError(
      400,
      'model_not_found',
      `unknown model ${JSON.stringify(model)}; available: ${TTS_MODEL_IDS.join(', ')}`,
      { param: 'model' },
    );
  }
  // The library checks the voice controls' types and ranges, naming the option; its error names the JSON field.
  const options: SynthesizeOptions = {
    model,
    voice,
    input,
    format: enumOption('format', fields.format, SPEC_SPEECH_FORMATS),
    speed: numberOption('speed', fields.speed, ...SPEC_SPEED_RANGE),
    sampleRate: numberOption('sample_rate', fields.sample_rate),
    noiseScale: fields.noise_scale as number | undefined,
    noiseW: fields.noise_w as number | undefined,
    lengthScale: numberOption('length_scale', fields.length_scale, ...HTTP_LENGTH_SCALE_RANGE),
    sentenceSilence: numberOption('sentence_silence', fields.sentence_silence, ...HTTP_SENTENCE_SILENCE_RANGE),
    timestamps: enumOption('timestamps', fields.timestamps, SPEECH_TIMESTAMPS),
    normalize: booleanOption('normalize', fields.normalize),
  };
  const streamFormat = enumOption('stream_format', fields.stream_format, ['audio', 'sse'] as const) ?? 'audio';
  return { options, streamFormat };
}

/**
 * The first audio of a synthesis, before the response starts, so a failure up to there is answered with its own
 * status and JSON error. Whatever fails, the synthesis is destroyed: it must not go on for nobody.
 */
export async function firstAudio(stream: SpeechStream, signal: AbortSignal): Promise<Buffer | undefined> {
  // The engine destroys the stream with the signal's reason on abort, possibly after firstChunk() stopped
  // listening; an 'error' with no listener would be thrown. Errors still reach firstChunk() and pipeline().
  stream.on('error', () => undefined);
  try {
    return await firstChunk(stream, signal);
  } catch (error) {
    stream.destroy();
    throw error;
  }
}

/** Resolves with the first chunk (undefined when the stream ends empty); rejects with the stream's error. */
function firstChunk(stream: SpeechStream, signal: AbortSignal): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const cleanup = () => {
      stream.off('readable', onReadable);
      stream.off('end', onEnd);
      stream.off('error', onError);
      stream.off('close', onClose);
      signal.removeEventListener('abort', onAbort);
    };
    const onReadable = () => {
      const chunk = stream.read() as Buffer | null;
      if (chunk === null) return;
      cleanup();
      resolve(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(undefined);
    };
    const onError = (error: Error) => {
      cleanup();
      reject(error);
    };
    const onAbort = () => {
      cleanup();
      stream.destroy();
      reject(signal.reason);
    };
    // Destroyed without an error (by its owner, or by the engine closing): no audio will come.
    const onClose = () => {
      cleanup();
      reject(new SynthesisError('the synthesis stream closed before any audio'));
    };
    if (signal.aborted) {
      onAbort();
      return;
    }
    // A stream that is already over fires no more events.
    if (stream.readableEnded) {
      resolve(undefined);
      return;
    }
    if (stream.destroyed) {
      reject(stream.errored ?? new SynthesisError('the synthesis stream closed before any audio'));
      return;
    }
    stream.on('readable', onReadable);
    stream.once('end', onEnd);
    stream.once('error', onError);
    stream.once('close', onClose);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

function writeAudioHeaders(res: ServerResponse, stream: SpeechStream): void {
  res.statusCode = 200;
  res.setHeader('Content-Type', stream.contentType);
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('X-Voxmill-Sample-Rate', String(stream.sampleRate));
  res.setHeader('X-Voxmill-Voice-Variant', stream.variant);
}

export async function speechRoute(ctx: RouteContext): Promise<void> {
  const { req, res, options, signal } = ctx;
  const body = await readJsonBody(req, options.maxJsonBytes, signal);
  const { options: synth, streamFormat } = requestOptions(body);
  if (synth.timestamps === 'word' && streamFormat === 'audio') {
    await sendTimedSpeech(ctx, await options.speech.synthesize({ ...synth, signal }));
    return;
  }
  const stream = await options.speech.synthesize({ ...synth, signal });
  const first = await firstAudio(stream, signal);
  if (streamFormat === 'sse') {
    await sendSpeechEvents(ctx, stream, first, [...synth.input].length);
    return;
  }
  await sendAudio(res, stream, first, signal);
}

/** Sends the audio: headers, the chunk already read (undefined: the stream ended empty), then the rest as it comes. */
export async function sendAudio(
  res: ServerResponse,
  stream: SpeechStream,
  first: Buffer | undefined,
  signal: AbortSignal,
): Promise<void> {
  try {
    writeAudioHeaders(res, stream);
    if (first === undefined) {
      res.end();
      return;
    }
    res.write(first);
    countBytesOut(res, first.length);
  } catch (error) {
    // A response that cannot start (a header Node refuses): the synthesis must not go on for nobody.
    stream.destroy();
    throw error;
  }
  // pipeline() honours res.write() backpressure (the engine runs at most its lookahead ahead of the socket) and
  // destroys the synthesis when the client goes away.
  const done = pipeline(stream, res, { signal });
  // pipe() has attached, so this only observes (and does not start) the flow.
  stream.on('data', (chunk: Buffer) => countBytesOut(res, chunk.length));
  await done;
}

/** Base64 is written in slices of this many bytes (a multiple of 3), each a millisecond or two of work. */
const BASE64_SLICE_BYTES = 3 * 256 * 1024;

/**
 * The JSON answer of `timestamps: "word"`: the whole audio (at most `maxTimedSpeechBytes`, else 413 and synthesis
 * stops), then `{ audio (base64), content_type, sample_rate, duration, words }` written in slices with the socket's
 * backpressure, so neither a long base64 string nor one JSON.stringify of it holds the event loop.
 */
async function sendTimedSpeech({ res, options, signal }: RouteContext, stream: SpeechStream): Promise<void> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  try {
    for await (const chunk of stream) {
      bytes += (chunk as Buffer).length;
      if (bytes > options.maxTimedSpeechBytes) {
        throw new HttpError(
          413,
          'audio_too_long',
          `the audio passes ${options.maxTimedSpeechBytes} bytes, the most a JSON answer with word timings holds; ` +
            'ask for stream_format "sse" or shorter input',
          { param: 'input' },
        );
      }
      chunks.push(chunk as Buffer);
    }
  } finally {
    stream.destroy();
  }
  const audio = Buffer.concat(chunks);
  if (stream.format === 'wav') finalizeWavSizes(audio);
  res.statusCode = 200;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Cache-Control', 'no-store');
  const write = async (text: string) => {
    countBytesOut(res, Buffer.byteLength(text));
    if (!res.write(text)) await once(res, 'drain', { signal });
  };
  await write('{"audio":"');
  for (let offset = 0; offset < audio.length; offset += BASE64_SLICE_BYTES) {
    await write(audio.toString('base64', offset, Math.min(audio.length, offset + BASE64_SLICE_BYTES)));
  }
  const rest = {
    content_type: stream.contentType,
    sample_rate: stream.sampleRate,
    duration: stream.progress.seconds,
    words: stream.words ?? [],
  };
  await write(`",${JSON.stringify(rest).slice(1)}`);
  res.end();
}
