import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';

/**
 * The TypeScript snippets of README.md and docs/*.md, type-checked against the library's
 * source the way a reader would paste them into an app.
 *
 * A snippet is checked as a module of its own. It may leave out the imports a reader already
 * has (the library, Nest, and the few packages the recipes use): see {@link IMPORTS}. The last
 * line before the fence, if it is an HTML comment (invisible on GitHub and npm), says how to
 * check a fragment:
 *
 * - `<!-- snippet: class-body -->`: members of a provider class, with `this.locks` a
 *   `LockService` and any other `this.<member>` one of the app's own collaborators;
 * - `<!-- snippet: skip — why -->`: not checked; say why (keep these rare).
 */
export interface DocSnippet {
  /** Where the fence opens, as `file:line` (1-based), relative to the repository. */
  readonly where: string;
  readonly code: string;
  readonly mode: 'module' | 'class-body' | 'skip';
}

const FENCE = /^```(ts|typescript)\s*$/;
const MARKER = /^<!--\s*snippet:\s*(class-body|skip)\b.*-->\s*$/;

/** The files whose snippets are checked: the README and every page of docs/. */
export function documentationFiles(root: string): string[] {
  const docs = readdirSync(join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => join(root, 'docs', name));
  return [join(root, 'README.md'), ...docs.sort()];
}

/** Every ```ts block of one Markdown file, with the mode its marker asks for. */
export function extractSnippets(root: string, file: string): DocSnippet[] {
  const lines = readFileSync(file, 'utf8').split('\n');
  const snippets: DocSnippet[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (!FENCE.test(lines[i])) continue;
    const end = lines.findIndex((line, j) => j > i && line.startsWith('```'));
    if (end === -1) throw new Error(`${relative(root, file)}:${i + 1}: the fence never closes`);
    const before = lines.slice(0, i).filter((line) => line.trim() !== '');
    const marker = MARKER.exec(before.at(-1) ?? '');
    snippets.push({
      where: `${relative(root, file)}:${i + 1}`,
      code: lines.slice(i + 1, end).join('\n'),
      mode: (marker?.[1] as DocSnippet['mode'] | undefined) ?? 'module',
    });
    i = end;
  }
  return snippets;
}

/**
 * The names a snippet may use without importing them, by package: each snippet is checked with
 * an import of every one it does not declare itself, all on one line before its code.
 */
const IMPORTS: Record<string, string[]> = {
  'nestjs-redis-lock': [
    'LockModule',
    'LockService',
    'WithLock',
    'MemoryLockSpace',
    'LockExceptionFilter',
    'LockError',
    'LockNotAcquiredError',
    'LockLostError',
    'LockOptionsError',
    'type Lock',
    'type LockHandle',
    'type LockModuleOptions',
    'type LockOptionsFactory',
    'Leader',
    'LeaderService',
    'type Leadership',
    'fenceTransaction',
    'postgresLockSchema',
  ],
  '@nestjs/common': [
    'Injectable',
    'Module',
    'Controller',
    'Get',
    'Post',
    'Param',
    'Res',
    'Sse',
    'UseFilters',
    'type MessageEvent',
  ],
  '@nestjs/core': ['NestFactory'],
  '@nestjs/testing': ['Test', 'type TestingModule'],
  '@nestjs/schedule': ['Cron', 'CronExpression'],
  bullmq: ['Job', 'DelayedError'],
  rxjs: ['Observable', 'interval', 'map'],
  pg: ['Pool'],
  // Express's Response extends Node's ServerResponse; @types/express is not installed here.
  'node:http': ['type ServerResponse as Response'],
};

/** What the imports cannot give: the app's own parts, and @nestjs/config (not installed). */
const PRELUDE = `
declare class OrdersRepository {
  [member: string]: any;
}
declare class PaymentsGateway {
  [member: string]: any;
}
declare class ReportService {}
declare class OutboxRepository {
  [member: string]: any;
}
declare class AppModule {}
declare class ConfigModule {}
declare class ConfigService {
  getOrThrow<T = string>(key: string): T;
}
/** The provider a class-body snippet's members live in: the library's service, and the app's parts. */
declare class SnippetProvider {
  protected readonly locks: import('nestjs-redis-lock').LockService;
  [collaborator: string]: any;
}
`;

