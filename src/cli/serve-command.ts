/** `voxmill serve`: the /v1 speech API as a standalone server. */
import { readFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { type Command, InvalidArgumentError } from 'commander';
import type { ApiKey } from '../http/auth.js';
import { apiKeyEntries } from '../http/options.js';
import { createSpeechServer } from '../http/server.js';
import type { JobQueue } from '../jobs/types.js';
import { createSpeech, type Speech } from '../speech.js';
import { jobQueueFor, redisConnection } from './job-queue-setup.js';
import { keepRunningWithoutStdout, logLine } from './json-log.js';
import { apiKeysFromEnv, loadServeConfig, type ServeConfig } from './serve-config.js';

interface ServeFlags {
  host?: string;
  port?: number;
  config?: string;
  auth: boolean;
  modelsDir?: string;
  preload?: boolean;
  lazy?: boolean;
  quiet?: boolean;
  demo: boolean;
  redis?: string;
  work: boolean;
  tlsCert?: string;
  tlsKey?: string;
}

export function port(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || n > 65_535) {
    throw new InvalidArgumentError('--port must be an integer from 0 to 65535');
  }
  return n;
}

/**
 * The API keys to accept: `VOXMILL_API_KEYS` when it holds any, else the config's. Each must fit a Bearer header and
 * each id be well formed (the message names the entry, never the key).
 */
function apiKeys(config: ServeConfig, configPath: string | undefined): (string | ApiKey)[] {
  const fromEnv = apiKeysFromEnv(process.env.VOXMILL_API_KEYS);
  const keys = fromEnv ?? config.apiKeys ?? [];
  try {
    apiKeyEntries('key', keys);
  } catch (error) {
    const where = fromEnv ? 'VOXMILL_API_KEYS' : `"apiKeys" in ${configPath}`;
    const message = (error as Error).message.replace(/^key\[(\d+)\]/, (_all, i) => `key ${Number(i) + 1}`);
    throw new Error(`${where}: ${message}`);
  }
  return keys;
}

function hostOf(flags: ServeFlags, config: ServeConfig): string {
  const host = flags.host ?? config.host ?? '127.0.0.1';
  // An empty host would listen on every interface: never by accident.
  if (host.trim() === '') throw new Error('the host is empty; use 0.0.0.0 (or ::) to listen on every interface');
  return host;
}

/**
 * The certificate and key to serve HTTPS with (`--tls-cert`/`--tls-key` over the config's `tls`), read now; undefined
 * for plain HTTP. Errors name the flag or key and the file.
 */
async function tlsFiles(flags: ServeFlags, config: ServeConfig, source: string) {
  if ((flags.tlsCert === undefined) !== (flags.tlsKey === undefined)) {
    throw new Error('--tls-cert and --tls-key go together: the certificate chain and its private key (PEM files)');
  }
  const fromFlags = flags.tlsCert !== undefined;
  const files = fromFlags ? { cert: flags.tlsCert as string, key: flags.tlsKey as string } : config.tls;
  if (files === undefined) return undefined;
  const read = async (which: 'cert' | 'key') => {
    try {
      return await readFile(files[which]);
    } catch (error) {
      const where = fromFlags ? `--tls-${which}` : `${source}: tls.${which}`;
      throw new Error(`${where}: cannot read ${files[which]}: ${(error as Error).message}`);
    }
  };
  const passphrase = process.env.VOXMILL_TLS_KEY_PASSPHRASE;
  return { cert: await read('cert'), key: await read('key'), ...(passphrase ? { passphrase } : {}) };
}

/** Loads the installed speech-to-text models now; each failure names its model. */
/**
 * --preload: every configured model loaded before the port opens. A model that is not installed fails start-up
 * (a server that would answer 503 for it is not ready), unless --lazy says to skip it and serve the others.
 */
/**
 * The engine of `serve` and `worker`: the config's createSpeech options, `--models-dir`, and with `--preload` models
 * that stay loaded unless the config says when to unload them. Errors name where the options came from.
 */
