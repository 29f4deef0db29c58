// Per-client rate limits: requests per minute and audio seconds per hour, each a token bucket per client (its API key
// id, its key's digest, its token's or its address). A request takes one request token before its body is read; work
// on audio is admitted while the client's audio bucket has any left and is charged afterwards with the seconds it
// turned out to hold (a transcription's duration, a synthesis' output), so one long file can leave a client in debt
// that the refill pays off. Refusals are 429 with Retry-After; every answer carries the IETF RateLimit-Policy and
// RateLimit fields (draft-ietf-httpapi-ratelimit-headers-10).
import { sharedRedisOf } from '../jobs/redis-queue.js';
import type { JobQueue } from '../jobs/types.js';
import { HttpError } from './http-error.js';
import {
  type BucketState,
  MemoryRateLimitStore,
  type RateLimitStore,
  RedisRateLimitStore,
} from './rate-limit-store.js';

export interface RateLimitSettings {
  /** Requests a client may start per minute (a burst of this many, refilled evenly). 0: no limit. */
  requestsPerMinute: number;
  /** Seconds of audio a client may have transcribed or synthesized per hour. 0: no limit. */
  audioSecondsPerHour: number;
}

/** Longest wait for the bucket store (Redis), in ms, before a request goes through unlimited. */
const STORE_TIMEOUT_MS = 500;

interface Policy {
  name: 'requests' | 'audio-seconds';
  capacity: number;
  windowSeconds: number;
}

export class RateLimiter {
  readonly #store: RateLimitStore;
  readonly #requests: Policy | undefined;
  readonly #audio: Policy | undefined;

  constructor(settings: RateLimitSettings, store: RateLimitStore) {
    this.#store = store;
    const policy = (name: Policy['name'], capacity: number, windowSeconds: number) =>
      capacity > 0 ? { name, capacity, windowSeconds } : undefined;
    this.#requests = policy('requests', settings.requestsPerMinute, 60);
    this.#audio = policy('audio-seconds', settings.audioSecondsPerHour, 3600);
  }

  get limitsAudio(): boolean {
    return this.#audio !== undefined;
  }

