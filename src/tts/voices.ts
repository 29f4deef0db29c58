// Finds Piper voices in directories: every `<name>.onnx.json` with its `<name>.onnx`. Listing reads configs only
// (and caches them by mtime and size, so listing again after a pull is cheap); models load in the worker pool.
//
// Ids: a file `en_US-lessac-medium.onnx` is variant `en_US-lessac-medium` of voice `en_US-lessac` (the quality
// suffix is dropped so `svc-tts-1` / `svc-tts-1-flash` can choose among installed qualities). Each speaker of a
// multi-speaker voice is its own voice, `<voice>#<speaker>` (`en_GB-vctk#p239`).
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { VoiceConfigError, VoiceNotFoundError } from '../errors.js';
import { didYouMean } from '../util/did-you-mean.js';
import type { Voice, VoiceGender } from './types.js';
import { parseVoiceConfig, VOICE_QUALITIES, type VoiceConfig, type VoiceQuality } from './voice-config.js';

const CONFIG_SUFFIX = '.onnx.json';
const MODEL_SUFFIX = '.onnx';
/** Separates a voice id from a speaker name. */
export const SPEAKER_SEPARATOR = '#';

/** One installed (or config-only) quality variant of a voice. */
export interface VoiceVariant {
  /** File base name, `en_US-lessac-medium`. */
  readonly variantId: string;
  /** Voice id without quality, `en_US-lessac`. */
  readonly voiceId: string;
  readonly configPath: string;
  readonly modelPath: string;
  /** Whether the `.onnx` is there; config-only voices are listed only on request. */
  readonly installed: boolean;
  readonly config: VoiceConfig;
}

/** Curated facts the Piper configs lack (from the catalog). */
export interface VoiceFacts {
  gender?: VoiceGender;
  speakerGenders?: Readonly<Record<string, VoiceGender>>;
}

/** What a scan found: the variants, and a typed error for every file that could not become a voice. */
export interface VoiceScan {
  readonly variants: readonly VoiceVariant[];
  readonly problems: readonly VoiceConfigError[];
}

interface CachedConfig {
  mtimeMs: number;
  size: number;
  config: VoiceConfig | VoiceConfigError;
}

/** Scans voice directories, re-reading a config only when its mtime or size changed. */
export class VoiceDirectoryScanner {
  private readonly cache = new Map<string, CachedConfig>();

  constructor(private readonly dirs: readonly string[]) {}

  async scan(): Promise<VoiceScan> {
    const variants: VoiceVariant[] = [];
    const problems: VoiceConfigError[] = [];
    const seen = new Set<string>();
    for (const dir of this.dirs) {
      let names: string[];
      try {
        names = await readdir(dir);
      } catch (error) {
        // A configured directory that does not exist yet (nothing pulled) is not a problem; anything else is.
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') {
          problems.push(new VoiceConfigError(dir, `cannot read the voice directory: ${(error as Error).message}`));
        }
        continue;
      }
      const present = new Set(names);
      for (const name of names.sort()) {
        // Hidden files are not voices: among them voxmill's own word-timing copies (duration-output.ts).
        if (name.startsWith('.')) continue;
        if (name.endsWith(MODEL_SUFFIX) && !present.has(`${name}.json`)) {
          problems.push(
            new VoiceConfigError(join(dir, `${name}.json`), `missing: ${name} has no Piper config beside it`),
          );
          continue;
        }
        if (!name.endsWith(CONFIG_SUFFIX)) continue;
        const variantId = name.slice(0, -CONFIG_SUFFIX.length);
        if (variantId.length === 0 || seen.has(variantId)) continue;
        const configPath = join(dir, name);
        const config = await this.readConfig(configPath);
        if (config instanceof VoiceConfigError) {
          problems.push(config);
          continue;
        }
        seen.add(variantId);
        const modelFile = `${variantId}${MODEL_SUFFIX}`;
        const installed = present.has(modelFile);
        if (!installed) {
          problems.push(new VoiceConfigError(join(dir, modelFile), 'missing: the voice has a config but no model'));
        }
        variants.push({
          variantId,
          voiceId: voiceIdOf(variantId, config.quality),
          configPath,
          modelPath: join(dir, modelFile),
          installed,
          config,
        });
      }
    }
    return { variants, problems };
  }

  private async readConfig(path: string): Promise<VoiceConfig | VoiceConfigError> {
    let info: Awaited<ReturnType<typeof stat>>;
    try {
      info = await stat(path);
    } catch (error) {
      return new VoiceConfigError(path, `cannot read: ${(error as Error).message}`);
    }
    const cached = this.cache.get(path);
    if (cached && cached.mtimeMs === info.mtimeMs && cached.size === info.size) return cached.config;
    let config: VoiceConfig | VoiceConfigError;
    if (info.size > MAX_CONFIG_BYTES) {
      config = new VoiceConfigError(path, `${info.size} bytes is too large for a Piper config`);
    } else {
      try {
        const text = await readFile(path, 'utf8');
        let document: unknown;
        try {
          document = JSON.parse(text);
        } catch (cause) {
          throw new VoiceConfigError(path, `not valid JSON (${(cause as Error).message})`, { cause });
        }
        config = parseVoiceConfig(document, path);
      } catch (error) {
        config =
          error instanceof VoiceConfigError
            ? error
            : new VoiceConfigError(path, `cannot read: ${(error as Error).message}`);
      }
    }
    this.cache.set(path, { mtimeMs: info.mtimeMs, size: info.size, config });
    return config;
  }
}

// The largest real config (libritts_r, 904 speakers) is 20 KB; 4 MiB leaves room without reading arbitrary files.
const MAX_CONFIG_BYTES = 4 * 1024 * 1024;

