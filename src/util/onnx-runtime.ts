// Which ONNX Runtime the worker threads run Piper voices and speaker embeddings on. `onnxruntime-web` (WebAssembly)
// is a dependency: plain JavaScript and wasm, no install script, nothing downloaded, on every platform Node runs on.
// `onnxruntime-node` (native, several times faster: BENCHMARKS.md "ONNX Runtime") is an optional peer: installed
// beside voxmill, it is used instead. It is not a dependency because its install script fetches CUDA libraries on
// Linux x64 (a CPU user's install then downloads hundreds of MB, and fails offline) unless told not to.
import { createRequire } from 'node:module';
import type * as Ort from 'onnxruntime-common';

/** `native`: onnxruntime-node; `wasm`: onnxruntime-web's WebAssembly build. */
export type OnnxBackend = 'native' | 'wasm';
/** `auto` (default): native when onnxruntime-node is installed, else wasm. */
export type OnnxRuntimeChoice = 'auto' | OnnxBackend;
export const ONNX_RUNTIME_CHOICES: readonly OnnxRuntimeChoice[] = ['auto', 'native', 'wasm'];

/** The loaded runtime: its API (onnxruntime-common's, which both packages implement) and which one it is. */
export interface LoadedOnnxRuntime {
  ort: typeof Ort;
  backend: OnnxBackend;
}

const require = createRequire(import.meta.url);
const loaded = new Map<OnnxRuntimeChoice, LoadedOnnxRuntime>();

function isMissing(error: unknown, name: string): boolean {
  const e = error as { code?: string; message?: string };
  return e?.code === 'MODULE_NOT_FOUND' && (e.message ?? '').includes(`'${name}'`);
}

/**
 * Loads the runtime once per thread. `threads` sets the wasm build's thread count (the native build takes it per
 * session, as intraOpNumThreads).
 * @throws Error naming the package to install when the one asked for is missing.
 */
export function loadOnnxRuntime(choice: OnnxRuntimeChoice, threads: number): LoadedOnnxRuntime {
  const cached = loaded.get(choice);
  if (cached) return cached;
  let result: LoadedOnnxRuntime | undefined;
  if (choice !== 'wasm') {
    try {
      result = { ort: require('onnxruntime-node') as typeof Ort, backend: 'native' };
    } catch (error) {
      // `auto` falls back only when the package is absent: a native build that is present but broken says so.
      if (choice === 'native' || !isMissing(error, 'onnxruntime-node')) {
        const why = isMissing(error, 'onnxruntime-node') ? 'it is not installed' : (error as Error).message;
        throw new Error(`onnxRuntime 'native' needs onnxruntime-node (${why}): npm install onnxruntime-node@1.30.0`);
      }
    }
  }
  if (!result) {
    const ort = require('onnxruntime-web') as typeof Ort;
    ort.env.wasm.numThreads = threads;
    result = { ort, backend: 'wasm' };
  }
  loaded.set(choice, result);
  return result;
}
