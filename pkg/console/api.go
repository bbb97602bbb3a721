package console

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"sort"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/coordinator"
)

//go:embed web
var webFiles embed.FS

// loginPage is the form that takes the token once and sets the session cookie.
//
//go:embed web/login.html
var loginPage []byte

// Handler returns the console's HTTP handler: the page, its assets, the JSON API and the
// event stream, behind the access guard (only /healthz, /readyz and /login are open); a
// console without access control answers only requests addressed to loopback (hostGuard).
func (s *Server) Handler() http.Handler {
	static, _ := fs.Sub(webFiles, "web")
	mux := http.NewServeMux()
	mux.Handle("GET /", http.FileServerFS(static))
	mux.HandleFunc("GET /api/stream", s.stream)
	mux.HandleFunc("GET /api/deploys", s.deploys)
	mux.HandleFunc("GET /api/deploys/{id}", s.deployDetail)
	mux.HandleFunc("GET /api/releases", s.releases)
	mux.HandleFunc("GET /api/releases/{cluster}/{namespace}/{release}", s.releaseHistory) // records.go
	mux.HandleFunc("GET /api/rollouts", s.rolloutList)
	mux.HandleFunc("GET /api/rollouts/{id}", s.rolloutDetail)
	mux.HandleFunc("GET /api/deadletters", s.deadLetters)
	root := http.NewServeMux()
	root.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	root.HandleFunc("GET /readyz", s.readyz)
	root.HandleFunc("/login", s.guard.login)
	root.Handle("GET /style.css", http.FileServerFS(static)) // the login page's look: no secret in it
	root.Handle("/", s.guard.wrap(mux))
	return secureHeaders(s.guard.hostGuard(root))
}

// secureHeaders keeps the page from being framed, sniffed or leaking its URLs, and lets it
// load scripts and styles from itself only.
func secureHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		next.ServeHTTP(w, r)
	})
}

func (s *Server) writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if err := json.NewEncoder(w).Encode(v); err != nil {
		s.log.Debug("write response", zap.Error(err))
	}
}

func (s *Server) deploys(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	list := s.model.list()
	s.mu.Unlock()
	s.writeJSON(w, list)
}

// deployDetailResponse is a deploy with every event kept of it.
type deployDetailResponse struct {
	Deploy  Deploy  `json:"deploy"`
	Entries []Entry `json:"entries"`
}

func (s *Server) deployDetail(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	d, entries, ok := s.model.detail(r.PathValue("id"))
	s.mu.Unlock()
	if !ok {
		http.Error(w, "no such deploy in the console's window", http.StatusNotFound)
		return
	}
	s.writeJSON(w, deployDetailResponse{Deploy: d, Entries: entries})
}

func (s *Server) releases(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	list := s.model.releaseList()
	s.mu.Unlock()
	s.writeJSON(w, list)
}

// The bounds of the rollout list: the newest listRollouts, or ?limit= up to maxListRollouts.
const (
	listRollouts    = 50
	maxListRollouts = 500
)

// rolloutList answers the newest rollouts (?limit=), each with its summary and its default
// page of clusters; X-Total-Count says how many there are in all.
func (s *Server) rolloutList(w http.ResponseWriter, r *http.Request) {
	limit := listRollouts
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxListRollouts {
			http.Error(w, fmt.Sprintf("limit=%q: want 1 to %d", v, maxListRollouts), http.StatusBadRequest)
			return
		}
		limit = n
	}
	ctx, cancel := context.WithTimeout(r.Context(), callTimeout)
	defer cancel()
	recs, err := s.listRollouts(ctx)
	if err != nil {
		s.log.Warn("list rollouts", zap.Error(err))
		http.Error(w, "list rollouts: "+bus.RedactURL(err.Error()), http.StatusBadGateway)
		return
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].State.CreatedAt.After(recs[j].State.CreatedAt) })
	w.Header().Set("X-Total-Count", strconv.Itoa(len(recs)))
	out := make([]rolloutView, 0, min(len(recs), limit))
	for _, rec := range recs[:min(len(recs), limit)] {
		v, err := viewRollout(rec, clusterFilter{})
		if err != nil {
			s.log.Warn("rollout view", zap.String("rollout", rec.State.ID), zap.Error(err))
			continue
		}
		out = append(out, v)
	}
	s.writeJSON(w, out)
}

// listRollouts reads every rollout record; none when no coordinator made the bucket yet.
func (s *Server) listRollouts(ctx context.Context) ([]*coordinator.Record, error) {
	kv, err := coordinator.OpenBucket(ctx, s.src, false)
	if errors.Is(err, coordinator.ErrNoRollouts) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return coordinator.Store{KV: kv}.List(ctx)
}

// rolloutDetail answers one rollout with its summary and the page of its clusters
// ?state=&wave=&offset=&limit= asks for.
func (s *Server) rolloutDetail(w http.ResponseWriter, r *http.Request) {
	f, err := parseClusterFilter(r.URL.Query())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), callTimeout)
	defer cancel()
	id := r.PathValue("id")
	kv, err := coordinator.OpenBucket(ctx, s.src, false)
	var rec *coordinator.Record
	if err == nil {
		rec, _, err = coordinator.Store{KV: kv}.Get(ctx, id)
	}
	switch {
	case errors.Is(err, coordinator.ErrNoRollouts) || errors.Is(err, coordinator.ErrNotFound):
		http.Error(w, "no rollout "+id, http.StatusNotFound)
		return
	case err != nil:
		s.log.Warn("read rollout", zap.String("rollout", id), zap.Error(err))
		http.Error(w, "read rollout: "+bus.RedactURL(err.Error()), http.StatusBadGateway)
		return
	}
	v, err := viewRollout(rec, f)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.writeJSON(w, v)
}

func (s *Server) deadLetters(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), callTimeout)
	defer cancel()
	dls, err := s.src.DeadLetters(ctx)
	if err != nil {
		s.log.Warn("list dead letters", zap.Error(err))
		http.Error(w, "list dead letters: "+bus.RedactURL(err.Error()), http.StatusBadGateway)
		return
	}
	out := make([]bus.DeadLetterView, 0, len(dls))
	for i := len(dls) - 1; i >= 0; i-- { // newest first
		v := dls[i].View()
		v.Reason = bus.RedactURL(v.Reason) // as the stages log errors: no URL credentials
		out = append(out, v)
	}
	s.writeJSON(w, out)
}

// readyz answers 200 while the console can read the pipeline (Options.Ready), 503 otherwise.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if s.opts.Ready != nil {
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		defer cancel()
		if err := s.opts.Ready(ctx); err != nil {
			http.Error(w, "not ready: "+bus.RedactURL(err.Error()), http.StatusServiceUnavailable)
			return
		}
	}
	_, _ = w.Write([]byte("ok\n"))
}
