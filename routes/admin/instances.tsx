/**
 * Instances: every instance record in KV (docs/operations.md, "Control plane and media
 * nodes") with its role, URL, heartbeat, render slots, SFU and drain state, live ones
 * first. The operator's page: instance ids and URLs are infrastructure, not a tenant's,
 * so a tenant administrator is refused (and `listInstances` gives it nothing anyway).
 * A plain page: the records change every heartbeat, and Refresh is enough to watch them.
 */
import { InstanceTable } from "../../components/Instances.tsx";
import { EmptyState, PageHeader } from "../../components/ui.tsx";
import {
  errorPage,
  page,
  type PageProps,
  requireAdmin,
} from "../../lib/console/render.tsx";
import { isOperator } from "../../lib/principal.ts";
import type { Ctx } from "../../lib/api/http.ts";
import { type InstanceView, listInstances } from "../../lib/nodes/registry.ts";
import { instanceStaleMs } from "../../lib/media/presence.ts";

interface InstancesData {
  instances: InstanceView[];
  /** After how many seconds without a heartbeat an instance counts as gone. */
  staleS: number;
}

export const handler = {
  async GET(ctx: Ctx): Promise<Response> {
    const admin = requireAdmin(ctx);
    if (!isOperator(admin)) {
      return errorPage(
        ctx,
        403,
        "Operator only",
        "Only the operator sees the service's instances.",
      );
    }
    return page(ctx, InstancesPage, {
      instances: await listInstances(ctx.deps, admin),
      staleS: instanceStaleMs(ctx.deps.config) / 1000,
    }, { title: "Instances", section: "instances" });
  },
};

export default function InstancesPage(
  { data, now }: PageProps<InstancesData>,
) {
  const live = data.instances.filter((i) => i.live).length;
  return (
    <>
      <PageHeader
        title="Instances"
        lead={`The processes sharing this KV store, from their heartbeats: ${live} live, ${
          data.instances.length - live
        } stale (silent for ${data.staleS} s or more).`}
        actions={<a href="/admin/instances" class="btn btn-quiet">Refresh</a>}
      />
      {data.instances.length === 0
        ? (
          <EmptyState title="No instance records">
            A process of role all or media writes its record with every
            heartbeat; a control plane writes none.
          </EmptyState>
        )
        : <InstanceTable instances={data.instances} now={now} />}
    </>
  );
}
