// The OpenAI-compatible routes' own settings: which voxmill model answers each OpenAI model name, and which installed
// voice speaks for each OpenAI voice name. Existing OpenAI clients send those names unchanged.
import { objectOption, rejectUnknownKeys, stringOption } from '../../util/validate.js';
import { HttpError } from '../http-error.js';

/** Options of the OpenAI-compatible routes (`createSpeechHandler({ openai })`). */
export interface OpenAiCompatOptions {
  /**
   * OpenAI model names and the configured model id that serves each, merged over the defaults
   * ({@link DEFAULT_OPENAI_MODELS}). A configured id is always accepted as itself.
   */
  models?: Record<string, string>;
  /**
   * OpenAI voice names (`alloy`, `nova`, ...) and the voice id that speaks for each. A name not in the table, and
   * not an installed voice id, is given an installed voice in turn (the 13 OpenAI names over the installed voices,
   * in the order GET /v1/voices lists them), so every OpenAI voice name works on any install.
   */
  voices?: Record<string, string>;
}

export interface ResolvedOpenAiOptions {
  models: Readonly<Record<string, string>>;
  voices: Readonly<Record<string, string>>;
}

/**
 * OpenAI's model names as voxmill serves them: the transcription models by the tier closest in speed, and the
 * speech models the same way (`tts-1` is OpenAI's fast one, `tts-1-hd` its better one).
 */
export const DEFAULT_OPENAI_MODELS: Readonly<Record<string, string>> = {
  'whisper-1': 'svc-stt-1',
  'gpt-4o-transcribe': 'svc-stt-1',
  'gpt-4o-transcribe-diarize': 'svc-stt-1',
  'gpt-4o-mini-transcribe': 'svc-stt-1-flash',
  'tts-1': 'svc-tts-1-flash',
  'tts-1-hd': 'svc-tts-1',
  'gpt-4o-mini-tts': 'svc-tts-1',
};

/** OpenAI's voice names, in the order they are given installed voices when the table names none. */
export const OPENAI_VOICE_NAMES = [
  'alloy',
  'ash',
  'ballad',
  'coral',
  'echo',
  'fable',
  'nova',
  'onyx',
  'sage',
  'shimmer',
  'verse',
  'marin',
  'cedar',
] as const;

function nameTable(param: string, value: unknown): Record<string, string> {
  const table = objectOption(param, value);
  const out: Record<string, string> = {};
  for (const [name, target] of Object.entries(table)) {
    const id = stringOption(`${param}.${name}`, target);
    if (id !== undefined) out[name] = id;
  }
  return out;
}

export function resolveOpenAiOptions(value: unknown): ResolvedOpenAiOptions {
  const raw = objectOption('openai', value);
  rejectUnknownKeys('openai', raw, ['models', 'voices']);
  return {
    models: { ...DEFAULT_OPENAI_MODELS, ...nameTable('openai.models', raw.models) },
    voices: nameTable('openai.voices', raw.voices),
  };
}

/** The model id an OpenAI request names: a served id as itself, else an alias's target, else the name as given. */
export function modelIdFor(options: ResolvedOpenAiOptions, name: string, served: readonly string[]): string {
  if (served.includes(name)) return name;
  return Object.hasOwn(options.models, name) ? (options.models[name] as string) : name;
}

/** The served ids and the OpenAI names that reach one of them: every model name a request may give. */
export function servedNames(options: ResolvedOpenAiOptions, served: readonly string[]): string[] {
  const aliases = Object.entries(options.models)
    .filter(([alias, target]) => served.includes(target) && !served.includes(alias))
    .map(([alias]) => alias);
  return [...served, ...aliases];
}

/** The served id a request's `model` names; 400 `model_not_found` listing the names that work when none. */
export function servedModelId(options: ResolvedOpenAiOptions, name: string, served: readonly string[]): string {
  const id = modelIdFor(options, name, served);
  if (served.includes(id)) return id;
  const available = servedNames(options, served).join(', ');
  throw new HttpError(400, 'model_not_found', `unknown model ${JSON.stringify(name)}; available: ${available}`, {
    param: 'model',
  });
}

/**
 * The voice id an OpenAI request names: the table's, an installed voice id as itself, or for one of OpenAI's names
 * an installed voice in turn; anything else as given (the engine then answers voice_not_found).
 */
export function voiceIdFor(options: ResolvedOpenAiOptions, name: string, installed: readonly string[]): string {
  if (Object.hasOwn(options.voices, name)) return options.voices[name] as string;
  if (installed.includes(name) || installed.length === 0) return name;
  const index = (OPENAI_VOICE_NAMES as readonly string[]).indexOf(name);
  return index === -1 ? name : (installed[index % installed.length] as string);
}
