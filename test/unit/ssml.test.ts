// SSML input: the XML reader, the subset of elements voxmill reads (and the errors naming the place of anything
// else), and how the items become a job's chunks.
import { describe, expect, it } from 'vitest';
import { InvalidOptionValueError } from '../../src/errors.js';
import { MAX_XML_DEPTH, parseXml, XmlSyntaxError } from '../../src/tts/ssml/parse-xml.js';
import { isSsml, parseSsml } from '../../src/tts/ssml/ssml.js';
import { ssmlChunks } from '../../src/tts/ssml/ssml-chunks.js';

describe('parseXml', () => {
  it('reads elements, attributes in either quote, entities, character references and comments', () => {
    const root = parseXml(
      `<?xml version="1.0"?><!-- hi --><speak a="1" b='&lt;2&gt;'>x &amp; y &#233;&#x1F600;<s/></speak>`,
    );
    expect(root.name).toBe('speak');
    expect([...root.attributes]).toEqual([
      ['a', '1'],
      ['b', '<2>'],
    ]);
    expect(root.children[0]).toMatchObject({ kind: 'text', text: 'x & y é😀' });
    expect(root.children[1]).toMatchObject({ kind: 'element', name: 's', children: [] });
  });

  it.each([
    ['<speak>', /<speak> is not closed at character 1/],
    ['<speak></s>', /<\/s> closes <speak> at character 8/],
    ['<speak a=1></speak>', /must be quoted/],
    ['<speak a="1" a="2"/>', /given twice/],
    ['<speak>&nbsp;</speak>', /unknown entity "&nbsp;" at character 8/],
    ['<speak>&#0;</speak>', /not a character/],
    ['<speak/>x', /text after the root element/],
    ['<speak><![CDATA[x]]></speak>', /CDATA/],
    ['plain', /expected the root element at character 1/],
  ])('refuses %s', (input, message) => {
    expect(() => parseXml(input)).toThrow(XmlSyntaxError);
    expect(() => parseXml(input)).toThrow(message);
  });

  it(`stops at ${MAX_XML_DEPTH} levels instead of recursing without bound`, () => {
    const deep = `<speak>${'<emphasis>'.repeat(10_000)}`;
    expect(() => parseXml(deep)).toThrow(/nested more than 32 deep/);
  });
});

describe('parseSsml', () => {
  it('is detected by a leading <speak>, after white space or an XML declaration', () => {
    expect(isSsml('  <speak>hi</speak>')).toBe(true);
    expect(isSsml('<?xml version="1.0"?>\n<speak version="1.1">hi</speak>')).toBe(true);
    expect(isSsml('<speaker>hi</speaker>')).toBe(false);
    expect(isSsml('Say <speak> later')).toBe(false);
  });

  it('reads breaks, sentences, say-as, phoneme, sub, prosody rate and emphasis', () => {
    const items = parseSsml(
      '<speak>A<break time="500ms"/><break strength="strong"/><s>B</s>' +
        '<say-as interpret-as="characters">ab</say-as><say-as interpret-as="ordinal">21</say-as>' +
        '<say-as interpret-as="digits">907</say-as><say-as interpret-as="telephone">555-0123</say-as>' +
        '<say-as interpret-as="date" format="ymd">2026-11-24</say-as>' +
        '<phoneme alphabet="ipa" ph="dʒˈɑn">John</phoneme><sub alias="W three C">W3C</sub>' +
        '<prosody rate="x-slow"><prosody rate="200%">C</prosody></prosody><emphasis level="strong">D</emphasis></speak>',
    );
    expect(items).toEqual([
      { kind: 'text', text: 'A', rate: 1 },
      { kind: 'pause', seconds: 0.5 },
      { kind: 'pause', seconds: 0.4 },
      { kind: 'boundary' },
      { kind: 'text', text: 'B', rate: 1 },
      { kind: 'boundary' },
      { kind: 'text', text: 'A, B', rate: 1 },
      { kind: 'text', text: 'twenty-first', rate: 1 },
      { kind: 'text', text: 'nine zero seven', rate: 1 },
      { kind: 'text', text: 'five five five, zero one two three', rate: 1 },
      { kind: 'text', text: 'November twenty-fourth, twenty twenty-six', rate: 1 },
      { kind: 'phonemes', ipa: 'dʒˈɑn', text: 'John', rate: 1 },
      { kind: 'text', text: 'W three C', rate: 1 },
      // x-slow (0.5) then 200% inside it: the voice's own rate.
      { kind: 'text', text: 'C', rate: 1 },
      { kind: 'text', text: 'D', rate: 1 },
    ]);
    expect(parseSsml('<speak><prosody rate="50%">x</prosody></speak>')).toEqual([{ kind: 'text', text: 'x', rate: 2 }]);
  });

  it.each([
    ['<speak><audio src="x.wav"/></speak>', /<audio> is not supported at character 8/],
    ['<speak><voice gender="female">hi</voice></speak>', /<voice> has no attribute gender/],
    ['<speak><voice name=" ">hi</voice></speak>', /<voice> needs name/],
    ['<speak><prosody pitch="high">x</prosody></speak>', /<prosody> has no attribute pitch/],
    ['<speak><break time="2 minutes"/></speak>', /must be a duration such as 500ms/],
    ['<speak><break time="11s"/></speak>', /longer than 10 s/],
    ['<speak><break strength="loud"/></speak>', /strength="loud"> must be one of none/],
    ['<speak><prosody rate="10%">x</prosody></speak>', /20%-400%/],
    ['<speak><say-as>1</say-as></speak>', /needs interpret-as/],
    ['<speak><say-as interpret-as="cardinal">many</say-as></speak>', /needs a whole number, not "many"/],
    ['<speak><say-as interpret-as="date" format="mdy">13/40/2020</say-as></speak>', /needs a valid date/],
    ['<speak><phoneme alphabet="x-sampa" ph="a">a</phoneme></speak>', /only "ipa"/],
    ['<speak><phoneme>a</phoneme></speak>', /needs ph/],
    ['<speak><sub>a</sub></speak>', /needs alias/],
    ['<speak><say-as interpret-as="digits"><s>1</s></say-as></speak>', /may hold only text/],
    ['<p>x</p>', /root element must be <speak>/],
    [
      `<speak>${'<prosody rate="50%">'.repeat(3)}x${'</prosody>'.repeat(3)}</speak>`,
      /nested <prosody rate> come to 13%, outside 20%-400%/,
    ],
    [`<speak>${'<break time="10s"/>'.repeat(7)}</speak>`, /the breaks add up to 70 s, more than 60 s/],
    ['<speak>&#12abc;</speak>', /"&#12abc;" is not a character/],
    ['<speak><say-as interpret-as="time">hello</say-as></speak>', /needs a time such as 10:30/],
  ])('refuses %s with InvalidOptionValueError naming input and the place', (input, message) => {
    expect(() => parseSsml(input)).toThrow(InvalidOptionValueError);
    expect(() => parseSsml(input)).toThrow(message);
    expect(() => parseSsml(input)).toThrow(/^input must be SSML voxmill can read/);
  });
});

