// Text from elsewhere (a remote sender, a command's stderr) shown on a terminal: control characters
// and bidi overrides could rewrite what is shown (ESC sequences, a lone CR, U+202E), and invisible
// characters hide text from the reader (a zero-width space, Unicode tags that smuggle words past a
// person to a model), so they never reach it as they are.

/**
 * Controls (C0, DEL, C1), the line and paragraph separators, the bidi marks, embeddings, overrides
 * and isolates, and the invisible ones: soft hyphen, combining grapheme joiner, Hangul fillers,
 * Mongolian vowel separator, zero-width space, word joiner and invisible operators, BOM, interlinear
 * annotation marks, and the tag characters (U+E0000–U+E007F). The zero-width (non-)joiners and the
 * variation selectors stay: emoji and several scripts are written with them.
 */
export const UNSHOWABLE =
  // biome-ignore lint/suspicious/noMisleadingCharacterClass: with the u flag the class matches code points one by one, and U+034F alone is what it must catch
  /[\u0000-\u001f\u007f-\u009f\u00ad\u034f\u061c\u115f\u1160\u180e\u200b\u200e\u200f\u2028\u2029\u202a-\u202e\u2060-\u2064\u2066-\u2069\u3164\ufeff\uffa0\ufff9-\ufffb\u{e0000}-\u{e007f}]/gu;

function escapeExcept(text: string, kept: ReadonlySet<string>): string {
  return text.replace(UNSHOWABLE, (ch) => {
    if (kept.has(ch)) return ch;
    const code = ch.codePointAt(0) ?? 0;
    if (code <= 0xff) return `\\x${code.toString(16).padStart(2, '0')}`;
    return code <= 0xffff ? `\\u${code.toString(16).padStart(4, '0')}` : `\\u{${code.toString(16)}}`;
  });
}

const TEXT_LAYOUT = new Set(['\n', '\t']);
const NOTHING_KEPT = new Set<string>();

/** `text` with every unshowable character written as a visible escape (`\x1b`, `\u202e`); newlines and tabs kept. */
export function escapeUnshowable(text: string): string {
  return escapeExcept(text, TEXT_LAYOUT);
}

/** The same for a field shown within one line (a peer's last error, a refusal reason): a newline is escaped too. */
export function escapeInLine(text: string): string {
  return escapeExcept(text, NOTHING_KEPT);
}
