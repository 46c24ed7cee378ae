/**
 * argon2id with OWASP's minimum (19 MiB, 2 passes): about 20 ms a hash on this hardware,
 * slow enough for guessing, fast enough that 20 parallel logins do not stall the server.
 */
const ARGON2 = { algorithm: "argon2id", memoryCost: 19_456, timeCost: 2 } as const;

export const PASSWORD_MIN = 12;
export const PASSWORD_MAX = 256;
/**
 * The length counted in Unicode code points, as JSON Schema counts it: `minLength` counts
 * UTF-16 units, in which six emoji are twelve. A surrogate pair is one character.
 */
export const PASSWORD_PATTERN = `^(?:[\\uD800-\\uDBFF][\\uDC00-\\uDFFF]|[^\\uD800-\\uDFFF]){${PASSWORD_MIN},${PASSWORD_MAX}}$`;

export const hashPassword = (password: string) => Bun.password.hash(password, ARGON2);

export const verifyPassword = (password: string, hash: string) =>
  Bun.password.verify(password, hash);

let decoyHash: Promise<string> | undefined;

/**
 * Spends the time of one real verification against a hash nobody owns, so an unknown
 * e-mail answers as slowly as a known one.
 */
export async function verifyDecoy(password: string): Promise<false> {
  decoyHash ??= hashPassword(crypto.randomUUID());
  await Bun.password.verify(password, await decoyHash);
  return false;
}
