// HTML built so that nothing interpolated can become markup: every value put in an `html`
// template is escaped (and its control and bidi characters shown as the CLI shows them,
// common/terminal-text.ts) unless it is itself built by `html` or `multiline`.
import { escapeInLine, escapeUnshowable } from '../common/terminal-text.ts';

export class SafeHtml {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
}

const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => ENTITIES[ch] ?? ch);
}

type Part = SafeHtml | string | number | boolean | null | undefined | readonly Part[];

function render(value: Part): string {
  if (value instanceof SafeHtml) return value.text;
  if (Array.isArray(value)) return value.map((v: Part) => render(v)).join('');
  if (value === null || value === undefined || value === false) return '';
  // one line: a newline, CR, ESC or bidi override is shown escaped (\n, \u202e), then HTML-escaped
  return escapeHtml(escapeInLine(String(value)));
}

/** A template whose every interpolation is escaped text, unless it is SafeHtml (or a list of them). */
export function html(strings: TemplateStringsArray, ...values: Part[]): SafeHtml {
  let out = strings[0] ?? '';
  values.forEach((value, i) => {
    out += render(value) + (strings[i + 1] ?? '');
  });
  return new SafeHtml(out);
}

/** Text of many lines (a body): newlines and tabs kept, other controls and bidi characters escaped. */
export function multiline(text: string): SafeHtml {
  return new SafeHtml(escapeHtml(escapeUnshowable(text)));
}

/**
 * A hidden form field's value, which must come back exactly as stored (a thread id that holds a
 * bidi override is still that thread): HTML-escaped so it cannot become markup, its other
 * characters kept. Never for text that is shown.
 */
export function formValue(text: string): SafeHtml {
  return new SafeHtml(escapeHtml(text));
}
