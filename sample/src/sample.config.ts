/** How the sample is configured, from the environment. */
export interface SampleConfig {
  port: number;
  /** Interface to listen on; all of them when unset. */
  host?: string;
  /** Where locks and data live; in this process when unset. */
  redisUrl?: string;
}

/**
 * Reads `PORT` (default 3000), `HOST` and `REDIS_URL`; empty values count as unset.
 * @throws Error for a `PORT` that is not a port number
 */
export function configFromEnv(env: NodeJS.ProcessEnv = process.env): SampleConfig {
  const port = Number(env.PORT || 3000);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    throw new Error(`PORT must be a port number, got "${env.PORT}"`);
  }
  return { port, host: env.HOST || undefined, redisUrl: env.REDIS_URL || undefined };
}

/** A Redis URL fit for a log line: any password replaced by `***`. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return '(unparsable URL)';
  }
}
