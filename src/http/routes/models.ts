// GET /v1/models and GET /v1/models/{id}: the configured transcription models, the speech models, and the OpenAI
// names that reach them, as OpenAI model objects (openai npm, resources/models.ts).
import { TTS_MODEL_IDS } from '../../tiers.js';
import { HttpError } from '../http-error.js';
import { servedNames } from '../openai/openai-options.js';
import type { ResolvedHandlerOptions } from '../options.js';
import { sendJson } from '../respond.js';
import type { RouteContext } from './context.js';

/** `created` of every model: when this process started serving (Unix seconds); models here have no release date. */
const CREATED = Math.floor(Date.now() / 1000);

const modelIds = (options: ResolvedHandlerOptions) =>
  servedNames(options.openai, [...options.speech.modelIds, ...TTS_MODEL_IDS]);

const modelObject = (id: string) => ({ id, object: 'model' as const, created: CREATED, owned_by: 'voxmill' });

export async function listModelsRoute({ res, options }: RouteContext): Promise<void> {
  sendJson(res, 200, { object: 'list', data: modelIds(options).map(modelObject) });
}

/** GET /v1/models/{id}: `id` is the path's last part, percent-decoded. */
export async function retrieveModelRoute({ req, res, options }: RouteContext): Promise<void> {
  const path = (req.url ?? '').split('?', 1)[0] as string;
  const raw = path.replace(/\/$/u, '').split('/').pop() ?? '';
  let id: string;
  try {
    id = decodeURIComponent(raw);
  } catch {
    throw new HttpError(400, 'invalid_value', `the model id in the path is not valid percent-encoding: ${raw}`, {
      param: 'model',
    });
  }
  if (!modelIds(options).includes(id)) {
    throw new HttpError(404, 'model_not_found', `no model "${id}"; GET /v1/models lists them`, { param: 'model' });
  }
  sendJson(res, 200, modelObject(id));
}
