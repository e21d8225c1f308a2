import { Logger } from '@valkey/valkey-glide';

/**
 * GLIDE's own logger writes its warnings (timeouts, reconnects, NOSCRIPT) to the console, where
 * a passing fault spec's expected ones read like failures. In the all tier they go to a file of
 * the run's instead, which the GLIDE log reporter points to when a spec fails.
 */
if (process.env.GLIDE_LOG_DIR) {
  Logger.setLoggerConfig('warn', `worker-${process.env.JEST_WORKER_ID ?? '1'}`);
}
