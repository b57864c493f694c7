/**
 * Every island the browser bundle can hydrate, by name (the component's function name,
 * which is what `Island` writes into `data-island`). tests/routes/admin check that each
 * module under islands/ is listed here.
 */
import type { ComponentType } from "preact";
// The one place lib/console/ reaches up into islands/: the browser bundle (./client.ts)
// hydrates whatever island a page holds, so its registry names them all.
import ConfirmButton from "../../islands/ConfirmButton.tsx";
import CopyButton from "../../islands/CopyButton.tsx";
import LiveSessions from "../../islands/LiveSessions.tsx";
import TryIt from "../../islands/TryIt.tsx";

// deno-lint-ignore no-explicit-any
export const ISLANDS: Record<string, ComponentType<any>> = {
  ConfirmButton,
  CopyButton,
  LiveSessions,
  TryIt,
};
