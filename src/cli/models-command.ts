/**
 * `voxmill models list | pull | path`: the model store from the command line.
 * Results go to stdout; progress and errors go to stderr, so `$(voxmill models path base)` stays clean.
 */
import type { Command } from 'commander';
import { type CatalogEntry, catalogDefaults, listCatalog, withCompanions } from '../models/catalog.js';
import { addLocalModel, listLocalModels } from '../models/local.js';
import {
  defaultModelsDir,
  installedPath,
  isInstalled,
  type PullProgress,
  type PullResult,
  pullModel,
  resolveModelEntry,
} from '../models/store.js';
import { terminalBar } from './terminal-bar.js';

/** Where the command writes, and how it reports failure; tests pass their own. */
export interface ModelsCommandIo {
  readonly stdout: NodeJS.WritableStream & { isTTY?: boolean };
  readonly stderr: NodeJS.WritableStream & { isTTY?: boolean };
  /** Records the exit status instead of exiting, so pending output is flushed. */
  readonly setExitCode: (code: number) => void;
}

const processIo: ModelsCommandIo = {
  stdout: process.stdout,
  stderr: process.stderr,
  setExitCode: (code) => {
    process.exitCode = code;
  },
};

const DIR_HELP =
  'models directory (default: $VOXMILL_MODELS_DIR, $XDG_CACHE_HOME/voxmill/models or ~/.cache/voxmill/models)';

/** Adds `models list`, `models pull <id...>` and `models path <id>` to the program. Returns the `models` command. */
export function registerModelsCommand(program: Command, io: ModelsCommandIo = processIo): Command {
  const models = program.command('models').description('list, download and locate model files');

  models
    .command('list')
    .description('show the catalog and what is installed')
    .option('--dir <dir>', DIR_HELP)
    .option('--json', 'print JSON instead of a table')
    .action((options: { dir?: string; json?: boolean }) =>
      guard(io, () => listModels(io, options.dir ?? defaultModelsDir(), options.json === true)),
    );

  models
    .command('pull')
    .description('download models (resumes interrupted downloads) and verify them')
    .argument(
      '<id...>',
      'catalog ids (tiny.en, base-q5_1, silero-v6.2.0, en_US-lessac-medium) or service ids (svc-stt-1, svc-tts-1)',
    )
    .option('--dir <dir>', DIR_HELP)
    .option('--from <url-or-dir>', 'a base URL or a local directory holding the same file names')
    .option('--verify', 're-hash files already installed instead of trusting their size')
    .action((ids: string[], options: { dir?: string; from?: string; verify?: boolean }) =>
      guard(io, () => pullAll(io, ids, options)),
    );

  models
    .command('add')
    .description(
      'check and add a model file you have: a whisper.cpp ggml .bin, or a Piper voice .onnx (with its .onnx.json)',
    )
    .argument('<file>', 'the model file')
    .option('--id <id>', 'the id to use it by (whisper; default: the file name without ggml- and .bin)')
    .option('--dir <dir>', DIR_HELP)
    .option('--force', 'replace a model already added under that name')
    .action((file: string, options: { id?: string; dir?: string; force?: boolean }) =>
      guard(io, async () => {
        const added = await addLocalModel(file, {
          dir: options.dir ?? defaultModelsDir(),
          id: options.id,
          force: options.force === true,
        });
        const use =
          added.kind === 'whisper'
            ? `use it as: voxmill transcribe -m ${added.id} ..., or "models": { "svc-stt-1": "${added.id}" } in the config`
            : "'voxmill voices' lists it (its id is the file name without the quality)";
        io.stdout.write(
          `${added.id}: added ${added.path} (${formatBytes(added.bytes)}, sha256 ${added.sha256}); ${use}\n`,
        );
      }),
    );

  models
    .command('path')
    .description("print an installed model's file path")
    .argument('<id>', 'catalog id or service id')
    .option('--dir <dir>', DIR_HELP)
    .action((id: string, options: { dir?: string }) => guard(io, () => printPath(io, id, options.dir)));

  return models;
}

/** Runs an action; a failure becomes one line on stderr and exit status 1. */
async function guard(io: ModelsCommandIo, action: () => Promise<void>): Promise<void> {
  try {
    await action();
  } catch (error) {
    fail(io, error);
  }
}

/** Network failures of a pull: the machine cannot reach the model's host. */
const OFFLINE = /ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ENETUNREACH|EHOSTUNREACH|ETIMEDOUT|ECONNRESET|fetch failed/u;

function fail(io: ModelsCommandIo, error: unknown, code = 1): void {
  const message = error instanceof Error ? error.message : String(error);
  io.stderr.write(`voxmill: ${message.split('\n')[0]}\n`);
  if (OFFLINE.test(message)) {
    io.stderr.write(
      'voxmill: the model host cannot be reached. Offline: copy the files from a mirror directory with ' +
        "'voxmill models pull <id> --from <dir>', or add a file you have with 'voxmill models add <file>'\n",
    );
  }
  io.setExitCode(code);
}

