package webhook

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"mime"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sync/semaphore"
	"golang.org/x/time/rate"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/githook"
	"github.com/sealane/sealane/pkg/metrics"
)

// HookPrefix starts the URL path of every receiver: /hooks/<receiver id>.
const HookPrefix = "/hooks/"

// Defaults of HandlerOptions.
const (
	DefaultBodyTimeout = 10 * time.Second
	DefaultBodyBudget  = 4 << 20
)

// Sink is where the handler's decisions go: Start records a delivery and publishes its
// deploys, Audit publishes one audit event. NATSSink is the production one.
type Sink interface {
	// Start records the delivery under sub.Key and sub.IDKey create-only and publishes its
	// deploys; for a delivery recorded before under either key it publishes nothing and
	// returns the earlier deploy ids with duplicate set.
	Start(ctx context.Context, sub Submission) (started []Started, duplicate bool, err error)
	// Audit publishes one audit event; a failure is logged by the sink, never answered.
	Audit(ctx context.Context, a Audit)
}

// Submission is an accepted delivery: its deduplication keys and the deploys it starts, with
// their deterministic ids.
type Submission struct {
	Receiver *Receiver
	// Key is the digest of the signed content (githook.ContentDigest): a replay under a fresh
	// delivery id has the same. The deploy ids derive from it.
	Key string
	// IDKey is the digest of the delivery id the sender gave, "" without one.
	IDKey    string
	Delivery githook.Delivery
	Deploys  []Deploy
	IDs      []string
}

// Started is one deploy a delivery started.
type Started struct {
	DeployID string `json:"deployId,omitempty"`
	// RolloutID is the fleet rollout a rollout route started (DeployID empty).
	RolloutID string        `json:"rolloutId,omitempty"`
	Target    events.Target `json:"target"`
	Route     int           `json:"route"`
}

// Audit is one webhook audit event: its type, the deploy it is about (if any) and its payload.
type Audit struct {
	Type     events.Type
	Target   events.Target
	DeployID string
	Data     events.WebhookData
}

// HandlerOptions bound what one request may cost.
type HandlerOptions struct {
	// BodyTimeout bounds reading one request's body (a slow body is answered 408).
	BodyTimeout time.Duration
	// BodyBudget bounds the bytes of request bodies held at once across all requests; a
	// request waits for its share (its Content-Length, or its receiver's cap) up to BodyTimeout.
	BodyBudget int64
	// Now is the clock (tests); nil is time.Now.
	Now func() time.Time
	// Metrics, if set, counts the requests by provider and outcome and the deploys requested.
	Metrics *metrics.Metrics
	// Limits bound unauthenticated requests: per client address and in all, before anything
	// is read (zero fields: DefaultLimits).
	Limits Limits
}

// Handler serves /hooks/<id>: it checks each request in the documented order (client and
// global rate, method, receiver, content type, size, signature, receiver rate, payload),
// routes its pushes and hands the deploys to its Sink. The configuration may be replaced at
// any time with Apply.
type Handler struct {
	sink   Sink
	log    *zap.Logger
	opts   HandlerOptions
	budget *semaphore.Weighted
	// bodies bounds the bodies being read at once; sources the requests and bodies of each
	// client address, global those of all.
	bodies  *semaphore.Weighted
	sources *sources
	global  *rate.Limiter
	// refused sums up refused requests in one audit event per interval.
	refused *refusals
	// readingBodies counts the bodies holding a slot, peakBodies its highest value (tests).
	readingBodies, peakBodies atomic.Int64
	state                     atomic.Pointer[handlerState]
	// inflight counts requests being handled (Wait).
	inflight sync.WaitGroup
}

// handlerState is one configuration with what the handler derived from it.
type handlerState struct {
	cfg      *Config
	secrets  map[string][]githook.Secret
	limiters map[string]*rate.Limiter
}

