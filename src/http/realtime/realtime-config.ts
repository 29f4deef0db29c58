// A realtime session's settings as OpenAI's clients send them: `session.update` (the GA shape, `audio.input.*`) and
// `transcription_session.update` (the beta shape, `input_audio_*`), read into one config, and the config written back
// in the shape the client spoke. Fields voxmill does not act on (noise reduction, `include`, `delay`, ...) are
// accepted and ignored, so that unchanged clients work; wrong values get an error naming the field.

import { InvalidOptionTypeError, InvalidOptionValueError } from '../../errors.js';
import { LIVE_SPEAKER_RANGES, LIVE_VAD_DEFAULTS, type LiveDiarizeOptions } from '../../stt/live-options.js';
import {
  integerOption,
  isPlainObject,
  numberOption,
  objectOption,
  rejectUnknownKeys,
  stringOption,
} from '../../util/validate.js';

/** Input audio: 16-bit little-endian PCM at `rate`, or G.711 at 8 kHz. */
export type RealtimeAudioFormat = { type: 'pcm16'; rate: 16000 | 24000 } | { type: 'pcmu' | 'pcma'; rate: 8000 };

/** Server VAD, as OpenAI names its settings. */
export interface RealtimeTurnDetection {
  threshold: number;
  prefixPaddingMs: number;
  silenceDurationMs: number;
}

export interface RealtimeConfig {
  format: RealtimeAudioFormat;
  /** The transcription model as the client named it (an OpenAI name or a voxmill id); undefined: the default. */
  model: string | undefined;
  language: string | undefined;
  prompt: string | undefined;
  /** null: the client commits each utterance itself. */
  turnDetection: RealtimeTurnDetection | null;
  /** voxmill: interim text of the open utterance this often (`voxmill.input_audio_transcription.interim`); 0: none. */
  interimIntervalMs: number;
  /** voxmill: the voice and speed of `voxmill.speech.*`. */
  speech: { voice: string | undefined; speed: number | undefined };
  /** voxmill: speaker labels on completed transcriptions (`voxmill.diarize`); false: none. */
  diarize: LiveDiarizeOptions | false;
}

/** OpenAI's server VAD defaults, except the silence: voxmill's live default (500 ms, the same as OpenAI's). */
export const DEFAULT_TURN_DETECTION: Readonly<RealtimeTurnDetection> = {
  threshold: LIVE_VAD_DEFAULTS.threshold,
  prefixPaddingMs: 300,
  silenceDurationMs: LIVE_VAD_DEFAULTS.minSilenceMs,
};

export const DEFAULT_REALTIME_CONFIG: Readonly<RealtimeConfig> = {
  format: { type: 'pcm16', rate: 24000 },
  model: undefined,
  language: undefined,
  prompt: undefined,
  turnDetection: DEFAULT_TURN_DETECTION,
  interimIntervalMs: 0,
  speech: { voice: undefined, speed: undefined },
  diarize: false,
};

/** Which of OpenAI's session shapes a client speaks: the answer uses the same. */
export type SessionDialect = 'ga' | 'beta';

const nullable = (value: unknown) => (value === null ? undefined : value);

/** `session` of a `session.update` (GA) or `transcription_session.update` (beta), applied over `current`. */
export function readSessionUpdate(session: unknown, dialect: SessionDialect, current: RealtimeConfig): RealtimeConfig {
  const raw = objectOption('session', session);
  const next: RealtimeConfig = { ...current, speech: { ...current.speech } };
  if (dialect === 'ga') {
    if (raw.type !== undefined && raw.type !== 'transcription') {
      throw new InvalidOptionValueError(
        'session.type',
        '"transcription" (voxmill serves transcription sessions)',
        raw.type,
      );
    }
    const audio = objectOption('session.audio', nullable(raw.audio));
    const input = objectOption('session.audio.input', nullable(audio.input));
    if (input.format !== undefined) next.format = readGaFormat(input.format);
    if (input.transcription !== undefined)
      readTranscription('session.audio.input.transcription', input.transcription, next);
    if (input.turn_detection !== undefined) {
      next.turnDetection = readTurnDetection('session.audio.input.turn_detection', input.turn_detection);
    }
  } else {
    if (raw.input_audio_format !== undefined) next.format = readBetaFormat(raw.input_audio_format);
    if (raw.input_audio_transcription !== undefined) {
      readTranscription('session.input_audio_transcription', raw.input_audio_transcription, next);
    }
    if (raw.turn_detection !== undefined) {
      next.turnDetection = readTurnDetection('session.turn_detection', raw.turn_detection);
    }
  }
  if (raw.voxmill !== undefined) readVoxmill(raw.voxmill, next);
  return next;
}

function readGaFormat(value: unknown): RealtimeAudioFormat {
  const format = objectOption('session.audio.input.format', value);
  const type = format.type ?? 'audio/pcm';
  if (type === 'audio/pcmu' || type === 'audio/pcma')
    return { type: type === 'audio/pcmu' ? 'pcmu' : 'pcma', rate: 8000 };
  if (type !== 'audio/pcm') {
    throw new InvalidOptionValueError(
      'session.audio.input.format.type',
      '"audio/pcm", "audio/pcmu" or "audio/pcma"',
      type,
    );
  }
  const rate = format.rate ?? 24000;
  if (rate !== 24000 && rate !== 16000) {
    throw new InvalidOptionValueError('session.audio.input.format.rate', '24000 (OpenAI) or 16000', rate);
  }
  return { type: 'pcm16', rate };
}

function readBetaFormat(value: unknown): RealtimeAudioFormat {
  if (value === 'pcm16') return { type: 'pcm16', rate: 24000 };
  if (value === 'g711_ulaw') return { type: 'pcmu', rate: 8000 };
  if (value === 'g711_alaw') return { type: 'pcma', rate: 8000 };
  throw new InvalidOptionValueError('session.input_audio_format', '"pcm16", "g711_ulaw" or "g711_alaw"', value);
}

