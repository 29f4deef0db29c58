// GET /v1/openapi.json: the OpenAPI 3.1 document of this API, read once from the package.
import { readFile } from 'node:fs/promises';
import { sendJson } from '../respond.js';
import type { RouteContext } from './context.js';

/** The document shipped at the package root (two levels above both src/http/routes and dist/http/routes). */
export const OPENAPI_DOCUMENT_URL = new URL('../../../openapi.json', import.meta.url);

let document: Promise<unknown> | undefined;

export function openApiDocument(): Promise<unknown> {
  document ??= readFile(OPENAPI_DOCUMENT_URL, 'utf8').then(
    (text) => JSON.parse(text) as unknown,
    (error: unknown) => {
      // Not cached: a package being replaced on disk may have it again on the next request.
      document = undefined;
      throw error;
    },
  );
  return document;
}

export async function openApiRoute({ res }: RouteContext): Promise<void> {
  sendJson(res, 200, await openApiDocument());
}
