/**
 * The protected resource of the safety checker: a counter that lives in the checker's own
 * process (NOT in the lock's Redis, which the nemesis restarts), with a fencing guard.
 *
 * The guard accepts an operation only if its fencing token is at least the highest token any
 * accepted operation has presented, and records it. Reads are fenced too by default: a
 * read-modify-write is protected only if the resource sees the token at the read. With a guard
 * on writes alone, a stale holder that read before a newer holder and writes first gets its
 * write accepted, and the newer holder, which read the same value, then overwrites it: a lost
 * update that no fencing token stops (`fenceReads: false` runs with a write-only guard).
 *
 * Every operation is appended to `log` with a global sequence number, the order in which this
 * single process handled it: the checker's analysis runs on that order, not on clocks.
 */
export class FencedCounter {
  /** @param {{ fenceReads?: boolean }} [options] */
  constructor(options = {}) {
    this.fenceReads = options.fenceReads ?? true;
    this.value = 0;
    this.highestToken = 0;
    /** @type {{ op: 'read' | 'write', worker: number, token: number, accepted: boolean, value: number, seq: number, at: number }[]} */
    this.log = [];
  }

  /**
   * @param {number} worker
   * @param {number} token
   * @param {number} seq
   * @returns {{ ok: boolean, value: number }}
   */
  read(worker, token, seq) {
    const accepted = !this.fenceReads || token >= this.highestToken;
    if (accepted && this.fenceReads) this.highestToken = token;
    this.log.push({ op: 'read', worker, token, accepted, value: this.value, seq, at: Date.now() });
    return { ok: accepted, value: this.value };
  }

  /**
   * @param {number} worker
   * @param {number} token
   * @param {number} value
   * @param {number} seq
   * @returns {boolean} whether the write was accepted
   */
  write(worker, token, value, seq) {
    const accepted = token >= this.highestToken;
    if (accepted) {
      this.highestToken = token;
      this.value = value;
    }
    this.log.push({ op: 'write', worker, token, accepted, value, seq, at: Date.now() });
    return accepted;
  }
}
