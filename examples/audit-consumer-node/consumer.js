#!/usr/bin/env node
// sealane audit consumer in JavaScript: reads the deploy events from the deploy stream's mirror
// (and the webhook intake's audit events from their stream), rebuilds each CloudEvent from the
// NATS headers (binary content mode) with the cloudevents SDK, and prints one line per finished
// deploy, CDEvent, webhook audit event and fleet rollout event.
//
//   node consumer.js --nats nats://127.0.0.1:4222 [--since 24h|2025-01-02T15:04:05Z] [--follow=false] [--json]
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";

import { DeliverPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect, credsAuthenticator, nkeyAuthenticator } from "@nats-io/transport-node";

import { Auditor } from "./auditor.js";
import { toCloudEvent } from "./mapping.js";

// The streams read, in this order when not following: the mirror of the deploy stream (its
// sequences are the origin's, whose last one says where a non-following run stops) and the
// webhook intake's audit stream (absent when no intake ever ran).
const STREAMS = [
  { name: "SEALANE_DEPLOY_MIRROR", origin: "SEALANE_DEPLOY", filter: "sealane.deploy.>", required: true },
  { name: "SEALANE_WEBHOOK", origin: "SEALANE_WEBHOOK", filter: "sealane.webhook.>", required: false },
];

const usage = `usage: node consumer.js [--nats URL] [--since 24h|RFC3339] [--follow=false] [--json]
  --nats URL          NATS URL of the sealane pipeline ($SEALANE_NATS_URL, else nats://127.0.0.1:4222)
  --nats-nkey FILE    nkey seed file, e.g. the audit user's of deployments/nats ($SEALANE_NATS_NKEY)
  --nats-creds FILE   .creds file ($SEALANE_NATS_CREDS)
  --nats-tls-ca FILE  CA that verifies the NATS server's certificate ($SEALANE_NATS_TLS_CA)
  --since S           start at this time: RFC 3339, or a duration ago (90s, 30m, 24h, 7d)
  --follow=false      print what is stored and exit (default: keep following)
  --idle SECONDS      with --follow=false, also stop when nothing came for this long (default 3)
  --json              one JSON object a line, and a last one summing up the event types read
  --no-webhook        do not read the webhook audit stream`;

function options() {
  const { values } = parseArgs({
    options: {
      nats: { type: "string", default: process.env.SEALANE_NATS_URL || "nats://127.0.0.1:4222" },
      "nats-nkey": { type: "string", default: process.env.SEALANE_NATS_NKEY || "" },
      "nats-creds": { type: "string", default: process.env.SEALANE_NATS_CREDS || "" },
      "nats-tls-ca": { type: "string", default: process.env.SEALANE_NATS_TLS_CA || "" },
      since: { type: "string", default: "" },
      follow: { type: "string", default: "true" },
      idle: { type: "string", default: "3" },
      json: { type: "boolean", default: false },
      "no-webhook": { type: "boolean", default: false },
      help: { type: "boolean", short: "h", default: false },
    },
  });
  if (values.help) {
    console.log(usage);
    process.exit(0);
  }
  if (!["true", "false"].includes(values.follow)) {
    throw new Error(`--follow=${values.follow}: want true or false`);
  }
  const idle = Number(values.idle);
  if (!(idle > 0)) {
    throw new Error(`--idle ${values.idle}: want a number of seconds`);
  }
  return { ...values, follow: values.follow === "true", idleMs: idle * 1000, startTime: parseSince(values.since) };
}

// parseSince reads --since: an RFC 3339 time or a duration ago; "" is everything kept.
export function parseSince(s) {
  if (!s) {
    return undefined;
  }
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/.exec(s);
  if (m) {
    const unit = { ms: 1, s: 1e3, m: 60e3, h: 3600e3, d: 86400e3 }[m[2]];
    return new Date(Date.now() - Number(m[1]) * unit).toISOString();
  }
  if (/^\d{4}-\d\d-\d\dT/.test(s) && !Number.isNaN(Date.parse(s))) {
    return new Date(s).toISOString();
  }
  throw new Error(`--since ${JSON.stringify(s)}: want an RFC 3339 time or a duration ago (24h)`);
}

// redact hides the credentials of a URL ("nats://user:pass@host" → "nats://***@host").
export function redact(url) {
  return String(url).replace(/([A-Za-z][A-Za-z0-9+.-]*:\/\/)[^/@\s,]*@/g, "$1***@");
}

// natsOptions turns --nats into connection options: credentials in a URL ("nats://user:pass@host",
// "nats://token@host") become user and password, or a token.
export function natsOptions(urls) {
  const opts = { servers: [], name: "sealane-audit-consumer-node" };
  for (const raw of urls.split(",")) {
    const u = new URL(raw.trim());
    if (u.username && u.password) {
      Object.assign(opts, { user: decodeURIComponent(u.username), pass: decodeURIComponent(u.password) });
    } else if (u.username) {
      opts.token = decodeURIComponent(u.username);
    }
    u.username = "";
    u.password = "";
    opts.servers.push(u.toString().replace(/\/$/, ""));
  }
  return opts;
}

