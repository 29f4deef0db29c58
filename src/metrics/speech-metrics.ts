// Prometheus metrics (prom-client) of one process: its HTTP requests, its jobs, its transcriptions and models, and
// the process itself. One registry per SpeechMetrics, never prom-client's global one, so a host's own metrics and
// several engines in one process stay apart.
import type * as PromClient from 'prom-client';
import type { Registry } from 'prom-client';
import type { SttModelStatus } from '../engine/model-registry.js';
import type { JobQueue } from '../jobs/types.js';
import type { TranscribedEvent } from '../speech.js';
import { lazyModule } from '../util/lazy-module.js';

// prom-client loads when metrics are made, not with the library (about 35 ms to import).
const promClient = lazyModule<typeof PromClient>('prom-client');

/** What the metrics read from an engine. */
export interface MetricsEngine {
  status(): SttModelStatus[];
  onTranscribed(listener: (event: TranscribedEvent) => void): () => void;
  /** Interim decodes of live transcriptions skipped because transcriptions were waiting for CPU threads. */
  readonly interimsShed?: number;
}

/** Why a realtime session was refused, as `voxmill_realtime_refusals_total` labels it. */
export type RealtimeRefusalReason = 'capacity' | 'latency' | 'max_sessions' | 'client_sessions' | 'rate_limited';

/** What the realtime endpoint reports. */
export interface RealtimeMetricsSource {
  /** Sessions open now. */
  sessions(): number;
  /** Sessions the engine can serve now (its measured capacity). */
  capacity(): number;
}

/** Options of {@link createSpeechMetrics}. */
export interface SpeechMetricsOptions {
  /** Prefix of every voxmill metric name. Default `voxmill_`. */
  prefix?: string;
  /** Also export Node's process metrics (RSS, CPU, heap, event loop lag, ...), unprefixed. Default true. */
  processMetrics?: boolean;
  /** Labels added to every metric (`{ instance: 'worker-1' }`). Default none. */
  labels?: Record<string, string>;
}

/** One request, as the handler reports it to the metrics. */
export interface ObservedRequest {
  /** The route's template (`/v1/jobs/{id}`), never the raw path: label values must stay few. */
  route: string;
  method: string;
  status: number;
  seconds: number;
}

/** A process's metrics: what the handler, the job queue and the engine report, in Prometheus' text format. */
export interface SpeechMetrics {
  /** The prom-client registry: add the host's own metrics to it, or merge it with `Registry.merge`. */
  readonly registry: Registry;
  /** The `Content-Type` of {@link render}'s text. */
  readonly contentType: string;
  /** Every metric in Prometheus' text exposition format. */
  render(): Promise<string>;
  /** @internal Counts one finished request (the handler calls it). */
  observeRequest(request: ObservedRequest): void;
  /** Counts the engine's transcriptions and reports its models; returns the function that stops it. */
  watchEngine(engine: MetricsEngine): () => void;
  /** Reports a job queue's jobs by status. */
  watchJobs(queue: Pick<JobQueue, 'counts'>): void;
  /** @internal Reports the handler's requests in progress. */
  watchInFlight(count: () => number): void;
  /** @internal Reports a realtime endpoint's sessions and capacity. */
  watchRealtime(source: RealtimeMetricsSource): void;
  /** @internal Counts one realtime session refused. */
  observeRealtimeRefusal(reason: RealtimeRefusalReason): void;
}

const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];
const RTF_BUCKETS = [0.01, 0.02, 0.05, 0.1, 0.2, 0.35, 0.5, 0.75, 1, 1.5, 2, 5];

/**
 * Creates the metrics of one process. Mount them with `createOpsHandler({ metrics })` (or the standalone server's
 * `GET /metrics`) and give them to `createSpeechHandler({ metrics })` to count its requests.
 */
