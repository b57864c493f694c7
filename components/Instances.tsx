/**
 * The instances of a deployment as the operator sees them (lib/nodes/registry.ts): the
 * table of every instance record, and the one line naming the instance that holds a
 * session. Operator-only; routes never render these for a tenant administrator.
 */
import { shortInstanceId } from "../lib/console/format.ts";
import type { InstanceView } from "../lib/nodes/registry.ts";
import { DataTable, StatusBadge, Time } from "./ui.tsx";

/** An instance's short id, with the full id as its title. */
export function InstanceId(props: { id: string }) {
  return <code title={props.id}>{shortInstanceId(props.id)}</code>;
}

/** Live or stale: the text carries it, the badge colour repeats it. */
function Liveness(props: { live: boolean }) {
  return <StatusBadge status={props.live ? "live" : "stale"} />;
}

const yesNo = (v: boolean) => v ? "yes" : "no";

/** Every instance record, in the order given (live ones first). */
export function InstanceTable(
  props: { instances: InstanceView[]; now: number },
) {
  return (
    <DataTable
      label="Instances"
      columns={[
        "Instance",
        "Role",
        "URL",
        { label: "Heartbeat age", class: "num" },
        "State",
        { label: "Render slots free / max", class: "num" },
        "SFU",
        "Draining",
        "Started",
      ]}
    >
      {props.instances.map((i) => (
        <tr key={i.id} data-instance-id={i.id}>
          <td data-label="Instance">
            <InstanceId id={i.id} />
          </td>
          <td data-label="Role">{i.role}</td>
          <td data-label="URL">
            {i.url ?? <span class="muted">—</span>}
          </td>
          <td data-label="Heartbeat age" class="num" data-field="age">
            {Math.max(0, Math.round((props.now - i.heartbeat_at) / 1000))} s
          </td>
          <td data-label="State" data-field="state">
            <Liveness live={i.live} />
          </td>
          <td data-label="Render slots free / max" class="num">
            {i.render
              ? `${i.render.free} / ${i.render.max}`
              : <span class="muted">—</span>}
          </td>
          <td data-label="SFU" data-field="sfu">{yesNo(i.sfu)}</td>
          <td data-label="Draining" data-field="draining">
            {i.draining ? <StatusBadge status="draining" /> : "no"}
          </td>
          <td data-label="Started">
            <Time ms={i.started_at} now={props.now} />
          </td>
        </tr>
      ))}
    </DataTable>
  );
}

/**
 * The instance holding a session: short id, role, URL and liveness, or that its record
 * is gone (the instance stopped, or has been silent for longer than its record lives).
 */
export function InstanceHolder(
  props: { id: string; instance: InstanceView | null },
) {
  const i = props.instance;
  return (
    <span class="row" data-field="holder">
      <a href="/admin/instances">
        <InstanceId id={props.id} />
      </a>
      {i
        ? (
          <>
            <span>{i.role}</span>
            {i.url && <span>{i.url}</span>}
            <Liveness live={i.live} />
            {i.draining && <StatusBadge status="draining" />}
          </>
        )
        : <span class="muted">no instance record (gone)</span>}
    </span>
  );
}
