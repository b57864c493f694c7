/**
 * `GET /v1/sessions/{session_id}`: the session's status (SPEC 4.2).
 * `DELETE /v1/sessions/{session_id}`: deprecated alias of `POST …/end`.
 */
import {
  deprecatedAlias,
  handleEnd,
  handleStatus,
} from "../../../../lib/sessions/http.ts";

export const handler = {
  GET: handleStatus,
  DELETE: deprecatedAlias(handleEnd, (id) => `/v1/sessions/${id}/end`),
};
