// The auditor turns sealane's CloudEvents into report lines: one per finished deploy (joining
// deploy.requested and release.recorded by the correlationid extension), one per CDEvent,
// webhook audit event and fleet rollout event. Every other event is only counted.
import { extension } from "./mapping.js";

const REQUESTED = "dev.sealane.deploy.requested.v1";
const RECORDED = "dev.sealane.release.recorded.v1";
const PIPELINERUN_FINISHED = "dev.cdevents.pipelinerun.finished.0.3.0";
const CD_SERVICE = "dev.cdevents.service.";
const WEBHOOK = "dev.sealane.webhook.";
const ROLLOUT = "dev.sealane.rollout.";

// maxPending bounds the requests remembered while their deploy runs.
const maxPending = 10000;

// token is a type's short name: dev.sealane.rollout.wave_started.v1 → wave_started.
export function token(type) {
  const parts = type.split(".");
  return parts.length >= 5 ? parts[parts.length - 2] : type;
}

function oneLine(s) {
  return String(s ?? "").split(/\s+/).filter(Boolean).join(" ");
}

// redactURL hides the credentials a repository URL may hold ("https://user:token@host/...").
function redactURL(s) {
  return String(s ?? "").replace(/([A-Za-z][A-Za-z0-9+.-]*:\/\/)[^/@\s,]*@/g, "$1***@");
}

function orUnknown(s) {
  return s ? String(s) : "-";
}

function seconds(t) {
  if (!t) {
    return "-";
  }
  const d = new Date(t);
  return Number.isNaN(d.getTime()) ? String(t) : d.toISOString().replace(/\.\d+Z$/, "Z");
}

export class Auditor {
  // out(record, line): record is a plain object (for --json), line its text form.
  constructor(out) {
    this.out = out;
    this.requests = new Map(); // deploy id (correlation id) → what deploy.requested said
    this.types = {}; // every type seen, with its count
    this.events = 0;
  }

  handle(event) {
    this.events++;
    this.types[event.type] = (this.types[event.type] ?? 0) + 1;
    const data = event.data ?? {};
    const type = event.type;
    if (type === REQUESTED) {
      this.requested(extension(event, "correlationid"), data);
    } else if (type === RECORDED) {
      this.recorded(event, data);
    } else if (type === PIPELINERUN_FINISHED) {
      this.pipelineRun(event, data);
    } else if (type.startsWith(CD_SERVICE)) {
      this.service(event, data);
    } else if (type.startsWith(WEBHOOK)) {
      this.webhook(event, data);
    } else if (type.startsWith(ROLLOUT)) {
      this.rollout(event, data);
    }
  }

  requested(id, d) {
    if (this.requests.size >= maxPending) {
      this.requests.delete(this.requests.keys().next().value); // the oldest never ended here
    }
    const op = d.operation || "deploy";
    const chart = d.chart ?? {};
    let what = op;
    if (op === "deploy" && chart.name) {
      what = `chart ${chart.name} ${chart.version ?? ""}`.trim();
    } else if (op === "deploy" && chart.git) {
      // a chart in a git repository at one commit (a webhook's push, a fleet rollout of it)
      const path = chart.git.path ? ` ${chart.git.path}` : "";
      what = `chart ${redactURL(chart.git.url)}@${(chart.git.commit ?? "").slice(0, 12)}${path}`;
    } else if (op === "deploy") {
      what = "chart ?";
    }
    this.requests.set(id, { by: d.requestedBy ?? "", what, operation: op, chart });
  }

  recorded(event, d) {
    const id = extension(event, "correlationid");
    const req = this.requests.get(id) ?? { by: "", what: "?", operation: "", chart: {} };
    this.requests.delete(id);
    let by = req.by;
    if (d.requestedBy) {
      by = d.requestedBy; // the recorder's word: a verified client name, or the claim
    }
    let result = d.outcome ?? "";
    if (d.upToDate) {
      result += ", up to date";
    } else if (d.status) {
      result += ` (${d.status})`;
    }
    if (d.reason) {
      result += `: ${oneLine(d.reason)}`;
    }
    const t = d.target ?? {};
    const record = {
      kind: "deploy", time: event.time, type: event.type, deployId: id, by, verified: Boolean(d.requestedByVerified),
      operation: req.operation, chart: { name: req.chart.name ?? "", version: req.chart.version ?? "", git: req.chart.git?.commit ?? "" },
      target: { cluster: t.cluster, namespace: t.namespace, release: t.release }, revision: d.revision ?? 0,
      outcome: d.outcome ?? "", status: d.status ?? "", upToDate: Boolean(d.upToDate), reason: d.reason ?? "",
      rolloutId: extension(event, "rolloutid"),
    };
    const who = orUnknown(by) + (d.requestedByVerified ? " (verified)" : "");
    this.out(record, `${seconds(event.time)} deploy ${id} by ${who}: ${req.what} → ` +
      `${t.cluster}/${t.namespace}/${t.release} revision ${record.revision}: ${result}`);
  }

