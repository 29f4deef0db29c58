// Token buckets, where rate limits keep them: in this process (a Map, bounded), or in Redis so that every process
// behind one load balancer draws on one bucket per client. A bucket holds up to `capacity` tokens and refills at
// `perSecond`; it starts full.
import type { Redis } from 'ioredis';

/**
 * `take`: remove `cost` tokens if there are that many (else refuse and remove none). `charge`: remove `cost` whatever is
 * left, down to minus one capacity (a debt the refill pays off; work whose cost is known only after it ran). `peek`:
 * allowed while any token is left.
 */
export type BucketMode = 'take' | 'charge' | 'peek';

export interface BucketRequest {
  key: string;
  capacity: number;
  perSecond: number;
  cost: number;
  mode: BucketMode;
}

export interface BucketState {
  allowed: boolean;
  /** Tokens left after this call (negative while in debt). */
  tokens: number;
}

export interface RateLimitStore {
  apply(request: BucketRequest): Promise<BucketState>;
}

function settle(tokens: number, { cost, mode, capacity }: BucketRequest): BucketState {
  if (mode === 'take') return tokens >= cost ? { allowed: true, tokens: tokens - cost } : { allowed: false, tokens };
  if (mode === 'charge') return { allowed: true, tokens: Math.max(-capacity, tokens - cost) };
  return { allowed: tokens > 0, tokens };
}

/** Buckets in this process. At most `maxKeys` are kept: past it, full ones go first, then the least recently used. */
export class MemoryRateLimitStore implements RateLimitStore {
  readonly #buckets = new Map<string, { tokens: number; atMs: number; capacity: number; perSecond: number }>();
  readonly #maxKeys: number;
  readonly #now: () => number;

  constructor(maxKeys = 100_000, now: () => number = () => performance.now()) {
    this.#maxKeys = maxKeys;
    this.#now = now;
  }

  async apply(request: BucketRequest): Promise<BucketState> {
    const now = this.#now();
    const bucket = this.#buckets.get(request.key);
    const tokens = bucket
      ? Math.min(request.capacity, bucket.tokens + ((now - bucket.atMs) / 1000) * request.perSecond)
      : request.capacity;
    const state = settle(tokens, request);
    this.#buckets.delete(request.key); // re-inserted last: the Map's order is least recently used first
    this.#buckets.set(request.key, { tokens: state.tokens, atMs: now, ...request });
    if (this.#buckets.size > this.#maxKeys) this.#evict(now);
    return state;
  }

  /**
   * A full bucket is the same as none; past that, the least recently used go. Down to 90 % in one pass, so a stream of
   * new clients costs one scan per tenth of the map, not one per client.
   */
  #evict(now: number): void {
    for (const [key, bucket] of this.#buckets) {
      if (bucket.tokens + ((now - bucket.atMs) / 1000) * bucket.perSecond >= bucket.capacity) this.#buckets.delete(key);
    }
    const keep = Math.floor(this.#maxKeys * 0.9);
    for (const key of this.#buckets.keys()) {
      if (this.#buckets.size <= keep) break;
      this.#buckets.delete(key);
    }
  }

  /** @internal For tests. */
  get size(): number {
    return this.#buckets.size;
  }
}

// One round trip, atomic across processes; Redis' own clock, so the processes' clocks need not agree. The key expires
// once the bucket would be full again (a full bucket is the same as none).
const APPLY = `
local capacity = tonumber(ARGV[1])
local perSecond = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local mode = ARGV[4]
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local stored = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(stored[1]) or capacity
local at = tonumber(stored[2]) or now
tokens = math.min(capacity, tokens + (now - at) / 1000 * perSecond)
local allowed = 1
if mode == 'take' then
  if tokens >= cost then tokens = tokens - cost else allowed = 0 end
elseif mode == 'charge' then
  tokens = math.max(-capacity, tokens - cost)
elseif tokens <= 0 then
  allowed = 0
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil((capacity - tokens) / perSecond * 1000) + 1000)
return { allowed, tostring(tokens) }`;

/** Buckets in Redis under `<prefix>:<key>`, shared by every process using the same Redis and prefix. */
export class RedisRateLimitStore implements RateLimitStore {
  readonly #client: Redis;
  readonly #prefix: string;

  constructor(client: Redis, prefix: string) {
    this.#client = client;
    this.#prefix = prefix;
  }

  async apply(request: BucketRequest): Promise<BucketState> {
    const { key, capacity, perSecond, cost, mode } = request;
    const [allowed, tokens] = (await this.#client.eval(
      APPLY,
      1,
      `${this.#prefix}:${key}`,
      capacity,
      perSecond,
      cost,
      mode,
    )) as [number, string];
    return { allowed: allowed === 1, tokens: Number(tokens) };
  }
}
