// createSpeechMetrics on a stand-in engine: transcriptions, audio seconds, real-time factor, work in progress and
// model states per model; its own registry (nothing in prom-client's global one); a wrong prefix named.
import { register } from 'prom-client';
import { describe, expect, it } from 'vitest';
import type { SttModelStatus } from '../../src/engine/model-registry.js';
import { createSpeechMetrics, type MetricsEngine, type TranscribedEvent } from '../../src/index.js';

function stubEngine() {
  const listeners = new Set<(event: TranscribedEvent) => void>();
  const model: SttModelStatus = {
    id: 'tiny',
    path: '/m.bin',
    catalogId: undefined,
    installed: true,
    loaded: true,
    active: 2,
    pending: 3,
    info: undefined,
    loadSeconds: 0.25,
  };
  const engine: MetricsEngine & { emit(event: TranscribedEvent): void } = {
    status: () => [model],
    onTranscribed(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    emit(event) {
      for (const listener of listeners) listener(event);
    },
  };
  return engine;
}

describe('speech metrics', () => {
  it('counts transcriptions by model and reports the models', async () => {
    const metrics = createSpeechMetrics({ processMetrics: false, labels: { instance: 'w1' } });
    const engine = stubEngine();
    const stop = metrics.watchEngine(engine);
    engine.emit({ model: 'tiny', audioSeconds: 10, seconds: 1.5 });
    engine.emit({ model: 'tiny', audioSeconds: 20, seconds: 2 });
    const text = await metrics.render();
    expect(text).toContain('voxmill_transcriptions_total{model="tiny",instance="w1"} 2');
    expect(text).toContain('voxmill_transcribed_audio_seconds_total{model="tiny",instance="w1"} 30');
    expect(text).toContain('voxmill_transcription_real_time_factor_sum{instance="w1",model="tiny"} 0.25');
    expect(text).toContain('voxmill_transcription_real_time_factor_bucket{le="0.1",instance="w1",model="tiny"} 1');
    expect(text).toContain('voxmill_transcriptions_in_progress{model="tiny",state="active",instance="w1"} 2');
    expect(text).toContain('voxmill_transcriptions_in_progress{model="tiny",state="waiting",instance="w1"} 3');
    expect(text).toContain('voxmill_model_load_seconds{model="tiny",instance="w1"} 0.25');
    expect(text).toContain('voxmill_model_loaded{model="tiny",instance="w1"} 1');
    expect(text).not.toContain('process_resident_memory_bytes');
    stop();
    engine.emit({ model: 'tiny', audioSeconds: 5, seconds: 1 });
    expect(await metrics.render()).toContain('voxmill_transcriptions_total{model="tiny",instance="w1"} 2');
    expect(await register.metrics()).not.toContain('voxmill_');
  });

  it('refuses a prefix Prometheus cannot take', () => {
    expect(() => createSpeechMetrics({ prefix: 'bad-prefix' })).toThrow(/prefix/);
  });
});
