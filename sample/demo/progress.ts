import { performance } from 'node:perf_hooks';
import { seconds } from './scenarios.js';

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/**
 * One line per step: a spinner while it runs and a mark when it ends on a terminal;
 * `label ... done (0.4 s)` when stdout is a file or a pipe.
 */
export class Progress {
  private readonly tty: boolean;
  private spinner: NodeJS.Timeout | undefined;
  private pending = '';
  private silenced = false;

  constructor(private readonly out: NodeJS.WriteStream = process.stdout) {
    this.tty = Boolean(out.isTTY);
  }

  /** Runs `work` as a step called `label`. */
  step = async <T>(label: string, work: () => Promise<T>): Promise<T> => {
    const startedAt = performance.now();
    this.begin(label);
    try {
      const result = await work();
      this.end(label, true, performance.now() - startedAt);
      return result;
    } catch (error) {
      this.end(label, false, performance.now() - startedAt);
      throw error;
    }
  };

  /** Ends the open step's line and prints nothing more: the demo was interrupted. */
  interrupt(): void {
    this.stopSpinner();
    if (this.pending && !this.silenced) this.out.write(this.tty ? '\n' : 'interrupted\n');
    this.pending = '';
    this.silenced = true;
  }

  private begin(label: string): void {
    if (this.silenced) return;
    this.pending = label;
    if (!this.tty) {
      this.out.write(`  ${label} ... `);
      return;
    }
    let frame = 0;
    const draw = () => this.out.write(`\r\x1b[2K  ${FRAMES[frame++ % FRAMES.length]} ${label}`);
    draw();
    this.spinner = setInterval(draw, 80);
    this.spinner.unref();
  }

  private end(label: string, ok: boolean, ms: number): void {
    if (this.silenced) return;
    this.stopSpinner();
    this.pending = '';
    const took = `(${seconds(Math.round(ms / 10) * 10)})`;
    if (this.tty) this.out.write(`\r\x1b[2K  ${ok ? '✔' : '✘'} ${label} ${took}\n`);
    else this.out.write(`${ok ? 'done' : 'failed'} ${took}\n`);
  }

  private stopSpinner(): void {
    clearInterval(this.spinner);
    this.spinner = undefined;
  }
}
