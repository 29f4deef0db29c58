// The server's configuration file: the JSON form of the library's options (createSpeech's, validated by it) plus
// the server's own keys, each checked here and named in errors.
import { readFile } from 'node:fs/promises';
import type { SpeechOptions } from '../engine/config.js';
import { InvalidOptionTypeError, InvalidOptionValueError } from '../errors.js';
import type { ApiKey } from '../http/auth.js';
import { HANDLER_DATA_KEYS, type SpeechHandlerOptions } from '../http/options.js';
import type { JobQueueOptions } from '../jobs/options.js';
import { integerOption, isPlainObject, objectOption, rejectUnknownKeys, stringOption } from '../util/validate.js';

/** The handler's options a config file may set (`speech` and `auth` come from elsewhere). */
export type HttpConfig = Omit<SpeechHandlerOptions, 'speech' | 'auth' | 'onRequest' | 'jobs' | 'metrics'> & {
  shutdownTimeoutMs?: number;
  headersTimeoutMs?: number;
  demo?: boolean;
  /** `/metrics` needs one of the API keys (`Authorization: Bearer <key>`). Default false: anyone may read it. */
  metricsAuth?: boolean;
};

/** `voxmill serve --config <file>`. */
export interface ServeConfig {
  /**
   * Accepted API keys: strings, or `{ "id", "key" }` so the caller keeps its jobs and limits across a key rotation.
   * `VOXMILL_API_KEYS` (comma-separated `key` or `id:key`), when set, replaces them.
   */
  apiKeys?: (string | ApiKey)[];
  host?: string;
  port?: number;
  /**
   * Handler limits and behaviour (see `SpeechHandlerOptions`), the shutdown grace period, the headers deadline and
   * the browser demo (see `SpeechServerOptions`).
   */
  http?: HttpConfig;
  /**
   * Transcription jobs (see `createJobQueue`): `connection` (a redis:// URL; `--redis` or `VOXMILL_REDIS_URL`
   * replaces it), retries, retention, limits and `callbacks` (`VOXMILL_CALLBACK_SECRET` replaces its secret).
   */
  jobs?: Omit<JobQueueOptions, 'speech' | 'work'>;
  /** HTTPS: PEM files of the certificate chain and its key (`--tls-cert` and `--tls-key` replace them). */
  tls?: ServeTlsFiles;
  /** Everything else is `createSpeech()`'s options: models, vadModel, voiceDirs, threads, tts, ... */
  speech: SpeechOptions;
}

/** The certificate files of an HTTPS server. */
export interface ServeTlsFiles {
  cert: string;
  key: string;
}

const TLS_KEYS = ['cert', 'key'] as const;

function tlsFilesOption(value: unknown): ServeTlsFiles | undefined {
  if (value === undefined) return undefined;
  const raw = objectOption('tls', value);
  rejectUnknownKeys('tls', raw, TLS_KEYS);
  const cert = stringOption('tls.cert', raw.cert);
  const key = stringOption('tls.key', raw.key);
  if (!cert || !key) {
    throw new InvalidOptionValueError('tls', 'both { cert, key }: the paths of PEM files', { cert, key });
  }
  return { cert, key };
}

const HTTP_KEYS = [...HANDLER_DATA_KEYS, 'shutdownTimeoutMs', 'headersTimeoutMs', 'demo', 'metricsAuth'] as const;

function apiKeysOption(param: string, value: unknown): (string | ApiKey)[] | undefined {
  if (value === undefined) return undefined;
  const wellFormed = (entry: unknown) =>
    (typeof entry === 'string' && entry.trim() !== '') ||
    (isPlainObject(entry) && typeof entry.key === 'string' && typeof entry.id === 'string');
  if (!Array.isArray(value) || !value.every(wellFormed)) {
    throw new InvalidOptionTypeError(param, 'an array of non-empty API keys or { "id", "key" }', value);
  }
  return value as (string | ApiKey)[];
}

/** Splits and checks a parsed config object. Errors name the key (`port`, `http.limits.maxFileBytes`, ...). */
export function parseServeConfig(raw: unknown): ServeConfig {
  if (!isPlainObject(raw)) throw new InvalidOptionTypeError('config', 'a JSON object', raw);
  const { apiKeys, host, port, http, jobs, tls, ...speech } = raw;
  const httpConfig = objectOption('http', http);
  rejectUnknownKeys('http', httpConfig, HTTP_KEYS);
  const config: ServeConfig = { speech: speech as SpeechOptions };
  const keys = apiKeysOption('apiKeys', apiKeys);
  if (keys) config.apiKeys = keys;
  const hostValue = stringOption('host', host);
  if (hostValue !== undefined && hostValue.trim() === '') {
    throw new InvalidOptionValueError('host', 'an address or name (0.0.0.0 for every interface)', hostValue);
  }
  if (hostValue !== undefined) config.host = hostValue;
  const portValue = integerOption('port', port, 0, 65_535);
  if (portValue !== undefined) config.port = portValue;
  if (http !== undefined) config.http = httpConfig as HttpConfig;
  const tlsFiles = tlsFilesOption(tls);
  if (tlsFiles) config.tls = tlsFiles;
  // The queue checks its own options when it is made, naming them `jobs.<key>` there.
  if (jobs !== undefined) config.jobs = objectOption('jobs', jobs) as ServeConfig['jobs'];
  return config;
}

/** Reads and parses a config file; errors name the file. */
export async function loadServeConfig(path: string): Promise<ServeConfig> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new Error(`cannot read the config file ${path}: ${(error as Error).message}`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new Error(`the config file ${path} is not valid JSON: ${(error as Error).message}`);
  }
  try {
    return parseServeConfig(raw);
  } catch (error) {
    throw new Error(`the config file ${path}: ${(error as Error).message}`);
  }
}

/**
 * API keys from `VOXMILL_API_KEYS` (comma-separated; blanks ignored; `id:key` gives a key its id, since no key can
 * hold a colon), or undefined when it holds none.
 */
export function apiKeysFromEnv(value: string | undefined): (string | ApiKey)[] | undefined {
  const keys = (value ?? '')
    .split(',')
    .map((key) => key.trim())
    .filter((key) => key !== '')
    .map((entry) => {
      const colon = entry.indexOf(':');
      return colon < 0 ? entry : { id: entry.slice(0, colon), key: entry.slice(colon + 1) };
    });
  return keys.length > 0 ? keys : undefined;
}
