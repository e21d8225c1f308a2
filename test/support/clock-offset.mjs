/**
 * Preloaded with `--import` into a replica whose wall clock must disagree with the others': the
 * global `Date` (`Date.now()` and `new Date()`, which the cron schedule reads) runs CLOCK_OFFSET_MS
 * ms ahead (or behind, when negative) of the machine's clock. The monotonic clock
 * (`performance.now()`) is left alone, as a skewed NTP clock leaves it.
 */
const offset = Number(process.env.CLOCK_OFFSET_MS ?? 0);
const RealDate = Date;

const now = () => RealDate.now() + offset;

globalThis.Date = new Proxy(RealDate, {
  // Reflect.construct is typed to return `any`: what it makes here is a Date.
  construct: (target, args, newTarget) =>
    // eslint-disable-next-line @typescript-eslint/no-unsafe-return
    Reflect.construct(target, args.length === 0 ? [now()] : args, newTarget),
  get: (target, property) =>
    property === 'now' ? now : /** @type {unknown} */ (Reflect.get(target, property)),
});
