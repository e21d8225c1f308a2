import { throttledWarning } from '../../src/engine/throttled-warning.js';

describe('a throttled warning', () => {
  it('goes out at most once per interval, and tells how many it stands for', () => {
    const lines: string[] = [];
    let now = 0;
    const warn = throttledWarning(
      (line) => lines.push(line),
      1_000,
      () => now,
    );
    for (const at of [0, 10, 500, 999, 1_000, 1_500, 2_100, 5_000]) {
      now = at;
      warn(`failed at ${at}`);
    }
    expect(lines).toEqual([
      'failed at 0',
      'failed at 1000 (and 3 more like it before)',
      'failed at 2100 (and 1 more like it before)',
      'failed at 5000',
    ]);
  });
});
