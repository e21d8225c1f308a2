import { endOf } from '../../src/store/zookeeper/throttle-windows.js';

describe("a ZooKeeper throttle window's node data", () => {
  const writtenAt = 1_700_000_000_000;

  it('ends what is left of holdFor after the server wrote the node', () => {
    expect(endOf(Buffer.from('{"keepFor":1500}'), writtenAt)).toBe(writtenAt + 1_500);
    expect(endOf(Buffer.from('{"keepFor":0}'), writtenAt)).toBe(writtenAt);
  });

  it('reads a window written as the server time it ends (earlier versions) as such', () => {
    expect(endOf(Buffer.from(String(writtenAt + 900)), writtenAt + 100)).toBe(writtenAt + 900);
  });

  it('reads anything else as a window that has ended', () => {
    for (const data of ['', 'soon', '{"keepFor":-5}', '{"until":5}', '12.5']) {
      expect(endOf(Buffer.from(data), writtenAt)).toBe(0);
    }
  });
});
