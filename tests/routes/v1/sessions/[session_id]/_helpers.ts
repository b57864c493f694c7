/** Shared setup for the media socket route tests: a live stack and the end call. */
import { TEST_ADMIN_KEY } from "../../../../_helpers.ts";
import { type LiveStack, withLiveStack } from "../../../../lib/media/_live.ts";

const auth = { authorization: `Bearer ${TEST_ADMIN_KEY}` };

/** POST /v1/sessions/:id/end (with ?force=true when `force`): status and body. */
export async function end(s: LiveStack, id: string, force = false) {
  const res = await s.t.request(
    `/v1/sessions/${id}/end${force ? "?force=true" : ""}`,
    {
      method: "POST",
      headers: auth,
    },
  );
  return { status: res.status, body: await res.json() };
}

/** `withLiveStack` that also asserts no ffmpeg child outlives the stack. */
export function live(
  fn: (s: LiveStack) => Promise<void>,
  setup: { env?: Record<string, string>; stubborn?: boolean } = {},
): Promise<void> {
  return withLiveStack(fn, { ...setup, noFfmpegLeft: true });
}
