/** `POST /v1/sessions/{session_id}/ws-token`: deprecated alias of `POST …/client-token`. */
import {
  deprecatedAlias,
  handleClientToken,
} from "../../../../lib/sessions/http.ts";

export const handler = {
  POST: deprecatedAlias(
    handleClientToken,
    (id) => `/v1/sessions/${id}/client-token`,
  ),
};
