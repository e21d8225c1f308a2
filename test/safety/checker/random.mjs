/** The safety checker's random draws. */

/**
 * A whole number from `min` to `max`, both included.
 * @param {number} min
 * @param {number} max
 */
export const randomInt = (min, max) => min + Math.floor(Math.random() * (max - min + 1));

/**
 * The items in random order (Fisher–Yates).
 * @template T
 * @param {readonly T[]} items
 */
export function shuffled(items) {
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [copy[i], copy[j]] = [copy[j], copy[i]];
  }
  return copy;
}
