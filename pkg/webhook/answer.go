package webhook

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// answer writes the reply as JSON.
func (h *Handler) answer(w http.ResponseWriter, rep reply) {
	if rep.retry > 0 {
		w.Header().Set("Retry-After", fmt.Sprint(int((rep.retry+time.Second-1)/time.Second)))
	}
	if rep.status == http.StatusMethodNotAllowed {
		w.Header().Set("Allow", http.MethodPost)
	}
	if rep.unread {
		// the rest of the body is not worth reading (nor waiting for): close the connection
		w.Header().Set("Connection", "close")
	}
	reason := rep.reason
	if rep.status == http.StatusUnauthorized {
		reason = "unauthorized" // no detail about which part of the signature failed
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(rep.status)
	var ids, rollouts []string
	for _, s := range rep.started {
		if s.RolloutID != "" {
			rollouts = append(rollouts, s.RolloutID)
		} else {
			ids = append(ids, s.DeployID)
		}
	}
	_ = json.NewEncoder(w).Encode(struct {
		Status     string   `json:"status"`
		Reason     string   `json:"reason,omitempty"`
		DeployIDs  []string `json:"deployIds,omitempty"`
		RolloutIDs []string `json:"rolloutIds,omitempty"`
	}{rep.word, reason, ids, rollouts})
}

// startedNames names what a delivery started: "deploy ID, ...", "rollout ID, ...".
func startedNames(started []Started) string {
	var deploys, rollouts []string
	for _, s := range started {
		if s.RolloutID != "" {
			rollouts = append(rollouts, s.RolloutID)
		} else {
			deploys = append(deploys, s.DeployID)
		}
	}
	var parts []string
	if len(deploys) > 0 {
		parts = append(parts, "deploy "+strings.Join(deploys, ", "))
	}
	if len(rollouts) > 0 {
		parts = append(parts, "rollout "+strings.Join(rollouts, ", "))
	}
	return strings.Join(parts, "; ")
}
