// The layer directions the README's folder table promises, checked on every import the compiler sees
// (import-graph.ts). A rule lists which files it binds and which imports they must not make; the
// test fails on the first import that breaks one, naming the file and what it imported.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { relative } from 'node:path';
import { importGraph, SRC, sourceFiles } from './import-graph.ts';

interface LayerRule {
  rule: string;
  /** the files bound by the rule (paths relative to src/) */
  from: (file: string) => boolean;
  /** an import those files must not make */
  forbidden: (imported: string) => boolean;
}

const under =
  (folder: string) =>
  (path: string): boolean =>
    path.startsWith(`${folder}/`);
const BACKENDS = ['relay/store/sqlite', 'relay/store/postgres'];
const isBackend = (path: string): boolean => BACKENDS.some((b) => under(b)(path));

const isHostRoot = (path: string): boolean => under('host')(path) && !path.slice('host/'.length).includes('/');

/**
 * Imports from the host's lower layers up to its root that are still there: a bounce queues its
 * alert through send.ts (queueOutgoing, with the send-time size check, belongs in core/). The list
 * may only shrink.
 */
const LOWER_TO_HOST_ROOT_LEFT: ReadonlySet<string> = new Set(['host/core/bounce.ts → host/send.ts']);

export const LAYER_RULES: readonly LayerRule[] = [
  { rule: 'protocol imports nothing of ours outside protocol/', from: under('protocol'), forbidden: (i) => !under('protocol')(i) },
  {
    rule: 'the relay core never imports http/, ops/ or a store backend',
    from: under('relay/core'),
    forbidden: (i) => under('relay/http')(i) || under('relay/ops')(i) || isBackend(i) || under('relay/store/sql')(i),
  },
  {
    rule: "nothing outside relay/store/ imports a store backend or the backends' shared floor",
    from: (f) => !under('relay/store')(f),
    forbidden: (i) => isBackend(i) || under('relay/store/sql')(i),
  },
  { rule: 'the SQLite backend never imports the PostgreSQL one', from: under('relay/store/sqlite'), forbidden: under('relay/store/postgres') },
  { rule: 'the PostgreSQL backend never imports the SQLite one', from: under('relay/store/postgres'), forbidden: under('relay/store/sqlite') },
  { rule: "the backends' shared floor imports no backend", from: under('relay/store/sql'), forbidden: isBackend },
  { rule: 'the host never imports the relay', from: under('host'), forbidden: under('relay') },
  { rule: 'the relay never imports the host', from: under('relay'), forbidden: under('host') },
  { rule: "the host never imports the owner's page", from: under('host'), forbidden: under('ui') },
  { rule: "the owner's page never imports the relay", from: under('ui'), forbidden: under('relay') },
  { rule: "a transport never imports the host's root (src/host/*.ts)", from: under('host/transport'), forbidden: isHostRoot },
  { rule: "the host's relay client never imports a transport", from: under('host/relay-client'), forbidden: under('host/transport') },
  {
    rule: 'the LAN transport never imports the relay transport nor the relay client',
    from: under('host/transport/lan'),
    forbidden: (i) => under('host/transport/relay')(i) || under('host/relay-client')(i),
  },
  {
    rule: "the host's core never imports a transport nor the relay client",
    from: under('host/core'),
    forbidden: (i) => under('host/transport')(i) || under('host/relay-client')(i),
  },
  {
    rule: "the host's core and relay client never import the host's root",
    from: (f) => under('host/core')(f) || under('host/relay-client')(f),
    forbidden: isHostRoot,
  },
  {
    rule: "the host's store imports nothing of the host outside store/",
    from: under('host/store'),
    forbidden: (i) => under('host')(i) && !under('host/store')(i),
  },
];

/** Every import that breaks a rule, as "rule: file → imported". */
function breaches(graph: ReadonlyMap<string, readonly string[]>, rules: readonly LayerRule[], allowed: ReadonlySet<string> = new Set()): string[] {
  const found: string[] = [];
  for (const [file, imports] of graph) {
    const from = relative(SRC, file);
    for (const target of imports) {
      const imported = relative(SRC, target);
      for (const { rule, from: binds, forbidden } of rules) {
        const edge = `${from} → ${imported}`;
        if (binds(from) && forbidden(imported) && !allowed.has(edge)) found.push(`${rule}: ${edge}`);
      }
    }
  }
  return found;
}

test('every import of src/ keeps the layer directions of the README', () => {
  const graph = importGraph(sourceFiles(SRC));
  assert.ok(graph.size > 100, 'it read the source tree');
  const found = breaches(graph, LAYER_RULES, LOWER_TO_HOST_ROOT_LEFT);
  assert.deepEqual(found, [], `imports against a layer:\n${found.join('\n')}`);
});

test('the list of lower-layer imports left to move only shrinks: each entry is still an import', () => {
  const graph = importGraph(sourceFiles(SRC));
  const edges = new Set([...graph].flatMap(([file, imports]) => imports.map((i) => `${relative(SRC, file)} → ${relative(SRC, i)}`)));
  const stale = [...LOWER_TO_HOST_ROOT_LEFT].filter((edge) => !edges.has(edge));
  assert.deepEqual(stale, [], 'these are gone: take them off LOWER_TO_HOST_ROOT_LEFT');
});

test('the rules catch a breach of each direction', () => {
  const fake = new Map([
    [`${SRC}/protocol/a.ts`, [`${SRC}/common/x.ts`]],
    [`${SRC}/relay/core/b.ts`, [`${SRC}/relay/http/server.ts`]],
    [`${SRC}/relay/ops/c.ts`, [`${SRC}/relay/store/sqlite/items.ts`]],
    [`${SRC}/relay/store/postgres/d.ts`, [`${SRC}/relay/store/sqlite/items.ts`]],
    [`${SRC}/host/e.ts`, [`${SRC}/relay/core/push.ts`]],
    [`${SRC}/host/transport/lan/f.ts`, [`${SRC}/host/send.ts`, `${SRC}/host/store/host-store.ts`, `${SRC}/host/core/node.ts`]],
    [`${SRC}/host/relay-client/g.ts`, [`${SRC}/host/transport/relay/relay-link.ts`]],
    [`${SRC}/host/transport/lan/h.ts`, [`${SRC}/host/relay-client/session.ts`]],
    [`${SRC}/host/core/i.ts`, [`${SRC}/host/transport/row-path.ts`]],
    [`${SRC}/host/store/j.ts`, [`${SRC}/host/core/node.ts`]],
    [`${SRC}/host/core/k.ts`, [`${SRC}/host/daemon.ts`]],
  ]);
  const found = breaches(fake, LAYER_RULES);
  assert.equal(found.length, 11, found.join('\n'));
  assert.ok(found.some((f) => f.endsWith('host/transport/lan/f.ts → host/send.ts')));
  assert.ok(!found.some((f) => f.includes('lan/f.ts → host/store/') || f.includes('lan/f.ts → host/core/')), 'a transport may import the host store and core');
});
