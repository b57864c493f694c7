// The route manifest, in the shape of Fresh's fresh.gen.ts: every module under routes/,
// keyed by its file path. tests/manifest_test.ts checks it lists exactly the files there.
import * as $_middleware from "./routes/_middleware.ts";
import * as $healthz from "./routes/healthz.ts";
import * as $readyz from "./routes/readyz.ts";
import * as $metrics from "./routes/metrics.ts";
import * as $openapi_json from "./routes/openapi.json.ts";
import * as $docs_index from "./routes/docs/index.tsx";
import * as $docs_errors_code from "./routes/docs/errors/[code].tsx";
import * as $v1_middleware from "./routes/v1/_middleware.ts";
import * as $v1_api_keys_index from "./routes/v1/api-keys/index.ts";
import * as $v1_api_keys_key_id from "./routes/v1/api-keys/[key_id].ts";
import * as $v1_sessions_index from "./routes/v1/sessions/index.ts";
import * as $v1_sessions_id_index from "./routes/v1/sessions/[session_id]/index.ts";
import * as $v1_sessions_id_end from "./routes/v1/sessions/[session_id]/end.ts";
import * as $v1_sessions_id_client_token from "./routes/v1/sessions/[session_id]/client-token.ts";
import * as $v1_sessions_id_status from "./routes/v1/sessions/[session_id]/status.ts";
import * as $v1_sessions_id_ws_token from "./routes/v1/sessions/[session_id]/ws-token.ts";
import * as $v1_sessions_id_ws from "./routes/v1/sessions/[session_id]/ws.ts";
import * as $internal_v1_sessions from "./routes/internal/v1/sessions.ts";
import * as $admin_middleware from "./routes/admin/_middleware.ts";
import * as $admin_index from "./routes/admin/index.tsx";
import * as $admin_instances from "./routes/admin/instances.tsx";
import * as $admin_login from "./routes/admin/login.tsx";
import * as $admin_logout from "./routes/admin/logout.ts";
import * as $admin_keys_index from "./routes/admin/keys/index.tsx";
import * as $admin_keys_key_id_revoke from "./routes/admin/keys/[key_id]/revoke.tsx";
import * as $admin_avatars_index from "./routes/admin/avatars/index.tsx";
import * as $admin_avatars_avatar_id_preview from "./routes/admin/avatars/[avatar_id]/preview.ts";
import * as $admin_avatars_avatar_id_remove from "./routes/admin/avatars/[avatar_id]/remove.tsx";
import * as $admin_sessions_index from "./routes/admin/sessions/index.tsx";
import * as $admin_sessions_events from "./routes/admin/sessions/events.ts";
import * as $admin_sessions_session_id from "./routes/admin/sessions/[session_id].tsx";
import * as $admin_tenants_index from "./routes/admin/tenants/index.tsx";
import * as $admin_tenants_tenant_id from "./routes/admin/tenants/[tenant_id].tsx";
import * as $admin_try from "./routes/admin/try.tsx";
import * as $admin_try_token from "./routes/admin/try/token.ts";
import * as $static_path from "./routes/static/[...path].ts";
import type { Manifest } from "./lib/api/router.ts";

const manifest: Manifest = {
  routes: {
    "./routes/_middleware.ts": $_middleware,
    "./routes/healthz.ts": $healthz,
    "./routes/metrics.ts": $metrics,
    "./routes/readyz.ts": $readyz,
    "./routes/openapi.json.ts": $openapi_json,
    "./routes/docs/index.tsx": $docs_index,
    "./routes/docs/errors/[code].tsx": $docs_errors_code,
    "./routes/v1/_middleware.ts": $v1_middleware,
    "./routes/v1/api-keys/index.ts": $v1_api_keys_index,
    "./routes/v1/api-keys/[key_id].ts": $v1_api_keys_key_id,
    "./routes/v1/sessions/index.ts": $v1_sessions_index,
    "./routes/v1/sessions/[session_id]/index.ts": $v1_sessions_id_index,
    "./routes/v1/sessions/[session_id]/end.ts": $v1_sessions_id_end,
    "./routes/v1/sessions/[session_id]/client-token.ts":
      $v1_sessions_id_client_token,
    "./routes/v1/sessions/[session_id]/status.ts": $v1_sessions_id_status,
    "./routes/v1/sessions/[session_id]/ws-token.ts": $v1_sessions_id_ws_token,
    "./routes/v1/sessions/[session_id]/ws.ts": $v1_sessions_id_ws,
    "./routes/internal/v1/sessions.ts": $internal_v1_sessions,
    "./routes/admin/_middleware.ts": $admin_middleware,
    "./routes/admin/index.tsx": $admin_index,
    "./routes/admin/instances.tsx": $admin_instances,
    "./routes/admin/login.tsx": $admin_login,
    "./routes/admin/logout.ts": $admin_logout,
    "./routes/admin/keys/index.tsx": $admin_keys_index,
    "./routes/admin/keys/[key_id]/revoke.tsx": $admin_keys_key_id_revoke,
    "./routes/admin/avatars/index.tsx": $admin_avatars_index,
    "./routes/admin/avatars/[avatar_id]/preview.ts":
      $admin_avatars_avatar_id_preview,
    "./routes/admin/avatars/[avatar_id]/remove.tsx":
      $admin_avatars_avatar_id_remove,
    "./routes/admin/sessions/index.tsx": $admin_sessions_index,
    "./routes/admin/sessions/events.ts": $admin_sessions_events,
    "./routes/admin/sessions/[session_id].tsx": $admin_sessions_session_id,
    "./routes/admin/tenants/index.tsx": $admin_tenants_index,
    "./routes/admin/tenants/[tenant_id].tsx": $admin_tenants_tenant_id,
    "./routes/admin/try.tsx": $admin_try,
    "./routes/admin/try/token.ts": $admin_try_token,
    "./routes/static/[...path].ts": $static_path,
  },
};

export default manifest;
