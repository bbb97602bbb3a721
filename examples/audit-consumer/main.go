// Command audit-consumer prints who deployed what, where and with which result, from
// sealane's deploy stream. It imports only sealane's public events module and nats.go: no
// Kubernetes, no Helm, no sealane internals.
//
//	audit-consumer --nats nats://127.0.0.1:4222 [--since 24h|2025-01-02T15:04:05Z] [--follow=false]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sealane/sealane/events"
)

// stream is the mirror of the deploy stream (origin) that readers follow: every deploy event,
// with the origin's sequences, and no right needed on the origin's consumers, which are the
// stages' work.
const (
	stream = "SEALANE_DEPLOY_MIRROR"
	origin = "SEALANE_DEPLOY"
)

// maxPending bounds the requests remembered while their deploy runs.
const maxPending = 10000

func main() {
	natsURL := flag.String("nats", envOr("SEALANE_NATS_URL", nats.DefaultURL), "NATS URL of the sealane pipeline ($SEALANE_NATS_URL)")
	flag.Lookup("nats").DefValue = redactURL(*natsURL) // -help prints no URL credentials
	since := flag.String("since", "", "start at this time: RFC 3339, or a duration ago (24h); default: everything kept")
	follow := flag.Bool("follow", true, "keep printing new deploys; false: exit once the stored events are printed")
	creds := flag.String("nats-creds", os.Getenv("SEALANE_NATS_CREDS"), "NATS .creds file ($SEALANE_NATS_CREDS)")
	nkey := flag.String("nats-nkey", os.Getenv("SEALANE_NATS_NKEY"), "NATS nkey seed file, e.g. the audit user's of deployments/nats ($SEALANE_NATS_NKEY)")
	ca := flag.String("nats-tls-ca", os.Getenv("SEALANE_NATS_TLS_CA"), "CA that verifies the NATS server's certificate ($SEALANE_NATS_TLS_CA)")
	flag.Parse()
	var opts []nats.Option
	if *creds != "" {
		opts = append(opts, nats.UserCredentials(*creds))
	}
	if *nkey != "" {
		o, err := nats.NkeyOptionFromSeed(*nkey)
		if err != nil {
			fmt.Fprintln(os.Stderr, "audit-consumer: --nats-nkey:", err)
			os.Exit(2)
		}
		opts = append(opts, o)
	}
	if *ca != "" {
		opts = append(opts, nats.RootCAs(*ca))
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	nc, err := nats.Connect(*natsURL, append([]nats.Option{nats.Name("sealane-audit-consumer")}, opts...)...)
	if err != nil {
		fmt.Fprintf(os.Stderr, "audit-consumer: connect to %s: %v\n", redactURL(*natsURL), err)
		os.Exit(1)
	}
	defer nc.Close()
	if err := run(ctx, nc, *since, *follow, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "audit-consumer:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, nc *nats.Conn, since string, follow bool, out io.Writer) error {
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	// Where a non-following run stops: the origin's last event (the mirror may lag behind it).
	s, err := js.Stream(ctx, origin)
	if err != nil {
		return fmt.Errorf("stream %s: %w", origin, err)
	}
	cfg := jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{events.SubjectPrefix + ".>"},
		DeliverPolicy:  jetstream.DeliverAllPolicy,
	}
	if since != "" {
		t, err := parseSince(since)
		if err != nil {
			return err
		}
		cfg.DeliverPolicy, cfg.OptStartTime = jetstream.DeliverByStartTimePolicy, &t
	}
	last := s.CachedInfo().State.LastSeq
	if !follow && last == 0 {
		return nil
	}
	oc, err := js.OrderedConsumer(ctx, stream, cfg)
	if err != nil {
		return err
	}
	it, err := oc.Messages()
	if err != nil {
		return err
	}
	defer it.Stop()
	a := &auditor{out: out, requests: map[string]request{}}
	for {
		next, cancel := ctx, context.CancelFunc(func() {})
		if !follow {
			// Caught up when nothing more comes for a while (the events before --since are skipped).
			next, cancel = context.WithTimeout(ctx, 2*time.Second)
		}
		msg, err := it.Next(jetstream.NextContext(next))
		cancel()
		if err != nil {
			if ctx.Err() != nil || !follow && errors.Is(err, context.DeadlineExceeded) {
				return nil
			}
			return err
		}
		e, err := events.Decode(msg.Headers(), msg.Data())
		if err != nil {
			fmt.Fprintf(os.Stderr, "skipping message on %s: %v\n", msg.Subject(), err)
		} else {
			a.handle(events.Type(e.Type()), events.CorrelationID(e), e.Time(), func(v any) error { return events.DecodeData(e, v) })
		}
		if md, err := msg.Metadata(); err == nil && !follow && md.Sequence.Stream >= last {
			return nil
		}
	}
}

// request is what the deploy.requested event of a running deploy said.
type request struct {
	by, what string
	op       events.Operation
}

// auditor turns events into one line per finished deploy.
type auditor struct {
	out      io.Writer
	requests map[string]request // by deploy id (correlation id)
}

// handle takes one event: its type, deploy id, time and a payload decoder.
func (a *auditor) handle(t events.Type, id string, at time.Time, decode func(any) error) {
	switch {
	case t == events.DeployRequested:
		var d events.RequestedData
		if decode(&d) != nil {
			return
		}
		if len(a.requests) >= maxPending {
			for k := range a.requests { // forget one: its deploy never ended in this window
				delete(a.requests, k)
				break
			}
		}
		what := "chart " + d.Chart.Name + " " + d.Chart.Version
		if d.Operation != "" && d.Operation != events.OperationDeploy {
			what = string(d.Operation)
		}
		a.requests[id] = request{by: d.RequestedBy, what: what, op: d.Operation}
	case t == events.ReleaseRecorded:
		var d events.RecordedData
		if decode(&d) != nil {
			return
		}
		req, ok := a.requests[id]
		delete(a.requests, id)
		if !ok {
			req = request{what: "?"} // requested before the start of the window
		}
		if d.RequestedBy != "" { // the recorder's word: a client name the renderer verified, or the claim
			req.by = d.RequestedBy
			if d.RequestedByVerified {
				req.by += " (verified)"
			}
		}
		result := string(d.Outcome)
		switch {
		case d.UpToDate:
			result += ", up to date"
		case d.Status != "":
			result += " (" + d.Status + ")"
		}
		if d.Reason != "" {
			result += ": " + oneLine(d.Reason)
		}
		fmt.Fprintf(a.out, "%s deploy %s by %s: %s → %s/%s/%s revision %d: %s\n",
			at.UTC().Format(time.RFC3339), id, orUnknown(req.by), req.what,
			d.Target.Cluster, d.Target.Namespace, d.Target.Release, d.Revision, result)
	case t == events.CDPipelineRunFinished:
		var d events.CDPipelineRunEvent
		if decode(&d) != nil {
			return
		}
		fmt.Fprintf(a.out, "%s cdevent %s run %s %s: %s: %s\n", d.Context.Timestamp.UTC().Format(time.RFC3339),
			d.Context.Type, d.Subject.ID, d.Subject.Content.PipelineName, d.Subject.Content.Outcome, orUnknown(d.Subject.Content.Errors))
	case events.IsCDServiceEvent(t):
		var d events.CDEvent
		if decode(&d) != nil {
			return
		}
		fmt.Fprintf(a.out, "%s cdevent %s service %s in %s artifact %s\n", d.Context.Timestamp.UTC().Format(time.RFC3339),
			d.Context.Type, d.Subject.ID, d.Subject.Content.Environment.ID, orUnknown(d.Subject.Content.ArtifactID))
	}
}

func parseSince(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return time.Time{}, fmt.Errorf("--since %q: want an RFC 3339 time or a duration ago (24h)", s)
	}
	return time.Now().Add(-d), nil
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func orUnknown(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// userinfo finds a URL's credentials ("scheme://user:pass@"), never printed.
var userinfo = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://)[^/@\s,]*@`)

// redactURL hides the credentials of the URLs in s.
func redactURL(s string) string { return userinfo.ReplaceAllString(s, "${1}***@") }