/** The names a snippet declares at its top level (imports included). */
function declaredNames(code: string): Set<string> {
  const file = ts.createSourceFile('snippet.ts', code, ts.ScriptTarget.ES2022);
  const names = new Set<string>();
  for (const statement of file.statements) {
    if (ts.isImportDeclaration(statement)) {
      const clause = statement.importClause;
      if (clause?.name) names.add(clause.name.text);
      const bindings = clause?.namedBindings;
      if (bindings && ts.isNamedImports(bindings)) {
        for (const element of bindings.elements) names.add(element.name.text);
      } else if (bindings) names.add(bindings.name.text);
    } else if (ts.isVariableStatement(statement)) {
      for (const { name } of statement.declarationList.declarations) {
        if (ts.isIdentifier(name)) names.add(name.text);
      }
    } else if (
      'name' in statement &&
      statement.name &&
      ts.isIdentifier(statement.name as ts.Node)
    ) {
      names.add((statement.name as ts.Identifier).text);
    }
  }
  return names;
}

/** One line importing every name of {@link IMPORTS} that the snippet does not declare. */
function importLine(code: string): string {
  const declared = declaredNames(code);
  const local = (spec: string) => spec.split(' ').at(-1) ?? spec;
  return Object.entries(IMPORTS)
    .map(([pkg, specs]) => ({ pkg, specs: specs.filter((spec) => !declared.has(local(spec))) }))
    .filter(({ specs }) => specs.length > 0)
    .map(({ pkg, specs }) => `import { ${specs.join(', ')} } from '${pkg}';`)
    .join(' ');
}

/** The lines a class-body snippet is put after: the class that holds its members. */
const CLASS_HEAD = '@Injectable()\nclass Snippet extends SnippetProvider {\n';

/** The source a snippet is checked as: itself, or its members inside a provider class. */
function sourceOf(snippet: DocSnippet): string {
  const body = snippet.mode === 'class-body' ? `${CLASS_HEAD}${snippet.code}\n}\n` : snippet.code;
  return `${importLine(snippet.code)}\n${body}\nexport {};\n`;
}

/** A diagnostic, placed at its line of the Markdown file. */
function format(diagnostic: ts.Diagnostic, snippet?: DocSnippet): string {
  const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n');
  if (!snippet || !diagnostic.file || diagnostic.start === undefined) return message;
  const { line } = diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start);
  const head = 1 + (snippet.mode === 'class-body' ? CLASS_HEAD.split('\n').length - 1 : 0);
  const [file, fence] = snippet.where.split(':');
  return `${file}:${Number(fence) + line + 1 - head}: ${message}`;
}

/**
 * Type-checks the snippets in one program, against the library's source (`nestjs-redis-lock`
 * maps to src/index.ts through tsconfig.json's `paths`), and returns each one's errors.
 */
export function checkSnippets(root: string, snippets: DocSnippet[]): Map<string, string[]> {
  const config = ts.getParsedCommandLineOfConfigFile(
    join(root, 'tsconfig.json'),
    {},
    { ...ts.sys, onUnRecoverableConfigFileDiagnostic: (d) => fail(d) },
  );
  if (!config) throw new Error('tsconfig.json could not be read');
  const options: ts.CompilerOptions = {
    ...config.options,
    noEmit: true,
    noUnusedLocals: false,
    noUnusedParameters: false,
    allowJs: false,
    checkJs: false,
  };
  const dir = join(root, 'test', '.doc-snippets');
  const files = new Map<string, string>([[join(dir, 'prelude.d.ts'), PRELUDE]]);
  const names = new Map<string, DocSnippet>();
  snippets.forEach((snippet, i) => {
    const name = join(dir, `snippet-${i}.mts`);
    files.set(name, sourceOf(snippet));
    names.set(name, snippet);
  });
  const host = ts.createCompilerHost(options);
  const disk = {
    getSourceFile: host.getSourceFile.bind(host),
    fileExists: host.fileExists.bind(host),
    readFile: host.readFile.bind(host),
  };
  host.fileExists = (name) => files.has(name) || disk.fileExists(name);
  host.readFile = (name) => files.get(name) ?? disk.readFile(name);
  host.getSourceFile = (name, language, ...rest) => {
    const text = files.get(name);
    if (text === undefined) return disk.getSourceFile(name, language, ...rest);
    return ts.createSourceFile(name, text, language, true);
  };
  const program = ts.createProgram([...files.keys()], options, host);
  const errors = new Map<string, string[]>();
  for (const [name, snippet] of names) {
    const file = program.getSourceFile(name);
    const diagnostics = [
      ...program.getSyntacticDiagnostics(file),
      ...program.getSemanticDiagnostics(file),
    ];
    errors.set(
      snippet.where,
      diagnostics.map((diagnostic) => format(diagnostic, snippet)),
    );
  }
  const prelude = program.getSemanticDiagnostics(program.getSourceFile(join(dir, 'prelude.d.ts')));
  if (prelude.length > 0) {
    throw new Error(`the prelude: ${prelude.map((d) => format(d)).join('\n')}`);
  }
  return errors;
}

function fail(diagnostic: ts.Diagnostic): never {
  throw new Error(format(diagnostic));
}
