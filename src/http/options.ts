// Options of createSpeechHandler(): validated once, with every limit named and defaulted.
import { accessSync, constants, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { InvalidOptionTypeError, InvalidOptionValueError } from '../errors.js';
import { createJobQueue } from '../jobs/job-queue.js';
import type { JobQueue } from '../jobs/types.js';
import type { SpeechMetrics } from '../metrics/speech-metrics.js';
import type { Speech } from '../speech.js';
import {
  enumOption,
  functionOption,
  integerOption,
  isPlainObject,
  numberOption,
  objectOption,
  rejectUnknownKeys,
  stringOption,
} from '../util/validate.js';
import { AUDIO_CONTAINERS, type AudioContainer, DEFAULT_AUDIO_CONTAINERS } from './audio-sniff.js';
import {
  API_KEY_CHARACTERS,
  API_KEY_ID,
  type ApiKey,
  type AuthorizeFunction,
  isBearerToken,
  keyIdentity,
  type ResolvedAuth,
  type ResolvedKey,
} from './auth.js';
import { type OpenAiCompatOptions, type ResolvedOpenAiOptions, resolveOpenAiOptions } from './openai/openai-options.js';
import {
  type RealtimeOptions,
  type ResolvedRealtimeOptions,
  resolveRealtimeOptions,
} from './realtime/realtime-options.js';
import type { RequestLogEntry } from './request-log.js';

/** What the handler needs of the engine: a {@link Speech} from `createSpeech()`. */
export type SpeechEngine = Pick<Speech, 'transcribe' | 'synthesize' | 'listVoices' | 'modelIds'> &
  Partial<Pick<Speech, 'createTranscriber' | 'createLiveSpeech'>>;

/** Limits of the handler. Each has a default; all are per request unless said otherwise. */
export interface SpeechHandlerLimits {
  /** Largest audio upload to POST /v1/transcriptions, in bytes; larger gets 413. Default 25 MiB. */
  maxFileBytes?: number;
  /** Largest JSON body of POST /v1/speech, in bytes; larger gets 413. Default 256 KiB (5,000 characters fit). */
  maxJsonBytes?: number;
  /**
   * Largest audio POST /v1/speech returns inside a JSON answer (`timestamps: "word"` without `stream_format: "sse"`,
   * which has to hold the whole audio), in bytes before base64; more gets 413 `audio_too_long` and synthesis stops.
   * Default 32 MiB (12 minutes of 22 kHz wav, over an hour of mp3).
   */
  maxTimedSpeechBytes?: number;
  /**
   * Longest audio one POST /v1/transcriptions may decode to, in seconds; longer gets 413 `audio_too_long`, and
   * decoding stops there. Bounds what one upload can make the server hold: 64 KB of decoded samples per second
   * (461 MB at the default, four times that with `diarize`), whatever the file's size (9,000 s of silence fits in
   * a 1.7 MB FLAC). The engine's own `maxDurationSeconds` still applies when lower. Default 7200 (2 hours).
   */
  maxAudioSeconds?: number;
  /** Requests being handled at once by this handler; more get 429 before their body is read. Default 64. */
  maxConcurrentRequests?: number;
  /**
   * Requests one client may have in progress at once; more get 429 `client_request_limit` before their body is
   * read, so one client (slow, or hostile) cannot hold every slot. A client is its API key (with `auth` as keys),
   * its bearer token (with an `authorize` function), or else its address (Express's `req.ip`, which follows
   * `trust proxy`, or the socket's). Default an eighth of `maxConcurrentRequests`, at least 1 (8 of the default 64).
   */
  maxConcurrentRequestsPerClient?: number;
  /**
   * Requests one client may start per minute: a token bucket of this many, refilled evenly, so a burst of up to this
   * many is fine. Past it, 429 `rate_limited` with `Retry-After` and the IETF `RateLimit-Policy` / `RateLimit` fields.
   * Counted in this process, or in Redis (shared by every process) when `jobs` is a queue on Redis. Default 0: no
   * limit (the concurrency limits above still apply).
   */
  requestsPerMinute?: number;
  /**
   * Seconds of audio one client may have transcribed, translated or synthesized per hour (a token bucket, like
   * `requestsPerMinute`): work is admitted while any are left and charged with its audio's length when it ends, so one
   * long file may leave the client in debt (at most one hour's worth) until the refill pays it. Realtime sessions are
   * charged per transcribed utterance, jobs when they complete. Past it, 429 `audio_rate_limited`. Default 0: no limit.
   */
  audioSecondsPerHour?: number;
  /**
   * Longest gap between two chunks of a request body the handler reads, in ms; past it the client gets 408
   * `body_timeout` and the connection is closed. 0 = no limit. Default 10000.
   */
  bodyIdleTimeoutMs?: number;
  /**
   * Time the whole body may take to arrive once the request is authenticated, in ms; past it 408 `body_timeout`
   * and the connection is closed. Bounds how long a trickling client holds a slot. 0 = no limit. Default 60000
   * (a 25 MiB upload needs about 3.5 Mbit/s; raise it for large uploads over slow links).
   */
  bodyTimeoutMs?: number;
  /**
   * Lowest average rate of a request body the handler reads, in bytes per second, from when it starts flowing to
   * the handler; a body below it once `bodyRateGraceMs` has passed gets 408 `body_timeout` and the connection is
   * closed. Frees the slots of clients that trickle a byte now and then: the idle deadline never passes for them,
   * and `bodyTimeoutMs` only after a minute. Time the handler itself holds the body back (a slow disk) does not
   * count. 0 = no limit. Default 1024 (1 KiB/s: legitimate uploads are far faster; a phone on 2G sends about
   * 30 KB/s; a 25 MiB upload at this rate would take 7 hours, far past `bodyTimeoutMs`).
   */
  minBodyBytesPerSecond?: number;
  /**
   * Time a body flows before `minBodyBytesPerSecond` judges it, in ms, so a connection's slow start (or a client
   * that sends its first part a moment after the head) is not cut; with the default rate a body must have sent
   * 5 KiB by then, or more at the rate since. At least 100. Default 5000.
   */
  bodyRateGraceMs?: number;
  /**
   * Time from the request's arrival to the end of its response, in ms; past it the work is cancelled and the
   * client gets 503 (or, mid-stream, a cut connection). 0 = no limit. Default 600000 (10 minutes).
   */
  requestTimeoutMs?: number;
  /** `Retry-After` seconds sent with 429 and 503. Default 1. */
  retryAfterSeconds?: number;
}

/** Options of {@link createSpeechHandler}. */
export interface SpeechHandlerOptions {
  /** The engine that serves the requests (share one per process). */
  speech: SpeechEngine;
  /**
   * Required, so an API is never open by accident: a list of API keys accepted as `Authorization: Bearer <key>`
   * (compared in constant time), a function deciding per token, or `false` when the host authenticates itself.
   * A key given as `{ id, key }` makes the caller known by its id: its jobs and rate limits survive a key rotation
   * (list the new key under the same id). A plain key is known by a digest of the key.
   */
  auth: readonly (string | ApiKey)[] | AuthorizeFunction | false;
  /**
   * `respond` (default): the handler writes its errors as JSON. `next`: errors go to the host's error middleware
   * as {@link HttpError} (with `status`, `headers` and `toJSON()`); without a `next` they are written anyway.
   */
  errors?: 'respond' | 'next';
  /**
   * Containers the transcription routes accept, by their bytes. Default all of them: the spec's wav, mp3, m4a, flac
   * and ogg, and webm (browsers' MediaRecorder) and ADTS aac.
   */
  audioFormats?: readonly AudioContainer[];
  /**
   * Spool uploads to a temporary file in this directory instead of memory (removed when the request ends, however
   * it ends). Default: uploads stay in memory and nothing is written to disk.
   */
  uploadDir?: string;
  limits?: SpeechHandlerLimits;
  /** The OpenAI-compatible routes' model and voice names (/v1/audio/*, /v1/models, /v1/realtime). */
  openai?: OpenAiCompatOptions;
  /** Limits of the `/v1/realtime` WebSocket endpoint (`handler.attach(server)`). */
  realtime?: RealtimeOptions;
  /** Called once per request the handler owns, when its response ends or its connection closes. */
  onRequest?: (entry: RequestLogEntry) => void;
  /**
   * The queue behind `/v1/jobs`: a {@link JobQueue} from `createJobQueue()` (on Redis, shared by many processes), or
   * false to serve no job routes. Default: an in-process queue on `speech` (jobs held in memory, lost on restart).
   */
  jobs?: JobQueue | false;
  /** Counts requests (by route template, method and status), their latency and those in progress into these. */
  metrics?: SpeechMetrics;
}

export interface ResolvedHandlerOptions extends ResolvedAuth {
  speech: SpeechEngine;
  errors: 'respond' | 'next';
  audioFormats: readonly AudioContainer[];
  uploadDir: string | undefined;
  maxFileBytes: number;
  maxJsonBytes: number;
  maxTimedSpeechBytes: number;
  maxAudioSeconds: number;
  maxConcurrentRequests: number;
  maxConcurrentRequestsPerClient: number;
  requestsPerMinute: number;
  audioSecondsPerHour: number;
  bodyIdleTimeoutMs: number;
  bodyTimeoutMs: number;
  minBodyBytesPerSecond: number;
  bodyRateGraceMs: number;
  requestTimeoutMs: number;
  retryAfterSeconds: number;
  openai: ResolvedOpenAiOptions;
  realtime: ResolvedRealtimeOptions;
  onRequest: ((entry: RequestLogEntry) => void) | undefined;
  jobs: JobQueue | undefined;
  metrics: SpeechMetrics | undefined;
}

export const DEFAULT_MAX_FILE_BYTES = 25 * 1024 * 1024;
export const DEFAULT_MAX_JSON_BYTES = 256 * 1024;
export const DEFAULT_MAX_TIMED_SPEECH_BYTES = 32 * 1024 * 1024;
export const DEFAULT_MAX_AUDIO_SECONDS = 2 * 3600;
export const DEFAULT_MAX_CONCURRENT_REQUESTS = 64;
export const DEFAULT_BODY_IDLE_TIMEOUT_MS = 10_000;
export const DEFAULT_BODY_TIMEOUT_MS = 60_000;
export const DEFAULT_MIN_BODY_BYTES_PER_SECOND = 1024;
export const DEFAULT_BODY_RATE_GRACE_MS = 5000;

/** The default per-client share: an eighth of the slots, so at least eight clients are needed to fill them. */
export function defaultPerClientRequests(maxConcurrentRequests: number): number {
  return Math.max(1, Math.ceil(maxConcurrentRequests / 8));
}

/** The handler options that are plain data, so a config file can set them. */
export const HANDLER_DATA_KEYS = ['errors', 'audioFormats', 'uploadDir', 'limits', 'openai', 'realtime'] as const;
const HANDLER_KEYS = ['speech', 'auth', ...HANDLER_DATA_KEYS, 'onRequest', 'jobs', 'metrics'] as const;
export const LIMIT_KEYS = [
  'maxFileBytes',
  'maxJsonBytes',
  'maxTimedSpeechBytes',
  'maxAudioSeconds',
  'maxConcurrentRequests',
  'maxConcurrentRequestsPerClient',
  'requestsPerMinute',
  'audioSecondsPerHour',
  'bodyIdleTimeoutMs',
  'bodyTimeoutMs',
  'minBodyBytesPerSecond',
  'bodyRateGraceMs',
  'requestTimeoutMs',
  'retryAfterSeconds',
] as const;

/**
 * Checks API keys given as strings or `{ id, key }`: each must fit a Bearer header, each id must be well formed, and
 * no key may be listed under two ids. Messages name the entry, never the key (a secret).
 */
export function apiKeyEntries(param: string, value: readonly unknown[]): ResolvedKey[] {
  const idOfKey = new Map<string, string | undefined>();
  return value.map((entry, i) => {
    const at = `${param}[${i}]`;
    const { key, id } = typeof entry === 'string' ? { key: entry, id: undefined } : (entry as Partial<ApiKey>);
    if (typeof entry !== 'string' && (!isPlainObject(entry) || typeof key !== 'string')) {
      throw new InvalidOptionTypeError(at, 'an API key (a string) or { id, key }', entry);
    }
    if (typeof entry !== 'string') rejectUnknownKeys(at, entry as Record<string, unknown>, ['id', 'key']);
    if (!isBearerToken(key as string)) {
      // The key itself is a secret: the message says what is wrong with it, never what it is.
      throw new InvalidOptionValueError(
        at,
        `an API key a Bearer token can carry (${API_KEY_CHARACTERS})`,
        `a key of ${(key as string).length} characters`,
      );
    }
    if (id !== undefined && (typeof id !== 'string' || !API_KEY_ID.test(id))) {
      throw new InvalidOptionValueError(
        `${at}.id`,
        '1-64 letters, digits, _ . @ - (starting with a letter or digit)',
        id,
      );
    }
    if (idOfKey.has(key as string) && idOfKey.get(key as string) !== id) {
      throw new InvalidOptionValueError(at, 'a key not already listed under another id', `a key listed before`);
    }
    idOfKey.set(key as string, id);
    return { key: key as string, identity: keyIdentity(key as string, id) };
  });
}

function authOption(value: unknown): ResolvedAuth {
  if (value === false) return { authorize: undefined, keys: undefined };
  if (typeof value === 'function') return { authorize: value as AuthorizeFunction, keys: undefined };
  if (Array.isArray(value)) {
    if (value.length === 0) {
      throw new InvalidOptionValueError('auth', 'at least one API key (or false when the host authenticates)', value);
    }
    return { authorize: undefined, keys: apiKeyEntries('auth', value) };
  }
  throw new InvalidOptionTypeError(
    'auth',
    'an array of API keys, an authorize(token, req) function, or false (explicitly unauthenticated)',
    value,
  );
}

function audioFormatsOption(value: unknown): readonly AudioContainer[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value) || value.length === 0) {
    throw new InvalidOptionTypeError('audioFormats', `a non-empty array of ${AUDIO_CONTAINERS.join(', ')}`, value);
  }
  return value.map((format, i) => enumOption(`audioFormats[${i}]`, format, AUDIO_CONTAINERS) as AudioContainer);
}

