// An answer the core has already written as JSON bytes; the HTTP face sends it as it is.
export class EncodedJson {
  readonly bytes: Buffer;
  constructor(bytes: Buffer) {
    this.bytes = bytes;
  }
}
