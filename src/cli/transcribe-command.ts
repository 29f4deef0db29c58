/** `voxmill transcribe <file...>`: transcribe audio files from the command line. */
import { mkdir } from 'node:fs/promises';
import { basename, extname, join } from 'node:path';
import { type Command, InvalidArgumentError, Option } from 'commander';
import { AudioDecodeError } from '../errors.js';
import { createSpeech } from '../speech.js';
import { TIMESTAMP_GRANULARITIES } from '../stt/request.js';
import type { TimestampGranularity, TranscribeOptions } from '../stt/types.js';
import { DEFAULT_STT_MODEL, STT_MODEL_IDS } from '../tiers.js';
import { writeAtomically } from '../util/write-atomically.js';
import { OUTPUT_FORMATS, type OutputFormat, renderTranscription } from './output-formats.js';
import { terminalBar } from './terminal-bar.js';

interface TranscribeFlags {
  model: string;
  language?: string;
  timestamps?: TimestampGranularity;
  format: OutputFormat;
  vad?: boolean;
  vadModel?: string;
  suppressNonSpeech?: boolean;
  conditionOnPreviousText?: boolean;
  repetitionGuard?: boolean;
  skipGuard?: boolean;
  keepAnnotations?: boolean;
  threads?: number;
  beamSize?: number;
  prompt?: string;
  translate?: boolean;
  modelsDir?: string;
  outputDir?: string;
  progress: boolean;
}

const EXTENSIONS: Record<OutputFormat, string> = { text: '.txt', json: '.json', srt: '.srt', vtt: '.vtt' };

function integer(name: string) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError(`${name} must be a positive integer`);
    return n;
  };
}

