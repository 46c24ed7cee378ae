import { jwt } from "@elysiajs/jwt";
import type { Clock } from "../../actors/ports.ts";
import type { Role } from "./roles.ts";

export interface TokenClaims {
  sub: string;
  tid: string;
  email: string;
  role: Role;
  iat: number;
  exp: number;
}

export interface IssuedToken {
  token: string;
  expiresAt: Date;
}

/** Seconds of clock skew tolerated on `exp`. */
export const EXP_LEEWAY_SECONDS = 30;
const CACHE_MAX = 50_000;

/**
 * Signs and verifies user tokens. The plugin's defaults are unsafe (no `exp`, any HMAC
 * algorithm), so the algorithm is pinned to HS256 and `exp`, `sub` and `tid` are required.
 * A verified token is cached until it expires: signature checks cost most of a request.
 */
export class TokenService {
  private readonly signer;
  private readonly verified = new Map<string, TokenClaims>();
  /**
   * Signs the commands processes forward to each other: every process sharing the database
   * shares the signing secret, and a key of its own keeps the two uses apart.
   */
  readonly clusterKey: string;

  constructor(
    secret: string,
    private readonly ttlSeconds: number,
    private readonly clock: Clock,
  ) {
    this.signer = jwt({ name: "jwt", secret, alg: "HS256" }).decorator.jwt;
    this.clusterKey = new Bun.CryptoHasher("sha256")
      .update(`forwarded commands:${secret}`)
      .digest("hex");
  }

  async issue(user: {
    id: string;
    tenantId: string;
    email: string;
    role: Role;
  }): Promise<IssuedToken> {
    const nowSeconds = Math.floor(this.clock.now() / 1000);
    const exp = nowSeconds + this.ttlSeconds;
    const token = await this.signer.sign({
      sub: user.id,
      tid: user.tenantId,
      email: user.email,
      role: user.role,
      exp,
    });
    return { token, expiresAt: new Date(exp * 1000) };
  }

  /** The claims of a token verified before and not yet expired; no work beyond a lookup. */
  cached(token: string): TokenClaims | undefined {
    const cached = this.verified.get(token);
    return cached && this.isLive(cached) ? cached : undefined;
  }

  /** The claims of a valid token, or undefined for any failure (bad signature, expiry, shape). */
  async verify(token: string): Promise<TokenClaims | undefined> {
    const cached = this.verified.get(token);
    if (cached) {
      if (this.isLive(cached)) return cached;
      this.verified.delete(token);
      return undefined;
    }
    const payload = await this.signer.verify(token, {
      algorithms: ["HS256"],
      requiredClaims: ["exp", "sub", "tid"],
      clockTolerance: EXP_LEEWAY_SECONDS,
      currentDate: new Date(this.clock.now()),
    });
    if (!payload || !isClaims(payload)) return undefined;
    this.cache(token, payload);
    return payload;
  }

  private isLive(claims: TokenClaims): boolean {
    return claims.exp + EXP_LEEWAY_SECONDS > this.clock.now() / 1000;
  }

  private cache(token: string, claims: TokenClaims): void {
    if (this.verified.size >= CACHE_MAX) {
      // Drop expired entries first; if none are, drop the oldest inserted.
      for (const [key, value] of this.verified) if (!this.isLive(value)) this.verified.delete(key);
      if (this.verified.size >= CACHE_MAX) {
        const oldest = this.verified.keys().next().value;
        if (oldest !== undefined) this.verified.delete(oldest);
      }
    }
    this.verified.set(token, claims);
  }
}

function isClaims(
  payload: Record<string, unknown>,
): payload is TokenClaims & Record<string, unknown> {
  return (
    typeof payload.sub === "string" &&
    typeof payload.tid === "string" &&
    typeof payload.exp === "number" &&
    typeof payload.email === "string" &&
    typeof payload.role === "string"
  );
}
