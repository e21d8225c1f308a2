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
 * Under a semaphore (`kind: 'semaphore'`), up to `limit` holders work at once: no fencing token
 * can tell a stale permit from a current one, so nothing is fenced, and a write adds one to the
 * counter (each holder counts its section) instead of setting the value. Under a read-write lock
 * (`kind: 'rw'`), a reader's read is refused when a writer with a newer token has come (that
 * writer could only get in once the reader had lost its share), and a writer is refused when a
 * holder of either kind with a newer token has come; readers' tokens do not fence one another
 * (they come in together, in any order), and a reader's write only marks where its section
 * ends (a `leave`, which changes nothing).
 *
 * Every operation is appended to `log` with a global sequence number, the order in which this
 * single process handled it: the checker's analysis runs on that order, not on clocks.
 */
export class FencedCounter {
  /** @param {{ fenceReads?: boolean, kind?: 'mutex' | 'semaphore' | 'rw' }} [options] */
  constructor(options = {}) {
    this.fenceReads = options.fenceReads ?? true;
    this.kind = options.kind ?? 'mutex';
    this.value = 0;
    this.highestToken = 0;
    /** Under a read-write lock: the highest token a reader presented. */
    this.highestReader = 0;
    /** @type {{ op: 'read' | 'write' | 'leave', worker: number, token: number, accepted: boolean, value: number, seq: number, at: number }[]} */
    this.log = [];
  }

  /**
   * @param {number} worker
   * @param {number} token
   * @param {number} seq
   * @param {'read' | 'write'} [share] a read-write lock's holder: a reader or a writer
   * @returns {{ ok: boolean, value: number }}
   */
  read(worker, token, seq, share) {
    const fenced = this.fenceReads && this.kind !== 'semaphore';
    const floor = share === 'read' ? this.highestToken : this.writerFloor();
    const accepted = !fenced || token >= floor;
    if (accepted && fenced) {
      if (share === 'read') this.highestReader = Math.max(this.highestReader, token);
      else this.highestToken = token;
    }
    this.log.push({ op: 'read', worker, token, accepted, value: this.value, seq, at: Date.now() });
    return { ok: accepted, value: this.value };
  }

  /**
   * @param {number} worker
   * @param {number} token
   * @param {number} value
   * @param {number} seq
   * @param {'read' | 'write'} [share] a read-write lock's holder: a reader or a writer
   * @returns {boolean} whether the write was accepted (a reader's: false, it writes nothing)
   */
  write(worker, token, value, seq, share) {
    if (share === 'read') {
      this.log.push({
        op: 'leave',
        worker,
        token,
        accepted: false,
        value: this.value,
        seq,
        at: Date.now(),
      });
      return false;
    }
    if (this.kind === 'semaphore') {
      this.value++;
      this.log.push({
        op: 'write',
        worker,
        token,
        accepted: true,
        value: this.value,
        seq,
        at: Date.now(),
      });
      return true;
    }
    const accepted = token >= this.writerFloor();
    if (accepted) {
      this.highestToken = token;
      this.value = value;
    }
    this.log.push({ op: 'write', worker, token, accepted, value, seq, at: Date.now() });
    return accepted;
  }

  /** The lowest token a writer may present: no holder with a newer one may have come. */
  writerFloor() {
    return Math.max(this.highestToken, this.highestReader);
  }
}
