/**
 * Module hooks that let Node run the repository's TypeScript as it is (`npm run simulate`):
 * `.ts` files are transpiled one by one with the project's compiler options (no type check),
 * and a relative `./x.js` import finds `./x.ts` when there is no `./x.js`.
 */
import { readFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const compilerOptions = {
  module: ts.ModuleKind.ESNext,
  target: ts.ScriptTarget.ES2022,
  experimentalDecorators: true,
  emitDecoratorMetadata: true,
  sourceMap: false,
  inlineSourceMap: true,
};

/**
 * @param {string} specifier
 * @param {import('node:module').ResolveHookContext} context
 * @param {(specifier: string, context: import('node:module').ResolveHookContext) => Promise<import('node:module').ResolveFnOutput>} next
 * @returns {Promise<import('node:module').ResolveFnOutput>}
 */
export async function resolve(specifier, context, next) {
  const { parentURL } = context;
  if (parentURL?.startsWith('file:') && /^\.{1,2}\/.*\.js$/.test(specifier)) {
    const candidate = new URL(specifier.replace(/\.js$/, '.ts'), parentURL);
    const compiled = fileURLToPath(new URL(specifier, parentURL));
    if (!existsSync(compiled) && existsSync(fileURLToPath(candidate))) {
      return { url: candidate.href, format: 'module', shortCircuit: true };
    }
  }
  return next(specifier, context);
}

/**
 * @param {string} url
 * @param {import('node:module').LoadHookContext} context
 * @param {(url: string, context: import('node:module').LoadHookContext) => Promise<import('node:module').LoadFnOutput>} next
 * @returns {Promise<import('node:module').LoadFnOutput>}
 */
export async function load(url, context, next) {
  if (!url.endsWith('.ts')) return next(url, context);
  const source = await readFile(fileURLToPath(url), 'utf8');
  const { outputText } = ts.transpileModule(source, { compilerOptions, fileName: url });
  return { format: 'module', source: outputText, shortCircuit: true };
}