describe('ssmlChunks', () => {
  const same = () => ({ index: undefined, normalize: (text: string) => text });

  it('keeps a <phoneme> in its sentence, breaks as pauses, sentence edges and rate changes as chunks', () => {
    const chunks = ssmlChunks(
      parseSsml(
        '<speak>My name is <phoneme ph="dʒˈɑn">John</phoneme>, hello.<break time="1s"/>' +
          'Then <prosody rate="slow">slowly</prosody> on.<s>Last</s></speak>',
      ),
      same,
      400,
    );
    expect(chunks).toEqual([
      {
        parts: [{ text: 'My name is' }, { ipa: 'dʒˈɑn', text: 'John' }, { text: ', hello.' }],
        lengthFactor: 1,
        joined: false,
      },
      { pause: 1 },
      { parts: [{ text: 'Then' }], lengthFactor: 1, joined: false },
      { parts: [{ text: 'slowly' }], lengthFactor: 1 / 0.75, joined: true },
      { parts: [{ text: 'on.' }], lengthFactor: 1, joined: true },
      { parts: [{ text: 'Last' }], lengthFactor: 1, joined: false },
    ]);
  });

  it('gives a <voice> its own sentences, with its index and its normalizer', () => {
    const voices = (name: string | undefined) =>
      name === 'de_DE-thorsten'
        ? { index: 0, normalize: (text: string) => text.toUpperCase() }
        : { index: undefined, normalize: (text: string) => text };
    const chunks = ssmlChunks(
      parseSsml(
        '<speak>Hello <voice name="de_DE-thorsten">Hallo <prosody rate="50%">Welt</prosody></voice> bye</speak>',
      ),
      voices,
      400,
    );
    expect(chunks).toEqual([
      { parts: [{ text: 'Hello' }], lengthFactor: 1, joined: false },
      { parts: [{ text: 'HALLO' }], lengthFactor: 1, joined: false, voice: 0 },
      { parts: [{ text: 'WELT' }], lengthFactor: 2, joined: true, voice: 0 },
      { parts: [{ text: 'bye' }], lengthFactor: 1, joined: false },
    ]);
  });

  it("takes the document's own private-use characters for nothing, never for a <phoneme>", () => {
    const chunks = ssmlChunks(parseSsml('<speak>Hello &#xF0000; <phoneme ph="ab">x</phoneme></speak>'), same, 400);
    expect(chunks).toEqual([{ parts: [{ text: 'Hello' }, { ipa: 'ab', text: 'x' }], lengthFactor: 1, joined: false }]);
    expect(ssmlChunks(parseSsml('<speak>&#xF0000;</speak>'), same, 400)).toEqual([]);
  });

  it('runs the text (not the phonemes) through cleaning and the normalizer', () => {
    const upper = () => ({ index: undefined, normalize: (text: string) => text.toUpperCase() });
    const chunks = ssmlChunks(parseSsml('<speak>a 😀 <phoneme ph="ab">x</phoneme> b</speak>'), upper, 400);
    expect(chunks).toEqual([
      { parts: [{ text: 'A' }, { ipa: 'ab', text: 'x' }, { text: 'B' }], lengthFactor: 1, joined: false },
    ]);
  });
});
