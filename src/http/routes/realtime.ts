// GET /v1/realtime without a WebSocket upgrade: 426 saying how to connect (the endpoint itself is
// src/http/realtime/, reached through the server's 'upgrade' event).
import { HttpError } from '../http-error.js';
import type { Route } from './context.js';

export const realtimeRoute: Route = async () => {
  throw new HttpError(
    426,
    'upgrade_required',
    '/v1/realtime is a WebSocket endpoint: connect with a WebSocket client (Upgrade: websocket); a host app serves ' +
      'it with handler.attach(server)',
    { headers: { Upgrade: 'websocket', Connection: 'Upgrade' } },
  );
};