  /**
   * One bucket operation, within STORE_TIMEOUT_MS. A store that fails or does not answer (Redis down) lets the request
   * through: the limits protect the service, and a limiter that fails closed would take the whole API down with Redis.
   */
  async #apply(policy: Policy, client: string, cost: number, mode: 'take' | 'charge' | 'peek'): Promise<BucketState> {
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        this.#store.apply({
          key: `${policy.name}:${client}`,
          capacity: policy.capacity,
          perSecond: policy.capacity / policy.windowSeconds,
          cost,
          mode,
        }),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error('the rate-limit store did not answer')), STORE_TIMEOUT_MS);
        }),
      ]);
    } catch {
      return { allowed: true, tokens: policy.capacity };
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Takes a request token and, for work on audio (`audio`), checks the audio bucket. Returns the RateLimit fields to
   * answer with; throws a 429 HttpError carrying them and Retry-After when either bucket is empty.
   */
  async admit(client: string, audio: boolean): Promise<Record<string, string>> {
    const states: [Policy, BucketState][] = [];
    if (this.#requests) states.push([this.#requests, await this.#apply(this.#requests, client, 1, 'take')]);
    if (audio && this.#audio) states.push([this.#audio, await this.#apply(this.#audio, client, 0, 'peek')]);
    if (states.length === 0) return {};
    const fields = rateLimitFields(states);
    const refused = states.find(([, state]) => !state.allowed);
    if (!refused) return fields;
    const [policy, state] = refused;
    const retryAfter = secondsUntil(policy, state, policy.name === 'requests' ? 1 : Number.MIN_VALUE);
    const what =
      policy.name === 'requests'
        ? `${policy.capacity} requests a minute`
        : `${policy.capacity} seconds of audio an hour`;
    throw new HttpError(
      429,
      policy.name === 'requests' ? 'rate_limited' : 'audio_rate_limited',
      `this client has used its ${what}; retry in ${retryAfter} s`,
      { headers: { ...fields, 'Retry-After': String(retryAfter) } },
    );
  }

  /** Charges a client's audio bucket with seconds of audio its work held (known once the work is done). */
  async chargeAudio(client: string, seconds: number): Promise<void> {
    if (this.#audio && Number.isFinite(seconds) && seconds > 0)
      await this.#apply(this.#audio, client, seconds, 'charge');
  }
}

/**
 * The handler's limiter, or undefined when it limits nothing. Its buckets live in Redis when the jobs queue does
 * (every process behind a load balancer shares them), else in this process.
 */
export function rateLimiterFor(options: RateLimitSettings & { jobs: JobQueue | undefined }): RateLimiter | undefined {
  if (options.requestsPerMinute === 0 && options.audioSecondsPerHour === 0) return undefined;
  const redis = options.jobs ? sharedRedisOf(options.jobs) : undefined;
  const store = redis ? new RedisRateLimitStore(redis.client, `${redis.prefix}:ratelimit`) : new MemoryRateLimitStore();
  return new RateLimiter(options, store);
}

/** Queues whose completed jobs already charge a limiter (one handler's), so a second handler does not charge again. */
const chargingQueues = new WeakSet<JobQueue>();

/** Charges the owner of every job this process completes on `queue` (once per queue, whatever the handlers). */
export function chargeJobs(queue: JobQueue, limiter: RateLimiter): void {
  if (!limiter.limitsAudio || chargingQueues.has(queue)) return;
  chargingQueues.add(queue);
  queue.on('transcribed', (owner, seconds) => void limiter.chargeAudio(owner, seconds).catch(() => undefined));
}

/** Whole seconds until the bucket holds `needed` tokens (at least 1). */
function secondsUntil(policy: Policy, state: BucketState, needed: number): number {
  const perSecond = policy.capacity / policy.windowSeconds;
  return Math.max(1, Math.ceil((Math.max(needed, 0) - state.tokens) / perSecond));
}

/** `RateLimit-Policy` and `RateLimit` for the buckets consulted: remaining whole tokens, seconds until full. */
function rateLimitFields(states: [Policy, BucketState][]): Record<string, string> {
  const policies = states.map(([policy]) => `"${policy.name}";q=${policy.capacity};w=${policy.windowSeconds}`);
  const limits = states.map(([policy, state]) => {
    const remaining = Math.max(0, Math.floor(state.tokens));
    const untilFull = Math.ceil(((policy.capacity - state.tokens) * policy.windowSeconds) / policy.capacity);
    return `"${policy.name}";r=${remaining};t=${Math.max(0, untilFull)}`;
  });
  return { 'RateLimit-Policy': policies.join(', '), RateLimit: limits.join(', ') };
}

/**
 * The engine as one client's request sees it: every transcription charges the client's audio bucket with the audio's
 * duration, every synthesis with the audio it produced once its stream closes (a cut one with what it made). The
 * rest is the engine itself, called on itself (its private state stays reachable).
 */
export function chargingEngine<E extends { transcribe: AnyAsync; synthesize: AnyAsync }>(
  engine: E,
  charge: (seconds: number) => void,
): E {
  const transcribe = async (...args: never[]) => {
    const result = (await engine.transcribe(...args)) as { duration?: number };
    charge(result?.duration ?? 0);
    return result;
  };
  const synthesize = async (...args: never[]) => {
    const stream = (await engine.synthesize(...args)) as {
      progress?: { seconds: number };
      once?: (event: 'close', listener: () => void) => unknown;
    };
    stream?.once?.('close', () => charge(stream.progress?.seconds ?? 0));
    return stream;
  };
  return new Proxy(engine, {
    get(target, property) {
      if (property === 'transcribe') return transcribe;
      if (property === 'synthesize') return synthesize;
      const value = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
type AnyAsync = (...args: never[]) => Promise<unknown>;
