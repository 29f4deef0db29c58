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

/** Whether a package can be found from here at all (missing and broken are different failures). */
function installed(name: string): boolean {
  try {
    require.resolve(name);
    return true;
  } catch {
    return false;
  }
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
    if (installed('onnxruntime-node')) {
      try {
        result = { ort: require('onnxruntime-node') as typeof Ort, backend: 'native' };
      } catch (error) {
        // Present but broken (a binary for another platform, a missing shared library): said, never hidden.
        throw new Error(
          `onnxruntime-node is installed but does not load (${(error as Error).message}); reinstall it, or set ` +
            "onnxRuntime: 'wasm' to use onnxruntime-web",
        );
      }
    } else if (choice === 'native') {
      throw new Error(
        "onnxRuntime 'native' needs onnxruntime-node, which is not installed: " +
          'ONNXRUNTIME_NODE_INSTALL=skip npm install onnxruntime-node',
      );
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
