/** `POST /v1/sessions`: create and start a session (SPEC 4.1). */
import { handleCreate } from "../../../lib/sessions/http.ts";

export const handler = { POST: handleCreate };
