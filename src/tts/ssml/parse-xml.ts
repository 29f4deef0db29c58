// A small XML reader for SSML input: elements with attributes, text, the five named entities and numeric character
// references, comments, and an optional XML declaration. No DTDs, no CDATA, no namespaces beyond the prefix being
// part of the name: SSML needs none of them, and refusing them keeps the reader small and linear in its input.
// Errors name the character offset where the input stops making sense.

export interface XmlElement {
  kind: 'element';
  name: string;
  attributes: Map<string, string>;
  children: XmlNode[];
  /** Offset of the `<` that opens it, for errors. */
  at: number;
}

export interface XmlText {
  kind: 'text';
  text: string;
  at: number;
}

export type XmlNode = XmlElement | XmlText;

export class XmlSyntaxError extends Error {
  constructor(
    message: string,
    readonly at: number,
  ) {
    super(`${message} at character ${at + 1}`);
  }
}

/** Deepest nesting accepted: SSML documents are shallow, and a bound keeps the reader's stack bounded. */
export const MAX_XML_DEPTH = 32;

const NAME = /[A-Za-z_][\w.:-]*/y;
const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

/** Reads one document whose root is an element; throws XmlSyntaxError. */
export function parseXml(input: string): XmlElement {
  let pos = 0;
  const fail = (message: string, at = pos): never => {
    throw new XmlSyntaxError(message, at);
  };
  const skipSpace = () => {
    while (pos < input.length && /\s/u.test(input[pos] as string)) pos++;
  };
  const readName = (): string => {
    NAME.lastIndex = pos;
    const match = NAME.exec(input);
    if (!match) return fail('expected a name');
    pos += match[0].length;
    return match[0];
  };
  const decode = (text: string, at: number): string =>
    text.replace(/&([^;&\s]*);?/gu, (whole: string, name: string, offset: number) => {
      if (!whole.endsWith(';')) return fail('"&" must start an entity such as &amp;', at + offset);
      if (name.startsWith('#')) {
        if (!/^#(?:x[0-9a-fA-F]{1,6}|\d{1,7})$/u.test(name)) return fail(`"&${name};" is not a character`, at + offset);
        const code = name[1] === 'x' ? Number.parseInt(name.slice(2), 16) : Number.parseInt(name.slice(1), 10);
        if (!Number.isInteger(code) || code <= 0 || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) {
          return fail(`"&${name};" is not a character`, at + offset);
        }
        return String.fromCodePoint(code);
      }
      const entity = ENTITIES[name];
      return entity ?? fail(`unknown entity "&${name};"`, at + offset);
    });
  const skipMisc = () => {
    for (;;) {
      skipSpace();
      if (input.startsWith('<!--', pos)) {
        const end = input.indexOf('-->', pos + 4);
        if (end < 0) fail('unclosed comment');
        pos = end + 3;
      } else if (input.startsWith('<?', pos)) {
        const end = input.indexOf('?>', pos + 2);
        if (end < 0) fail('unclosed processing instruction');
        pos = end + 2;
      } else return;
    }
  };

  const readElement = (depth: number): XmlElement => {
    const at = pos;
    if (depth > MAX_XML_DEPTH) fail(`elements nested more than ${MAX_XML_DEPTH} deep`);
    pos++; // <
    const name = readName();
    const attributes = new Map<string, string>();
    for (;;) {
      const before = pos;
      skipSpace();
      if (input.startsWith('/>', pos)) {
        pos += 2;
        return { kind: 'element', name, attributes, children: [], at };
      }
      if (input[pos] === '>') {
        pos++;
        break;
      }
      if (pos === before) fail(`expected an attribute, ">" or "/>" in <${name}>`);
      const attributeAt = pos;
      const attribute = readName();
      skipSpace();
      if (input[pos] !== '=') fail(`expected "=" after attribute ${attribute}`);
      pos++;
      skipSpace();
      const quote = input[pos];
      if (quote !== '"' && quote !== "'") fail(`the value of ${attribute} must be quoted`);
      const end = input.indexOf(quote as string, pos + 1);
      if (end < 0) fail(`unclosed value of ${attribute}`);
      if (attributes.has(attribute)) fail(`attribute ${attribute} given twice`, attributeAt);
      const raw = input.slice(pos + 1, end);
      if (raw.includes('<')) fail(`"<" in the value of ${attribute}`, pos + 1 + raw.indexOf('<'));
      attributes.set(attribute, decode(raw, pos + 1));
      pos = end + 1;
    }
    const children: XmlNode[] = [];
    for (;;) {
      if (pos >= input.length) fail(`<${name}> is not closed`, at);
      if (input.startsWith('</', pos)) {
        pos += 2;
        const closing = readName();
        if (closing !== name) fail(`</${closing}> closes <${name}>`, pos - closing.length - 2);
        skipSpace();
        if (input[pos] !== '>') fail(`expected ">" to end </${closing}>`);
        pos++;
        return { kind: 'element', name, attributes, children, at };
      }
      if (input.startsWith('<!--', pos)) {
        const end = input.indexOf('-->', pos + 4);
        if (end < 0) fail('unclosed comment');
        pos = end + 3;
        continue;
      }
      if (input.startsWith('<![CDATA[', pos) || input.startsWith('<!', pos) || input.startsWith('<?', pos)) {
        fail('CDATA, declarations and processing instructions are not supported inside SSML');
      }
      if (input[pos] === '<') {
        children.push(readElement(depth + 1));
        continue;
      }
      const start = pos;
      const next = input.indexOf('<', pos);
      pos = next < 0 ? input.length : next;
      children.push({ kind: 'text', text: decode(input.slice(start, pos), start), at: start });
    }
  };

  skipMisc();
  if (input[pos] !== '<') fail('expected the root element');
  const root = readElement(1);
  skipMisc();
  if (pos < input.length) fail('text after the root element');
  return root;
}