/** A directory this process can write to, checked once when the handler is made (not on the first upload). */
function uploadDirOption(value: unknown): string | undefined {
  const dir = stringOption('uploadDir', value);
  if (dir === undefined) return undefined;
  const path = resolve(dir);
  try {
    if (!statSync(path).isDirectory()) throw new Error('not a directory');
    accessSync(path, constants.W_OK);
  } catch (error) {
    throw new InvalidOptionValueError('uploadDir', `a writable directory (${(error as Error).message})`, dir);
  }
  return path;
}

export function resolveHandlerOptions(options: unknown): ResolvedHandlerOptions {
  if (!isPlainObject(options)) throw new InvalidOptionTypeError('options', 'an object with speech and auth', options);
  rejectUnknownKeys('options', options, HANDLER_KEYS);
  const speech = options.speech as Partial<SpeechEngine> | undefined;
  if (
    typeof speech !== 'object' ||
    speech === null ||
    typeof speech.transcribe !== 'function' ||
    typeof speech.synthesize !== 'function' ||
    typeof speech.listVoices !== 'function'
  ) {
    throw new InvalidOptionTypeError('speech', 'the engine returned by createSpeech()', speech);
  }
  const limits = objectOption('limits', options.limits);
  rejectUnknownKeys('limits', limits, LIMIT_KEYS);
  const uploadDir = uploadDirOption(options.uploadDir);
  const maxConcurrentRequests =
    integerOption('limits.maxConcurrentRequests', limits.maxConcurrentRequests, 1, 100_000) ??
    DEFAULT_MAX_CONCURRENT_REQUESTS;
  const maxTimeout = 2 ** 31 - 1;
  return {
    speech: speech as SpeechEngine,
    ...authOption(options.auth),
    errors: enumOption('errors', options.errors, ['respond', 'next'] as const) ?? 'respond',
    audioFormats: audioFormatsOption(options.audioFormats) ?? DEFAULT_AUDIO_CONTAINERS,
    uploadDir,
    maxFileBytes: integerOption('limits.maxFileBytes', limits.maxFileBytes, 1, 2 ** 40) ?? DEFAULT_MAX_FILE_BYTES,
    maxJsonBytes: integerOption('limits.maxJsonBytes', limits.maxJsonBytes, 64, 2 ** 30) ?? DEFAULT_MAX_JSON_BYTES,
    maxTimedSpeechBytes:
      integerOption('limits.maxTimedSpeechBytes', limits.maxTimedSpeechBytes, 1024, 2 ** 30) ??
      DEFAULT_MAX_TIMED_SPEECH_BYTES,
    maxAudioSeconds:
      numberOption('limits.maxAudioSeconds', limits.maxAudioSeconds, 0.001, 1e7) ?? DEFAULT_MAX_AUDIO_SECONDS,
    maxConcurrentRequests,
    maxConcurrentRequestsPerClient:
      integerOption('limits.maxConcurrentRequestsPerClient', limits.maxConcurrentRequestsPerClient, 1, 100_000) ??
      defaultPerClientRequests(maxConcurrentRequests),
    requestsPerMinute: integerOption('limits.requestsPerMinute', limits.requestsPerMinute, 0, 10_000_000) ?? 0,
    audioSecondsPerHour: integerOption('limits.audioSecondsPerHour', limits.audioSecondsPerHour, 0, 1_000_000_000) ?? 0,
    bodyIdleTimeoutMs:
      integerOption('limits.bodyIdleTimeoutMs', limits.bodyIdleTimeoutMs, 0, maxTimeout) ??
      DEFAULT_BODY_IDLE_TIMEOUT_MS,
    bodyTimeoutMs:
      integerOption('limits.bodyTimeoutMs', limits.bodyTimeoutMs, 0, maxTimeout) ?? DEFAULT_BODY_TIMEOUT_MS,
    minBodyBytesPerSecond:
      numberOption('limits.minBodyBytesPerSecond', limits.minBodyBytesPerSecond, 0, 2 ** 40) ??
      DEFAULT_MIN_BODY_BYTES_PER_SECOND,
    bodyRateGraceMs:
      integerOption('limits.bodyRateGraceMs', limits.bodyRateGraceMs, 100, maxTimeout) ?? DEFAULT_BODY_RATE_GRACE_MS,
    requestTimeoutMs: integerOption('limits.requestTimeoutMs', limits.requestTimeoutMs, 0, maxTimeout) ?? 600_000,
    retryAfterSeconds: integerOption('limits.retryAfterSeconds', limits.retryAfterSeconds, 0, 86_400) ?? 1,
    openai: resolveOpenAiOptions(options.openai),
    realtime: resolveRealtimeOptions(options.realtime),
    onRequest: functionOption<(entry: RequestLogEntry) => void>('onRequest', options.onRequest),
    jobs: jobsOption(options.jobs, speech as SpeechEngine),
    metrics: metricsOption(options.metrics),
  };
}

function jobsOption(value: unknown, speech: SpeechEngine): JobQueue | undefined {
  if (value === false) return undefined;
  if (value === undefined) return createJobQueue({ speech });
  const queue = value as Partial<JobQueue>;
  if (typeof queue !== 'object' || queue === null || typeof queue.enqueue !== 'function') {
    throw new InvalidOptionTypeError('jobs', 'a queue from createJobQueue(), or false', value);
  }
  return value as JobQueue;
}

function metricsOption(value: unknown): SpeechMetrics | undefined {
  if (value === undefined) return undefined;
  const metrics = value as Partial<SpeechMetrics>;
  if (typeof metrics !== 'object' || metrics === null || typeof metrics.observeRequest !== 'function') {
    throw new InvalidOptionTypeError('metrics', 'metrics from createSpeechMetrics()', value);
  }
  return value as SpeechMetrics;
}
