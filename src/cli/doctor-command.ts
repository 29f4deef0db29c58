/**
 * `voxmill doctor`: what this install can do. The addon (where it is, whether it loads), the CPU code and the ggml
 * backends compiled into it, the devices they found, the ONNX Runtime the voices run on, and each configured
 * speech-to-text model: installed or not, and the device it runs on (predicted from the devices, or measured with
 * `--load`). Exit status 1 when something is broken (the addon does not load, a model fails to load).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { resolveSpeechConfig, type SpeechOptions } from '../engine/config.js';
import { ModelLocator } from '../engine/model-locator.js';
import { addonPath, native, nativeAssets } from '../native.js';
import type { Speech } from '../speech.js';
import { createSpeech } from '../speech.js';
import { backends, cpuInfo, devices, gpuBackends, gpuDevices, versions } from '../system.js';
import { packageVersion as version } from './package-version.js';
import { loadServeConfig } from './serve-config.js';

/** One configured speech-to-text id. */
export interface DoctorModel {
  id: string;
  installed: boolean;
  path: string | null;
  /** The device it runs on: measured with `--load`, else what the devices found say it would be. */
  device: string;
  measured: boolean;
  quantization?: string;
  loadMs?: number;
  error?: string;
}

/** `voxmill doctor --json`. */
export interface DoctorReport {
  voxmill: string;
  node: string;
  platform: string;
  addon:
    | {
        ok: true;
        path: string;
        prebuilt: boolean;
        whisper: string;
        ffmpeg: string;
        cpu: ReturnType<typeof cpuInfo>;
        backends: string[];
        devices: ReturnType<typeof devices>;
      }
    | { ok: false; path: string | null; error: string };
  /** The ONNX Runtime shipped beside the addon (voices, speaker models) and espeak-ng's data. */
  onnxRuntime: { ok: true; path: string; version: string; espeak: string } | { ok: false; error: string };
  models: DoctorModel[];
  /** Speech-to-text models installed in the models directory (pulled catalog ids, then added ids): `-m` takes each. */
  installedModels: string[];
  voices: number;
  /** What works but not as well as it could (a GPU build without a GPU, nothing installed). */
  warnings: string[];
  /** What does not work. */
  problems: string[];
}

export interface DoctorOptions {
  config?: string;
  modelsDir?: string;
  /** Load each installed model and report the device it really uses (takes the memory each model needs). */
  load?: boolean;
}

/** Builds the report. Never throws for what it finds broken: that goes into `problems`. */
export async function doctorReport(options: DoctorOptions = {}): Promise<DoctorReport> {
  const report: DoctorReport = {
    voxmill: version,
    node: process.version,
    platform: `${process.platform}-${process.arch}`,
    addon: { ok: false, path: addonPath()?.path ?? null, error: '' },
    onnxRuntime: { ok: false, error: '' },
    models: [],
    installedModels: [],
    voices: 0,
    warnings: [],
    problems: [],
  };
  let speechOptions: SpeechOptions;
  try {
    speechOptions = {
      ...(options.config ? (await loadServeConfig(options.config)).speech : {}),
      ...(options.modelsDir ? { modelsDir: options.modelsDir } : {}),
    };
  } catch (error) {
    report.problems.push((error as Error).message);
    return report;
  }
  try {
    const found = addonPath();
    const v = versions();
    report.addon = {
      ok: true,
      path: found?.path ?? '',
      prebuilt: found?.prebuilt ?? false,
      whisper: v.whisper,
      ffmpeg: v.ffmpeg,
      cpu: cpuInfo(),
      backends: backends(),
      devices: devices(),
    };
  } catch (error) {
    report.addon = { ok: false, path: addonPath()?.path ?? null, error: (error as Error).message };
    report.problems.push(`the native addon does not load: ${(error as Error).message}`);
    return report;
  }
  let config: ReturnType<typeof resolveSpeechConfig>;
  try {
    config = resolveSpeechConfig(speechOptions);
  } catch (error) {
    report.problems.push(`the configuration: ${(error as Error).message}`);
    return report;
  }
  const gpus = gpuDevices();
  const built = gpuBackends();
  if (built.length > 0 && gpus.length === 0) {
    report.warnings.push(
      `the addon was built with ${built.join(' and ')}, which found no device: models run on the CPU`,
    );
  }
  try {
    const assets = nativeAssets();
    if (!existsSync(join(assets.espeakData, 'phontab')))
      throw new Error(`espeak-ng's data is missing (${assets.espeakData})`);
    const runtime = native().onnxRuntime(assets.onnxRuntime);
    report.onnxRuntime = { ok: true, ...runtime, espeak: versions().espeak };
  } catch (error) {
    report.onnxRuntime = { ok: false, error: (error as Error).message };
    report.problems.push(`ONNX Runtime (voices, speaker models): ${(error as Error).message}`);
  }
  const speech: Speech = createSpeech(speechOptions);
  try {
    // Where whisper.cpp would put a model: the gpuDevice-th GPU found, else the CPU (as the addon reports once loaded).
    const predicted = (config.gpu ? gpus[config.gpuDevice]?.name : undefined) ?? 'CPU';
    report.installedModels = new ModelLocator(speech.modelsDir).installedWhisperModels();
    for (const status of speech.status()) {
      const model: DoctorModel = {
        id: status.id,
        installed: status.installed,
        path: status.path ?? null,
        device: predicted,
        measured: false,
      };
      if (status.installed && options.load) {
        const started = performance.now();
        try {
          const info = await speech.loadModel(status.id);
          model.device = info.device;
          model.measured = true;
          model.quantization = info.quantization;
          model.loadMs = Math.round(performance.now() - started);
        } catch (error) {
          model.error = (error as Error).message;
          report.problems.push(`${status.id}: ${model.error}`);
        } finally {
          speech.unloadModel(status.id);
        }
      }
      report.models.push(model);
    }
    // Nothing configured is installed, but other speech-to-text models are: say how to use them.
    if (!report.models.some((m) => m.installed) && report.installedModels.length > 0) {
      report.warnings.push(
        `no configured speech-to-text model is installed (voxmill models pull svc-stt-1); installed instead: ` +
          `${report.installedModels.join(', ')} (name one with -m <id>)`,
      );
    }
    try {
      report.voices = (await speech.listVoices()).length;
    } catch (error) {
      report.problems.push(`the voices: ${(error as Error).message}`);
    }
    if (!report.models.some((m) => m.installed) && report.voices === 0) {
      report.warnings.push(
        `nothing is installed in ${speech.modelsDir}: voxmill models pull svc-stt-1 svc-tts-1 fetches the defaults`,
      );
    }
  } finally {
    await speech.close();
  }
  return report;
}

