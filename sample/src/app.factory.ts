import type { LogLevel } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { AppModule, type AppOptions } from './app.module.js';

/**
 * Creates the sample app on Express, ready to `listen`. Closing it drops open connections
 * rather than waiting for a slow edit to finish; the edit then stops, as its lock is given up.
 */
export function createApp(
  options: AppOptions,
  logLevels: LogLevel[] | false = ['log', 'warn', 'error'],
): Promise<NestExpressApplication> {
  return NestFactory.create<NestExpressApplication>(AppModule.forRoot(options), {
    logger: logLevels,
    forceCloseConnections: true,
  });
}
