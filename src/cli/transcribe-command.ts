/** `voxmill transcribe <file...>`: transcribe audio files from the command line. */
import cliProgress from 'cli-progress';
import { type Command, InvalidArgumentError, Option } from 'commander';
import { createSpeech } from '../speech.js';
import { TIMESTAMP_GRANULARITIES } from '../stt/request.js';
import type { TimestampGranularity, TranscribeOptions } from '../stt/types.js';
import { DEFAULT_STT_MODEL, STT_MODEL_IDS } from '../tiers.js';
import { OUTPUT_FORMATS, type OutputFormat, renderTranscription } from './output-formats.js';

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
  keepAnnotations?: boolean;
  threads?: number;
  beamSize?: number;
  prompt?: string;
  translate?: boolean;
  modelsDir?: string;
  progress: boolean;
}

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
    .option('--keep-annotations', 'keep segments such as [BLANK_AUDIO] or (music) (default: dropped)')
    .option('--threads <n>', 'CPU threads', integer('--threads'))
    .option('--beam-size <n>', 'beam width; 1 = greedy', integer('--beam-size'))
    .option('--prompt <text>', 'text that conditions the decoder (names, spelling)')
    .option('--translate', 'translate to English')
    .option('--models-dir <dir>', 'models directory')
    .option('--no-progress', 'no progress bar')
    .action(async (files: string[], flags: TranscribeFlags) => {
      const configured = (STT_MODEL_IDS as readonly string[]).includes(flags.model);
      const speech = createSpeech({
        ...(flags.modelsDir ? { modelsDir: flags.modelsDir } : {}),
        ...(flags.vadModel ? { vadModel: flags.vadModel } : {}),
        ...(configured ? {} : { models: { cli: flags.model } }),
        idleUnloadMs: 0,
      });
      const subtitles = flags.format === 'srt' || flags.format === 'vtt';
      const bar =
        flags.progress && process.stderr.isTTY
          ? new cliProgress.SingleBar(
              { format: '{file} [{bar}] {percentage}%', stream: process.stderr, clearOnComplete: true },
              cliProgress.Presets.shades_classic,
            )
          : undefined;
      try {
        for (const file of files) {
          bar?.start(100, 0, { file });
          const options: TranscribeOptions & { model: string } = {
            model: configured ? flags.model : 'cli',
            timestamps: flags.timestamps ?? (subtitles || flags.format === 'json' ? 'segment' : 'none'),
            ...(flags.language ? { language: flags.language } : {}),
            ...(flags.vad === undefined ? {} : { vad: flags.vad }),
            ...(flags.suppressNonSpeech ? { suppressNonSpeech: true } : {}),
            ...(flags.conditionOnPreviousText === false ? { conditionOnPreviousText: false } : {}),
            ...(flags.repetitionGuard === false ? { repetitionGuard: false } : {}),
            ...(flags.keepAnnotations ? { annotations: 'keep' as const } : {}),
            ...(flags.threads ? { threads: flags.threads } : {}),
            ...(flags.beamSize ? { beamSize: flags.beamSize } : {}),
            ...(flags.prompt ? { prompt: flags.prompt } : {}),
            ...(flags.translate ? { translate: true } : {}),
            ...(bar ? { onProgress: (p: number) => bar.update(Math.round(p * 100)) } : {}),
          };
          const result = await speech.transcribe(file, options);
          bar?.stop();
          if (files.length > 1 && flags.format === 'text') process.stdout.write(`${file}: `);
          process.stdout.write(renderTranscription(result, flags.format));
        }
      } finally {
        bar?.stop();
        await speech.close();
      }
    });
}
