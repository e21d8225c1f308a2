import type { LoggerService } from '@nestjs/common';

/** One line an app logged, with its level. */
export interface LogLine {
  level: string;
  message: string;
}

/** A Nest logger that keeps every line it is given, for a spec to read what the app said. */
export function recordingLogger(): { lines: LogLine[]; logger: LoggerService } {
  const lines: LogLine[] = [];
  const record = (level: string) => (message: unknown) =>
    void lines.push({ level, message: String(message) });
  const logger: LoggerService = {
    log: record('log'),
    error: record('error'),
    warn: record('warn'),
    debug: record('debug'),
    verbose: record('verbose'),
  };
  return { lines, logger };
}
