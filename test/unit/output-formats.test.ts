import { describe, expect, it } from 'vitest';
import { renderTranscription } from '../../src/cli/output-formats.js';
import type { Transcription } from '../../src/stt/types.js';

const result: Transcription = {
  text: 'Hello there. General Kenobi.',
  language: 'en',
  duration: 3725.5,
  segments: [
    { id: 0, start: 0, end: 1.25, text: 'Hello there.' },
    { id: 1, start: 3723.004, end: 3725.5, text: 'General Kenobi.' },
  ],
};

describe('renderTranscription', () => {
  it('text is the transcript and a newline', () => {
    expect(renderTranscription(result, 'text')).toBe('Hello there. General Kenobi.\n');
  });

  it('srt numbers cues and uses a comma before milliseconds', () => {
    expect(renderTranscription(result, 'srt')).toBe(
      '1\n00:00:00,000 --> 00:00:01,250\nHello there.\n\n2\n01:02:03,004 --> 01:02:05,500\nGeneral Kenobi.\n',
    );
  });

  it('vtt has the header and dots before milliseconds', () => {
    expect(renderTranscription(result, 'vtt')).toBe(
      'WEBVTT\n\n00:00:00.000 --> 00:00:01.250\nHello there.\n\n01:02:03.004 --> 01:02:05.500\nGeneral Kenobi.\n',
    );
  });

  it('json round-trips', () => {
    expect(JSON.parse(renderTranscription(result, 'json'))).toEqual(result);
  });
});
