// The one error shape of the /v1 API, and how every failure (ours or the library's) maps onto it.
import {
  AudioDecodeError,
  AudioTooLongError,
  ClosedError,
  InvalidOptionTypeError,
  InvalidOptionValueError,
  JobStoreError,
  ModelNotFoundError,
  QueueFullError,
  SynthesisError,
  VoiceNotFoundError,
  VoxmillError,
} from '../errors.js';

/** The `type` of an API error: the class of failure, stable across codes. */
export type HttpErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'not_found_error'
  | 'rate_limit_error'
  | 'server_error'
  | 'unavailable_error';

/** The JSON body of every error response: `{ "error": { type, code, message, param, request_id } }`. */
export interface HttpErrorBody {
  error: {
    type: HttpErrorType;
    /** Stable, machine-readable code (`invalid_value`, `queue_full`, ...). */
    code: string;
    message: string;
    /** The request field at fault (`model`, `file`, `sample_rate`), or null. */
    param: string | null;
    request_id: string;
  };
}

const TYPE_OF_STATUS: Record<number, HttpErrorType> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  404: 'not_found_error',
  405: 'invalid_request_error',
  408: 'invalid_request_error',
  413: 'invalid_request_error',
  415: 'invalid_request_error',
  429: 'rate_limit_error',
  500: 'server_error',
  503: 'unavailable_error',
};

/**
 * A failure of an HTTP request to the /v1 API, with its status and the fields of the JSON error. With
 * `errors: 'next'` the handler passes these to the host's error middleware; `status` and `toJSON()` serve it.
 */
export class HttpError extends VoxmillError {
  /** HTTP status code. */
  readonly status: number;
  readonly type: HttpErrorType;
  readonly param: string | null;
  /** Extra response headers (`Retry-After`, `Allow`, `WWW-Authenticate`). */
  readonly headers: Record<string, string>;
  /** The request's id; set by the handler before the error is written. */
  requestId = '';
  constructor(
    status: number,
    code: string,
    message: string,
    options: { param?: string | null; headers?: Record<string, string>; cause?: unknown } = {},
  ) {
    super(code, message, options.cause === undefined ? undefined : { cause: options.cause });
    this.status = status;
    this.type = TYPE_OF_STATUS[status] ?? (status >= 500 ? 'server_error' : 'invalid_request_error');
    this.param = options.param ?? null;
    this.headers = options.headers ?? {};
  }

  /** The response body. */
  toJSON(): HttpErrorBody {
    return {
      error: { type: this.type, code: this.code, message: this.message, param: this.param, request_id: this.requestId },
    };
  }
}

/** Library option names that the HTTP API spells differently. */
const HTTP_PARAM_NAMES: Record<string, string> = {
  sampleRate: 'sample_rate',
  noiseScale: 'noise_scale',
  noiseW: 'noise_w',
  lengthScale: 'length_scale',
  sentenceSilence: 'sentence_silence',
};

/** `diarize.knownSpeakers[i].name|audio` of the library: the OpenAI route's two list fields. */
const KNOWN_SPEAKER_PARAM = /^diarize\.knownSpeakers(?:\[(\d+)\]\.(name|audio))?$/;

export function httpParamName(param: string): string {
  const known = KNOWN_SPEAKER_PARAM.exec(param);
  if (known) return known[2] === 'name' ? 'known_speaker_names[]' : 'known_speaker_references[]';
  return HTTP_PARAM_NAMES[param] ?? param;
}

/** How a message names the param: its HTTP name, and which value of a list field (`known_speaker_names[] #2`). */
function httpParamLabel(param: string): string {
  const index = KNOWN_SPEAKER_PARAM.exec(param)?.[1];
  return index === undefined ? httpParamName(param) : `${httpParamName(param)} #${Number(index) + 1}`;
}

