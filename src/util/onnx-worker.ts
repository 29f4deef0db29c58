// Worker threads that may run ONNX Runtime. Terminating a thread while it is inside `session.run()` aborts the
// whole process (onnxruntime-node 1.30.0 throws a C++ exception out of its completion callback: "terminate
// called after throwing an instance of 'Napi::Error'"), so each such worker counts its ONNX Runtime calls in
// flight in shared memory, and is only terminated when the count is zero; otherwise it is asked to exit after
// its current call (it handles a `{ type: 'shutdown' }` message). The worker side is `insideOnnxRuntime`.
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { VoxmillError } from '../errors.js';
import type { OnnxRuntimeChoice } from './onnx-runtime.js';

/** What every ONNX worker receives in `workerData`, next to its own settings. */
export interface OnnxWorkerData {
  /**
   * Int32Array over this: [0] counts the worker's ONNX Runtime calls in flight (session create, run, release); [1] is
   * set while the worker is being terminated, and then it starts no new call (insideOnnxRuntime refuses).
   */
  inOnnxRuntime: SharedArrayBuffer;
  /** Which ONNX Runtime to load (see loadOnnxRuntime). */
  onnxRuntime: OnnxRuntimeChoice;
}

/** A worker thread and its count of ONNX Runtime calls in flight. */
export interface LiveWorker {
  thread: Worker;
  inOnnxRuntime: Int32Array;
}

/** How long close waits for a worker to finish its ONNX Runtime call and exit before giving up on it. */
export const CLOSE_TIMEOUT_MS = 30_000;

/**
 * Starts a worker with the shared in-flight count added to its data. Unreferenced: idle workers never hold the
 * process. A `.ts` script (the library running from its sources, see workerScriptUrl) runs bundled by esbuild.
 */
export function spawnOnnxWorker<T extends object>(url: URL, data: T): LiveWorker {
  const inOnnxRuntime = new SharedArrayBuffer(8);
  const options = { workerData: { ...data, inOnnxRuntime }, stdout: false, stderr: false };
  const thread = new Worker(url.pathname.endsWith('.ts') ? fromSource(url) : url, options);
  thread.unref();
  return { thread, inOnnxRuntime: new Int32Array(inOnnxRuntime) };
}

/**
 * Stops a worker without ever terminating it inside ONNX Runtime: terminated at once when it is outside (stuck in
 * a WASM phonemizer, say), else asked to exit after its current call. Such a retiring worker stays referenced, so
 * the process cannot exit (and abort) while it is inside a run, and sits in `retiring` until it has exited, so
 * its owner's close() can wait for it.
 */
export function stopWorker(live: LiveWorker, retiring?: Set<LiveWorker>): void {
  if (Atomics.load(live.inOnnxRuntime, 0) === 0) {
    // Terminated after EXIT_SETTLE_MS, as a worker ending by itself would (it may have just run a job V8 is still
    // compiling). Meanwhile it must not enter ONNX Runtime (an idle session's release, a job already posted to it):
    // measured, a terminate landing in such a call aborted the process under CPU load. The flag closes that door; a
    // call that got in between the two reads (its count seen) makes this worker exit after it instead.
    Atomics.store(live.inOnnxRuntime, 1, 1);
    if (Atomics.load(live.inOnnxRuntime, 0) === 0) {
      setTimeout(() => void live.thread.terminate(), EXIT_SETTLE_MS).unref();
      return;
    }
    Atomics.store(live.inOnnxRuntime, 1, 0);
  }
  live.thread.postMessage({ type: 'shutdown' });
  live.thread.ref();
  if (retiring) {
    retiring.add(live);
    live.thread.once('exit', () => retiring.delete(live));
  }
}

/** Asks a worker to exit cleanly and waits for it (at most CLOSE_TIMEOUT_MS, then stopWorker). */
export async function closeWorker(live: LiveWorker): Promise<void> {
  const exited = new Promise<void>((resolve) => live.thread.once('exit', () => resolve()));
  live.thread.postMessage({ type: 'shutdown' });
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => {
    timer = setTimeout(() => resolve('late'), CLOSE_TIMEOUT_MS);
  });
  if ((await Promise.race([exited, late])) === 'late') stopWorker(live);
  clearTimeout(timer);
}

/** Closes every worker of a set (retiring workers finishing their last ONNX Runtime call). */
export async function closeWorkers(lives: Iterable<LiveWorker>): Promise<void> {
  await Promise.all([...lives].map((live) => closeWorker(live)));
}

/** Worker side: runs an ONNX Runtime call with the shared count raised. */
export async function insideOnnxRuntime<T>(count: Int32Array, call: () => Promise<T>): Promise<T> {
  // A count, not a flag: an idle session may be released while another call is in flight. Counted first, then the
  // stop flag read: stopWorker sets the flag before it reads the count, so one of the two always sees the other.
  Atomics.add(count, 0, 1);
  if (Atomics.load(count, 1) !== 0) {
    Atomics.sub(count, 0, 1);
    throw new Error('this worker is being stopped: no new ONNX Runtime call starts');
  }
  try {
    return await call();
  } finally {
    Atomics.sub(count, 0, 1);
  }
}

/**
 * How long a worker sits idle before it ends its thread. Node 20 unregisters a worker's isolate from its platform
 * before disposing of it (reordered upstream in 2025, v8/node#208); a TurboFan job still compiling for the worker in
 * that window can ask the platform for the isolate's task runner, and Node aborts the whole process ("Assertion
 * failed: (data.first) != nullptr" in NodePlatform::ForIsolate: seen once in CI, after a TTS test file's close()).
 * The synthesis worker's compile jobs took at most 24 ms (`node --trace-opt`, five syntheses then close()), so a
 * thread that has run no JavaScript for this long has none in flight; the cost is this much on close().
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
