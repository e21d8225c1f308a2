import type { IncomingMessage, ServerResponse } from 'node:http';

/** Response header naming the process that answered, so that a client sees the load spread. */
export const SERVED_BY_HEADER = 'x-served-by';

/** Sets {@link SERVED_BY_HEADER} to this process's pid. */
export function servedBy(_req: IncomingMessage, res: ServerResponse, next: () => void): void {
  res.setHeader(SERVED_BY_HEADER, String(process.pid));
  next();
}
