// Checks responses against openapi.json: the status is documented for the operation, the documented headers are
// there and well-formed, the media type is one the operation lists, and JSON bodies match their schema.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { Response } from 'supertest';
import { expect } from 'vitest';
import { repoRoot } from './paths.js';

type Json = Record<string, unknown>;
export const openApiDocument = JSON.parse(readFileSync(join(repoRoot, 'openapi.json'), 'utf8')) as Json;

const ajv = new Ajv2020({ strict: false, allErrors: true });
ajv.addSchema({ $id: 'openapi.json', ...openApiDocument });
const compiled = new Map<string, ReturnType<typeof ajv.compile>>();

function validator(schema: Json): ReturnType<typeof ajv.compile> {
  const key = JSON.stringify(schema);
  let validate = compiled.get(key);
  if (!validate) {
    // Refs inside an inline schema (a oneOf of components) point into the document, which ajv knows as openapi.json.
    validate = ajv.compile(JSON.parse(key.replaceAll('"$ref":"#/', '"$ref":"openapi.json#/')) as Json);
    compiled.set(key, validate);
  }
  return validate;
}

function resolveRef<T>(value: T): T {
  const ref = (value as { $ref?: string }).$ref;
  if (!ref) return value;
  let node: unknown = openApiDocument;
  for (const part of ref.slice(2).split('/')) node = (node as Json)[part];
  return node as T;
}

interface ResponseObject {
  headers?: Record<string, { required?: boolean; schema: Json } | { $ref: string }>;
  content?: Record<string, { schema?: Json }>;
}

/** The documented response for a method, path (below the mount point) and status. */
function documentedResponse(method: string, path: string, status: number): ResponseObject {
  const paths = openApiDocument.paths as Record<string, Record<string, { responses: Record<string, unknown> }>>;
  // A concrete path (`/v1/jobs/job_...`) is documented under its template (`/v1/jobs/{id}`).
  const template =
    path in paths
      ? path
      : Object.keys(paths).find((candidate) => new RegExp(`^${candidate.replace(/\{[^}]+\}/g, '[^/]+')}$`).test(path));
  const operation = template
    ? paths[template]?.[method.toLowerCase() === 'head' ? 'get' : method.toLowerCase()]
    : undefined;
  const components = (openApiDocument.components as Json).responses as Record<string, ResponseObject>;
  if (!operation) {
    // Methods and paths the API does not serve answer with the generic error responses.
    const generic = status === 405 ? components.MethodNotAllowed : status === 404 ? components.NotFound : undefined;
    if (!generic) throw new Error(`${method} ${path} -> ${status} is not in openapi.json`);
    return generic;
  }
  const response = operation.responses[String(status)];
  if (!response) throw new Error(`${method} ${path}: status ${status} is not documented in openapi.json`);
  return resolveRef(response as ResponseObject);
}

/** Every response of the suite goes through here. Returns the response for chaining. */
export function expectDocumented(res: Response, method: string, path: string): Response {
  const documented = documentedResponse(method, path, res.status);
  for (const [name, header] of Object.entries(documented.headers ?? {})) {
    const { required, schema } = resolveRef(header) as { required?: boolean; schema: Json };
    const value = res.headers[name.toLowerCase()];
    if (value === undefined) {
      expect.soft(required, `${method} ${path} ${res.status}: header ${name} missing`).not.toBe(true);
      continue;
    }
    const validate = validator(schema);
    const typed = schema.type === 'integer' ? Number(value) : value;
    expect(validate(typed), `${method} ${path} ${res.status}: header ${name}=${value}`).toBe(true);
  }
  const contentType = String(res.headers['content-type'] ?? '');
  const mediaType = contentType.split(';', 1)[0]?.trim() ?? '';
  const content = documented.content ?? {};
  if (method.toUpperCase() === 'HEAD') return res;
  expect(Object.keys(content), `${method} ${path} ${res.status}: content type ${contentType}`).toContain(mediaType);
  if (mediaType === 'application/json') {
    const schema = content[mediaType]?.schema ?? {};
    const validate = validator(schema);
    const ok = validate(res.body);
    expect(
      ok,
      `${method} ${path} ${res.status}: ${JSON.stringify(validate.errors)} in ${JSON.stringify(res.body)}`,
    ).toBe(true);
  }
  return res;
}

/**
 * Awaits a supertest request and checks the response against the document. `mount` is the prefix the handler
 * is mounted under (`/speech`), stripped to find the documented path.
 */
export async function documented(test: PromiseLike<Response>, mount = ''): Promise<Response> {
  const res = await test;
  const request = (res as unknown as { req: { method: string; path: string } }).req;
  const fullPath = request.path.split('?', 1)[0] as string;
  const path = mount && fullPath.startsWith(mount) ? fullPath.slice(mount.length) || '/' : fullPath;
  return expectDocumented(res, request.method, path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path);
}
