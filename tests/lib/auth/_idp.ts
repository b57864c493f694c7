/** Identity-provider test fixtures: an ES256 signer, its JWKS, tokens and deps. */
import {
  exportJWK,
  generateKeyPair,
  type JWK,
  type JWTPayload,
  SignJWT,
} from "jose";
import { initAuth } from "../../../lib/auth/authenticate.ts";
import { createDeps } from "../../../lib/wire.ts";
import { memoryLogger } from "../../../lib/log.ts";
import { countingKv } from "./_keys.ts";

export const ISSUER = "https://idp.example.test/";
export const AUDIENCE = "https://avatar.example.test";
export const NOW = Date.UTC(2026, 10, 22, 12, 0, 0);
export const NOW_S = Math.floor(NOW / 1000);

type KeyPair = Awaited<ReturnType<typeof generateKeyPair>>;

async function newKey(kid: string): Promise<{ pair: KeyPair; jwk: JWK }> {
  const pair = await generateKeyPair("ES256", { extractable: true });
  const jwk = { ...await exportJWK(pair.publicKey), kid, alg: "ES256" };
  return { pair, jwk };
}

export const signer = await newKey("k1");
export const stranger = await newKey("k1"); // same kid, different key: a forged signature
export const JWKS = JSON.stringify({ keys: [signer.jwk] });

/** A compact JWT of `claims`, signed ES256 by `signer` unless told otherwise. */
export async function sign(
  claims: JWTPayload,
  options: { key?: KeyPair; kid?: string; iss?: string; exp?: number } = {},
): Promise<string> {
  const jwt = new SignJWT(claims)
    .setProtectedHeader({ alg: "ES256", kid: options.kid ?? "k1" })
    .setIssuer(options.iss ?? ISSUER)
    .setIssuedAt(NOW_S - 60);
  if (options.exp !== -1) jwt.setExpirationTime(options.exp ?? NOW_S + 600);
  return await jwt.sign((options.key ?? signer.pair).privateKey);
}

export const GOOD: JWTPayload = {
  sub: "user-1",
  aud: AUDIENCE,
  azp: "console-app",
  org_id: "org_acme",
  scope: "sessions:read openid sessions:write",
};

/** Deps on `:memory:` KV (calls counted per method) with `env` and auth initialised. */
export async function setup(env: Record<string, string>) {
  const { kv, calls, inner } = countingKv(await Deno.openKv(":memory:"));
  const deps = await createDeps({
    env: {
      KV_PATH: ":memory:",
      TOKEN_SECRET: "x".repeat(32),
      IDP_AUDIENCE: AUDIENCE,
      ...env,
    },
    kv,
    now: () => NOW,
    log: memoryLogger(),
  });
  initAuth(deps);
  return { deps, calls, inner };
}
