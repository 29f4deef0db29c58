/** `voxmill serve`: the /v1 speech API as a standalone server. */
import { type Command, InvalidArgumentError } from 'commander';
import { API_KEY_CHARACTERS, isBearerToken } from '../http/auth.js';
import { createSpeechServer } from '../http/server.js';
import { createSpeech, type Speech } from '../speech.js';
import { apiKeysFromEnv, loadServeConfig, type ServeConfig } from './serve-config.js';

interface ServeFlags {
  host?: string;
  port?: number;
  config?: string;
  auth: boolean;
  modelsDir?: string;
  preload?: boolean;
  quiet?: boolean;
}

function port(value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isInteger(n) || n < 0 || n > 65_535) {
    throw new InvalidArgumentError('--port must be an integer from 0 to 65535');
  }
  return n;
}

let stdoutBroken = false;

/** One JSON object per line on stdout: what log collectors expect from a service. */
function logLine(record: Record<string, unknown>): void {
  if (stdoutBroken) return;
  process.stdout.write(`${JSON.stringify({ time: new Date().toISOString(), level: 'info', ...record })}\n`);
}

async function serve(flags: ServeFlags): Promise<void> {
  // The other commands end quietly when stdout closes (`| head`); a server goes on serving without its logs.
  process.stdout.removeAllListeners('error');
  process.stdout.on('error', () => {
    stdoutBroken = true;
  });
  const config: ServeConfig = flags.config ? await loadServeConfig(flags.config) : { speech: {} };
  const fromEnv = apiKeysFromEnv(process.env.VOXMILL_API_KEYS);
  const keys = fromEnv ?? config.apiKeys ?? [];
  keys.forEach((key, i) => {
    if (!isBearerToken(key)) {
      const where = fromEnv ? 'VOXMILL_API_KEYS' : `"apiKeys" in ${flags.config}`;
      throw new Error(
        `${where}: key ${i + 1} has characters a Bearer token cannot carry (allowed: ${API_KEY_CHARACTERS})`,
      );
    }
  });
  if (flags.auth && keys.length === 0) {
    throw new Error(
      'no API keys: set VOXMILL_API_KEYS (comma-separated) or "apiKeys" in --config, or pass --no-auth to serve ' +
        'without authentication',
    );
  }
  const source = flags.config ? `the config file ${flags.config}` : 'the options';
  let speech: Speech;
  try {
    speech = createSpeech({ ...config.speech, ...(flags.modelsDir ? { modelsDir: flags.modelsDir } : {}) });
  } catch (error) {
    throw new Error(`${source}: ${(error as Error).message}`);
  }
  const { shutdownTimeoutMs, ...http } = config.http ?? {};
  let server: ReturnType<typeof createSpeechServer>;
  try {
    server = createSpeechServer({
      ...http,
      speech,
      auth: flags.auth ? keys : false,
      ...(shutdownTimeoutMs === undefined ? {} : { shutdownTimeoutMs }),
      ...(flags.quiet ? {} : { log: logLine }),
    });
  } catch (error) {
    await speech.close();
    throw new Error(`${source}: http.${(error as Error).message}`);
  }
  if (flags.preload) {
    for (const model of speech.status().filter((m) => m.installed)) {
      const info = await speech.loadModel(model.id);
      logLine({ event: 'model_loaded', model: model.id, type: info.type });
    }
  }
  const host = flags.host ?? config.host ?? '127.0.0.1';
  const address = await server.listen(flags.port ?? config.port ?? 8080, host);
  const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  logLine({
    event: 'listening',
    url: `http://${shown}:${address.port}`,
    port: address.port,
    auth: flags.auth ? `${keys.length} API key(s)` : 'disabled',
    models: speech.status().map(({ id, installed }) => ({ id, installed })),
  });
  if (!flags.auth) logLine({ level: 'warn', event: 'auth_disabled', message: 'serving without authentication' });

  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) {
      // A second signal means now.
      logLine({ level: 'warn', event: 'shutdown_forced', signal });
      process.exit(1);
    }
    stopping = true;
    logLine({ event: 'shutdown', signal, message: 'no new connections; finishing in-flight requests' });
    server.shutdown().then(
      (inTime) => {
        logLine({ event: 'stopped', drained: inTime });
        process.exit(0);
      },
      (error: Error) => {
        logLine({ level: 'error', event: 'shutdown_failed', message: error.message });
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
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
    .option('--preload', 'load the installed speech-to-text models before listening')
    .option('-q, --quiet', 'no request logs')
    .addHelpText(
      'after',
      '\nAPI keys: VOXMILL_API_KEYS=key1,key2 (replaces "apiKeys" from --config).\n' +
        'Probes without authentication: GET /healthz (alive), GET /readyz (ready to serve).\n' +
        'SIGTERM or SIGINT: stop accepting, finish in-flight requests, exit 0.',
    )
    .action(serve);
}
