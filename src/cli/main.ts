#!/usr/bin/env node
/** The `voxmill` command. */
import { Command } from 'commander';
import { registerDiarizeCommand } from './diarize-command.js';
import { registerDoctorCommand } from './doctor-command.js';
import { registerModelsCommand } from './models-command.js';
import { packageVersion as version } from './package-version.js';
import { registerServeCommand } from './serve-command.js';
import { registerSpeakCommands } from './speak-command.js';
import { registerTranscribeCommand } from './transcribe-command.js';
import { registerWorkerCommand } from './worker-command.js';

// `voxmill models list | head` closes stdout early: that is not an error.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(0);
  throw error;
});

async function versionText(): Promise<string> {
  try {
    const { versions, gpuDevices, cpuInfo, backends } = await import('../system.js');
    const v = versions();
    const cpu = cpuInfo();
    const gpus = gpuDevices();
    return [
      `voxmill ${version}`,
      `whisper.cpp ${v.whisper}, FFmpeg ${v.ffmpeg}`,
      `CPU code: ${cpu.target} (${cpu.instructionSets.join(', ')}), BLAS: ${cpu.blas ?? 'none'}`,
      `backends: ${backends().join(', ')}`,
      `devices: ${['CPU', ...gpus.map((d) => `${d.name} (${d.description})`)].join(', ')}`,
      v.system.trim(),
    ].join('\n');
  } catch (error) {
    return `voxmill ${version} (native addon unavailable: ${(error as Error).message})`;
  }
}

const program = new Command('voxmill')
  .description('local speech for Node.js: whisper.cpp transcription, speaker diarization and Piper text-to-speech')
  .option('-V, --version', 'print versions and compute devices')
  .showHelpAfterError();
program
  .command('version')
  .description('print versions and compute devices')
  .action(async () => {
    process.stdout.write(`${await versionText()}\n`);
  });
registerServeCommand(program);
registerWorkerCommand(program);
registerTranscribeCommand(program);
registerDiarizeCommand(program);
registerSpeakCommands(program);
registerModelsCommand(program);
registerDoctorCommand(program);

const args = process.argv.slice(2);
try {
  // --version is answered like the `version` command (commander's built-in one cannot be async).
  await program.parseAsync(args[0] === '-V' || args[0] === '--version' ? ['version'] : args, { from: 'user' });
} catch (error) {
  const e = error as Error & { code?: string; hint?: string };
  process.stderr.write(`voxmill: ${e.message}${e.code && !e.message.includes(e.code) ? ` [${e.code}]` : ''}\n`);
  // What the operator can do instead (ModelNotFoundError's installed models), kept out of messages HTTP clients read.
  if (typeof e.hint === 'string') process.stderr.write(`voxmill: ${e.hint}\n`);
  process.exitCode = 1;
}