export function registerTranscribeCommand(program: Command): Command {
  return program
    .command('transcribe')
    .description('transcribe audio files (wav, mp3, m4a, flac, ogg, webm) with whisper.cpp')
    .argument('<files...>', 'audio files')
    .option(
      '-m, --model <model>',
      `model id (${STT_MODEL_IDS.join(', ')}), catalog id (see "voxmill models list") or path to a ggml file`,
      DEFAULT_STT_MODEL,
    )
    .option('-l, --language <code>', 'ISO-639-1 language hint (default: detect)')
    .addOption(new Option('-t, --timestamps <granularity>', 'timing detail').choices(TIMESTAMP_GRANULARITIES))
    .addOption(new Option('-f, --format <format>', 'output format').choices(OUTPUT_FORMATS).default('text'))
    .option('--vad', 'decode only speech (Silero VAD; default when "voxmill models pull silero-v6.2.0" was run)')
    .option('--no-vad', 'decode everything, silence included')
    .option('--vad-model <model>', 'VAD catalog id or ggml file path')
    .option('--suppress-non-speech', "suppress whisper's non-speech tokens while decoding (default: off)")
    .option('--no-condition-on-previous-text', 'decode each 30 s window without the text before it')
    .option('--no-repetition-guard', 'keep looping text as whisper wrote it (default: decode it again)')
    .option('--no-skip-guard', 'keep stretches whose speech whisper skipped as they are (default: decode them again)')
    .option('--keep-annotations', 'keep segments such as [BLANK_AUDIO] or (music) (default: dropped)')
    .option('--threads <n>', 'CPU threads', integer('--threads'))
    .option('--beam-size <n>', 'beam width; 1 = greedy', integer('--beam-size'))
    .option('--prompt <text>', 'text that conditions the decoder (names, spelling)')
    .option('--translate', 'translate to English')
    .option('--models-dir <dir>', 'models directory')
    .option('--output-dir <dir>', 'write each result to <dir>/<file name>.txt|json|srt|vtt instead of stdout')
    .option('--no-progress', 'no progress bar')
    .action(async (files: string[], flags: TranscribeFlags) => {
      const subtitles = flags.format === 'srt' || flags.format === 'vtt';
      // Subtitles are timed cues: without times the file would be empty (and `> talk.srt` would not say so).
      if (subtitles && flags.timestamps === 'none') {
        throw new InvalidArgumentError(
          `-f ${flags.format} needs timed cues: --timestamps segment (its default) or word, not none`,
        );
      }
      // Subtitle files number their cues from 1: several on stdout would read as one broken file.
      if (files.length > 1 && subtitles && flags.outputDir === undefined) {
        throw new InvalidArgumentError(`several files as ${flags.format} need --output-dir (one subtitle file each)`);
      }
      const outputs = new Map<string, string>();
      if (flags.outputDir !== undefined) {
        // Two inputs with one base name (a.wav, other/a.wav, a.mp3) would write one file: refused before any work.
        for (const file of files) {
          const path = join(flags.outputDir, `${basename(file, extname(file))}${EXTENSIONS[flags.format]}`);
          const other = [...outputs].find(([, target]) => target === path)?.[0];
          if (other !== undefined) {
            throw new InvalidArgumentError(`${other} and ${file} would both be written to ${path}; run them apart`);
          }
          outputs.set(file, path);
        }
        await mkdir(flags.outputDir, { recursive: true });
      }
      const configured = (STT_MODEL_IDS as readonly string[]).includes(flags.model);
      const speech = createSpeech({
        ...(flags.modelsDir ? { modelsDir: flags.modelsDir } : {}),
        ...(flags.vadModel ? { vadModel: flags.vadModel } : {}),
        // A model named by -m gets an id of its own name, so errors name it as the user wrote it.
        ...(configured ? {} : { models: { [flags.model]: flags.model } }),
        idleUnloadMs: 0,
      });
      // Ctrl-C stops the bar (giving the terminal back) and exits 130; the transcription goes with the process.
      const bar =
        flags.progress && process.stderr.isTTY
          ? terminalBar(
              process.stderr,
              '{file} [{bar}] {percentage}% | {rate}%/s | {duration_formatted} elapsed | ETA {eta_formatted}',
              { exitOnSignal: true, clearOnComplete: true },
            )
          : undefined;
      const documents: object[] = [];
      try {
        for (const file of files) {
          const fileStarted = performance.now();
          bar?.start(100, 0, { file, rate: '-' });
          const options: TranscribeOptions & { model: string } = {
            model: flags.model,
            timestamps: flags.timestamps ?? (subtitles || flags.format === 'json' ? 'segment' : 'none'),
            // Words come without segments unless their decoding is asked for; subtitles need the segments as cues.
            ...(subtitles && flags.timestamps === 'word' ? { segmentDecoding: true } : {}),
            ...(flags.language ? { language: flags.language } : {}),
            ...(flags.vad === undefined ? {} : { vad: flags.vad }),
            ...(flags.suppressNonSpeech ? { suppressNonSpeech: true } : {}),
            ...(flags.conditionOnPreviousText === false ? { conditionOnPreviousText: false } : {}),
            ...(flags.repetitionGuard === false ? { repetitionGuard: false } : {}),
            ...(flags.skipGuard === false ? { skipGuard: false } : {}),
            ...(flags.keepAnnotations ? { annotations: 'keep' as const } : {}),
            ...(flags.threads ? { threads: flags.threads } : {}),
            ...(flags.beamSize ? { beamSize: flags.beamSize } : {}),
            ...(flags.prompt ? { prompt: flags.prompt } : {}),
            ...(flags.translate ? { translate: true } : {}),
            ...(bar
              ? {
                  onProgress: (p: number) => {
                    const seconds = (performance.now() - fileStarted) / 1000;
                    bar.update(Math.round(p * 100), { rate: seconds > 0.5 ? ((p * 100) / seconds).toFixed(1) : '-' });
                  },
                }
              : {}),
          };
          let result: Awaited<ReturnType<typeof speech.transcribe>>;
          try {
            result = await speech.transcribe(file, options);
          } catch (error) {
            bar?.stop();
            // One file failing in a run of several loses nothing else: it is reported (in the JSON array too, as
            // { file, error }), the rest go on, and the exit status is 1. What would fail every file (a missing
            // model, a bad option) stops the run at once.
            if (files.length === 1 || !isFileError(error)) throw error;
            const { message, code } = error as Error & { code?: string };
            process.stderr.write(`voxmill: ${file}: ${message}\n`);
            if (flags.outputDir === undefined && flags.format === 'json') {
              documents.push({ file, error: { message, ...(code ? { code } : {}) } });
            }
            process.exitCode = 1;
            continue;
          }
          bar?.stop();
          if (flags.outputDir !== undefined) {
            const path = outputs.get(file) as string;
            await writeAtomically(path, renderTranscription(result, flags.format));
            process.stderr.write(`${file} -> ${path}\n`);
          } else if (files.length > 1 && flags.format === 'json') {
            documents.push({ file, ...result });
          } else {
            // Several files as text: each line says whose it is.
            if (files.length > 1) process.stdout.write(`${file}: `);
            process.stdout.write(renderTranscription(result, flags.format));
          }
        }
        // Several files as JSON: one array of documents, each naming its file.
        if (documents.length > 0) process.stdout.write(`${JSON.stringify(documents, null, 2)}\n`);
      } finally {
        bar?.stop();
        await speech.close();
      }
    });
}

/** An error of one input file (undecodable, too long, unreadable), after which the other files can still run. */
function isFileError(error: unknown): boolean {
  if (error instanceof AudioDecodeError) return true;
  const code = (error as { code?: unknown }).code;
  return code === 'ENOENT' || code === 'EACCES' || code === 'EISDIR';
}
