// Packages only some uses of the library need (the Redis queue, Prometheus metrics, the realtime WebSocket), loaded on
// first use instead of with the library: each costs tens of ms to import, which every program using voxmill (and
// every `voxmill say`) would otherwise pay. They ship CommonJS, so require() loads them synchronously when needed.
import { createRequire } from 'node:module';

const requireHere = createRequire(import.meta.url);

/** A function that returns the package `name`, required on its first call. */
export function lazyModule<T>(name: string): () => T {
  let loaded: T | undefined;
  return () => {
    loaded ??= requireHere(name) as T;
    return loaded;
  };
}
