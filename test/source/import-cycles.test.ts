// The shape of src/: no import cycle of more than two files. Edges are every relative import the
// TypeScript compiler sees in a file (static, type-only, re-exports and dynamic import()), so a
// cycle through types alone counts too: it still ties the modules together.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { relative } from 'node:path';
import { importGraph, SRC, sourceFiles } from './import-graph.ts';

/** The longest cycle allowed: two files that name each other. */
const MAX_CYCLE_FILES = 2;

/** The strongly connected components of more than one file (Tarjan), each a set of files that import each other in a ring. */
function cycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (file: string): void => {
    index.set(file, index.size);
    low.set(file, index.get(file) as number);
    stack.push(file);
    onStack.add(file);
    for (const next of graph.get(file) ?? []) {
      if (!graph.has(next)) continue;
      if (!index.has(next)) {
        visit(next);
        low.set(file, Math.min(low.get(file) as number, low.get(next) as number));
      } else if (onStack.has(next)) {
        low.set(file, Math.min(low.get(file) as number, index.get(next) as number));
      }
    }
    if (low.get(file) !== index.get(file)) return;
    const component: string[] = [];
    let member: string | undefined;
    do {
      member = stack.pop() as string;
      onStack.delete(member);
      component.push(member);
    } while (member !== file);
    if (component.length > 1) found.push(component.sort());
  };
  for (const file of graph.keys()) if (!index.has(file)) visit(file);
  return found;
}

test('no import cycle under src/ has more than two files', () => {
  const graph = importGraph(sourceFiles(SRC));
  assert.ok(graph.size > 100, 'it read the source tree');
  const long = cycles(graph)
    .filter((c) => c.length > MAX_CYCLE_FILES)
    .map((c) => c.map((f) => relative(SRC, f)));
  assert.deepEqual(long, [], `import cycles of more than ${MAX_CYCLE_FILES} files:\n${long.map((c) => c.join(', ')).join('\n')}`);
});

test('the cycle finder sees a ring of three files, and a ring through one file alone is none', () => {
  const ring = new Map([
    ['a', ['b']],
    ['b', ['c']],
    ['c', ['a']],
    ['d', ['d', 'a']],
  ]);
  assert.deepEqual(cycles(ring), [['a', 'b', 'c']]);
});
