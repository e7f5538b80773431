// node:http as CommonJS hands it out. An ES `import … from 'node:http'` builds the module's
// namespace, which reads every export, the lazy `WebSocket`, `CloseEvent` and `MessageEvent` among
// them: that loads Node's bundled fetch client (undici), about 8 MB of memory in each process, in
// every relay process though none uses it (docs/relay-operator.md "Memory"). Types still come from
// `import type … from 'node:http'`.
export const nodeHttp = process.getBuiltinModule('node:http');
