// The hosts the handler is tested in: Express 5 at the root and under /speech, Express 4, and a bare http server.
// Each Express host has its own routes around the handler, to show fall-through and untouched bodies.
import { createServer, type Server } from 'node:http';
import express from 'express';
import express4 from 'express4';
import { createSpeechHandler, type SpeechHandlerOptions } from '../../src/index.js';

export interface TestHost {
  name: string;
  /** Where the handler is mounted ('' for the root). */
  mount: string;
  server: Server;
  /** Errors the host's error middleware received (with `errors: 'next'`). */
  hostErrors: unknown[];
}

export const HOST_KINDS = ['express5', 'express5 under /speech', 'express4', 'bare http'] as const;
export type HostKind = (typeof HOST_KINDS)[number];

export function makeHost(kind: HostKind, options: SpeechHandlerOptions): TestHost {
  const handler = createSpeechHandler(options);
  const hostErrors: unknown[] = [];
  if (kind === 'bare http') return { name: kind, mount: '', server: createServer(handler), hostErrors };
  const mount = kind === 'express5 under /speech' ? '/speech' : '';
  const app = kind === 'express4' ? express4() : express();
  // A body parser for the host's own routes before the handler, as real apps have.
  app.use(express.json());
  if (mount) app.use(mount, handler);
  else app.use(handler);
  app.get('/v1/embeddings', (_req, res) => {
    res.json({ host: 'own route' });
  });
  app.post('/echo', express.text({ type: '*/*' }), (req, res) => {
    res.json({ received: req.body });
  });
  app.use((_req: unknown, res: express.Response) => {
    res.status(404).json({ host: 'not found' });
  });
  app.use((error: unknown, _req: unknown, res: express.Response, _next: unknown) => {
    hostErrors.push(error);
    const { status = 500, headers = {} } = error as { status?: number; headers?: Record<string, string> };
    res.set(headers);
    res.status(status).json({ host: 'error handler', ...(error as { toJSON?: () => object }).toJSON?.() });
  });
  return { name: kind, mount, server: createServer(app), hostErrors };
}