// NewHandler returns a handler for cfg (nil: every receiver unknown until Apply).
func NewHandler(cfg *Config, sink Sink, log *zap.Logger, opts HandlerOptions) (*Handler, error) {
	if opts.BodyTimeout <= 0 {
		opts.BodyTimeout = DefaultBodyTimeout
	}
	if opts.BodyBudget <= 0 {
		opts.BodyBudget = DefaultBodyBudget
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if err := opts.Limits.Validate(); err != nil {
		return nil, err
	}
	opts.Limits = opts.Limits.withDefaults()
	l := opts.Limits
	h := &Handler{sink: sink, log: log, opts: opts, budget: semaphore.NewWeighted(opts.BodyBudget),
		bodies: semaphore.NewWeighted(int64(l.MaxBodies)), sources: newSources(l),
		global: rate.NewLimiter(rate.Limit(l.GlobalRate), l.GlobalBurst)}
	h.refused = newRefusals(l.AuditInterval, opts.Now, sink.Audit)
	if cfg == nil {
		cfg = &Config{}
	}
	if err := h.Apply(cfg); err != nil {
		return nil, err
	}
	return h, nil
}

// Apply makes cfg the configuration of the requests that arrive from now on; requests being
// handled finish with the one they started with. A receiver whose rate limit is unchanged
// keeps its limiter's state.
func (h *Handler) Apply(cfg *Config) error {
	old := h.state.Load()
	st := &handlerState{cfg: cfg, secrets: map[string][]githook.Secret{}, limiters: map[string]*rate.Limiter{}}
	for i := range cfg.Receivers {
		rcv := &cfg.Receivers[i]
		for j, raw := range rcv.Secrets() {
			s, err := githook.NewSecret(raw)
			if err != nil {
				return fmt.Errorf("receiver %s: secrets[%d]: %w", rcv.ID, j, err)
			}
			st.secrets[rcv.ID] = append(st.secrets[rcv.ID], s)
		}
		every := rate.Every(time.Minute / time.Duration(rcv.RateLimit.PerMinute))
		if old != nil {
			if l, ok := old.limiters[rcv.ID]; ok && l.Limit() == every && l.Burst() == rcv.RateLimit.Burst {
				st.limiters[rcv.ID] = l
				continue
			}
		}
		st.limiters[rcv.ID] = rate.NewLimiter(every, rcv.RateLimit.Burst)
	}
	h.state.Store(st)
	return nil
}

// Wait blocks until every request being handled has been answered, then publishes the
// summary of the requests refused so far.
func (h *Handler) Wait() {
	h.inflight.Wait()
	h.refused.Flush()
}

// Limits are the handler's limits, defaults filled in.
func (h *Handler) Limits() Limits { return h.opts.Limits }

// reply is how a request was answered: status, the body's status word and reason, and the
// audit event type (none for an accepted or duplicate delivery, whose events the sink path
// publishes per deploy).
type reply struct {
	status int
	word   string // accepted, duplicate, ignored, rejected
	reason string
	// why is a refusal's reason as the audit summary counts it: one short word, never text
	// from the request (reason may say more to the sender).
	why     string
	started []Started
	retry   time.Duration
	unread  bool // the body was not read to its end
}

// rejected is a refusal: why is its audit reason (a word), detail what the answer adds.
func rejected(status int, why, detail string) reply {
	reason := why
	if detail != "" {
		reason += ": " + detail
	}
	return reply{status: status, word: "rejected", reason: reason, why: why}
}

// unreadBody is a refusal that leaves the body unread.
func unreadBody(status int, why, detail string) reply {
	rep := rejected(status, why, detail)
	rep.unread = true
	return rep
}

func ignored(reason string) reply {
	return reply{status: http.StatusOK, word: "ignored", reason: reason}
}

// request is one request being handled: its receiver (nil: unknown), client address, and
// what the audit event says about it.
type request struct {
	rcv  *Receiver
	addr string
	data events.WebhookData
}

// ServeHTTP handles one delivery.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.inflight.Add(1)
	defer h.inflight.Done()
	st := h.state.Load()
	id := strings.TrimPrefix(r.URL.Path, HookPrefix)
	addr := h.opts.Limits.clientAddr(r)
	req := &request{addr: addr, data: events.WebhookData{Receiver: auditableID(id), RemoteAddr: addr}}
	rcv, known := st.cfg.Receiver(id)
	provider := "unknown"
	if known {
		req.rcv, req.data.Provider, provider = rcv, rcv.Type, rcv.Type
	}
	rep := h.admit(r, addr)
	if rep.status == 0 {
		rep = h.handle(w, r, st, req)
	}
	if rep.word == "rejected" { // counted before the answer: once refused, the summary holds it
		h.countRefusal(req, rep)
	}
	h.answer(w, rep)
	h.opts.Metrics.WebhookRequest(provider, rep.word)
	if rep.word == "accepted" { // a duplicate names the deploys its first delivery requested
		h.opts.Metrics.WebhookDeploys(rcv.Type, len(rep.started))
	}
	_ = http.NewResponseController(w).Flush() // the sender has its answer; the audit event follows
	h.audit(r.Context(), req, rep)
}

