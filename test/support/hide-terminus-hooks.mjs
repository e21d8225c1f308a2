/**
 * Module resolution hooks (registered by hide-terminus.mjs): `@nestjs/terminus` cannot be found.
 * @param {string} specifier
 * @param {unknown} context
 * @param {(specifier: string, context: unknown) => Promise<unknown>} next
 */
export async function resolve(specifier, context, next) {
  if (specifier === '@nestjs/terminus' || specifier.startsWith('@nestjs/terminus/')) {
    throw Object.assign(new Error(`Cannot find package '${specifier}'`), {
      code: 'ERR_MODULE_NOT_FOUND',
    });
  }
  return next(specifier, context);
}
