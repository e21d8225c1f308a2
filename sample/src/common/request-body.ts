import { BadRequestException } from '@nestjs/common';

/** A JSON request body as Express parsed it: any shape at all, until checked. */
export type RequestBody = Record<string, unknown> | undefined;

/**
 * The integer `body[name]`, or `fallback` when it is absent.
 * @throws BadRequestException when it is not an integer from `min` to `max`
 */
export function integerField(
  body: RequestBody,
  name: string,
  range: { min: number; max: number; fallback?: number },
): number {
  const value = body?.[name] ?? range.fallback;
  if (typeof value !== 'number' || !Number.isInteger(value)) {
    throw new BadRequestException(`"${name}" must be an integer`);
  }
  if (value < range.min || value > range.max) {
    throw new BadRequestException(`"${name}" must be from ${range.min} to ${range.max}`);
  }
  return value;
}

/**
 * The non-empty string `body[name]`, or `fallback` when it is absent.
 * @throws BadRequestException when it is missing or not a non-empty string
 */
export function stringField(body: RequestBody, name: string, fallback?: string): string {
  const value = body?.[name] ?? fallback;
  if (typeof value !== 'string' || value.trim() === '') {
    throw new BadRequestException(`"${name}" must be a non-empty string`);
  }
  return value;
}
