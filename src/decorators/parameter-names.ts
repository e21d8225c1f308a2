/**
 * Reads a function's parameter names from its source text. Minifiers rename parameters, which
 * is why templates can also address parameters by position (`<0>`).
 */
export function parameterNames(fn: (...args: never[]) => unknown): {
  names: (string | undefined)[];
  hasRest: boolean;
} {
  const source = Function.prototype.toString.call(fn);
  const open = source.indexOf('(');
  if (open < 0) return { names: [], hasRest: false };
  const params: string[] = [];
  let depth = 0;
  let current = '';
  let quote: string | undefined;
  for (let i = open + 1; i < source.length; i++) {
    const char = source[i];
    if (quote) {
      current += char;
      if (char === '\\') current += source[++i];
      else if (char === quote) quote = undefined;
      continue;
    }
    if (char === '"' || char === "'" || char === '`') quote = char;
    else if ('([{'.includes(char)) depth++;
    else if (')]}'.includes(char)) {
      if (depth === 0) break;
      depth--;
    } else if (char === ',' && depth === 0) {
      params.push(current);
      current = '';
      continue;
    }
    current += char;
  }
  if (current.trim()) params.push(current);
  let hasRest = false;
  const names = params.map((param) => {
    const text = param.replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, '').trim();
    if (text.startsWith('...')) {
      hasRest = true;
      return undefined;
    }
    const name = /^([\p{L}\p{Nl}$_][\p{L}\p{Nl}\p{Mn}\p{Mc}\p{Nd}\p{Pc}$]*)/u.exec(text)?.[1];
    return name;
  });
  return { names, hasRest };
}