export function engineFromConfig(
  config: ServeConfig,
  flags: { preload?: boolean; modelsDir?: string },
  source: string,
): Speech {
  try {
    return createSpeech({
      ...(flags.preload ? { idleUnloadMs: 0 } : {}),
      ...config.speech,
      ...(flags.modelsDir ? { modelsDir: flags.modelsDir } : {}),
    });
  } catch (error) {
    throw new Error(`${source}: ${(error as Error).message}`);
  }
}

export async function preloadModels(speech: Speech, lazy: boolean): Promise<void> {
  for (const model of speech.status()) {
    if (!model.installed) {
      // The fix names the configured model: its catalog id to pull, else the file that is missing (or the spec that
      // names nothing: a typo, an id never added).
      const what = model.path ?? 'the model it names (neither a catalog id, an added model nor a file)';
      const fix = model.catalogId ? `voxmill models pull ${model.catalogId}` : 'voxmill models add <file>';
      const message = `${what} is not installed (${fix}, or --lazy to serve without it)`;
      if (!lazy) throw new Error(`--preload: model ${model.id}: ${message}`);
      logLine({ level: 'warn', event: 'preload_skipped', model: model.id, message });
      continue;
    }
    try {
      const info = await speech.loadModel(model.id);
      logLine({ event: 'model_loaded', model: model.id, type: info.type });
    } catch (error) {
      throw new Error(`--preload: model ${model.id}: ${(error as Error).message}`);
    }
  }
}

async function serve(flags: ServeFlags): Promise<void> {
  keepRunningWithoutStdout();
  const config: ServeConfig = flags.config ? await loadServeConfig(flags.config) : { speech: {} };
  const keys = apiKeys(config, flags.config);
  if (flags.auth && keys.length === 0) {
    throw new Error(
      'no API keys: set VOXMILL_API_KEYS (comma-separated) or "apiKeys" in --config, or pass --no-auth to serve ' +
        'without authentication',
    );
  }
  const queueFlags = { ...(flags.redis ? { redis: flags.redis } : {}), work: flags.work };
  if (!flags.work && redisConnection(queueFlags, config) === undefined) {
    throw new Error(
      '--no-work needs Redis (--redis, VOXMILL_REDIS_URL or "jobs.connection"): in-process jobs run here',
    );
  }
  const host = hostOf(flags, config);
  const source = flags.config ? `the config file ${flags.config}` : 'the options';
  const speech = engineFromConfig(config, flags, source);
  const { shutdownTimeoutMs, metricsAuth, ...http } = config.http ?? {};
  let tls: Awaited<ReturnType<typeof tlsFiles>>;
  try {
    tls = await tlsFiles(flags, config, source);
  } catch (error) {
    await speech.close();
    throw error;
  }
  let server: ReturnType<typeof createSpeechServer>;
  let jobs: JobQueue;
  try {
    jobs = jobQueueFor(config, speech, queueFlags, source);
  } catch (error) {
    await speech.close();
    throw error;
  }
  try {
    server = createSpeechServer({
      ...http,
      speech,
      jobs,
      auth: flags.auth ? keys : false,
      ...(metricsAuth && flags.auth ? { metricsAuth: keys } : {}),
      ...(shutdownTimeoutMs === undefined ? {} : { shutdownTimeoutMs }),
      ...(flags.demo ? {} : { demo: false }),
      ...(tls ? { tls } : {}),
      // --quiet drops the per-request records only; errors and lifecycle events are always logged.
      log: (record) => {
        if (!(flags.quiet && record.event === 'request')) logLine(record);
      },
    });
  } catch (error) {
    await jobs.close();
    await speech.close();
    // The certificate's errors name `tls` (from the flags or the config); the rest are the config's http keys.
    const message = (error as Error).message;
    const certificate = (error as { param?: unknown }).param === 'tls';
    throw new Error(
      certificate
        ? `${flags.tlsCert === undefined ? source : '--tls-cert/--tls-key'}: ${message}`
        : `${source}: http.${message}`,
    );
  }

  // Signals are handled from here on, also while models preload and before the port is open.
  let stopping = false;
  let forced = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) {
      // Whichever ends first (the forced stop, or the graceful one it hurried), the exit status says it was forced.
      forced = true;
      // A second signal means now: the work is cancelled (whisper stops at its next checkpoint), every request still
      // waiting is answered 503 shutting_down (for at most a second), and the process ends.
      logLine({ level: 'warn', event: 'shutdown_forced', signal });
      void server.forceStop().finally(() => process.exit(1));
      return;
    }
    stopping = true;
    logLine({ event: 'shutdown', signal, message: 'no new connections; finishing in-flight requests' });
    server.shutdown().then(
      (inTime) => {
        logLine({ event: 'stopped', drained: inTime });
        process.exit(forced ? 1 : 0);
      },
      (error: Error) => {
        logLine({ level: 'error', event: 'shutdown_failed', message: error.message });
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);

  if (flags.preload) await preloadModels(speech, flags.lazy === true);
  if (stopping) return;
  let address: AddressInfo;
  try {
    address = await server.listen(flags.port ?? config.port ?? 8080, host);
  } catch (error) {
    await speech.close();
    throw error;
  }
  const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  logLine({
    event: 'listening',
    url: `${server.protocol}://${shown}:${address.port}`,
    port: address.port,
    auth: flags.auth ? `${keys.length} API key(s)` : 'disabled',
    models: speech.status().map(({ id, installed }) => ({ id, installed })),
    jobs: jobs.backend === 'redis' ? { backend: 'redis', work: flags.work } : { backend: 'memory' },
  });
  if (!flags.auth) logLine({ level: 'warn', event: 'auth_disabled', message: 'serving without authentication' });
}