async function listModels(io: ModelsCommandIo, dir: string, json: boolean): Promise<void> {
  const defaultFor = servicesByModel();
  const rows = await Promise.all(
    listCatalog().map(async (entry) => ({
      entry,
      installed: await isInstalled(entry, dir),
      defaultFor: defaultFor.get(entry.id) ?? [],
    })),
  );
  if (json) {
    const out = rows.map(({ entry, installed, defaultFor: services }) => ({
      ...entry,
      installed,
      path: installed ? installedPath(entry, dir) : null,
      defaultFor: services,
    }));
    io.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
    return;
  }
  const table = [
    ['ID', 'KIND', 'SIZE', 'INSTALLED', 'DEFAULT FOR'],
    ...rows.map(({ entry, installed, defaultFor: services }) => [
      entry.id,
      entry.kind,
      formatBytes(entry.bytes),
      installed ? 'yes' : 'no',
      services.join(', '),
    ]),
  ];
  const widths = table[0]!.map((_, column) => Math.max(...table.map((row) => row[column]!.length)));
  for (const row of table) {
    io.stdout.write(
      `${row
        .map((cell, column) => cell.padEnd(widths[column]!))
        .join('  ')
        .trimEnd()}\n`,
    );
  }
  const added = await listLocalModels(dir);
  if (added.length > 0) {
    io.stdout.write("\nadded with 'voxmill models add':\n");
    for (const model of added)
      io.stdout.write(`${model.id}  ${model.kind}  ${formatBytes(model.bytes)}  ${model.path}\n`);
  }
  io.stdout.write(`\nmodels directory: ${dir}\n`);
}

function servicesByModel(): Map<string, string[]> {
  const byModel = new Map<string, string[]>();
  for (const [service, id] of Object.entries(catalogDefaults())) {
    byModel.set(id, [...(byModel.get(id) ?? []), service]);
  }
  return byModel;
}

async function pullAll(
  io: ModelsCommandIo,
  ids: string[],
  options: { dir?: string; from?: string; verify?: boolean },
): Promise<void> {
  // Resolve every id first, so a typo in the last one does not surface after a long download.
  const entries = ids.flatMap((id) => withCompanions(resolveModelEntry(id)));
  const dir = options.dir ?? defaultModelsDir();
  for (const entry of entries) {
    const controller = new AbortController();
    // Ctrl-C stops the transfer cleanly: the .part stays, and the same command resumes it.
    const onInterrupt = (): void => controller.abort();
    process.once('SIGINT', onInterrupt);
    const progress = progressReporter(io, entry);
    try {
      const result = await pullModel(entry, {
        dir,
        ...(options.from === undefined ? {} : { from: options.from }),
        verify: options.verify === true,
        signal: controller.signal,
        onProgress: progress.update,
        onWarning: (message) => io.stderr.write(`voxmill: warning: ${message}\n`),
      });
      progress.stop();
      io.stdout.write(`${describeResult(result)}\n`);
    } catch (error) {
      progress.stop();
      if (controller.signal.aborted) {
        fail(io, new Error(`interrupted; run the same command again to resume ${entry.id}`), 130);
        return;
      }
      fail(io, error);
    } finally {
      process.removeListener('SIGINT', onInterrupt);
    }
  }
}

function describeResult(result: PullResult): string {
  const how = result.verifiedBy === 'size' ? 'size checked only' : `${result.verifiedBy} verified`;
  if (result.alreadyInstalled) return `${result.entry.id}: already installed at ${result.path} (${how})`;
  const resumed = result.resumedFrom > 0 ? `, resumed at ${formatBytes(result.resumedFrom)}` : '';
  return `${result.entry.id}: installed ${result.path} (${how}${resumed})`;
}

interface ProgressReporter {
  readonly update: (progress: PullProgress) => void;
  readonly stop: () => void;
}

/** A live bar on a terminal; elsewhere (CI logs, pipes) a line at every 10%. */
function progressReporter(io: ModelsCommandIo, entry: CatalogEntry): ProgressReporter {
  if (io.stderr.isTTY) {
    // Our SIGINT handler (pullAll) stops the transfer and then the bar.
    const bar = terminalBar(
      io.stderr as NodeJS.WriteStream,
      `${entry.id} |{bar}| {percentage}% | {done} / {size} | {rate}/s | ETA {eta_formatted}`,
      { exitOnSignal: false },
    );
    const startedAt = performance.now();
    // The rate counts this run's bytes: a resumed download starts with what it already had.
    let firstBytes: number | undefined;
    let started = false;
    return {
      update: ({ receivedBytes, totalBytes }) => {
        firstBytes ??= receivedBytes;
        const seconds = (performance.now() - startedAt) / 1000;
        const rate = seconds > 0.5 ? formatBytes(Math.round((receivedBytes - firstBytes) / seconds)) : '-';
        const payload = { done: formatBytes(receivedBytes), size: formatBytes(totalBytes), rate };
        if (!started) {
          bar.start(totalBytes, receivedBytes, payload);
          started = true;
        } else {
          bar.update(receivedBytes, payload);
        }
      },
      stop: () => {
        if (started) bar.stop();
      },
    };
  }
  let lastStep = -1;
  return {
    update: ({ receivedBytes, totalBytes }) => {
      const step = Math.floor((receivedBytes / totalBytes) * 10);
      if (step === lastStep) return;
      if (lastStep === -1) io.stderr.write(`${entry.id}: pulling ${entry.file} (${formatBytes(totalBytes)})\n`);
      lastStep = step;
      io.stderr.write(`${entry.id}: ${step * 10}% (${formatBytes(receivedBytes)} of ${formatBytes(totalBytes)})\n`);
    },
    stop: () => {},
  };
}

async function printPath(io: ModelsCommandIo, id: string, dir: string | undefined): Promise<void> {
  const entry = resolveModelEntry(id);
  const modelsDir = dir ?? defaultModelsDir();
  if (!(await isInstalled(entry, modelsDir))) {
    throw new Error(`${entry.id} is not installed in ${modelsDir}; run: voxmill models pull ${entry.id}`);
  }
  io.stdout.write(`${installedPath(entry, modelsDir)}\n`);
}

/** Decimal units, as Hugging Face shows sizes. */
export function formatBytes(bytes: number): string {
  if (bytes < 1000) return `${bytes} B`;
  const units = ['kB', 'MB', 'GB', 'TB'];
  let value = bytes / 1000;
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit++;
  }
  return `${value.toFixed(1)} ${units[unit]}`;
}
