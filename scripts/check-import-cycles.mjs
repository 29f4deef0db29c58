#!/usr/bin/env node
// Fails when the TypeScript sources import each other in a cycle. A cycle means two files cannot be understood (or
// loaded) apart, which is the smell issue 14 removed: domain types belong in the domain, protocols import them.
// Reads every `import`/`export ... from` (type-only imports too: they couple files just as much) with the
// TypeScript scanner, resolves relative specifiers (`./x.js` is `./x.ts` in the sources), and prints each strongly
// connected component (Tarjan) as the chain of files it is made of. Usage: node scripts/check-import-cycles.mjs [dir].
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';

const root = resolve(process.argv[2] ?? 'src');

function sourceFiles(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return name.endsWith('.ts') && !name.endsWith('.d.ts') ? [path] : [];
  });
}

function importsOf(file, known) {
  const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
  return importedFiles
    .map(({ fileName }) => fileName)
    .filter((spec) => spec.startsWith('.'))
    .map((spec) => resolve(dirname(file), spec.replace(/\.js$/, '.ts')))
    .filter((target) => known.has(target));
}

const files = sourceFiles(root);
const known = new Set(files);
const graph = new Map(files.map((file) => [file, importsOf(file, known)]));

// Tarjan's strongly connected components; a component of more than one file (or a file importing itself) is a cycle.
let counter = 0;
const index = new Map();
const low = new Map();
const stack = [];
const onStack = new Set();
const cycles = [];
function visit(file) {
  index.set(file, counter);
  low.set(file, counter);
  counter++;
  stack.push(file);
  onStack.add(file);
  for (const next of graph.get(file)) {
    if (!index.has(next)) {
      visit(next);
      low.set(file, Math.min(low.get(file), low.get(next)));
    } else if (onStack.has(next)) {
      low.set(file, Math.min(low.get(file), index.get(next)));
    }
  }
  if (low.get(file) !== index.get(file)) return;
  const component = [];
  let member;
  do {
    member = stack.pop();
    onStack.delete(member);
    component.push(member);
  } while (member !== file);
  if (component.length > 1 || graph.get(file).includes(file)) cycles.push(component);
}
for (const file of files) if (!index.has(file)) visit(file);

const name = (file) => relative(process.cwd(), file);
if (cycles.length === 0) {
  console.log(`import cycles: 0 (${files.length} files under ${name(root) || '.'})`);
} else {
  console.error(`import cycles: ${cycles.length} (${files.length} files under ${name(root) || '.'})`);
  for (const component of cycles) console.error(`  ${component.map(name).sort().join(' <-> ')}`);
  process.exitCode = 1;
}
