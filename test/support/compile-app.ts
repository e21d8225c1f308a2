import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Where the app's one file seems to live: inside the package, as its own tests would be. */
const APP = join(ROOT, 'test', '.compiled-app', 'app.mts');

/**
 * An app's settings at their strictest where published types are concerned: every library's
 * declarations are checked (`skipLibCheck: false`), as an app that sets it checks ours.
 */
const OPTIONS: ts.CompilerOptions = {
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  lib: ['lib.es2022.d.ts'],
  types: ['node'],
  strict: true,
  exactOptionalPropertyTypes: true,
  experimentalDecorators: true,
  emitDecoratorMetadata: true,
  skipLibCheck: false,
  noEmit: true,
};

/** `@types/<name>` of a package: `@types/pg`, `@types/nestjs__terminus`. */
function typesPackageOf(name: string): string {
  return `@types/${name.startsWith('@') ? name.slice(1).replace('/', '__') : name}`;
}

/** A test of a path: does it lie inside one of the packages (or their `@types`)? */
function insideAny(packages: readonly string[]): (path: string) => boolean {
  const names = packages.flatMap((name) => [name, typesPackageOf(name)]);
  const escaped = names.map((name) => name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  const inside = new RegExp(`/node_modules/(${escaped.join('|')})(/|$)`);
  return (path) => inside.test(path.replaceAll('\\', '/'));
}

/**
 * Type-checks `source` as the one file of an app that imports the library by its name (the
 * built `dist/index.d.ts`, through the package's `exports`) in an install where none of
 * `hidden` is (nor its `@types`): resolving one, from the app, the library or any other
 * package, finds nothing, as it would there. Resolves with every error, as `file: message`.
 */
export function compileApp(source: string, hidden: readonly string[]): string[] {
  const isHidden = insideAny(hidden);
  const host = ts.createCompilerHost(OPTIONS);
  const disk = {
    fileExists: host.fileExists.bind(host),
    readFile: host.readFile.bind(host),
    getSourceFile: host.getSourceFile.bind(host),
    directoryExists: host.directoryExists?.bind(host),
  };
  host.fileExists = (path) => path === APP || (!isHidden(path) && disk.fileExists(path));
  host.readFile = (path) =>
    path === APP ? source : isHidden(path) ? undefined : disk.readFile(path);
  host.directoryExists = (path) => !isHidden(path) && (disk.directoryExists?.(path) ?? true);
  host.getSourceFile = (path, language, ...rest) => {
    if (path === APP) return ts.createSourceFile(path, source, language, true);
    return isHidden(path) ? undefined : disk.getSourceFile(path, language, ...rest);
  };
  const program = ts.createProgram([APP], OPTIONS, host);
  return ts.getPreEmitDiagnostics(program).map((diagnostic) => {
    const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n');
    const file = diagnostic.file ? diagnostic.file.fileName.replace(`${ROOT}/`, '') : '';
    return `${file}: ${message}`;
  });
}
