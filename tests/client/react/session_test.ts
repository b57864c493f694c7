/**
 * `useAvatarSession` (client/react/session.ts) under React's own test renderer: a start
 * voided by `stop()` or by an unmount while your backend is still answering connects
 * nothing and ends the session it got (what React's StrictMode double mount also does
 * to the first of its two starts).
 */
import assert from "node:assert/strict";
// @ts-types="npm:@types/react@18.3.32"
import { createElement } from "react";
// @ts-types="npm:@types/react-test-renderer@18.3.1"
import { act, create } from "react-test-renderer";
import {
  type AvatarSession,
  type AvatarSessionGrant,
  useAvatarSession,
} from "../../../client/react/session.ts";

// React's act() environment, as its testing docs ask.
(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean })
  .IS_REACT_ACT_ENVIRONMENT = true;

/** A backend whose creates answer when the test says, and which records ends. */
function backend() {
  const creates: Array<(g: AvatarSessionGrant) => void> = [];
  const ended: string[] = [];
  return {
    creates,
    ended,
    createSession: () =>
      new Promise<AvatarSessionGrant>((ok) => creates.push(ok)),
    refreshToken: () => Promise.resolve({ client_token: "t", expires_at: 0 }),
    endSession: (id: string) => (ended.push(id), Promise.resolve()),
    grant: (n: number): AvatarSessionGrant => ({
      session_id: `session:${n}`,
      client_token: "t",
      ws_base_url: "ws://127.0.0.1:9",
    }),
  };
}

/** Renders a component holding the hook; `ref.current` is its latest answer. */
function mount(b: ReturnType<typeof backend>) {
  const ref: { current: AvatarSession | null } = { current: null };
  function Probe() {
    const s = useAvatarSession(b);
    ref.current = s;
    // A <video> stands attached: start() only checks that there is one.
    (s.videoRef as { current: unknown }).current ??= {};
    return null;
  }
  const el = createElement(Probe);
  let root!: ReturnType<typeof create>;
  act(() => {
    root = create(el);
  });
  return { ref, root };
}

Deno.test("useAvatarSession: stop() while the backend answers voids the start and ends its session", async () => {
  const b = backend();
  const { ref, root } = mount(b);
  let started!: Promise<void>;
  act(() => {
    started = ref.current!.start();
  });
  await act(() => ref.current!.stop());
  await act(async () => {
    b.creates[0](b.grant(1));
    await started;
  });
  assert.deepEqual(b.ended, ["session:1"]);
  assert.equal(ref.current!.sessionId, null);
  assert.equal(ref.current!.player, null);
  act(() => root.unmount());
});

Deno.test("useAvatarSession: an unmount while the backend answers ends that session", async () => {
  const b = backend();
  const { ref, root } = mount(b);
  let started!: Promise<void>;
  act(() => {
    started = ref.current!.start();
  });
  act(() => root.unmount());
  b.creates[0](b.grant(1));
  await started;
  assert.deepEqual(b.ended, ["session:1"]);
});
