import { createHmac } from "node:crypto";

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");

/** Builds a JWT by hand, so tests can forge every shape an attacker could send. */
export function forgeToken(
  payload: Record<string, unknown>,
  options: { alg?: string; secret?: string; signature?: string } = {},
) {
  const alg = options.alg ?? "HS256";
  const unsigned = `${b64({ alg, typ: "JWT" })}.${b64(payload)}`;
  if (options.signature !== undefined) return `${unsigned}.${options.signature}`;
  if (alg === "none") return `${unsigned}.`;
  const digest = { HS256: "sha256", HS384: "sha384", HS512: "sha512" }[alg] ?? "sha256";
  const signature = createHmac(digest, options.secret ?? "")
    .update(unsigned)
    .digest("base64url");
  return `${unsigned}.${signature}`;
}
