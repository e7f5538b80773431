// pg's own conversion of a parameter value to what goes on the wire (pg/lib/utils.js, untyped):
// sql.ts sends its statements in batches of its own and converts values as pg's queries do.
declare module 'pg/lib/utils.js' {
  const utils: { prepareValue(value: unknown): unknown };
  export default utils;
}
