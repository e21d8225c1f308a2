import { ConsoleLogger, Injectable, Logger, type LoggerService } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { LockModule, LockService, WithLock } from '../../src/index.js';

/** Every line the app logs, with its level. */
class RecordingLogger implements LoggerService {
  readonly lines: { level: string; message: string }[] = [];
  log = (message: unknown) => this.record('log', message);
  error = (message: unknown) => this.record('error', message);
  warn = (message: unknown) => this.record('warn', message);
  debug = (message: unknown) => this.record('debug', message);
  verbose = (message: unknown) => this.record('verbose', message);
  fatal = (message: unknown) => this.record('fatal', message);

  private record(level: string, message: unknown): void {
    this.lines.push({ level, message: String(message) });
  }
}

@Injectable()
class Report {
  runs = 0;

  @WithLock('job:report', { onLocked: 'skip' })
  async build(): Promise<string> {
    this.runs++;
    return 'built';
  }
}

/**
 * A scheduled job that another replica runs is skipped on every tick of every other replica:
 * its line is logged at `verbose`, the level an app leaves out to keep its log to what matters.
 */
describe('the line of a skipped @WithLock run', () => {
  let module: TestingModule;
  const logger = new RecordingLogger();

  beforeAll(async () => {
    module = await Test.createTestingModule({
      imports: [LockModule.forRoot({ store: 'memory' })],
      providers: [Report],
    })
      .setLogger(logger)
      .compile();
    await module.init();
  });

  afterAll(async () => {
    await module.close();
    Logger.overrideLogger(new ConsoleLogger());
  });

  it('is logged at verbose, and only there', async () => {
    const report = module.get(Report);
    const lock = await module.get(LockService).acquire('job:report');
    try {
      expect(await report.build()).toBeUndefined();
    } finally {
      await lock.release();
    }
    expect(report.runs).toBe(0);
    const skipped = logger.lines.filter(({ message }) => message.includes('skipped'));
    expect(skipped.map(({ level }) => level)).toEqual(['verbose']);
    expect(skipped[0].message).toMatch(/^Report\.build skipped: Lock "job:report" is held/);
  });
});
