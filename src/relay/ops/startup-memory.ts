// A relay process lets go of the memory its start left behind, once it serves. Loading and compiling
// its modules grows V8's young generation to several MiB and leaves garbage in the old one; an idle
// relay runs no collection that would give those pages back, so every process of a group kept them
// resident (about 8 MiB each: docs/relay-operator.md "Memory"). One full collection that reduces the
// heap's footprint (V8's "last resort" one: it also shrinks the young generation to its minimum)
// returns them; under load the young generation grows again up to --max-semi-space-size.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

type GcFunction = (options: { type: 'major'; execution: 'sync'; flavor: 'last-resort' }) => void;

export function releaseStartupMemory(): void {
  // V8's gc() then exists in contexts created from now on, as in this one only: the relay's own global is unchanged
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as GcFunction;
  gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
}
