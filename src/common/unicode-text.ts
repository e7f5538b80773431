// Whether bytes or a JS string are Unicode text exactly as given, and where they stop being so:
// a body is carried byte for byte or refused, never repaired with U+FFFD.
import { isUtf8 } from 'node:buffer';

/** The offset of the first byte that does not start a valid UTF-8 sequence (RFC 3629), or null when all is valid. */
export function firstInvalidUtf8Offset(bytes: Uint8Array): number | null {
  if (isUtf8(bytes)) return null;
  let at = 0;
  while (at < bytes.length) {
    const length = utf8SequenceLength(bytes, at);
    if (length === 0) return at;
    at += length;
  }
  return null;
}

/** The length of the valid UTF-8 sequence at `at`, or 0 when none starts there (overlong, surrogate, > U+10FFFF, cut). */
function utf8SequenceLength(bytes: Uint8Array, at: number): number {
  const lead = bytes[at] ?? 0;
  if (lead < 0x80) return 1;
  let length: number;
  // the allowed range of the second byte narrows for E0, ED, F0 and F4 (no overlongs, no surrogates, nothing past U+10FFFF)
  let low = 0x80;
  let high = 0xbf;
  if (lead >= 0xc2 && lead <= 0xdf) length = 2;
  else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3;
    if (lead === 0xe0) low = 0xa0;
    if (lead === 0xed) high = 0x9f;
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4;
    if (lead === 0xf0) low = 0x90;
    if (lead === 0xf4) high = 0x8f;
  } else return 0;
  for (let k = 1; k < length; k++) {
    const next = bytes[at + k];
    if (next === undefined || next < (k === 1 ? low : 0x80) || next > (k === 1 ? high : 0xbf)) return 0;
  }
  return length;
}

/** The index (in UTF-16 code units) of the first lone surrogate in `text`, or null when it is well-formed. */
export function firstLoneSurrogateIndex(text: string): number | null {
  if (text.isWellFormed()) return null;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i++;
      else return i;
    } else if (unit >= 0xdc00 && unit <= 0xdfff) return i;
  }
  return null;
}
