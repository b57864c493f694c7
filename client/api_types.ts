/** The request and response bodies of the REST API (SPEC 2, DECISIONS 2 and 4). */
export type SessionStatus =
  | "created"
  | "activating"
  | "active"
  | "ending"
  | "ended"
  | "ended_with_warnings"
  | "failed";
export type Transport = "auto" | "webrtc_sfu" | "websocket_fmp4";
export type ProviderType =
  | "vendor_a_realtime"
  | "vendor_b"
  | "external_engine"
  | "vendor_c";
export type Scope = "sessions:read" | "sessions:write" | "keys:admin";

/** SPEC 4.1: exactly one key, the one matching `provider_type`. */
export interface ProviderConfig {
  vendor_a_realtime?: { client_secret: string };
  vendor_b?: { access_token: string; agent_id: string };
  external_engine?: {
    url: string;
    auth_headers: Record<string, string>;
    user_sample_rate?: number;
  };
  vendor_c?: { agent_id: string; api_key?: string; signed_url?: string };
}

export interface CreateSessionRequest {
  provider_type: ProviderType;
  provider_config: ProviderConfig;
  transport?: Transport;
  avatar_config?: { avatar_id?: string; bg_id?: string };
  webhook_url?: string;
}

export interface IceServer {
  urls: string | string[];
  username?: string;
  credential?: string;
}

export interface StreamMetadata {
  session_token: string;
  sfu_endpoint: string | null;
  ice_servers: IceServer[];
}

export interface SessionResponse {
  session_id: string;
  client_token: string;
  expires_at: number;
  status: SessionStatus;
  transport: Transport;
  stream_metadata: StreamMetadata;
}

export interface ClientTokenResponse {
  client_token: string;
  expires_at: number;
  stream_metadata: StreamMetadata;
  transport: Transport;
}

/** Why a session ended (DECISIONS 4): on terminal sessions' status and end answers. */
export type EndReason =
  | "requested"
  | "forced"
  | "connect_timeout"
  | "start_failed"
  | "idle_timeout"
  | "max_duration"
  | "provider_ended"
  | "provider_failed"
  | "render_failed"
  | "instance_lost";

/** SPEC 2.6, with the additive fields of a terminal session. */
export interface SessionStatusResponse {
  session_id: string;
  transport: Transport;
  status: SessionStatus;
  provider_type: string;
  created_at?: number;
  started_at?: number;
  ended_at?: number;
  /** Once terminal. */
  end_reason?: EndReason;
  /** When `ended_with_warnings`. */
  warning?: string;
  /** When it ended from `active`: seconds active, and media segments sent. */
  duration_s?: number;
  chunks_rendered?: number;
}

/** SPEC 2.7. After a 409, `endSession` answers `{session_id, status: "ended", ended_at: 0}`. */
export interface EndSessionResponse {
  session_id: string;
  status: SessionStatus;
  ended_at: number;
  warning?: string;
  chunks_rendered?: number;
  duration_s?: number;
}

export interface CreateApiKeyRequest {
  tenant_id: string;
  scopes: Scope[];
  name?: string;
  expires_at?: number;
}

/** DECISIONS 2: `api_key` is the plaintext, shown in this answer only. */
export interface ApiKeyCreated {
  key_id: string;
  api_key: string;
  tenant_id: string;
  scopes: Scope[];
  name?: string;
  created_at: number;
  expires_at?: number;
}
