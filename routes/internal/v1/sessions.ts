/** `POST /internal/v1/sessions`: a media node takes a session from the control plane. */
import { acceptHandoff } from "../../../lib/nodes/accept.ts";

export const handler = { POST: acceptHandoff };