function voiceIdOf(variantId: string, quality: VoiceQuality | undefined): string {
  for (const tier of quality ? [quality] : VOICE_QUALITIES) {
    if (variantId.endsWith(`-${tier}`) && variantId.length > tier.length + 1) {
      return variantId.slice(0, -(tier.length + 1));
    }
  }
  return variantId;
}

/** Variants grouped by voice id, each group ordered fastest (x_low) to best (high). */
export function groupVariants(variants: readonly VoiceVariant[]): Map<string, VoiceVariant[]> {
  const groups = new Map<string, VoiceVariant[]>();
  for (const variant of variants) {
    const group = groups.get(variant.voiceId) ?? [];
    group.push(variant);
    groups.set(variant.voiceId, group);
  }
  for (const group of groups.values()) group.sort((a, b) => qualityRank(a) - qualityRank(b));
  return groups;
}

// A config without a quality is ranked as medium, Piper's usual tier.
function qualityRank(variant: VoiceVariant): number {
  return VOICE_QUALITIES.indexOf(variant.config.quality ?? 'medium');
}

/** The voices a set of variants offers: one per single-speaker voice, one per speaker of a multi-speaker voice. */
export function voicesOf(
  variants: readonly VoiceVariant[],
  facts: (voiceId: string) => VoiceFacts | undefined,
): Voice[] {
  const voices: Voice[] = [];
  for (const [voiceId, group] of groupVariants(variants)) {
    const best = group[group.length - 1] as VoiceVariant;
    const known = facts(voiceId);
    const languages = [bcp47(best.config.languageCode)];
    const baseName = displayName(voiceId, best.config);
    if (best.config.speakers.size === 0) {
      voices.push({ id: voiceId, name: baseName, languages, styles: [], gender: known?.gender ?? 'neutral' });
      continue;
    }
    for (const speaker of best.config.speakers.keys()) {
      voices.push({
        id: `${voiceId}${SPEAKER_SEPARATOR}${speaker}`,
        name: `${baseName}, speaker ${speaker}`,
        languages,
        styles: [],
        gender: known?.speakerGenders?.[speaker] ?? known?.gender ?? 'neutral',
      });
    }
  }
  return voices;
}

/** `en_US` -> `en-US` (BCP 47, the form HTTP and browsers use). */
export function bcp47(code: string): string {
  return code.replace(/_/g, '-');
}

function displayName(voiceId: string, config: VoiceConfig): string {
  const dataset = config.dataset ?? voiceId.split('-').slice(1).join('-');
  const title = dataset.length > 0 ? dataset.charAt(0).toUpperCase() + dataset.slice(1) : voiceId;
  return `${title} (${bcp47(config.languageCode)})`;
}

/** What a synthesis request resolved to. */
export interface ResolvedVoice {
  readonly variant: VoiceVariant;
  /** Speaker id for multi-speaker models, undefined otherwise. */
  readonly sid: number | undefined;
}

/** ` (did you mean "x"?)` when a known name is close to `name`, else ''. */
function suggestion(name: string, known: readonly string[]): string {
  const hint = didYouMean(name, known);
  return hint ? ` (${hint})` : '';
}

/** Which installed variant serves a request: the best quality (`best`) or the fastest (`fastest`). */
export type VariantChoice = 'best' | 'fastest';

/**
 * Finds the variant and speaker for a voice id (or one quality's file name, `en_US-joe-medium`). A multi-speaker voice
 * named without `#speaker` uses its first speaker (sid 0's name in config order). Throws VoiceNotFoundError naming what
 * is installed (and the closest ids).
 */
export function resolveVoice(variants: readonly VoiceVariant[], voice: string, choice: VariantChoice): ResolvedVoice {
  const separator = voice.indexOf(SPEAKER_SEPARATOR);
  const voiceId = separator >= 0 ? voice.slice(0, separator) : voice;
  const speaker = separator >= 0 ? voice.slice(separator + 1) : undefined;
  const installed = groupVariants(variants.filter((v) => v.installed));
  // A voice id (`en_US-joe`: its best or fastest quality), or one quality's file name (`en_US-joe-medium`).
  const exact = variants.filter((v) => v.installed && v.variantId === voiceId);
  const group = installed.get(voiceId) ?? (exact.length > 0 ? exact : undefined);
  if (!group) {
    const configs = groupVariants(variants).get(voiceId);
    const configOnly = configs && (choice === 'best' ? configs[configs.length - 1] : configs[0]);
    throw new VoiceNotFoundError(
      voice,
      configOnly
        ? `voice "${voice}" has a config but its model ${configOnly.modelPath} is missing; pull it with ` +
            `'voxmill models pull ${configOnly.variantId}'`
        : `no installed voice has id "${voice}"${suggestion(voiceId, [...installed.keys()])}; ` +
            "list them with 'voxmill voices' (GET /v1/voices), download one with 'voxmill models pull <voice>' " +
            "(see 'voxmill models list'), or add a Piper .onnx you have with 'voxmill models add <file>'",
    );
  }
  const candidates = speaker === undefined ? group : group.filter((v) => v.config.speakers.has(speaker));
  if (candidates.length === 0) {
    const speakers = [...new Set(group.flatMap((v) => [...v.config.speakers.keys()]))];
    throw new VoiceNotFoundError(
      voice,
      `voice "${voiceId}" has no speaker "${speaker}"${suggestion(speaker as string, speakers)}`,
    );
  }
  const variant = (choice === 'best' ? candidates[candidates.length - 1] : candidates[0]) as VoiceVariant;
  if (speaker === undefined && variant.config.speakers.size > 0) {
    return { variant, sid: variant.config.speakers.values().next().value as number };
  }
  return { variant, sid: speaker === undefined ? undefined : variant.config.speakers.get(speaker) };
}
