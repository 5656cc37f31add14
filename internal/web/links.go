package web

import (
	"net/http"

	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/ops"
)

// apiLink is POST …/issues/ID/links {"other": "REPO#ID", "kind":
// "relates"|"blocks"}: issue link over HTTP, for agents that only reach
// the forge by HTTPS.
func (s *Server) apiLink(w http.ResponseWriter, r *http.Request) error {
	ref, err := idRef(r)
	if err != nil {
		return err
	}
	token, err := leaseToken(r)
	if err != nil {
		return err
	}
	var b struct {
		Other string `json:"other"`
		Kind  string `json:"kind"`
	}
	if err := decode(r, &b); err != nil {
		return err
	}
	if b.Other == "" {
		return fault.New(fault.Usage, `give "other": the issue to link, as REPO#ID or #ID`)
	}
	l, err := s.ops.LinkIssue(r.Context(), actor(r), ops.LinkIssue{Issue: ref, Other: b.Other, Kind: b.Kind, LeaseToken: token})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, l)
	return nil
}

// apiUnlink is DELETE …/issues/ID/links?other=REPO%23ID: issue unlink.
func (s *Server) apiUnlink(w http.ResponseWriter, r *http.Request) error {
	ref, err := idRef(r)
	if err != nil {
		return err
	}
	token, err := leaseToken(r)
	if err != nil {
		return err
	}
	other := r.URL.Query().Get("other")
	if other == "" {
		return fault.New(fault.Usage, "give ?other=REPO%%23ID: the linked issue")
	}
	l, err := s.ops.UnlinkIssue(r.Context(), actor(r), ops.LinkIssue{Issue: ref, Other: other, LeaseToken: token})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, l)
	return nil
}