/** The report as lines for a terminal. */
export function formatDoctorReport(report: DoctorReport): string {
  const lines = [`voxmill ${report.voxmill}, Node ${report.node}, ${report.platform}`];
  const { addon } = report;
  if (addon.ok) {
    lines.push(
      `addon: ${addon.path}${addon.prebuilt ? ' (prebuilt)' : ''}`,
      `  whisper.cpp ${addon.whisper}, FFmpeg ${addon.ffmpeg}`,
      `  CPU code: ${addon.cpu.target} (${addon.cpu.instructionSets.join(', ') || 'baseline'}), BLAS: ${addon.cpu.blas ?? 'none'}`,
      `  backends compiled in: ${addon.backends.join(', ')}`,
      `  devices found: ${addon.devices.map((d) => `${d.name} [${d.type}] ${d.description}`).join('; ')}`,
    );
  } else {
    lines.push(`addon: ${addon.path ?? 'not found'}: does not load`);
  }
  if (report.onnxRuntime.ok) {
    lines.push(
      `ONNX Runtime ${report.onnxRuntime.version}: ${report.onnxRuntime.path}; espeak-ng ${report.onnxRuntime.espeak}`,
    );
  }
  for (const model of report.models) {
    const where = model.installed ? (model.path ?? '') : 'not installed';
    const runs = model.error
      ? `fails to load: ${model.error}`
      : `${model.measured ? 'runs on' : 'would run on'} ${model.device}`;
    const extra = model.loadMs === undefined ? '' : ` (${model.quantization}, loaded in ${model.loadMs} ms)`;
    lines.push(`model ${model.id}: ${where}; ${runs}${extra}`);
  }
  lines.push(`installed speech-to-text models: ${report.installedModels.join(', ') || 'none'}`);
  if (addon.ok) lines.push(`voices: ${report.voices}`);
  for (const warning of report.warnings) lines.push(`warning: ${warning}`);
  for (const problem of report.problems) lines.push(`problem: ${problem}`);
  if (report.problems.length === 0) lines.push('ok');
  return `${lines.join('\n')}\n`;
}

/** Adds `doctor` to the program. */
export function registerDoctorCommand(program: Command): void {
  program
    .command('doctor')
    .description('report the addon, its CPU code and GPU backends, the devices found, and where each model runs')
    .option('-c, --config <file>', "the server's JSON config (its models, gpu, gpuDevice, onnxRuntime)")
    .option('--models-dir <dir>', 'where catalog models are installed')
    .option('--load', 'load each installed model to report the device it really runs on')
    .option('--json', 'print JSON')
    .action(async (flags: DoctorOptions & { json?: boolean }) => {
      const report = await doctorReport(flags);
      process.stdout.write(flags.json ? `${JSON.stringify(report, null, 2)}\n` : formatDoctorReport(report));
      if (report.problems.length > 0) process.exitCode = 1;
    });
}
