/**
 * The ICE servers a browser gets in `stream_metadata.ice_servers` (DECISIONS 11): the
 * configured `ICE_SERVERS`, and with `TURN_SECRET` set, every `turn:`/`turns:` entry with
 * time-limited credentials in the TURN REST scheme coturn implements
 * (`use-auth-secret`): username `expiry:session`, credential base64 HMAC-SHA1 of the
 * username under the shared secret.
 */
import { createHmac } from "node:crypto";
import type { Config, IceServer } from "../config.ts";

/** How long a TURN credential is valid past the session's maximum duration. */
const TURN_MARGIN_S = 600;

function isTurn(server: IceServer): boolean {
  const urls = Array.isArray(server.urls) ? server.urls : [server.urls];
  return urls.some((u) => /^turns?:/.test(u));
}

/** A TURN REST credential for `user` valid until `expiry` (epoch seconds). */
export function turnCredential(
  secret: string,
  expiry: number,
  user: string,
): { username: string; credential: string } {
  const username = `${expiry}:${user}`;
  const credential = createHmac("sha1", secret).update(username).digest(
    "base64",
  );
  return { username, credential };
}

/** `ice_servers` for `sessionId` at `now` (epoch ms); empty without `ICE_SERVERS`. */
export function iceServersFor(
  config: Config,
  sessionId: string,
  now: number,
): IceServer[] {
  const { servers, turnSecret: secret } = config.ice;
  if (!secret) return servers.map((s) => ({ ...s }));
  const expiry = Math.floor(now / 1000) + config.sessionMaxDurationS +
    TURN_MARGIN_S;
  return servers.map((s) =>
    isTurn(s)
      ? { urls: s.urls, ...turnCredential(secret, expiry, sessionId) }
      : { ...s }
  );
}
