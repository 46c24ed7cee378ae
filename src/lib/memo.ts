/**
 * Remembers `fn`'s result per input object. For inputs that are replaced, never mutated, when
 * they change (the actors' records), so the result never goes stale.
 */
export function memoByIdentity<I extends object, O>(fn: (input: I) => O): (input: I) => O {
  const results = new WeakMap<I, O>();
  return (input) => {
    let result = results.get(input);
    if (result === undefined) {
      result = fn(input);
      results.set(input, result);
    }
    return result;
  };
}
