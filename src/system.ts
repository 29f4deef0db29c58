// Versions, CPU code and compute devices of the native build, for diagnostics and `voxmill --version`.
import { native } from './native.js';

/**
 * Library versions compiled into the addon, and whisper.cpp's CPU feature line. `ffmpegLinkage`: `'static'` when
 * FFmpeg is built into the addon (the default, and every prebuilt package), `'system'` when it links the system's
 * shared libraries (`VOXMILL_FFMPEG=system`), `'unknown'` for an addon built before it was recorded.
 */
export function versions(): {
  whisper: string;
  ffmpeg: string;
  ffmpegLinkage: 'static' | 'system' | 'unknown';
  system: string;
  espeak: string;
} {
  const { whisper, ffmpeg, ffmpegLinkage, system, espeak } = native().versions();
  return { whisper, ffmpeg, ffmpegLinkage: ffmpegLinkage ?? 'unknown', system, espeak };
}

/** The CPU code the addon's whisper.cpp (ggml) runs. */
export interface CpuInfo {
  /**
   * `'native'`: compiled for the CPU of the machine that built it (the default of a source build); `'portable'`:
   * the baseline a prebuilt package ships (x86-64: AVX2, FMA, F16C, BMI2); `'x86-64-v2'`: the x64 package's second
   * build (SSE4.2), which it loads on CPUs without AVX2. Set at build time with `VOXMILL_CPU`; `'unknown'` for an
   * addon built before it was recorded.
   */
  target: 'native' | 'portable' | 'x86-64-v2' | 'unknown';
  /** Instruction sets ggml's CPU kernels were compiled with, as ggml names them (`AVX2`, `AVX512`, `NEON`, …). */
  instructionSets: string[];
  /** The BLAS library ggml hands large matrix products to (`VOXMILL_BLAS` at build time), or null. */
  blas: 'openblas' | null;
}

/** Reads ggml's "CPU : SSE3 = 1 | AVX2 = 1 | ..." part of whisper.cpp's system line: the names set to 1. */
export function parseInstructionSets(system: string): string[] {
  const cpuPart = /\bCPU\s*:(.*?)(?:\|\s*[A-Za-z_]+\s*:|$)/s.exec(system)?.[1] ?? '';
  const sets: string[] = [];
  for (const match of cpuPart.matchAll(/([A-Za-z0-9_]+)\s*=\s*(\d+)/g)) {
    // REPACK is a weight layout, not an instruction set.
    if (match[2] !== '0' && match[1] !== 'REPACK') sets.push(match[1]!);
  }
  return sets;
}

/** Which CPU code the loaded addon runs: its build target and the instruction sets ggml was compiled with. */
export function cpuInfo(): CpuInfo {
  const { system, cpuTarget, blas } = native().versions();
  // An addon built before these were recorded says neither.
  return {
    target: cpuTarget ?? 'unknown',
    instructionSets: parseInstructionSets(system),
    blas: blas === undefined || blas === 'none' ? null : blas,
  };
}

/** Compute devices ggml found: always the CPU; GPUs when the addon was built with CUDA, Vulkan or Metal. */
export function devices(): { name: string; description: string; type: 'cpu' | 'gpu' | 'igpu' | 'accelerator' }[] {
  return native().devices();
}

/**
 * The ggml backends compiled into the addon: `CPU` always, `BLAS` with OpenBLAS, `CUDA`, `Vulkan` or `Metal` in a GPU
 * build (`VOXMILL_GPU`). A backend is listed even where it found no device; {@link devices} says what it found.
 */
export function backends(): string[] {
  return native().versions().backends ?? ['CPU'];
}

/** The GPUs ggml found (discrete and integrated), in the order `gpuDevice` counts them. */
export function gpuDevices(): ReturnType<typeof devices> {
  return devices().filter((d) => d.type === 'gpu' || d.type === 'igpu');
}

/** The GPU backends compiled in: every backend but the CPU's own and BLAS (which runs on the CPU). */
export function gpuBackends(): string[] {
  return backends().filter((name) => name !== 'CPU' && name !== 'BLAS');
}

let gpuFallbackWarned = false;

/**
 * A model asked for a GPU (`gpu: true`, the default) in an addon built with one, and runs on the CPU: the backend
 * found no device (no GPU, no driver) or `gpuDevice` is past the last one. Said once per process as a warning
 * (`VOXMILL_GPU_FALLBACK`), never an error: the CPU gives the same text, slower.
 */
export function warnGpuFallback(modelPath: string, gpuDevice: number): void {
  const built = gpuBackends();
  if (built.length === 0 || gpuFallbackWarned) return;
  gpuFallbackWarned = true;
  const found = gpuDevices();
  const why =
    found.length === 0
      ? `${built.join(' and ')} found no device on this machine`
      : `gpuDevice ${gpuDevice} is past the ${found.length} found (${found.map((d) => d.name).join(', ')})`;
  process.emitWarning(
    `voxmill: the addon was built with ${built.join(' and ')}, but ${why}: ${modelPath} runs on the CPU (gpu: false says so without this warning)`,
    { code: 'VOXMILL_GPU_FALLBACK' },
  );
}
