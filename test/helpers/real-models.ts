// Real model weights and Python peers for the accuracy tier (test/accuracy). `npm run models:test` writes
// test/fixtures/real/models.json (name -> absolute path); `bash scripts/peers-setup.sh` makes the peers' venv.
// Under CI (CI=true) anything missing fails the file with the command that makes it; elsewhere the tests that need
// it skip, and the skip's name says what to run.
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { fixturesDir } from './paths.js';

/** The names `npm run models:test` may write (an entry is left out when its package did not hold it). */
export type RealModelName =
  | 'whisper-tiny.en' // ggml, converted from the CTranslate2 tiny.en
  | 'whisper-base' // ggml, converted from the CTranslate2 base (multilingual)
  | 'ct2-whisper-tiny.en' // the CTranslate2 directory itself, for faster-whisper
  | 'ct2-whisper-base'
  | 'piper-joe-medium' // .onnx (its .onnx.json beside it)
  | 'speaker-ge2e' // .onnx
  | 'speaker-ecapa' // .onnx, SpeechBrain's ECAPA-TDNN (input speechbrain_fbank)
  | 'speaker-campplus' // .onnx, 3D-Speaker's CAM++ zh+en (input x)
  | 'speaker-segmentation' // .onnx, pyannote's segmentation-3.0
  | 'diarization-models-dir'; // a models directory holding diarization's defaults under their catalog file names

export const realModelsFile = join(fixturesDir, 'real', 'models.json');
const inCi = process.env.CI === 'true';

function readModels(): Partial<Record<RealModelName, string>> {
  if (!existsSync(realModelsFile)) return {};
  return JSON.parse(readFileSync(realModelsFile, 'utf8')) as Partial<Record<RealModelName, string>>;
}

export interface Requirement {
  /** The path, or undefined when missing (then `skip` is true outside CI; under CI `requireRealModel` threw). */
  path: string | undefined;
  skip: boolean;
  /** Appended to a skipped describe's name: what to run to get it. */
  reason: string;
}

function requirement(path: string | undefined, what: string, command: string): Requirement {
  if (path !== undefined && existsSync(path)) return { path, skip: false, reason: '' };
  const reason = `(skipped: ${what} is missing; run ${command})`;
  if (inCi) throw new Error(`${what} is missing under CI=true: run ${command} first`);
  return { path: undefined, skip: true, reason };
}

/** A real model by name; see the file comment for what happens when it is missing. */
export function requireRealModel(name: RealModelName): Requirement {
  return requirement(readModels()[name], `real model '${name}'`, "'npm run models:test'");
}

const peersDir = () => process.env.VOXMILL_PEERS_DIR ?? join(homedir(), '.cache', 'voxmill', 'peers');

/** The peers' Python (faster-whisper, piper-tts, onnx, the openai SDK). */
export function requirePeerPython(): Requirement {
  return requirement(join(peersDir(), 'venv', 'bin', 'python'), 'the peers venv', "'bash scripts/peers-setup.sh'");
}

/** OpenAI's npm SDK, installed by the peers setup beside the venv: the path of its package directory. */
export function requireOpenAiNodeSdk(): Requirement {
  const dir = join(peersDir(), 'node', 'node_modules', 'openai');
  const found = requirement(join(dir, 'package.json'), "OpenAI's npm SDK", "'bash scripts/peers-setup.sh'");
  return found.path === undefined ? found : { ...found, path: dir };
}
