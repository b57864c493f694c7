/**
 * Fixtures shared by the remote renderer tests: the session they open, and a matcher
 * for a RenderStartError of one kind.
 */
import { RenderStartError } from "../../../lib/ports/render.ts";

export const OPEN = {
  sessionId: "session:remote",
  avatarId: "mira",
  bgId: "office",
};

/** Whether a rejection is a RenderStartError of `kind`. */
export function isStartError(kind: string) {
  return (e: unknown) => e instanceof RenderStartError && e.kind === kind;
}
