// A customer's Node backend, as plain JavaScript: the packed @live-avatar/server against
// the real service (AVATAR_BASE_URL, AVATAR_API_KEY, ENGINE_URL, ENGINE_TOKEN).
import { AvatarApiError, AvatarClient } from "@live-avatar/server";

const env = process.env;
const avatar = new AvatarClient({
  baseUrl: env.AVATAR_BASE_URL,
  apiKey: env.AVATAR_API_KEY,
});
const session = await avatar.createSession({
  provider_type: "external_engine",
  provider_config: {
    external_engine: {
      url: env.ENGINE_URL,
      auth_headers: { authorization: `Bearer ${env.ENGINE_TOKEN}` },
    },
  },
});
const read = await avatar.getSession(session.session_id);
const fresh = await avatar.createClientToken(session.session_id);
const ended = await avatar.endSession(session.session_id);
let missing = null;
try {
  await avatar.getSession("session:01J0000000000000000000000Z");
} catch (err) {
  missing = err instanceof AvatarApiError ? err.code : String(err);
}
console.log(JSON.stringify({
  node: process.versions.node,
  id: session.session_id,
  created: session.status,
  read: read.status,
  token: fresh.client_token !== session.client_token &&
    fresh.expires_at > Date.now(),
  ended: ended.status,
  missing,
}));
