// Versions and compute devices of the native build, for diagnostics and `voxmill --version`.
import { native } from './native.js';

/** Library versions compiled into the addon, and whisper.cpp's CPU feature line. */
export function versions(): { whisper: string; ffmpeg: string; system: string } {
  return native().versions();
}

/** Compute devices ggml found: always the CPU; GPUs when the addon was built with CUDA, Vulkan or Metal. */
export function devices(): { name: string; description: string; type: 'cpu' | 'gpu' | 'igpu' | 'accelerator' }[] {
  return native().devices();
}