function readTranscription(param: string, value: unknown, next: RealtimeConfig): void {
  // null turns transcription off at OpenAI; a voxmill session always transcribes, so it keeps its settings.
  if (value === null) return;
  const t = objectOption(param, value);
  if (t.model !== undefined) next.model = stringOption(`${param}.model`, nullable(t.model), 256);
  if (t.language !== undefined)
    next.language = stringOption(`${param}.language`, nullable(t.language), 16) || undefined;
  if (t.prompt !== undefined) {
    const prompt = stringOption(`${param}.prompt`, nullable(t.prompt));
    if (prompt !== undefined && prompt.length > 1000) {
      throw new InvalidOptionValueError(`${param}.prompt`, 'at most 1,000 characters', `${prompt.length} characters`);
    }
    next.prompt = prompt || undefined;
  }
}

function readTurnDetection(param: string, value: unknown): RealtimeTurnDetection | null {
  if (value === null) return null;
  if (!isPlainObject(value)) throw new InvalidOptionTypeError(param, 'an object or null', value);
  const type = value.type ?? 'server_vad';
  if (type !== 'server_vad' && type !== 'semantic_vad') {
    throw new InvalidOptionValueError(`${param}.type`, '"server_vad" or "semantic_vad"', type);
  }
  // semantic_vad has no settings of these kinds: it runs as server VAD with the defaults.
  const d = DEFAULT_TURN_DETECTION;
  return {
    threshold: numberOption(`${param}.threshold`, nullable(value.threshold), 0, 1) ?? d.threshold,
    prefixPaddingMs:
      integerOption(`${param}.prefix_padding_ms`, nullable(value.prefix_padding_ms), 0, 10_000) ?? d.prefixPaddingMs,
    silenceDurationMs:
      integerOption(`${param}.silence_duration_ms`, nullable(value.silence_duration_ms), 0, 60_000) ??
      d.silenceDurationMs,
  };
}

function readVoxmill(value: unknown, next: RealtimeConfig): void {
  const v = objectOption('session.voxmill', value);
  const interim = integerOption('session.voxmill.interim_interval_ms', nullable(v.interim_interval_ms), 0, 60_000);
  if (interim !== undefined) next.interimIntervalMs = interim;
  const speech = objectOption('session.voxmill.speech', nullable(v.speech));
  if (speech.voice !== undefined)
    next.speech.voice = stringOption('session.voxmill.speech.voice', nullable(speech.voice), 256);
  if (speech.speed !== undefined)
    next.speech.speed = numberOption('session.voxmill.speech.speed', nullable(speech.speed));
  if (v.diarize !== undefined) next.diarize = readDiarize(nullable(v.diarize));
}

/** `voxmill.diarize`: true, false / null, or `{ max_speakers, threshold, min_seconds }`. */
function readDiarize(value: unknown): RealtimeConfig['diarize'] {
  const param = 'session.voxmill.diarize';
  if (value === undefined || value === false) return false;
  if (value === true) return {};
  const raw = objectOption(param, value);
  rejectUnknownKeys(param, raw, ['max_speakers', 'threshold', 'min_seconds']);
  const { maxSpeakers, threshold, minSeconds } = LIVE_SPEAKER_RANGES;
  const options: LiveDiarizeOptions = {};
  const max = integerOption(`${param}.max_speakers`, nullable(raw.max_speakers), ...maxSpeakers);
  if (max !== undefined) options.maxSpeakers = max;
  const distance = numberOption(`${param}.threshold`, nullable(raw.threshold), ...threshold);
  if (distance !== undefined) options.threshold = distance;
  const seconds = numberOption(`${param}.min_seconds`, nullable(raw.min_seconds), ...minSeconds);
  if (seconds !== undefined) options.minSeconds = seconds;
  return options;
}

/** The session as the client's dialect writes it (in `session.created` / `.updated`). */
export function sessionObject(id: string, config: RealtimeConfig, dialect: SessionDialect): Record<string, unknown> {
  const transcription = {
    model: config.model ?? 'whisper-1',
    language: config.language ?? null,
    prompt: config.prompt ?? '',
  };
  const turn = config.turnDetection && {
    type: 'server_vad',
    threshold: config.turnDetection.threshold,
    prefix_padding_ms: config.turnDetection.prefixPaddingMs,
    silence_duration_ms: config.turnDetection.silenceDurationMs,
  };
  const voxmill = {
    interim_interval_ms: config.interimIntervalMs,
    speech: { voice: config.speech.voice ?? null, speed: config.speech.speed ?? null },
    diarize: config.diarize && {
      max_speakers: config.diarize.maxSpeakers ?? null,
      threshold: config.diarize.threshold ?? null,
      min_seconds: config.diarize.minSeconds ?? null,
    },
  };
  if (dialect === 'beta') {
    const formats = { pcm16: 'pcm16', pcmu: 'g711_ulaw', pcma: 'g711_alaw' } as const;
    return {
      id,
      object: 'realtime.transcription_session',
      input_audio_format: formats[config.format.type],
      input_audio_transcription: transcription,
      turn_detection: turn,
      input_audio_noise_reduction: null,
      include: null,
      voxmill,
    };
  }
  const format =
    config.format.type === 'pcm16'
      ? { type: 'audio/pcm', rate: config.format.rate }
      : { type: `audio/${config.format.type}` };
  return {
    type: 'transcription',
    id,
    object: 'realtime.transcription_session',
    audio: { input: { format, transcription, turn_detection: turn, noise_reduction: null } },
    include: null,
    voxmill,
  };
}
