// From what a configuration names (a catalog id or a file path) to a model file, and the error that says how to
// install it when it is missing. Looked up on every use, not once: a model may be pulled while the engine runs.
import { existsSync, readdirSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import { ModelNotFoundError } from '../errors.js';
import { findCatalogEntry, listCatalog } from '../models/catalog.js';
import { LOCAL_MODELS_DIR, localModelPath } from '../models/local.js';
import { installedPath } from '../models/store.js';

/** Where a configured model lives. */
export interface ModelLocation {
  /** The file (it may not exist yet). */
  path: string;
  /** The catalog id behind it, when it came from the catalog. */
  catalogId: string | undefined;
}

/** A path when it looks like one; otherwise a catalog id. */
function looksLikePath(spec: string): boolean {
  return isAbsolute(spec) || spec.startsWith('.') || spec.includes('/') || spec.includes('\\') || spec.endsWith('.bin');
}

export class ModelLocator {
  constructor(
    readonly modelsDir: string,
    /** Whether a file exists (a fake in unit tests). */
    private readonly exists: (path: string) => boolean = existsSync,
  ) {}

  /**
   * Resolves a catalog id or path to a file path, which may not exist.
   * @param kind `whisper`: the error lists the speech-to-text models that are installed.
   * @throws ModelNotFoundError when `spec` is neither a path nor a catalog id.
   */
  locate(spec: string, kind?: 'whisper'): ModelLocation {
    if (looksLikePath(spec)) return { path: resolve(spec), catalogId: undefined };
    const entry = findCatalogEntry(spec);
    if (entry) return { path: installedPath(entry, this.modelsDir), catalogId: entry.id };
    // A model added with `voxmill models add` (the id of a file under <models dir>/local).
    const added = localModelPath(spec, this.modelsDir);
    if (this.exists(added)) return { path: added, catalogId: undefined };
    throw new ModelNotFoundError(
      `"${spec}" is not a catalog model id, a model added with 'voxmill models add <file>', or a path to a model file`,
      this.#installedHint(kind, true),
    );
  }

  /**
   * The speech-to-text models installed in the models directory, by the ids that name them: catalog whisper models
   * that are pulled, then models added with `voxmill models add`.
   */
  installedWhisperModels(): string[] {
    const pulled = listCatalog()
      .filter((entry) => entry.kind === 'whisper' && this.exists(installedPath(entry, this.modelsDir)))
      .map((entry) => entry.id);
    let added: string[] = [];
    try {
      // By their records, as `voxmill models list` reads them (a file copied in by hand is not an added model).
      added = readdirSync(join(this.modelsDir, LOCAL_MODELS_DIR))
        .filter((name) => name.endsWith('.bin.json'))
        .map((name) => name.slice(0, -'.bin.json'.length))
        .filter((id) => this.exists(localModelPath(id, this.modelsDir)))
        .sort();
    } catch {
      // No models added (or the folder is unreadable): nothing to list.
    }
    return [...pulled, ...added];
  }

  /**
   * For a model's error, the operator's hint (ModelNotFoundError.hint): the models directory searched (`searched`),
   * and for a speech-to-text model the ones installed there; undefined when there is nothing to say.
   */
  #installedHint(kind: 'whisper' | undefined, searched = false): string | undefined {
    const installed = kind === 'whisper' ? this.installedWhisperModels() : [];
    const parts = searched ? [`models directory searched: ${this.modelsDir}`] : [];
    if (installed.length > 0) {
      parts.push(
        `installed speech-to-text models in ${this.modelsDir}: ${installed.join(', ')} ` +
          '(name one as the model; on the command line: -m <id>)',
      );
    }
    return parts.length > 0 ? parts.join('; ') : undefined;
  }

  /** Whether the model `spec` names is installed; false for an unknown catalog id. */
  isInstalled(spec: string): boolean {
    try {
      return this.exists(this.locate(spec).path);
    } catch {
      return false;
    }
  }

  /**
   * The installed file of a model. `label` names the model in the error (`svc-stt-1`, `vad`, ...); for a
   * speech-to-text model (`whisper`) the error also lists the ones that are installed.
   * @throws ModelNotFoundError saying how to install it.
   */
  requireInstalled(label: string, spec: string, kind?: 'whisper'): string {
    const { path, catalogId } = this.locate(spec, kind);
    if (this.exists(path)) return path;
    const hint = catalogId ? `; install it with: npx voxmill models pull ${catalogId}` : '';
    const name = label === spec ? `model ${spec}` : `model ${label} (${spec})`;
    throw new ModelNotFoundError(`${name} is not installed: ${path} does not exist${hint}`, this.#installedHint(kind));
  }
}
