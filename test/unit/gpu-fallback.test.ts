// A GPU build that finds no GPU runs on the CPU and says so once: never an error. The addon is replaced by a fake
// that reports a CUDA build, so this runs without one.
import { beforeEach, describe, expect, it, vi } from 'vitest';

const fake = {
  backends: ['CPU', 'BLAS', 'CUDA'] as string[],
  devices: [{ name: 'CPU', description: 'test CPU', type: 'cpu' }] as Array<{
    name: string;
    description: string;
    type: string;
  }>,
};
vi.mock('../../src/native.js', () => ({
  native: () => ({
    versions: () => ({ whisper: '1.9.1', ffmpeg: 'test', system: 'CPU : NEON = 1 |', backends: fake.backends }),
    devices: () => fake.devices,
  }),
}));

const system = async () => {
  vi.resetModules();
  return import('../../src/system.js');
};

describe('GPU backends and the CPU fallback warning', () => {
  beforeEach(() => {
    fake.backends = ['CPU', 'BLAS', 'CUDA'];
    fake.devices = [{ name: 'CPU', description: 'test CPU', type: 'cpu' }];
  });

  it('lists the compiled backends, and the GPU ones apart', async () => {
    const { backends, gpuBackends } = await system();
    expect(backends()).toEqual(['CPU', 'BLAS', 'CUDA']);
    expect(gpuBackends()).toEqual(['CUDA']);
  });

  it('warns once, naming the backend and the model, when the backend found no device', async () => {
    const { warnGpuFallback } = await system();
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    try {
      warnGpuFallback('/models/tiny.bin', 0);
      warnGpuFallback('/models/base.bin', 0);
      expect(warn).toHaveBeenCalledTimes(1);
      expect(String(warn.mock.calls[0]![0])).toMatch(
        /built with CUDA, but CUDA found no device.*tiny\.bin runs on the CPU/u,
      );
      expect(warn.mock.calls[0]![1]).toEqual({ code: 'VOXMILL_GPU_FALLBACK' });
    } finally {
      warn.mockRestore();
    }
  });

  it('names the devices found when gpuDevice is past them', async () => {
    fake.devices = [...fake.devices, { name: 'CUDA0', description: 'H100', type: 'gpu' }];
    const { warnGpuFallback } = await system();
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    try {
      warnGpuFallback('/models/tiny.bin', 2);
      expect(String(warn.mock.calls[0]![0])).toMatch(/gpuDevice 2 is past the 1 found \(CUDA0\)/u);
    } finally {
      warn.mockRestore();
    }
  });

  it('says nothing in a CPU build', async () => {
    fake.backends = ['CPU', 'BLAS'];
    const { warnGpuFallback, gpuBackends } = await system();
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    try {
      warnGpuFallback('/models/tiny.bin', 0);
      expect(gpuBackends()).toEqual([]);
      expect(warn).not.toHaveBeenCalled();
    } finally {
      warn.mockRestore();
    }
  });
});
