/** `POST /v1/sessions/{session_id}/client-token`: mint a fresh client token (SPEC 4.4). */
import { handleClientToken } from "../../../../lib/sessions/http.ts";

export const handler = { POST: handleClientToken };
