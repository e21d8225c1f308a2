/** Small statistics helpers; nearest-rank percentiles, so every figure is a value that occurred. */
export function median(values) {
    return percentile(values, 50);
}
/** Nearest-rank percentile (p in 0–100) of the values; NaN for no values. */
export function percentile(values, p) {
    if (values.length === 0)
        return NaN;
    const sorted = [...values].sort((a, b) => a - b);
    const rank = Math.ceil((p / 100) * sorted.length);
    return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1];
}
export function max(values) {
    return values.length === 0 ? NaN : values.reduce((a, b) => (b > a ? b : a), -Infinity);
}
export function min(values) {
    return values.length === 0 ? NaN : values.reduce((a, b) => (b < a ? b : a), Infinity);
}
export function sum(values) {
    return values.reduce((a, b) => a + b, 0);
}
/** Rounds for the JSON file: enough digits to compare runs, not float noise. */
export function round(value, digits = 2) {
    if (!Number.isFinite(value))
        return value;
    const factor = 10 ** digits;
    return Math.round(value * factor) / factor;
}
export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
export const now = () => performance.now();
/**
 * Monotonic ms on the system-wide clock (CLOCK_MONOTONIC), so that times taken in different
 * processes of one machine can be compared; `performance.now()` counts from each process's start.
 */
export const systemNow = () => Number(process.hrtime.bigint()) / 1e6;
//# sourceMappingURL=stats.js.map