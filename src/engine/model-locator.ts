// From what a configuration names (a catalog id or a file path) to a model file, and the error that says how to
// install it when it is missing. Looked up on every use, not once: a model may be pulled while the engine runs.
import { existsSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { ModelNotFoundError } from '../errors.js';
import { findCatalogEntry } from '../models/catalog.js';
import { localModelPath } from '../models/local.js';
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
   * @throws ModelNotFoundError when `spec` is neither a path nor a catalog id.
   */
  locate(spec: string): ModelLocation {
    if (looksLikePath(spec)) return { path: resolve(spec), catalogId: undefined };
    const entry = findCatalogEntry(spec);
    if (entry) return { path: installedPath(entry, this.modelsDir), catalogId: entry.id };
    // A model added with `voxmill models add` (the id of a file under <models dir>/local).
    const added = localModelPath(spec, this.modelsDir);
    if (this.exists(added)) return { path: added, catalogId: undefined };
    throw new ModelNotFoundError(
      `"${spec}" is not a catalog model id, a model added with 'voxmill models add <file>', or a path to a model file`,
    );
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
   * The installed file of a model. `label` names the model in the error (`svc-stt-1`, `vad`, ...).
   * @throws ModelNotFoundError saying how to install it.
   */
  requireInstalled(label: string, spec: string): string {
    const { path, catalogId } = this.locate(spec);
    if (this.exists(path)) return path;
    const hint = catalogId ? `; install it with: npx voxmill models pull ${catalogId}` : '';
    throw new ModelNotFoundError(`model ${label} (${spec}) is not installed: ${path} does not exist${hint}`);
  }
}
