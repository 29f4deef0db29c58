// POST /v1/audio/speech: OpenAI's speech endpoint on the engine. JSON in; audio out as it is synthesized, or with
// `stream_format: "sse"` as `speech.audio.delta` events of base64 audio and a `speech.audio.done` (speech-events.ts).
// Shapes: openai npm, resources/audio/speech.ts.
import type { SpeechFormat } from '../../audio/formats.js';
import { TTS_MODEL_IDS, type TtsModelId } from '../../tiers.js';
import type { SynthesizeOptions } from '../../tts/types.js';
import { enumOption, numberOption, objectOption, stringOption, unknownKey } from '../../util/validate.js';
import { HttpError } from '../http-error.js';
import { readJsonBody } from '../json-body.js';
import { servedModelId, voiceIdFor } from '../openai/openai-options.js';
import type { RouteContext } from './context.js';
import { firstAudio, sendAudio } from './speech.js';
import { sendSpeechEvents } from './speech-events.js';

const FIELDS = ['model', 'input', 'voice', 'instructions', 'response_format', 'speed', 'stream_format'] as const;
const RESPONSE_FORMATS = ['mp3', 'opus', 'aac', 'flac', 'wav', 'pcm'] as const;
/** OpenAI's limit on `input`. */
export const OPENAI_MAX_INPUT_CHARS = 4096;
/** OpenAI's audio is 24 kHz in every format (`pcm` is documented as 24 kHz 16-bit little-endian). */
const OPENAI_SAMPLE_RATE = 24_000;

function required(body: Record<string, unknown>, param: string): unknown {
  const value = body[param];
  if (value === undefined || value === null) {
    throw new HttpError(400, 'missing_parameter', `${param} is required`, { param });
  }
  return value;
}

/** `voice`: a string, or OpenAI's `{ id }` form. */
function voiceName(value: unknown): string {
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    const voice = objectOption('voice', value);
    const extra = unknownKey(voice, ['id']);
    if (extra !== undefined) {
      throw new HttpError(400, 'unknown_parameter', `unknown field "voice.${extra}"; known: voice.id`, {
        param: `voice.${extra}`,
      });
    }
    if (voice.id === undefined || voice.id === null) {
      throw new HttpError(400, 'missing_parameter', 'voice.id is required', { param: 'voice.id' });
    }
    return stringOption('voice.id', voice.id) as string;
  }
  return stringOption('voice', value) as string;
}

async function requestOptions(ctx: RouteContext, body: unknown) {
  const fields = objectOption('body', body);
  const unknown = unknownKey(fields, FIELDS);
  if (unknown !== undefined) {
    throw new HttpError(400, 'unknown_parameter', `unknown field "${unknown}"; known: ${FIELDS.join(', ')}`, {
      param: unknown,
    });
  }
  const name = stringOption('model', required(fields, 'model')) as string;
  const input = stringOption('input', required(fields, 'input')) as string;
  if ([...input].length > OPENAI_MAX_INPUT_CHARS) {
    throw new HttpError(400, 'invalid_value', `input must be at most ${OPENAI_MAX_INPUT_CHARS} characters`, {
      param: 'input',
    });
  }
  const voice = voiceName(required(fields, 'voice'));
  // Accepted for compatibility; no installed voice takes style instructions.
  stringOption('instructions', fields.instructions);
  const format = enumOption('response_format', fields.response_format, RESPONSE_FORMATS) ?? 'mp3';
  const streamFormat = enumOption('stream_format', fields.stream_format, ['audio', 'sse'] as const) ?? 'audio';
  const model = servedModelId(ctx.options.openai, name, TTS_MODEL_IDS) as TtsModelId;
  const installed = (await ctx.options.speech.listVoices()).map((v) => v.id);
  const options: SynthesizeOptions = {
    model,
    voice: voiceIdFor(ctx.options.openai, voice, installed),
    input,
    format: (format === 'pcm' ? 'pcm16' : format) as SpeechFormat,
    sampleRate: OPENAI_SAMPLE_RATE,
    speed: numberOption('speed', fields.speed),
    signal: ctx.signal,
  };
  return { options, streamFormat };
}

export async function audioSpeechRoute(ctx: RouteContext): Promise<void> {
  const { req, res, options, signal } = ctx;
  const body = await readJsonBody(req, options.maxJsonBytes, signal);
  const { options: synth, streamFormat } = await requestOptions(ctx, body);
  const stream = await options.speech.synthesize(synth);
  // Errors before the first audio still answer with a JSON error and its status.
  const first = await firstAudio(stream, signal);
  if (streamFormat === 'sse') {
    await sendSpeechEvents(ctx, stream, first, [...synth.input].length);
    return;
  }
  await sendAudio(res, stream, first, signal);
}