// admit applies the limits of the client's address and of all clients, before anything
// else: a refusal leaves the body unread.
func (h *Handler) admit(r *http.Request, addr string) reply {
	now := h.opts.Now()
	if ok, wait := h.sources.allow(addr, now); !ok {
		rep := unreadBody(http.StatusTooManyRequests, "source rate", "too many requests from your address")
		rep.retry = wait
		return rep
	}
	if res := h.global.ReserveN(now, 1); res.DelayFrom(now) > 0 {
		res.CancelAt(now)
		rep := unreadBody(http.StatusTooManyRequests, "global rate", "too many requests; retry later")
		rep.retry = time.Second
		return rep
	}
	return reply{}
}

// handle runs the checks and, for a delivery that passes them, routes and submits it.
// Unknown and known receivers answer a method other than POST alike.
func (h *Handler) handle(w http.ResponseWriter, r *http.Request, st *handlerState, req *request) reply {
	if r.Method != http.MethodPost {
		return unreadBody(http.StatusMethodNotAllowed, "method", "only POST")
	}
	rcv := req.rcv
	if rcv == nil {
		rep := unreadBody(http.StatusNotFound, "unknown receiver", "")
		rep.reason = "" // a plain 404
		return rep
	}
	if !githook.AcceptsContentType(rcv.Type, mediaType(r.Header.Get("Content-Type"))) {
		return unreadBody(http.StatusUnsupportedMediaType, "content type", "want application/json")
	}
	body, release, rep, ok := h.readBody(w, r, req.addr, rcv.MaxBodySize) // body.go
	if !ok {
		return rep
	}
	defer release()
	greq := githook.Request{Header: r.Header, Body: body, Now: h.opts.Now()}
	if err := githook.Verify(rcv.Type, greq, st.secrets[rcv.ID]); err != nil {
		return rejected(http.StatusUnauthorized, "signature", "")
	}
	if res := st.limiters[rcv.ID].Reserve(); res.Delay() > 0 {
		res.Cancel()
		rep := rejected(http.StatusTooManyRequests, "rate", "")
		rep.retry = res.Delay()
		return rep
	}
	d, err := githook.Parse(rcv.Type, greq)
	if err != nil {
		return rejected(http.StatusBadRequest, "malformed", bounded(err.Error()))
	}
	req.data.DeliveryID, req.data.Event = bounded(d.ID), bounded(d.Event)
	return h.route(r.Context(), req, d, deliveryKeys(rcv.ID, d.ID, githook.ContentDigest(rcv.Type, greq, st.secrets[rcv.ID])))
}

// route picks the deploys of a verified delivery and submits them.
func (h *Handler) route(ctx context.Context, req *request, d githook.Delivery, keys Submission) reply {
	rcv := req.rcv
	if len(d.Pushes) > 0 {
		p := d.Pushes[0]
		req.data.Repository, req.data.Ref, req.data.Commit, req.data.Sender = bounded(p.Repository), bounded(p.Ref), bounded(p.Commit), bounded(p.Sender)
	}
	switch {
	case d.Kind == githook.KindPing:
		return ignored("ping")
	case d.Kind != githook.KindPush && d.Kind != githook.KindTagPush:
		return ignored("event " + bounded(d.Event) + " is not a push")
	}
	sub := Submission{Receiver: rcv, Key: keys.Key, IDKey: keys.IDKey, Delivery: d}
	var why []string
	for _, p := range d.Pushes {
		deploys, reason, err := routePush(rcv, p)
		if err != nil {
			return rejected(http.StatusUnprocessableEntity, "route", bounded(err.Error()))
		}
		if reason != "" {
			why = append(why, reason)
		}
		sub.Deploys = append(sub.Deploys, deploys...)
	}
	if len(sub.Deploys) == 0 {
		return ignored(bounded(strings.Join(why, "; ")))
	}
	sub.IDs = DeployIDs(sub.Key, len(sub.Deploys))
	started, dup, err := h.sink.Start(ctx, sub)
	if err != nil {
		h.log.Error("webhook delivery not submitted", zap.String("receiver", rcv.ID), zap.String("delivery", bounded(d.ID)), zap.Error(err))
		rep := rejected(http.StatusServiceUnavailable, "unavailable", "the deploy request could not be stored; retry")
		rep.retry = 5 * time.Second
		return rep
	}
	if dup {
		return reply{status: http.StatusOK, word: "duplicate", reason: "duplicate of " + startedNames(started), started: started}
	}
	return reply{status: http.StatusAccepted, word: "accepted", started: started}
}

