/**
 * The conversation as the browser client's page sees it (client/browser.ts): the
 * socket's `turn.start` / `turn.end` (an end carries the role its start named),
 * `transcript` and `turn.interrupted`, as typed player events.
 */
import type { AvatarPlayerEventMap } from "./player_types.ts";
import type { ServerMessage } from "./protocol.ts";

/** Emits one typed player event. */
export type Emit = <K extends keyof AvatarPlayerEventMap>(
  type: K,
  detail: AvatarPlayerEventMap[K],
) => void;

/** Turn and transcript messages → `turn`, `transcript` and `interrupted` events. */
export class TurnEvents {
  #roles = new Map<string, "user" | "avatar">();

  constructor(private readonly emit: Emit) {}

  /** Emits the event of a turn message; false for any other message. */
  handle(msg: ServerMessage): boolean {
    switch (msg.type) {
      case "turn.interrupted":
        this.emit("interrupted", {
          turn_id: msg.turn_id,
          played_ms: msg.played_ms,
        });
        return true;
      case "turn.start":
        this.#roles.set(msg.turn_id, msg.role);
        this.emit("turn", {
          phase: "start",
          turn_id: msg.turn_id,
          role: msg.role,
        });
        return true;
      case "turn.end": {
        const role = this.#roles.get(msg.turn_id) ?? null;
        this.#roles.delete(msg.turn_id);
        this.emit("turn", { phase: "end", turn_id: msg.turn_id, role });
        return true;
      }
      case "transcript":
        this.emit("transcript", {
          turn_id: msg.turn_id,
          role: msg.role,
          text: msg.text,
          final: msg.final,
        });
        return true;
    }
    return false;
  }
}