async function connectNATS(o) {
  let opts;
  try {
    opts = natsOptions(o.nats);
  } catch {
    throw new Error(`--nats ${redact(o.nats)}: not a URL`);
  }
  if (o["nats-nkey"]) {
    opts.authenticator = nkeyAuthenticator(new TextEncoder().encode(readFileSync(o["nats-nkey"], "utf8").trim()));
  } else if (o["nats-creds"]) {
    opts.authenticator = credsAuthenticator(readFileSync(o["nats-creds"]));
  }
  if (o["nats-tls-ca"]) {
    opts.tls = { caFile: o["nats-tls-ca"] };
  }
  try {
    return await connect(opts);
  } catch (err) {
    throw new Error(`connect to ${redact(o.nats)}: ${err.message}`);
  }
}

// lastSequence is the last stored sequence of a stream, or undefined when it does not exist.
async function lastSequence(jsm, name) {
  try {
    return (await jsm.streams.info(name)).state.last_seq;
  } catch (err) {
    if (/stream not found/i.test(err.message)) {
      return undefined;
    }
    throw new Error(`stream ${name}: ${err.message}`);
  }
}

// waitForStream returns once the stream exists: a follower may start before the pipeline (or
// before any webhook intake) created it. It says once on stderr that it waits.
async function waitForStream(jsm, name, everyMs = 2000) {
  if ((await lastSequence(jsm, name)) !== undefined) {
    return;
  }
  console.error(`stream ${name} not found yet: waiting for a sealane pipeline to create it`);
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, everyMs));
    if ((await lastSequence(jsm, name)) !== undefined) {
      return;
    }
  }
}

// readStream feeds every message of one stream to the auditor through an ordered consumer (an
// ephemeral pull consumer without acks, in stream order), from the start or o.startTime.
// Following, it waits for a stream not created yet; not following, it stops at the stream's
// last sequence at start, or when nothing came for o.idleMs (a missing optional stream is
// skipped, a missing deploy stream fails).
async function readStream(js, jsm, s, o, auditor, summary) {
  if (o.follow) {
    await waitForStream(jsm, s.name);
  }
  const last = await lastSequence(jsm, s.origin);
  if (last === undefined) {
    if (s.required) {
      throw new Error(`stream ${s.origin} not found: no sealane pipeline has run on this NATS`);
    }
    return;
  }
  summary.lastSequence[s.name] = 0;
  if (!o.follow && last === 0) {
    return;
  }
  // one filter subject: the consumer is created on $JS.API.CONSUMER.CREATE.<stream>.<name>.<filter>,
  // the form the audit user may use (deployments/nats/permissions.conf)
  const cfg = { filter_subjects: s.filter, deliver_policy: DeliverPolicy.All };
  if (o.startTime) {
    Object.assign(cfg, { deliver_policy: DeliverPolicy.StartTime, opt_start_time: o.startTime });
  }
  const consumer = await js.consumers.get(s.name, cfg);
  const take = (m) => {
    summary.lastSequence[s.name] = m.seq;
    try {
      auditor.handle(toCloudEvent(m.headers, m.data));
    } catch (err) {
      summary.skipped++;
      console.error(`skipping message ${m.seq} of ${s.name} on ${m.subject}: ${err.message}`);
    }
  };
  if (o.follow) {
    // consume keeps pulling: each message is handed over as it arrives
    for await (const m of await consumer.consume({ max_messages: 256 })) {
      take(m);
    }
    return;
  }
  for (;;) {
    const batch = await consumer.fetch({ max_messages: 256, expires: o.idleMs });
    let got = 0;
    for await (const m of batch) {
      got++;
      take(m);
      if (m.seq >= last) {
        return;
      }
    }
    if (got === 0) {
      return; // caught up: the rest is before --since or not mirrored yet
    }
  }
}

async function main() {
  const o = options();
  const nc = await connectNATS(o);
  try {
    // checkAPI false: the audit user may not read the account information
    const jsm = await jetstreamManager(nc, { checkAPI: false });
    const js = jetstream(nc);
    const summary = { kind: "summary", events: 0, skipped: 0, types: {}, lastSequence: {} };
    const auditor = new Auditor((record, line) => console.log(o.json ? JSON.stringify(record) : line));
    const streams = STREAMS.filter((s) => !(o["no-webhook"] && s.name === "SEALANE_WEBHOOK"));
    if (o.follow) {
      await Promise.all(streams.map((s) => readStream(js, jsm, s, o, auditor, summary)));
    } else {
      for (const s of streams) {
        await readStream(js, jsm, s, o, auditor, summary);
      }
    }
    if (o.json) {
      console.log(JSON.stringify({ ...summary, events: auditor.events, types: auditor.types }));
    }
  } finally {
    await nc.close();
  }
}

for (const sig of ["SIGINT", "SIGTERM"]) {
  process.on(sig, () => process.exit(0));
}
main().catch((err) => {
  console.error(`audit-consumer-node: ${err.message}`);
  process.exit(1);
});
