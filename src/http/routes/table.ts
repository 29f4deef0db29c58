// Which route answers a request: the speech API's four paths, the OpenAI-compatible ones beside them, and their
// methods, matched below the mount point.
import type { IncomingMessage } from 'node:http';
import { HttpError } from '../http-error.js';
import { audioSpeechRoute } from './audio-speech.js';
import { audioTranscriptionsRoute, audioTranslationsRoute } from './audio-transcriptions.js';
import type { Route } from './context.js';
import { cancelJobRoute, createTranscriptionJobRoute, getJobRoute, listJobsRoute } from './jobs.js';
import { listModelsRoute, retrieveModelRoute } from './models.js';
import { openApiRoute } from './openapi.js';
import { realtimeRoute } from './realtime.js';
import { speechRoute } from './speech.js';
import { transcriptionsRoute } from './transcriptions.js';
import { listVoicesRoute } from './voices.js';

const ROUTES: Record<string, Record<string, Route>> = {
  '/v1/voices': { GET: listVoicesRoute },
  '/v1/transcriptions': { POST: transcriptionsRoute },
  '/v1/speech': { POST: speechRoute },
  '/v1/openapi.json': { GET: openApiRoute },
  // OpenAI's audio API and model list, for its SDKs and the tools built on them.
  '/v1/audio/transcriptions': { POST: audioTranscriptionsRoute },
  '/v1/audio/translations': { POST: audioTranslationsRoute },
  '/v1/audio/speech': { POST: audioSpeechRoute },
  '/v1/models': { GET: listModelsRoute },
  // The realtime endpoint is a WebSocket (handler.upgrade): a plain request learns how to reach it.
  '/v1/realtime': { GET: realtimeRoute },
  // Asynchronous transcription jobs (the handler's `jobs` queue).
  '/v1/jobs/transcriptions': { POST: createTranscriptionJobRoute },
  '/v1/jobs': { GET: listJobsRoute },
};

/** Paths with a parameter: everything one level below the prefix (`/v1/models/{id}`). */
const PREFIX_ROUTES: Record<string, Record<string, Route>> = {
  '/v1/models/': { GET: retrieveModelRoute },
  '/v1/jobs/': { GET: getJobRoute, DELETE: cancelJobRoute },
};

/** The prefix route a path is one level below, if any. */
function prefixOf(path: string): string | undefined {
  return Object.keys(PREFIX_ROUTES).find((p) => path.startsWith(p) && !path.slice(p.length).includes('/'));
}

function routesOf(path: string): Record<string, Route> | undefined {
  if (Object.hasOwn(ROUTES, path)) return ROUTES[path];
  const prefix = prefixOf(path);
  return prefix === undefined ? undefined : PREFIX_ROUTES[prefix];
}

/**
 * The route a path belongs to, as metrics label it: the table's path, `{id}` for a parameter, `other` for a path the
 * API does not serve (never the raw path: label values must stay few).
 */
export function routeTemplate(path: string): string {
  if (Object.hasOwn(ROUTES, path)) return path;
  const prefix = prefixOf(path);
  return prefix === undefined ? 'other' : `${prefix}{id}`;
}

/** Where a request goes: a route (HEAD is a GET's), a method the path does not answer, or a path not of the API. */
export type RouteMatch =
  | { kind: 'route'; path: string; method: string; route: Route }
  | { kind: 'method_not_allowed'; path: string; error: HttpError }
  | { kind: 'not_ours'; path: string };

/** The methods a path answers; GET paths answer HEAD too. */
function allowedMethods(methods: Record<string, Route>): string[] {
  const names = Object.keys(methods);
  return names.includes('GET') ? [...names, 'HEAD'] : names;
}

/** The path of a request URL (relative to the mount point): no query, one trailing slash ignored. */
export function routePath(url: string | undefined): string {
  const path = (url ?? '/').split('?', 1)[0] as string;
  return path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
}

export function matchRoute(req: IncomingMessage): RouteMatch {
  const path = routePath(req.url);
  const methods = routesOf(path);
  if (!methods) return { kind: 'not_ours', path };
  const method = req.method === 'HEAD' && methods.GET ? 'GET' : (req.method ?? '');
  const route = Object.hasOwn(methods, method) ? methods[method] : undefined;
  if (route) return { kind: 'route', path, method, route };
  const allow = allowedMethods(methods).join(', ');
  const message = `${req.method} is not allowed on ${path}; allowed: ${allow}`;
  return {
    kind: 'method_not_allowed',
    path,
    error: new HttpError(405, 'method_not_allowed', message, { headers: { Allow: allow } }),
  };
}

/** The answer to a path the API does not serve, when no host is there to take it. */
export function notFound(path: string): HttpError {
  const paths = [...Object.keys(ROUTES), ...Object.keys(PREFIX_ROUTES).map((p) => `${p}{id}`)];
  return new HttpError(404, 'not_found', `no route ${path}; this API serves ${paths.join(', ')}`);
}
