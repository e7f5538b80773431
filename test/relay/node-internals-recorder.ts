// Preloaded (`--import`) into a relay process by serve-modules.test.ts beside helpers/loaded-modules.ts:
// writes the Node internals the process loaded (process.moduleLoadList, which module hooks do not
// see) to $AGENTMBX_NODE_INTERNALS_DIR/<pid>.txt when it exits.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

const dir = process.env['AGENTMBX_NODE_INTERNALS_DIR'];
// undocumented but long-standing: "NativeModule internal/deps/undici/undici" and the like
const { moduleLoadList } = process as NodeJS.Process & { moduleLoadList: string[] };
process.on('exit', () => {
  if (dir !== undefined) writeFileSync(join(dir, `${process.pid}.txt`), moduleLoadList.join('\n'));
});
