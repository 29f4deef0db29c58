// Starting and stopping the library's worker threads (the diarization worker: its features and clustering would
// hold the event loop for seconds on long audio). What a worker runs of ONNX Runtime is a native job of the addon
// (src/util/onnx-model.ts), which a terminated thread cannot take down, so a worker can be stopped at any time; the
// one hazard left is V8's (EXIT_SETTLE_MS below).
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { VoxmillError } from '../errors.js';

/** How long close waits for a worker to exit by itself before terminating it. */
export const CLOSE_TIMEOUT_MS = 30_000;

/**
 * Starts a worker. Unreferenced: idle workers never hold the process. A `.ts` script (the library running from its
 * sources, see workerScriptUrl) runs bundled by esbuild.
 */
export function spawnWorker<T extends object>(url: URL, data: T): Worker {
  const thread = new Worker(url.pathname.endsWith('.ts') ? fromSource(url) : url, {
    workerData: data,
    stdout: false,
    stderr: false,
  });
  thread.unref();
  return thread;
}

/**
 * Stops a worker: terminated after EXIT_SETTLE_MS, as a worker ending by itself would (it may have just run code V8
 * is still compiling). Referenced meanwhile and kept in `retiring` until it has exited, so its owner's close() can
 * wait for it.
 */
export function stopWorker(thread: Worker, retiring?: Set<Worker>): void {
  thread.ref();
  if (retiring) {
    retiring.add(thread);
    thread.once('exit', () => retiring.delete(thread));
  }
  setTimeout(() => void thread.terminate(), EXIT_SETTLE_MS).unref();
}

/** Asks a worker to exit cleanly (`{ type: 'shutdown' }`) and waits for it, at most CLOSE_TIMEOUT_MS, then stops it. */
export async function closeWorker(thread: Worker): Promise<void> {
  const exited = new Promise<void>((resolve) => thread.once('exit', () => resolve()));
  thread.postMessage({ type: 'shutdown' });
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => {
    timer = setTimeout(() => resolve('late'), CLOSE_TIMEOUT_MS);
  });
  if ((await Promise.race([exited, late])) === 'late') {
    stopWorker(thread);
    await exited;
  }
  clearTimeout(timer);
}

/** Waits until every worker of a set (each being stopped by stopWorker) has exited. */
export async function workersExited(threads: Iterable<Worker>): Promise<void> {
  await Promise.all([...threads].map((thread) => new Promise<void>((resolve) => thread.once('exit', () => resolve()))));
}

/**
 * How long a worker sits idle before it ends its thread. Node 20 unregisters a worker's isolate from its platform
 * before disposing of it (reordered upstream in 2025, v8/node#208); a TurboFan job still compiling for the worker in
 * that window can ask the platform for the isolate's task runner, and Node aborts the whole process ("Assertion
 * failed: (data.first) != nullptr" in NodePlatform::ForIsolate: seen once in CI, after a TTS test file's close()).
 * A worker's compile jobs took at most 24 ms (`node --trace-opt`, the former synthesis worker: five syntheses then
 * close()), so a thread that has run no JavaScript for this long has none in flight; the cost is this much on close().
 */
export const EXIT_SETTLE_MS = 200;

/** Worker side: ends the thread once it has been idle for EXIT_SETTLE_MS (the caller runs nothing after this). */
export function exitWhenSettled(): Promise<never> {
  return new Promise<never>(() => {
    setTimeout(() => process.exit(0), EXIT_SETTLE_MS);
  });
}

/**
 * A worker script beside the calling module: the compiled `.js` when the library runs from `dist/`; the `.ts` when it
 * runs from its TypeScript sources (tests), so tests always run the worker code they see, never a stale build.
 * `sibling` is the `.js` URL.
 */
export function workerScriptUrl(sibling: URL, makeError: (message: string) => VoxmillError): URL {
  if (existsSync(sibling)) return sibling;
  const source = new URL(sibling.href.replace(/\.js$/, '.ts'));
  if (source.href !== sibling.href && existsSync(source)) {
    if (bundler() === undefined) {
      throw makeError(
        `the worker runs from its TypeScript source (${source.pathname}), which needs esbuild (npm install)`,
      );
    }
    return source;
  }
  throw makeError(`the worker script is missing (${sibling.pathname}); build the TypeScript with 'npm run build:ts'`);
}

/** The part of esbuild's API used here (a dev dependency: its types are not part of the library's). */
interface Bundler {
  buildSync(options: Record<string, unknown>): { outputFiles: Array<{ text: string }> };
}

const bundles = new Map<string, URL>();

/**
 * A worker run from its TypeScript source (the library runs from `src/` in tests): esbuild bundles the script and the
 * modules it imports into one ES module in memory (packages stay imports; `import.meta.url` is the script's own, so
 * it finds them), which the worker runs from a `data:` URL. Node 20 strips no types, and a worker ignores `--import`
 * in its execArgv; a loader started inside each worker (tsx's tsImport) worked but added 150-300 ms to every worker
 * start on this 2-core machine, against 5-20 ms for a bundle, once per script and process (about 80 ms for the
 * first, which starts esbuild's service). esbuild is a dev dependency: `dist/` never reaches this code.
 */
function fromSource(script: URL): URL {
  const cached = bundles.get(script.href);
  if (cached) return cached;
  const { outputFiles } = (bundler() as Bundler).buildSync({
    entryPoints: [fileURLToPath(script)],
    bundle: true,
    packages: 'external',
    platform: 'node',
    format: 'esm',
    target: 'node20',
    define: { 'import.meta.url': JSON.stringify(script.href) },
    sourcemap: 'inline',
    write: false,
    logLevel: 'silent',
  });
  const url = new URL(`data:text/javascript,${encodeURIComponent(outputFiles[0]?.text ?? '')}`);
  bundles.set(script.href, url);
  return url;
}

/** esbuild, when installed (from a checkout with its dev dependencies). */
function bundler(): Bundler | undefined {
  try {
    return createRequire(import.meta.url)('esbuild') as Bundler;
  } catch {
    return undefined;
  }
}
