/** Fixed leading text of each kind of credential, so a bearer value says what it is. */
export const API_KEY_PREFIX = "svc_key_";
export const NODE_KEY_PREFIX = "svc_node_";

/** Characters a display prefix keeps after the fixed text: enough to tell keys apart. */
const DISPLAY_CHARS = 6;

/** A new secret: the fixed text and 32 random bytes, base64url. Shown once, never stored. */
export function newSecret(prefix: string) {
  const value = `${prefix}${Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64url")}`;
  return { value, hash: digestOf(value), display: value.slice(0, prefix.length + DISPLAY_CHARS) };
}

/** The SHA-256 (hex) under which a secret is stored and looked up. */
export const digestOf = (value: string) =>
  new Bun.CryptoHasher("sha256").update(value).digest("hex");

const WELL_FORMED = /^svc_(key|node)_[A-Za-z0-9_-]{43}$/;
export const isWellFormedSecret = (value: string) => WELL_FORMED.test(value);
