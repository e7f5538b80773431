// The bench's printed table: each figure, what it is measured against, the ratio, and the issue's
// target with whether it held.
export interface Target {
  label: string;
  ok: boolean;
  ratio: number;
}

/** What one item cost in CPU during a phase, on both sides of the loopback. */
export interface CpuPerItem {
  /** all the relay's threads */
  relayMs: number;
  /** the relay's event loop alone: at 1,000 / this items/s it would be busy all the time */
  relayMainThreadMs: number;
  loadGeneratorMs: number;
  itemsPerSecond: number;
}

const WIDTH = 74;

function number(value: number): string {
  if (!Number.isFinite(value)) return 'n/a';
  return value >= 100 ? Math.round(value).toLocaleString('en-US') : value.toFixed(2);
}

export class Table {
  readonly #lines: string[] = [];
  readonly #targets: Array<{ figure: string } & Target> = [];

  section(title: string): void {
    this.#lines.push('', `== ${title}`);
  }

  note(text: string): void {
    this.#lines.push(`   ${text}`);
  }

  /** a figure, its ratio to `against` (when given), and the issue's target for it (when it has one) */
  row(figure: string, value: number, against: number | null, againstLabel: string, target?: Target): void {
    const ratio = against === null ? '' : `${(value / against).toFixed(2)} ${againstLabel}`;
    const goal = target === undefined ? '' : `  target ${target.label}: ${target.ok ? 'MET' : 'MISSED'}`;
    if (target !== undefined) this.#targets.push({ figure, ...target });
    this.#lines.push(`${figure.padEnd(WIDTH)} ${number(value).padStart(10)}   ${ratio}${goal}`);
  }

  latency(figure: string, p50: number, p99: number, commitMs: number): void {
    this.#lines.push(
      `${figure.padEnd(WIDTH)} ${`${p50.toFixed(2)} / ${p99.toFixed(2)}`.padStart(10)}   ${(p50 / commitMs).toFixed(2)} / ${(p99 / commitMs).toFixed(2)} × one 1-row commit`,
    );
  }

  /**
   * The relay's CPU per item (all threads, and its event loop alone, with how busy that loop was),
   * the load generator's, and the upper bound at that cost: the rate at which the machine's cores
   * would all be busy (the relay and its load share them). No change to the commit path can take a
   * phase past it; only less CPU per item can.
   */
  cpu(figure: string, cost: CpuPerItem, cores: number): void {
    const coresBound = (cores * 1000) / (cost.relayMs + cost.loadGeneratorMs);
    const loopBusy = (cost.itemsPerSecond * cost.relayMainThreadMs) / 1000;
    this.#lines.push(
      `${figure.padEnd(WIDTH)} ${cost.relayMs.toFixed(3).padStart(10)}   (event loop ${cost.relayMainThreadMs.toFixed(3)}, busy ${(100 * loopBusy).toFixed(0)}%) ` +
        `+ ${cost.loadGeneratorMs.toFixed(3)} load generator: ${cores} cores busy at ${number(coresBound)}/s (measured ${number(cost.itemsPerSecond)}/s)`,
    );
  }

  targets(): Array<{ figure: string } & Target> {
    return [...this.#targets];
  }

  render(): string {
    return `${this.#lines.join('\n')}\n`;
  }
}
