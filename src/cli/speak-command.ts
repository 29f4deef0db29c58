/** `voxmill say` and `voxmill voices`: text-to-speech from the command line. */
import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { readFile, rename, rm } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { extname } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { type Command, InvalidArgumentError, Option } from 'commander';
import { SPEECH_FORMATS, type SpeechFormat } from '../audio/formats.js';
import { createSpeech } from '../speech.js';
import { DEFAULT_TTS_MODEL, TTS_MODEL_IDS, type TtsModelId } from '../tiers.js';
import { writeAtomically } from '../util/write-atomically.js';

interface SayFlags {
  voice: string;
  output?: string;
  format?: SpeechFormat | 'ogg';
  model: TtsModelId;
  speed?: number;
  sampleRate?: number;
  noiseScale?: number;
  noiseW?: number;
  lengthScale?: number;
  sentenceSilence?: number;
  words?: string;
  normalize: boolean;
  file?: string;
  voiceDir?: string[];
  modelsDir?: string;
}

const FORMAT_BY_EXTENSION: Record<string, SpeechFormat> = {
  '.mp3': 'mp3',
  '.wav': 'wav',
  '.opus': 'opus',
  '.ogg': 'opus',
  '.pcm': 'pcm16',
  '.raw': 'pcm16',
  '.aac': 'aac',
  '.flac': 'flac',
};

/**
 * The format to write: --format, else the output file's extension (mp3 for stdout or a name without one). An
 * extension that names another format than --format, or none voxmill writes, is refused: `say -o out.aac` used to
 * write MP3 into it.
 */
function outputFormat(output: string | undefined, asked: SpeechFormat | 'ogg' | undefined): SpeechFormat {
  // `-f ogg` is Opus in Ogg, as `-o x.ogg` is.
  const format = asked === 'ogg' ? 'opus' : asked;
  const extension = output === undefined || output === '-' ? '' : extname(output).toLowerCase();
  const byExtension = FORMAT_BY_EXTENSION[extension];
  const known = Object.keys(FORMAT_BY_EXTENSION).join(', ');
  if (extension !== '' && byExtension === undefined && format === undefined) {
    throw new InvalidArgumentError(
      `cannot tell the format of ${output} from "${extension}" (${known}); add -f <format>`,
    );
  }
  if (format !== undefined && byExtension !== undefined && byExtension !== format) {
    throw new InvalidArgumentError(`-f ${format} does not match the extension of ${output} (${byExtension})`);
  }
  return format ?? byExtension ?? 'mp3';
}

function number(name: string) {
  return (value: string): number => {
    const n = Number(value);
    if (value.trim() === '' || !Number.isFinite(n)) throw new InvalidArgumentError(`${name} must be a number`);
    return n;
  };
}

function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

/**
 * The longest text `say` speaks: the engine's ceiling. The API's 5,000 characters protect a server; a file read from
 * the command line is spoken sentence by sentence as it streams out, so a book chapter is fine.
 */
export const SAY_MAX_INPUT_CHARS = 1_000_000;

function engineFor(flags: { voiceDir?: string[]; modelsDir?: string }) {
  return createSpeech({
    // A command that speaks once and ends has the machine to itself: every core, as piper-tts's CLI takes them, not
    // the library's default that leaves one to the host app.
    cpuThreads: availableParallelism(),
    tts: { maxInputChars: SAY_MAX_INPUT_CHARS },
    ...(flags.modelsDir ? { modelsDir: flags.modelsDir } : {}),
    ...(flags.voiceDir ? { voiceDirs: flags.voiceDir } : {}),
  });
}

