/** `voxmill diarize <file...>`: who spoke when, as RTTM (for any scoring tool) or JSON. */
import { basename, extname } from 'node:path';
import { type Command, InvalidArgumentError, Option } from 'commander';
import { formatRttm } from '../diarize/rttm.js';
import { createSpeech } from '../speech.js';

interface DiarizeFlags {
  format: 'rttm' | 'json';
  numSpeakers?: number;
  minSpeakers?: number;
  maxSpeakers?: number;
  vadModel?: string;
  embeddingModel?: string;
  segmentationModel?: string;
  modelsDir?: string;
  speaker: Array<{ name: string; audio: string }>;
}

function count(name: string) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < 1 || n > 32)
      throw new InvalidArgumentError(`${name} must be an integer from 1 to 32`);
    return n;
  };
}

/** `--speaker NAME=FILE`, repeatable: a known speaker and a clip of their voice. */
function knownSpeaker(value: string, previous: Array<{ name: string; audio: string }>) {
  const at = value.indexOf('=');
  if (at <= 0 || at === value.length - 1) throw new InvalidArgumentError('--speaker must be NAME=FILE');
  return [...previous, { name: value.slice(0, at), audio: value.slice(at + 1) }];
}

export function registerDiarizeCommand(program: Command): Command {
  return program
    .command('diarize')
    .description('label who spoke when (speaker turns) in audio files')
    .argument('<files...>', 'audio files')
    .addOption(new Option('-f, --format <format>', 'output format').choices(['rttm', 'json']).default('rttm'))
    .option('-n, --num-speakers <n>', 'exactly this many speakers', count('--num-speakers'))
    .option('--min-speakers <n>', 'at least this many speakers', count('--min-speakers'))
    .option('--max-speakers <n>', 'at most this many speakers', count('--max-speakers'))
    .option('--vad-model <model>', 'Silero VAD catalog id or ggml file (default: the catalog default)')
    .option(
      '--embedding-model <model>',
      'speaker-embedding catalog id or ONNX file, or none (default: the first installed catalog one, else built-in features)',
    )
    .option(
      '--segmentation-model <model>',
      'speaker segmentation catalog id or ONNX file, or none (default: the catalog one when installed, with an embedding model)',
    )
    .option(
      '--speaker <name=file>',
      'a known speaker: label their turns NAME, recognized from FILE (1–30 s of their voice; repeatable; needs a speaker-embedding model)',
      knownSpeaker,
      [],
    )
    .option('--models-dir <dir>', 'models directory')
    .action(async (files: string[], flags: DiarizeFlags) => {
      const speech = createSpeech({
        ...(flags.modelsDir ? { modelsDir: flags.modelsDir } : {}),
        ...(flags.vadModel ? { vadModel: flags.vadModel } : {}),
        diarization: {
          ...(flags.embeddingModel
            ? { embeddingModel: flags.embeddingModel === 'none' ? null : flags.embeddingModel }
            : {}),
          ...(flags.segmentationModel
            ? { segmentationModel: flags.segmentationModel === 'none' ? null : flags.segmentationModel }
            : {}),
        },
      });
      const documents: object[] = [];
      try {
        for (const file of files) {
          const result = await speech.diarize(file, {
            ...(flags.numSpeakers ? { numSpeakers: flags.numSpeakers } : {}),
            ...(flags.minSpeakers ? { minSpeakers: flags.minSpeakers } : {}),
            ...(flags.maxSpeakers ? { maxSpeakers: flags.maxSpeakers } : {}),
            ...(flags.speaker.length > 0 ? { knownSpeakers: flags.speaker } : {}),
          });
          if (flags.format === 'json') {
            documents.push({ file, ...result });
          } else {
            // The recording id is the file's base name, as RTTM references name their recordings.
            process.stdout.write(formatRttm(basename(file, extname(file)), result.turns));
          }
        }
        // One JSON document: an object for one file, an array for several.
        if (flags.format === 'json') {
          process.stdout.write(`${JSON.stringify(documents.length === 1 ? documents[0] : documents, null, 2)}\n`);
        }
      } finally {
        await speech.close();
      }
    });
}