export function createSpeechMetrics(options: SpeechMetricsOptions = {}): SpeechMetrics {
  const { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } = promClient();
  const prefix = options.prefix ?? 'voxmill_';
  if (!/^[a-zA-Z_:][a-zA-Z0-9_:]*$/.test(prefix)) {
    throw new RangeError(`prefix must be a Prometheus metric name prefix ([a-zA-Z_:][a-zA-Z0-9_:]*); got "${prefix}"`);
  }
  const registry = new Registry();
  if (options.labels) registry.setDefaultLabels(options.labels);
  if (options.processMetrics ?? true) collectDefaultMetrics({ register: registry });
  const registers = [registry];

  const requests = new Counter({
    name: `${prefix}http_requests_total`,
    help: 'HTTP requests the speech handler answered, by route template, method and status',
    labelNames: ['route', 'method', 'status'] as const,
    registers,
  });
  const latency = new Histogram({
    name: `${prefix}http_request_duration_seconds`,
    help: 'Time from a request arriving to its response ending, by route template and method',
    labelNames: ['route', 'method'] as const,
    buckets: LATENCY_BUCKETS,
    registers,
  });
  const inFlightSources: (() => number)[] = [];
  new Gauge({
    name: `${prefix}http_requests_in_flight`,
    help: 'HTTP requests in progress',
    registers,
    collect() {
      this.set(inFlightSources.reduce((sum, count) => sum + count(), 0));
    },
  });
  const queues: Pick<JobQueue, 'counts'>[] = [];
  new Gauge({
    name: `${prefix}jobs`,
    help: 'Transcription jobs by status (ended ones: those still kept); on Redis, across every process',
    labelNames: ['status'] as const,
    registers,
    async collect() {
      const all = await Promise.all(queues.map((queue) => queue.counts().catch(() => undefined)));
      this.reset();
      for (const counts of all) {
        if (!counts) continue;
        for (const [status, count] of Object.entries(counts)) this.inc({ status }, count);
      }
    },
  });
  const transcriptions = new Counter({
    name: `${prefix}transcriptions_total`,
    help: 'Transcriptions that succeeded, by model',
    labelNames: ['model'] as const,
    registers,
  });
  const audioSeconds = new Counter({
    name: `${prefix}transcribed_audio_seconds_total`,
    help: 'Seconds of audio transcribed, by model',
    labelNames: ['model'] as const,
    registers,
  });
  const realTimeFactor = new Histogram({
    name: `${prefix}transcription_real_time_factor`,
    help: 'Wall time over audio time per transcription (below 1: faster than real time), by model',
    labelNames: ['model'] as const,
    buckets: RTF_BUCKETS,
    registers,
  });
  const engines: MetricsEngine[] = [];
  new Gauge({
    name: `${prefix}model_load_seconds`,
    help: 'Seconds the last load of each speech-to-text model took',
    labelNames: ['model'] as const,
    registers,
    collect() {
      this.reset();
      for (const engine of engines) {
        for (const model of engine.status?.() ?? []) {
          if (model.loadSeconds !== undefined) this.set({ model: model.id }, model.loadSeconds);
        }
      }
    },
  });
  new Gauge({
    name: `${prefix}transcriptions_in_progress`,
    help: 'Transcriptions running (state="active") and waiting for a slot (state="waiting"), by model',
    labelNames: ['model', 'state'] as const,
    registers,
    collect() {
      this.reset();
      for (const engine of engines) {
        for (const model of engine.status?.() ?? []) {
          this.set({ model: model.id, state: 'active' }, model.active);
          this.set({ model: model.id, state: 'waiting' }, model.pending);
        }
      }
    },
  });
  new Gauge({
    name: `${prefix}model_loaded`,
    help: '1 while a speech-to-text model is loaded, else 0',
    labelNames: ['model'] as const,
    registers,
    collect() {
      this.reset();
      for (const engine of engines) {
        for (const model of engine.status?.() ?? []) this.set({ model: model.id }, model.loaded ? 1 : 0);
      }
    },
  });

  const realtimeSources: RealtimeMetricsSource[] = [];
  new Gauge({
    name: `${prefix}realtime_sessions`,
    help: 'Realtime sessions open (state="open") and the most the engine can serve now (state="capacity")',
    labelNames: ['state'] as const,
    registers,
    collect() {
      this.reset();
      if (realtimeSources.length === 0) return;
      let open = 0;
      let capacity = 0;
      for (const source of realtimeSources) {
        open += source.sessions();
        capacity += source.capacity();
      }
      this.set({ state: 'open' }, open);
      this.set({ state: 'capacity' }, capacity);
    },
  });
  const refusals = new Counter({
    name: `${prefix}realtime_refusals_total`,
    help: 'Realtime sessions refused, by reason (capacity, latency, max_sessions, client_sessions, rate_limited)',
    labelNames: ['reason'] as const,
    registers,
  });
  // Read from the engines' own count at each scrape; a counter only moves up, by what was shed since the last one.
  let shedSeen = 0;
  new Counter({
    name: `${prefix}realtime_interims_shed_total`,
    help: 'Interim transcripts of live transcriptions skipped because transcriptions were waiting for CPU threads',
    registers,
    collect() {
      const shed = engines.reduce((sum, engine) => sum + (engine.interimsShed ?? 0), 0);
      if (shed > shedSeen) this.inc(shed - shedSeen);
      shedSeen = Math.max(shedSeen, shed);
    },
  });

  return {
    registry,
    contentType: registry.contentType,
    render: () => registry.metrics(),
    observeRequest({ route, method, status, seconds }) {
      requests.inc({ route, method, status: String(status) });
      latency.observe({ route, method }, seconds);
    },
    watchEngine(engine) {
      engines.push(engine);
      // A stand-in engine (a test's, a host's wrapper) may lack the hook; its models are still reported.
      if (typeof engine.onTranscribed !== 'function') return () => engines.splice(engines.indexOf(engine), 1);
      const stop = engine.onTranscribed(({ model, audioSeconds: audio, seconds }) => {
        transcriptions.inc({ model });
        audioSeconds.inc({ model }, audio);
        if (audio > 0) realTimeFactor.observe({ model }, seconds / audio);
      });
      return () => {
        stop();
        engines.splice(engines.indexOf(engine), 1);
      };
    },
    watchJobs(queue) {
      if (!queues.includes(queue)) queues.push(queue);
    },
    watchInFlight(count) {
      inFlightSources.push(count);
    },
    watchRealtime(source) {
      realtimeSources.push(source);
    },
    observeRealtimeRefusal(reason) {
      refusals.inc({ reason });
    },
  };
}
