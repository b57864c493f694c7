/** The sessions table's URL filters (tenant, status, page cursor), shared by the page and its stream. */
import type { SessionStatus } from "../api/schemas.ts";
import { ALL_STATUSES } from "./format.ts";
import type { SessionsQuery } from "./live.ts";

const TENANT_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
const CURSOR_PATTERN = /^session:[A-Za-z0-9_-]+$/;

export interface SessionFilters {
  tenant: string;
  status: string;
  cursor: string;
}

/** Reads the filters of a sessions URL; invalid values are dropped with a message. */
export function parseSessionFilters(
  url: URL,
): { filters: SessionFilters; query: SessionsQuery; errors: string[] } {
  const q = url.searchParams;
  const filters: SessionFilters = {
    tenant: (q.get("tenant") ?? "").trim(),
    status: q.get("status") ?? "",
    cursor: q.get("cursor") ?? "",
  };
  const query: SessionsQuery = {};
  const errors: string[] = [];
  if (filters.tenant) {
    if (TENANT_PATTERN.test(filters.tenant)) query.tenant_id = filters.tenant;
    else {
      errors.push(
        "Tenant ids are 1 to 64 characters of A-Z, a-z, 0-9, _ or -: showing every tenant.",
      );
      filters.tenant = "";
    }
  }
  if (filters.status) {
    if ((ALL_STATUSES as readonly string[]).includes(filters.status)) {
      query.status = filters.status as SessionStatus;
    } else {
      errors.push("Unknown status: showing every status.");
      filters.status = "";
    }
  }
  if (filters.cursor) {
    if (CURSOR_PATTERN.test(filters.cursor)) query.cursor = filters.cursor;
    else filters.cursor = "";
  }
  return { filters, query, errors };
}