export function registerSpeakCommands(program: Command): void {
  program
    .command('say')
    .description('speak text with a Piper voice (mp3, wav, opus, pcm16, aac, flac)')
    .argument('[text]', 'the text; "-" or --file to read it instead')
    .requiredOption('-v, --voice <id>', 'voice id (see "voxmill voices")')
    .option('-o, --output <file>', 'output file; "-" or omitted writes to stdout (not a terminal)')
    .addOption(
      new Option('-f, --format <format>', 'default: from the output extension, else mp3 (ogg: opus)').choices([
        ...SPEECH_FORMATS,
        'ogg',
      ]),
    )
    .addOption(
      new Option('-m, --model <id>', 'best quality or fastest variant')
        .choices(TTS_MODEL_IDS)
        .default(DEFAULT_TTS_MODEL),
    )
    .option('-s, --speed <x>', 'speed, 0.5 to 2.0', number('--speed'))
    .option('-r, --sample-rate <hz>', 'output rate: 8000, 16000, 22050, 24000, 44100, 48000', number('--sample-rate'))
    .option('--noise-scale <x>', "generator noise, 0 to 10 (default: the voice's)", number('--noise-scale'))
    .option('--noise-w <x>', "phoneme-duration noise, 0 to 10 (default: the voice's)", number('--noise-w'))
    .option(
      '--length-scale <x>',
      "phoneme length, 0.05 to 20, above 1 slower (default: the voice's)",
      number('--length-scale'),
    )
    .option(
      '--sentence-silence <s>',
      "seconds between sentences, 0 to 10 (default: the voice's)",
      number('--sentence-silence'),
    )
    .option('--no-normalize', 'read numbers, dates, money and abbreviations as espeak-ng does, not in words')
    .option('--words <file>', 'also write when each word is spoken, as JSON [{ word, start, end }] in seconds')
    .option('--file <path>', `read the text from a file (up to ${SAY_MAX_INPUT_CHARS.toLocaleString('en')} characters)`)
    .option('--voice-dir <dir>', 'directory with voices (repeatable; default the models directory)', collect)
    .option('--models-dir <dir>', 'models directory')
    .action(async (text: string | undefined, flags: SayFlags) => {
      const input =
        flags.file !== undefined
          ? await readFile(flags.file, 'utf8')
          : text === undefined || text === '-'
            ? await readStdin()
            : text;
      const toStdout = flags.output === undefined || flags.output === '-';
      if (toStdout && process.stdout.isTTY) throw new Error('refusing to write audio to a terminal; use -o <file>');
      const format = outputFormat(flags.output, flags.format);
      const speech = engineFor(flags);
      try {
        const audio = await speech.synthesize({
          voice: flags.voice,
          input,
          format,
          model: flags.model,
          ...(flags.speed === undefined ? {} : { speed: flags.speed }),
          ...(flags.sampleRate === undefined ? {} : { sampleRate: flags.sampleRate }),
          ...(flags.noiseScale === undefined ? {} : { noiseScale: flags.noiseScale }),
          ...(flags.noiseW === undefined ? {} : { noiseW: flags.noiseW }),
          ...(flags.lengthScale === undefined ? {} : { lengthScale: flags.lengthScale }),
          ...(flags.sentenceSilence === undefined ? {} : { sentenceSilence: flags.sentenceSilence }),
          ...(flags.words === undefined ? {} : { timestamps: 'word' as const }),
          normalize: flags.normalize,
        });
        // The word times are complete once the audio is: written after it, beside it, renamed into place.
        const writeWords = async () => {
          if (flags.words === undefined) return;
          await writeAtomically(flags.words, `${JSON.stringify(audio.words, null, 2)}\n`);
        };
        if (toStdout) {
          await pipeline(audio, process.stdout, { end: false });
          await writeWords();
          return;
        }
        // Written beside the target and renamed: a failure never leaves a half-written file under its name.
        const output = flags.output as string;
        const temporary = `${output}.${randomBytes(4).toString('hex')}.part`;
        try {
          await pipeline(audio, createWriteStream(temporary, { flags: 'wx' }));
          await rename(temporary, output);
        } catch (error) {
          await rm(temporary, { force: true });
          throw error;
        }
        await writeWords();
      } finally {
        await speech.close();
      }
    });

  program
    .command('voices')
    .description('list the installed voices')
    .option('--all', 'also list voices whose config is there but whose model is not')
    .option('--json', 'print JSON')
    .option('--voice-dir <dir>', 'directory with voices (repeatable; default the models directory)', collect)
    .option('--models-dir <dir>', 'models directory')
    .action(async (flags: { all?: boolean; json?: boolean; voiceDir?: string[]; modelsDir?: string }) => {
      const speech = engineFor(flags);
      try {
        const voices = await speech.listVoices({ includeUninstalled: flags.all === true });
        if (flags.json) {
          process.stdout.write(`${JSON.stringify(voices, null, 2)}\n`);
        } else {
          for (const voice of voices) {
            process.stdout.write(`${voice.id}\t${voice.languages.join(',')}\t${voice.gender}\t${voice.name}\n`);
          }
          if (voices.length === 0) {
            process.stderr.write(
              `voxmill: no voices installed in ${flags.voiceDir?.join(', ') ?? speech.modelsDir}. Download the ` +
                "default one with 'voxmill models pull svc-tts-1', list others with 'voxmill models list', or point " +
                '--voice-dir at a directory of Piper voices (<name>.onnx with <name>.onnx.json).\n',
            );
          }
        }
        for (const problem of await speech.voiceProblems()) {
          if (flags.all && problem.message.includes('has a config but no model')) continue;
          process.stderr.write(`voxmill: warning: ${problem.message}\n`);
        }
      } finally {
        await speech.close();
      }
    });
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
