// What a route gets: the request and response, the resolved options, the request id, the caller, and a signal that
// aborts when the client goes away, the request times out or the server shuts down.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ResolvedHandlerOptions } from '../options.js';

export interface RouteContext {
  req: IncomingMessage;
  res: ServerResponse;
  options: ResolvedHandlerOptions;
  requestId: string;
  signal: AbortSignal;
  /** Who is calling: a digest of the API key or token, or `addr:<address>` without authentication. */
  client: string;
}

export type Route = (ctx: RouteContext) => Promise<void>;