  pipelineRun(event, d) {
    const ctx = d.context ?? {};
    const subject = d.subject ?? {};
    const c = subject.content ?? {};
    const record = { kind: "cdevent", time: ctx.timestamp, type: event.type, deployId: extension(event, "correlationid"),
      subject: subject.id, pipelineName: c.pipelineName, outcome: c.outcome, errors: c.errors ?? "" };
    this.out(record, `${seconds(ctx.timestamp)} cdevent ${ctx.type} run ${subject.id} ${c.pipelineName}: ${c.outcome}: ${orUnknown(c.errors)}`);
  }

  service(event, d) {
    const ctx = d.context ?? {};
    const subject = d.subject ?? {};
    const c = subject.content ?? {};
    const env = c.environment ?? {};
    const record = { kind: "cdevent", time: ctx.timestamp, type: event.type, deployId: extension(event, "correlationid"),
      subject: subject.id, environment: env.id, artifactId: c.artifactId ?? "" };
    this.out(record, `${seconds(ctx.timestamp)} cdevent ${ctx.type} service ${subject.id} in ${env.id} artifact ${orUnknown(c.artifactId)}`);
  }

  webhook(event, d) {
    const record = { kind: "webhook", time: event.time, type: event.type, receiver: d.receiver, provider: d.provider,
      deliveryId: d.deliveryId ?? "", repository: d.repository ?? "", ref: d.ref ?? "", commit: d.commit ?? "",
      sender: d.sender ?? "", status: d.status, reason: d.reason ?? "", deployId: d.deployId ?? "", rolloutId: d.rolloutId ?? "" };
    let line = `${seconds(event.time)} webhook ${token(event.type)} receiver ${d.receiver} (${d.provider})`;
    if (d.refused) {
      line += `: ${d.refused.total} requests refused since ${seconds(d.refused.since)}`;
    } else {
      line += ` delivery ${orUnknown(d.deliveryId)} ${orUnknown(d.repository)} ${orUnknown(d.ref)} ` +
        `${(d.commit ?? "").slice(0, 12) || "-"} by ${orUnknown(d.sender)}: HTTP ${d.status}`;
    }
    if (d.deployId) {
      line += ` → deploy ${d.deployId}`;
    }
    if (d.rolloutId) {
      line += ` → rollout ${d.rolloutId}`;
    }
    if (d.reason) {
      line += `: ${oneLine(d.reason)}`;
    }
    this.out(record, line);
  }

  rollout(event, d) {
    const id = d.rolloutId || extension(event, "rolloutid");
    const t = d.target ?? {};
    const record = { kind: "rollout", time: event.time, type: event.type, rolloutId: id, phase: d.phase ?? "",
      wave: d.wave ?? "", cluster: d.cluster || t.cluster || "", revision: d.revision ?? 0,
      reason: d.reason ?? "", by: d.requestedBy || d.by || "" };
    if (d.command) {
      record.command = d.command;
    }
    if (typeof d.passed === "boolean") {
      record.passed = d.passed;
    }
    let line = `${seconds(event.time)} rollout ${id} ${token(event.type)}`;
    for (const [k, v] of [["command", d.command], ["by", record.by], ["wave", record.wave], ["cluster", record.cluster],
      ["revision", record.revision || ""], ["phase", record.phase]]) {
      if (v) {
        line += ` ${k} ${v}`;
      }
    }
    if (typeof d.passed === "boolean") {
      line += d.passed ? " passed" : d.undecided ? " undecided" : " not passed";
    }
    if (record.reason) {
      line += `: ${oneLine(record.reason)}`;
    }
    this.out(record, line);
  }
}
