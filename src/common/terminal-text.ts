// Text from elsewhere (a remote sender, a command's stderr) shown on a terminal: control characters
// and bidi overrides could rewrite what is shown (ESC sequences, a lone CR, U+202E), so they never
// reach it as they are.

/** Controls (C0, DEL, C1), the line and paragraph separators, and the bidi embeddings, overrides and isolates. */
export const UNSHOWABLE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

function escapeExcept(text: string, kept: ReadonlySet<string>): string {
  return text.replace(UNSHOWABLE, (ch) => {
    if (kept.has(ch)) return ch;
    const code = ch.charCodeAt(0);
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
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
