// Request slots: how many requests the handler runs at once, in all and per client. Past either limit a request
// gets 429 before its body is read.
import { HttpError } from './http-error.js';
import type { ResolvedHandlerOptions } from './options.js';

type SlotLimits = Pick<
  ResolvedHandlerOptions,
  'maxConcurrentRequests' | 'maxConcurrentRequestsPerClient' | 'retryAfterSeconds'
>;

/**
 * Returns `take(client)`, which takes a slot for an authenticated client (an API key digest, a token digest or an
 * address) and returns the function that gives it back; it throws a 429 HttpError when no slot is free.
 */
export function requestSlots(limits: SlotLimits): (client: string) => () => void {
  let inFlight = 0;
  // Requests in progress per client; absent means none.
  const perClient = new Map<string, number>();
  return (client) => {
    const retryAfter = { 'Retry-After': String(limits.retryAfterSeconds) };
    if (inFlight >= limits.maxConcurrentRequests) {
      throw new HttpError(
        429,
        'too_many_requests',
        `the server is handling its limit of ${limits.maxConcurrentRequests} requests; retry later`,
        { headers: retryAfter },
      );
    }
    // Nor can one client, however slow its bodies, hold every slot.
    const ownRequests = perClient.get(client) ?? 0;
    if (ownRequests >= limits.maxConcurrentRequestsPerClient) {
      throw new HttpError(
        429,
        'client_request_limit',
        `this client already has ${ownRequests} requests in progress, its limit; retry when one has ended`,
        { headers: retryAfter },
      );
    }
    inFlight++;
    perClient.set(client, ownRequests + 1);
    return () => {
      inFlight--;
      const left = (perClient.get(client) ?? 1) - 1;
      if (left > 0) perClient.set(client, left);
      else perClient.delete(client);
    };
  };
}
