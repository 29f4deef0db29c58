// Two-channel recordings with one speaker per channel (call centres, interviews with two microphones): the louder
// channel says who speaks, as whisper.cpp's stereo diarization does. Used only when the channels really differ.
import type { SpeechRegion } from '../audio/speech-regions.js';
import type { SpeakerTurn } from './turn.js';

const SAMPLE_RATE = 16000;
/** Energy is compared over 100 ms frames. */
const FRAME = 1600;
/** A frame belongs to a channel when it is this much louder (power ratio) than the other: whisper.cpp uses 1.1. */
const LOUDER = 1.1;
/** The channels count as different speakers when at least this share of speech frames is clearly one-sided. */
const ONE_SIDED_SHARE = 0.5;
const ONE_SIDED_RATIO = 2;

function power(samples: Float32Array, start: number): number {
  let sum = 0;
  const end = Math.min(samples.length, start + FRAME);
  for (let i = start; i < end; i++) sum += (samples[i] as number) ** 2;
  return sum / Math.max(1, end - start);
}

// Regions between yields to the event loop: hours of stereo audio take a second of work in all.
const REGIONS_PER_SLICE = 32;
const pause = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Whether the two channels carry different speakers (not the same signal twice, or a stereo mix). */
export async function channelsDiffer(
  left: Float32Array,
  right: Float32Array,
  regions: readonly SpeechRegion[],
): Promise<boolean> {
  let frames = 0;
  let oneSided = 0;
  for (const [index, { start, end }] of regions.entries()) {
    if (index > 0 && index % REGIONS_PER_SLICE === 0) await pause();
    for (let at = Math.round(start * SAMPLE_RATE); at < Math.round(end * SAMPLE_RATE); at += FRAME) {
      const l = power(left, at) + 1e-12;
      const r = power(right, at) + 1e-12;
      frames++;
      if (l > ONE_SIDED_RATIO * r || r > ONE_SIDED_RATIO * l) oneSided++;
    }
  }
  return frames > 0 && oneSided / frames >= ONE_SIDED_SHARE;
}

/**
 * Turns from channel energy over the speech regions: each 100 ms frame goes to the louder channel (a tie keeps the
 * previous speaker); runs shorter than `minTurnSeconds` join their neighbour. Speakers are named by first
 * appearance, so `speaker_1` is whichever channel speaks first.
 */
export async function turnsByChannel(
  left: Float32Array,
  right: Float32Array,
  regions: readonly SpeechRegion[],
  minTurnSeconds: number,
): Promise<SpeakerTurn[]> {
  const raw: Array<{ start: number; end: number; channel: number }> = [];
  for (const [index, { start, end }] of regions.entries()) {
    if (index > 0 && index % REGIONS_PER_SLICE === 0) await pause();
    let channel = -1;
    const first = Math.round(start * SAMPLE_RATE);
    const last = Math.round(end * SAMPLE_RATE);
    const labels: number[] = [];
    for (let at = first; at < last; at += FRAME) {
      const l = power(left, at);
      const r = power(right, at);
      if (l > LOUDER * r) channel = 0;
      else if (r > LOUDER * l) channel = 1;
      labels.push(channel);
    }
    // Frames before the first decision take the first decided channel.
    const firstDecided = labels.find((c) => c >= 0) ?? 0;
    const minFrames = Math.max(1, Math.round((minTurnSeconds * SAMPLE_RATE) / FRAME));
    const smoothed = labels.map((c) => (c < 0 ? firstDecided : c));
    // Short runs join the run before them (or after, at the start).
    for (let i = 0; i < smoothed.length; ) {
      let j = i;
      while (j < smoothed.length && smoothed[j] === smoothed[i]) j++;
      if (j - i < minFrames && (i > 0 || j < smoothed.length)) {
        const into = i > 0 ? (smoothed[i - 1] as number) : (smoothed[j] as number);
        for (let k = i; k < j; k++) smoothed[k] = into;
      }
      i = j;
    }
    for (let i = 0; i < smoothed.length; ) {
      let j = i;
      while (j < smoothed.length && smoothed[j] === smoothed[i]) j++;
      raw.push({
        start: i === 0 ? start : (first + i * FRAME) / SAMPLE_RATE,
        end: j === smoothed.length ? end : (first + j * FRAME) / SAMPLE_RATE,
        channel: smoothed[i] as number,
      });
      i = j;
    }
  }
  const names = new Map<number, string>();
  return raw.map(({ start, end, channel }) => {
    if (!names.has(channel)) names.set(channel, `speaker_${names.size + 1}`);
    return {
      start: Math.round(start * 1000) / 1000,
      end: Math.round(end * 1000) / 1000,
      speaker: names.get(channel) as string,
    };
  });
}