export function registerServeCommand(program: Command): Command {
  return program
    .command('serve')
    .description('serve the /v1 speech API (voices, transcriptions, speech) over HTTP')
    .option('--host <host>', 'interface to listen on (0.0.0.0 for all)', undefined)
    .option('-p, --port <port>', 'port (0 picks a free one); default 8080', port)
    .option('-c, --config <file>', 'JSON config: createSpeech options plus apiKeys, host, port, http')
    .option('--no-auth', 'serve without authentication (only behind your own auth)')
    .option('--models-dir <dir>', 'where catalog models are installed')
    .option('--preload', 'load every configured speech-to-text model before listening; a missing one fails start-up')
    .option('--lazy', 'with --preload: skip models that are not installed instead of failing')
    .option('-q, --quiet', 'no request logs')
    .option('--no-demo', 'do not serve the browser demo page at /')
    .option('--redis <url>', 'keep transcription jobs in Redis (redis://host:6379), shared with `voxmill worker`s')
    .option('--no-work', 'with --redis: only accept jobs; leave running them to workers')
    .option('--tls-cert <file>', 'serve HTTPS (and wss: realtime) with this PEM certificate chain; needs --tls-key')
    .option('--tls-key <file>', "the certificate's PEM private key (encrypted: VOXMILL_TLS_KEY_PASSPHRASE)")
    .addHelpText(
      'after',
      '\nAPI keys: VOXMILL_API_KEYS=key1,key2 (replaces "apiKeys" from --config).\n' +
        'Probes without authentication: GET /healthz (alive), GET /readyz (ready to serve); GET /metrics\n' +
        '(Prometheus; http.metricsAuth: true asks for an API key).\n' +
        'Jobs: POST /v1/jobs/transcriptions; in this process unless --redis or VOXMILL_REDIS_URL names Redis.\n' +
        'Signed callbacks need VOXMILL_CALLBACK_SECRET (or "jobs": {"callbacks": {"secret"}} in --config).\n' +
        'Browser demo (microphone captions, speech) without authentication: GET / (--no-demo or http.demo: false).\n' +
        'SIGTERM or SIGINT: stop accepting, finish in-flight requests, exit 0.',
    )
    .action(serve);
}
