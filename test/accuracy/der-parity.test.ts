// The project's diarization error rate (src/diarize/der.ts) against pyannote.metrics 4.2.0 (scripts/peers/der_peer.py,
// in the peers venv) on the same turns: pyannote_sample's reference against voxmill's own diarization of it, and 60
// seeded hypotheses and references built to be awkward (shifted boundaries, swapped and split labels, missed and
// invented turns, overlapped speech, more or fewer speakers than the reference). With and without the 0.25 s collar
// (pyannote's collar is the whole width: 0.5), overlaps scored and skipped. Every DER agrees within 0.1 points.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { createSpeech, parseRttm, type SpeakerTurn, scoreDiarization } from '../../dist/index.js';
import { repoRoot, sharedAudio, sharedModel } from '../helpers/paths.js';
import { requirePeerPython } from '../helpers/real-models.js';

const python = requirePeerPython();

/** A seeded generator (mulberry32): the same cases on every machine. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const round = (x: number) => Math.round(x * 1000) / 1000;

/** A reference of `speakers` people over `seconds`, turns of 0.5–8 s with pauses, some overlapping the previous. */
function reference(next: () => number, speakers: number, seconds: number): SpeakerTurn[] {
  const turns: SpeakerTurn[] = [];
  let t = next() * 2;
  while (t < seconds) {
    const length = 0.5 + next() * 7.5;
    const start = next() < 0.15 && turns.length > 0 ? Math.max(0, t - next() * 1.5) : t;
    turns.push({
      start: round(start),
      end: round(Math.min(seconds, start + length)),
      speaker: `r${Math.floor(next() * speakers)}`,
    });
    t = start + length + next() * 1.2;
  }
  return merged(turns);
}

/**
 * One speaker's overlapping or touching turns as one. Well-formed input for both scorers: pyannote.metrics counts a
 * label's overlapping tracks once each (as two speakers talking), voxmill merges them (src/diarize/der.ts).
 */
function merged(turns: SpeakerTurn[]): SpeakerTurn[] {
  const out: SpeakerTurn[] = [];
  const sorted = [...turns].sort((a, b) => a.speaker.localeCompare(b.speaker) || a.start - b.start);
  for (const turn of sorted) {
    const last = out.at(-1);
    if (last && last.speaker === turn.speaker && turn.start <= last.end) last.end = Math.max(last.end, turn.end);
    else out.push({ ...turn });
  }
  return out.sort((a, b) => a.start - b.start);
}

/** A hypothesis made from a reference: boundaries moved, labels renamed and sometimes wrong, turns dropped and added. */
function hypothesis(next: () => number, ref: SpeakerTurn[], labels: number): SpeakerTurn[] {
  const speakers = [...new Set(ref.map((turn) => turn.speaker))];
  const turns: SpeakerTurn[] = [];
  for (const turn of ref) {
    if (next() < 0.1) continue;
    const start = Math.max(0, turn.start + (next() - 0.5) * 0.8);
    const end = Math.max(start, turn.end + (next() - 0.5) * 0.8);
    const label = next() < 0.2 ? Math.floor(next() * labels) : speakers.indexOf(turn.speaker) % labels;
    // Sometimes one reference turn comes out as two hypothesis speakers.
    if (next() < 0.1 && end - start > 1) {
      const middle = (start + end) / 2;
      turns.push({ start: round(start), end: round(middle), speaker: `h${label}` });
      turns.push({ start: round(middle), end: round(end), speaker: `h${(label + 1) % labels}` });
    } else {
      turns.push({ start: round(start), end: round(end), speaker: `h${label}` });
    }
  }
  const last = ref.at(-1)?.end ?? 10;
  for (let i = 0; i < 2; i++) {
    const start = next() * last;
    turns.push({
      start: round(start),
      end: round(start + 0.3 + next() * 2),
      speaker: `h${Math.floor(next() * labels)}`,
    });
  }
  return merged(turns);
}

interface Case {
  name: string;
  reference: SpeakerTurn[];
  hypothesis: SpeakerTurn[];
}

describe.skipIf(python.skip)(`DER against pyannote.metrics 4.2.0 ${python.reason}`, () => {
  it('agrees within 0.1 points on every case, with and without collar, overlaps scored and skipped', {
    timeout: 180_000,
  }, async () => {
    const sample = parseRttm(readFileSync(sharedAudio('pyannote_sample.rttm'), 'utf8')).get('sample') ?? [];
    const speech = createSpeech({ vadModel: sharedModel('whisper/ggml-silero-v6.2.0.bin') });
    const ours = await speech.diarize(sharedAudio('pyannote_sample.wav'));
    await speech.close();
    const cases: Case[] = [{ name: 'pyannote_sample: voxmill', reference: sample, hypothesis: ours.turns }];
    const next = random(20261126);
    for (let i = 0; i < 20; i++) {
      cases.push({
        name: `pyannote_sample: perturbed ${i}`,
        reference: sample,
        hypothesis: hypothesis(next, sample, 2 + (i % 3)),
      });
    }
    for (let i = 0; i < 40; i++) {
      const speakers = 2 + (i % 5);
      const ref = reference(next, speakers, 60 + next() * 240);
      cases.push({
        name: `generated ${i}: ${speakers} speakers`,
        reference: ref,
        hypothesis: hypothesis(next, ref, Math.max(1, speakers + (i % 3) - 1)),
      });
    }
    const settings = [
      { collar: 0, skipOverlap: false },
      { collar: 0.25, skipOverlap: false },
      { collar: 0.25, skipOverlap: true },
    ];
    const scored = cases.flatMap((c) => settings.map((s) => ({ ...c, ...s })));
    const input = JSON.stringify(
      scored.map((c) => ({
        reference: c.reference,
        hypothesis: c.hypothesis,
        collar: 2 * c.collar,
        skip_overlap: c.skipOverlap,
      })),
    );
    const peer = promisify(execFile)(python.path as string, [join(repoRoot, 'scripts', 'peers', 'der_peer.py')], {
      encoding: 'utf8',
      maxBuffer: 16 * 1024 * 1024,
    });
    peer.child.stdin?.end(input);
    const theirs = JSON.parse((await peer).stdout) as Array<{ der: number; total: number }>;
    expect(theirs).toHaveLength(scored.length);
    scored.forEach((c, i) => {
      const mine = scoreDiarization(c.reference, c.hypothesis, { collar: c.collar, skipOverlap: c.skipOverlap });
      const at = `${c.name}, collar ${c.collar}, skipOverlap ${c.skipOverlap}`;
      expect(Math.abs(mine.der - (theirs[i]?.der as number)), at).toBeLessThanOrEqual(0.001);
      expect(Math.abs(mine.total - (theirs[i]?.total as number)), at).toBeLessThanOrEqual(0.01);
    });
  });
});
