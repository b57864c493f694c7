/** `POST /v1/sessions/{session_id}/end`: end a session (SPEC 4.3). */
import { handleEnd } from "../../../../lib/sessions/http.ts";

export const handler = { POST: handleEnd };
