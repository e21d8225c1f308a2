import type { World } from './world.js';

/**
 * Checked in a quiet run in fair mode: a waiter whose turn notice reached its process takes the
 * turn up (an attempt of its reaches the store) or has left the line (it gave up) within two
 * ways of a message: an attempt of its out when the notice came has its answer back within
 * one, and the attempt it then sends reaches the store within another. A wake-up lost on its
 * way to the caller (one that came while an attempt of its was out, say) would keep the whole
 * line waiting until the reservation lapses, and cost the caller its place.
 */
export class TurnsTaken {
  /** The waiters whose turn the store announced, and that have not taken it up since. */
  private readonly owed = new Map<string, string>();

  /**
   * @param within how long a turn may wait to be taken up once its notice came, in ms
   * @param fail reports a turn left untaken
   */
  constructor(
    private readonly world: World,
    private readonly within: number,
    private readonly fail: (token: string, key: string) => void,
  ) {}

  /** The store reserved `key` for the waiter `token`, and announces it. */
  announced(key: string, token: string): void {
    this.owed.set(token, key);
  }

  /** The notice of `token`'s turn reached its process, which listened. */
  told(token: string): void {
    const key = this.owed.get(token);
    if (key === undefined) return;
    this.world.after(this.within, () => {
      if (this.owed.get(token) !== key) return;
      this.owed.delete(token);
      this.fail(token, key);
    });
  }

  /** An attempt of `token`'s reached the store, or `token` left the line. */
  heardFrom(token: string): void {
    this.owed.delete(token);
  }
}
