package web

import (
	"net/http"
	"strconv"

	"github.com/gorilla/mux"

	"github.com/collab-forge/collab/internal/fault"
)

// webhookBody is POST …/webhooks: where to send which events (none: all).
type webhookBody struct {
	URL    string   `json:"url"`
	Events []string `json:"events"`
}

func (s *Server) apiWebhooks(w http.ResponseWriter, r *http.Request) error {
	if err := requireAuth(r); err != nil {
		return err
	}
	name, err := repoName(r)
	if err != nil {
		return err
	}
	ss, err := s.ops.Webhooks(r.Context(), actor(r), name)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, ss)
	return nil
}

func (s *Server) apiAddWebhook(w http.ResponseWriter, r *http.Request) error {
	if err := requireAuth(r); err != nil {
		return err
	}
	name, err := repoName(r)
	if err != nil {
		return err
	}
	var b webhookBody
	if err := decode(r, &b); err != nil {
		return err
	}
	sub, err := s.ops.AddWebhook(r.Context(), actor(r), name, b.URL, b.Events)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, sub)
	return nil
}

func (s *Server) apiRemoveWebhook(w http.ResponseWriter, r *http.Request) error {
	if err := requireAuth(r); err != nil {
		return err
	}
	name, err := repoName(r)
	if err != nil {
		return err
	}
	id, err := strconv.ParseInt(mux.Vars(r)["id"], 10, 64)
	if err != nil {
		return fault.New(fault.Usage, "bad webhook id")
	}
	if err := s.ops.RemoveWebhook(r.Context(), actor(r), name, id); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "removed": true})
	return nil
}
