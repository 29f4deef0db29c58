// Speaker labels as a live transcription goes (online clustering): each finished utterance's voice (a unit
// embedding) joins the closest speaker heard so far when it lies within the threshold, else it opens a new speaker,
// up to maxSpeakers. A label once given never changes (captions are already on screen), so the cost of a wrong
// early decision is bounded by keeping a speaker with little speech in an utterance, whose embedding is noisy, from
// opening speakers or moving centroids.

import { dot, normalize } from './clustering.js';
import type { SpeakerTurn } from './turn.js';

export interface LiveSpeakerOptions {
  /** Cosine distance within which a voice joins a speaker heard before. */
  threshold: number;
  /** Speakers at most; past it, a new voice joins the closest speaker. */
  maxSpeakers: number;
  /** A voice with less speech than this (seconds) never opens a speaker (unless none exists) nor moves a centroid. */
  minSeconds: number;
}

interface LiveSpeaker {
  name: string;
  /** Sum of the voices that formed it, weighted by their seconds. */
  sum: Float32Array;
  centroid: Float32Array;
}

export class LiveSpeakers {
  readonly #options: LiveSpeakerOptions;
  readonly #speakers: LiveSpeaker[] = [];

  constructor(options: LiveSpeakerOptions) {
    this.#options = options;
  }

  /** Speakers heard so far. */
  get count(): number {
    return this.#speakers.length;
  }

  /**
   * The label of an utterance with this voice and length: `speaker_1`, `speaker_2`, ... by first appearance.
   * Undefined for a voice with no direction (all zeros: too short for the model to embed).
   */
  assign(voice: Float32Array, seconds: number): string | undefined {
    if (!voice.some((v) => v !== 0)) return undefined;
    const { threshold, maxSpeakers, minSeconds } = this.#options;
    let best: LiveSpeaker | undefined;
    let bestDistance = Number.POSITIVE_INFINITY;
    for (const speaker of this.#speakers) {
      const distance = 1 - dot(voice, speaker.centroid);
      if (distance < bestDistance) {
        best = speaker;
        bestDistance = distance;
      }
    }
    const reliable = seconds >= minSeconds;
    const opens = !best || (bestDistance > threshold && reliable && this.#speakers.length < maxSpeakers);
    if (opens) {
      const sum = voice.map((v) => v * seconds);
      const speaker = { name: `speaker_${this.#speakers.length + 1}`, sum, centroid: normalize(sum.slice()) };
      this.#speakers.push(speaker);
      return speaker.name;
    }
    const speaker = best as LiveSpeaker;
    if (reliable) {
      for (let i = 0; i < voice.length; i++)
        speaker.sum[i] = (speaker.sum[i] as number) + (voice[i] as number) * seconds;
      speaker.centroid = normalize(speaker.sum.slice());
    }
    return speaker.name;
  }

  /**
   * One utterance's turns relabelled for the stream: each local speaker (in order of first appearance) placed by its
   * voice and total seconds; turns of a speaker with no voice are dropped.
   */
  label(turns: readonly SpeakerTurn[], voices: Readonly<Record<string, Float32Array>>): SpeakerTurn[] {
    const names = new Map<string, string | undefined>();
    for (const { speaker: local } of turns) {
      if (names.has(local)) continue;
      const seconds = turns.filter((t) => t.speaker === local).reduce((sum, t) => sum + t.end - t.start, 0);
      names.set(local, this.assign(voices[local] ?? new Float32Array(0), seconds));
    }
    return turns.flatMap((t) => {
      const speaker = names.get(t.speaker);
      return speaker === undefined ? [] : [{ ...t, speaker }];
    });
  }
}
