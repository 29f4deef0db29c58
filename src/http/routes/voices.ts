// GET /v1/voices: the installed voices, `{ data: Voice[] }`.
import { sendJson } from '../respond.js';
import type { RouteContext } from './context.js';

export async function listVoicesRoute({ res, options }: RouteContext): Promise<void> {
  sendJson(res, 200, { data: await options.speech.listVoices() });
}
