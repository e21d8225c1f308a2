/**
 * Preloaded (`node --import`) into a child process to play an app installed without
 * `@nestjs/terminus`: importing it fails as it would there (see hide-terminus-hooks.mjs).
 */
import { register } from 'node:module';

register(new URL('./hide-terminus-hooks.mjs', import.meta.url));
