// How many realtime sessions the engine can serve, measured: every final transcript reports how long it took after
// its utterance ended and how long the utterance was. A session streaming speech without pause needs, per second,
// `latency / utterance` of the machine (its finals' cost); the sessions that fit are those whose summed cost stays
// under `targetLoad`. Until a few finals have been measured, the engine's CPU threads are the estimate (one session
// per thread). A new session is also refused while the recent finals are slower than `maxFinalLatencyMs` at p95,
// whatever the estimate: the measure of capacity is that the sessions already open keep their latency. A session is
// always admitted when none is open.
import type { ResolvedRealtimeOptions } from './realtime-options.js';

/** One final transcript, measured. */
interface FinalSample {
  atMs: number;
  latencyMs: number;
  utteranceMs: number;
}

/** Finals kept for the estimate: the most recent ones, no older than a minute. */
const MAX_SAMPLES = 32;
const SAMPLE_WINDOW_MS = 60_000;
/** Finals measured before the estimate replaces the prior. */
const MIN_SAMPLES = 3;

export interface RealtimeCapacity {
  /** Sessions that fit now (the estimate, capped by `maxSessions`). */
  sessions: number;
  /** Whether `sessions` comes from measured finals (else the prior: the CPU threads). */
  measured: boolean;
  /** p95 of the recent finals' latency after their utterance ended, in ms (0 before any). */
  p95LatencyMs: number;
}

export class RealtimeLoad {
  readonly #samples: FinalSample[] = [];
  readonly #limits: Pick<ResolvedRealtimeOptions, 'maxSessions' | 'maxFinalLatencyMs' | 'targetLoad'>;
  readonly #priorSessions: number;
  readonly #now: () => number;

  constructor(
    limits: Pick<ResolvedRealtimeOptions, 'maxSessions' | 'maxFinalLatencyMs' | 'targetLoad'>,
    cpuThreads: number,
    now: () => number = () => performance.now(),
  ) {
    this.#limits = limits;
    this.#priorSessions = Math.max(1, cpuThreads);
    this.#now = now;
  }

  /** A final transcript `latencyMs` after its utterance of `utteranceMs` ended. */
  record(latencyMs: number, utteranceMs: number): void {
    if (!(latencyMs >= 0) || !(utteranceMs > 0)) return;
    this.#samples.push({ atMs: this.#now(), latencyMs, utteranceMs });
    if (this.#samples.length > MAX_SAMPLES) this.#samples.shift();
  }

  #recent(): FinalSample[] {
    const since = this.#now() - SAMPLE_WINDOW_MS;
    while (this.#samples.length > 0 && (this.#samples[0] as FinalSample).atMs < since) this.#samples.shift();
    return this.#samples;
  }

  capacity(): RealtimeCapacity {
    const recent = this.#recent();
    const p95LatencyMs = quantile(
      recent.map((s) => s.latencyMs),
      0.95,
    );
    if (recent.length < MIN_SAMPLES) {
      return { sessions: Math.min(this.#priorSessions, this.#limits.maxSessions), measured: false, p95LatencyMs };
    }
    // The median cost: one slow final (a long utterance waiting its turn) does not halve the estimate.
    const cost = quantile(
      recent.map((s) => s.latencyMs / s.utteranceMs),
      0.5,
    );
    const fit = Math.max(1, Math.floor(this.#limits.targetLoad / Math.max(cost, 1e-3)));
    return { sessions: Math.min(fit, this.#limits.maxSessions), measured: true, p95LatencyMs };
  }

  /** Why one more session cannot be served now, or undefined when it can. */
  refusal(open: number): string | undefined {
    // A lone session is always served: what it costs is the engine's, and nobody else waits on it.
    if (open === 0) return undefined;
    const capacity = this.capacity();
    if (open >= capacity.sessions) {
      return capacity.measured
        ? `the server is at its measured capacity of ${capacity.sessions} realtime sessions; try again later`
        : `the server takes ${capacity.sessions} realtime sessions until it has measured its capacity; try again later`;
    }
    const { maxFinalLatencyMs } = this.#limits;
    if (maxFinalLatencyMs > 0 && capacity.p95LatencyMs > maxFinalLatencyMs) {
      return (
        `the open sessions' transcripts take ${Math.round(capacity.p95LatencyMs)} ms (p95), over ` +
        `maxFinalLatencyMs ${maxFinalLatencyMs}; try again later`
      );
    }
    return undefined;
  }
}

/** The nearest-rank quantile (0 for no values). */
function quantile(values: number[], q: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil(q * sorted.length) - 1)] as number;
}
