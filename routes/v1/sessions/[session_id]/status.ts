/** `GET /v1/sessions/{session_id}/status`: deprecated alias of `GET /v1/sessions/{session_id}`. */
import {
  deprecatedAlias,
  handleStatus,
} from "../../../../lib/sessions/http.ts";

export const handler = {
  GET: deprecatedAlias(handleStatus, (id) => `/v1/sessions/${id}`),
};
