// A customer's TypeScript backend on Node (no DOM types): the packed server client's
// types resolve, and nothing it answers is `any`.
import {
  AvatarApiError,
  AvatarClient,
  type SessionStatusResponse,
} from "@live-avatar/server";

type IsAny<T> = 0 extends 1 & T ? true : false;
type NotAny<T> = IsAny<T> extends true ? never : T;
const notAny = <T>(_v: NotAny<T>): void => undefined;

const avatar = new AvatarClient({ baseUrl: "http://localhost", apiKey: "k" });
export async function flow(): Promise<SessionStatusResponse["status"]> {
  const s = await avatar.createSession({
    provider_type: "external_engine",
    provider_config: {
      external_engine: { url: "wss://engine.example/", auth_headers: {} },
    },
  });
  notAny(s);
  notAny(s.session_id);
  notAny(s.stream_metadata);
  const t = await avatar.createClientToken(s.session_id);
  notAny(t.expires_at);
  const read = await avatar.getSession(s.session_id);
  notAny(read);
  try {
    notAny(await avatar.endSession(s.session_id));
  } catch (err) {
    if (err instanceof AvatarApiError) notAny(err.code);
  }
  return read.status;
}
