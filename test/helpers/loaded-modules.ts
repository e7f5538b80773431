// Preloaded (`--import`) into a process under test: records every module it loads (ES modules and
// CommonJS, ours and node_modules) and writes their URLs, one a line, to
// $AGENTMBX_LOADED_MODULES_DIR/<pid>.txt when the process exits.
import { registerHooks } from 'node:module';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

const dir = process.env['AGENTMBX_LOADED_MODULES_DIR'];
const loaded = new Set<string>();
registerHooks({
  load(url, context, nextLoad) {
    loaded.add(url);
    return nextLoad(url, context);
  },
});
process.on('exit', () => {
  if (dir !== undefined) writeFileSync(join(dir, `${process.pid}.txt`), [...loaded].join('\n'));
});
