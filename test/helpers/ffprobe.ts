import { execFileSync } from 'node:child_process';

/**
 * Decoded duration per ffprobe: the sum of the decoded frames' samples over the stream's rate. (The
 * container's header duration of an MP3 counts the encoder's delay and padding, which decoders trim.)
 */
export function ffprobeDecodedDuration(path: string): number {
  const rate = Number(
    execFileSync('ffprobe', [
      '-v',
      'error',
      '-select_streams',
      'a:0',
      '-show_entries',
      'stream=sample_rate',
      '-of',
      'csv=p=0',
      path,
    ])
      .toString()
      .trim(),
  );
  const frames = execFileSync(
    'ffprobe',
    ['-v', 'error', '-select_streams', 'a:0', '-show_entries', 'frame=nb_samples', '-of', 'csv=p=0', path],
    { maxBuffer: 64 * 1024 * 1024 },
  )
    .toString()
    .split('\n')
    .filter(Boolean);
  const samples = frames.reduce((sum, line) => sum + Number(line.split(',')[0]), 0);
  return samples / rate;
}