// routePush returns the deploys of one push: none, with the reason, for a deletion, an event
// the receiver does not take or a push no route matches.
func routePush(rcv *Receiver, p githook.Push) ([]Deploy, string, error) {
	ref := p.Repository + " " + p.Ref
	switch {
	case p.Deleted:
		return nil, "deletion of " + ref + " deploys nothing", nil
	case !rcv.AllowsEvent(string(p.Kind)):
		return nil, string(p.Kind) + " is not in the receiver's events", nil
	}
	var out []Deploy
	for _, rt := range rcv.MatchRoutes(routedPush(p)) {
		d, err := rt.Resolve(routedPush(p))
		if err != nil {
			return nil, "", err // names the route
		}
		out = append(out, d)
	}
	if len(out) == 0 {
		return nil, "no route for " + ref, nil
	}
	return out, "", nil
}

// routedPush is the routing view of a parsed push.
func routedPush(p githook.Push) Push {
	return Push{Kind: string(p.Kind), Repository: p.Repository, RepositoryURL: p.RepositoryURL, Ref: p.Ref,
		Branch: p.Branch, Tag: p.Tag, Before: p.Before, Commit: p.Commit, Sender: p.Sender, Deleted: p.Deleted}
}

// countRefusal counts a refused request for the interval's summary (its only audit record).
func (h *Handler) countRefusal(req *request, rep reply) {
	receiver := unknownReceiver
	if req.rcv != nil {
		receiver = req.rcv.ID
	}
	h.refused.add(receiver, rep.why, rep.status, req.addr)
}

// audit publishes the request's audit events: one per deploy for an accepted or duplicate
// delivery, one for an ignored one; a refusal was counted before its answer.
func (h *Handler) audit(ctx context.Context, req *request, rep reply) {
	if rep.word == "rejected" {
		return
	}
	data := req.data
	data.Status, data.Reason = rep.status, rep.reason
	typ := map[string]events.Type{"accepted": events.WebhookAccepted, "duplicate": events.WebhookDuplicate,
		"ignored": events.WebhookIgnored}[rep.word]
	if typ == "" {
		typ = events.WebhookRejected
	}
	if len(rep.started) == 0 {
		h.sink.Audit(ctx, Audit{Type: typ, Target: events.NoTarget, Data: data})
		return
	}
	for _, s := range rep.started {
		data.DeployID, data.RolloutID, data.Route = s.DeployID, s.RolloutID, &s.Route
		h.sink.Audit(ctx, Audit{Type: typ, Target: s.Target, DeployID: s.DeployID, Data: data})
	}
}

// deliveryKeys are the deduplication keys of a delivery (Submission.Key and IDKey): the
// receiver and the digest of the signed content, and of the delivery id when there is one.
func deliveryKeys(receiver, id string, content [sha256.Size]byte) Submission {
	keys := Submission{Key: receiver + ".c" + hex.EncodeToString(content[:16])}
	if id != "" {
		sum := sha256.Sum256([]byte("id\x00" + id))
		keys.IDKey = receiver + "." + hex.EncodeToString(sum[:16])
	}
	return keys
}

// mediaType is the content type without parameters, lowercased.
func mediaType(ct string) string {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return ""
	}
	return mt
}

// remoteHost is the client's address without the port.
func remoteHost(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// auditableID is a receiver id from a URL as an audit event may quote it: ids are
// [a-z0-9-], at most 63 characters; anything else is replaced.
func auditableID(id string) string {
	if len(id) > 63 {
		return "(invalid id)"
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return "(invalid id)"
		}
	}
	return id
}