/** Decoder failures: the file's fault, so 4xx, with the decoder's own reason. */
function audioError(error: AudioDecodeError): HttpError {
  if (error instanceof AudioTooLongError || error.code === 'AUDIO_TOO_LARGE') {
    return new HttpError(413, 'audio_too_long', error.message, { param: 'file', cause: error });
  }
  if (error.code === 'AUDIO_UNSUPPORTED') {
    return new HttpError(415, 'unsupported_audio_format', error.message, { param: 'file', cause: error });
  }
  const code = error.code === 'AUDIO_EMPTY' ? 'audio_empty' : 'audio_decode_failed';
  return new HttpError(400, code, `the audio could not be decoded: ${error.message}`, { param: 'file', cause: error });
}

/**
 * Where a request's signal was aborted by the handler itself, the reason says why. `body_timeout` is the client's
 * fault (its body stopped arriving, or took too long); the others are the server's or the connection's.
 */
export class RequestAbortedError extends Error {
  constructor(
    readonly reason: 'timeout' | 'client_closed' | 'shutdown' | 'body_timeout',
    message = `request ${reason.replace('_', ' ')}`,
  ) {
    super(message);
  }
}

/**
 * Maps any error to the HTTP error it is answered with. Library errors keep their message; anything unexpected
 * becomes a 500 whose message hides internals (the host's logger gets the original through `cause`).
 */
export function toHttpError(error: unknown, retryAfterSeconds: number): HttpError {
  if (error instanceof HttpError) return error;
  if (error instanceof RequestAbortedError && error.reason === 'timeout') {
    return new HttpError(503, 'request_timeout', 'the request took longer than the configured request timeout', {
      headers: { 'Retry-After': String(retryAfterSeconds) },
      cause: error,
    });
  }
  if (error instanceof RequestAbortedError && error.reason === 'body_timeout') {
    // The message says which limit passed; it names no server internals, only what the client did.
    return new HttpError(408, 'body_timeout', error.message, { cause: error });
  }
  if (error instanceof RequestAbortedError && error.reason === 'shutdown') {
    return new HttpError(503, 'shutting_down', 'the server is shutting down; retry on another instance', {
      headers: { 'Retry-After': String(retryAfterSeconds) },
      cause: error,
    });
  }
  if (error instanceof InvalidOptionTypeError || error instanceof InvalidOptionValueError) {
    const param = httpParamName(error.param);
    const message = error.message.startsWith(error.param)
      ? `${httpParamLabel(error.param)}${error.message.slice(error.param.length)}`
      : error.message;
    const code = error instanceof InvalidOptionTypeError ? 'invalid_type' : 'invalid_value';
    return new HttpError(400, code, message, { param, cause: error });
  }
  if (error instanceof VoiceNotFoundError) {
    return new HttpError(400, 'voice_not_found', error.message, { param: 'voice', cause: error });
  }
  if (error instanceof QueueFullError) {
    return new HttpError(429, 'queue_full', `${error.message}; retry later`, {
      headers: { 'Retry-After': String(retryAfterSeconds) },
      cause: error,
    });
  }
  if (error instanceof ModelNotFoundError) {
    // Ids are checked before the library is called, so this is a configured model whose file is missing.
    return new HttpError(503, 'model_not_installed', error.message, { cause: error });
  }
  if (error instanceof JobStoreError) {
    return new HttpError(503, 'job_store_unavailable', error.message, {
      headers: { 'Retry-After': String(retryAfterSeconds) },
      cause: error,
    });
  }
  if (error instanceof ClosedError) {
    return new HttpError(503, 'shutting_down', 'the server is shutting down', {
      headers: { 'Retry-After': String(retryAfterSeconds) },
      cause: error,
    });
  }
  if (error instanceof AudioDecodeError) return audioError(error);
  if (error instanceof SynthesisError && error.code === 'TTS_NO_WORD_TIMES') {
    // The voice, not the server, is at fault: its graph has no phoneme durations (the message names the file).
    return new HttpError(
      400,
      'timestamps_unavailable',
      'this voice cannot give word timings: its model has no phoneme durations',
      {
        param: 'timestamps',
        cause: error,
      },
    );
  }
  if (error instanceof VoxmillError) {
    return new HttpError(500, error.code.toLowerCase(), error.message, { cause: error });
  }
  return new HttpError(500, 'internal_error', 'internal error; the server log has the details', { cause: error });
}
