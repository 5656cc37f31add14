package web

// The review gate's API (CONTRACT.md "HTTP"): branch protection, check
// results on revisions, and patch submit.

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/gorilla/mux"

	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/ops"
	"github.com/collab-forge/collab/internal/text"
)

// gateRoutes adds the gate's endpoints under the repository prefix rp.
func (s *Server) gateRoutes(api *mux.Router, rp string) {
	api.HandleFunc(rp+"/patches/{id}/submit", s.h(s.apiSubmit)).Methods("POST")
	api.HandleFunc(rp+"/patches/{id}/revisions/{rev}/checks", s.h(s.apiChecks)).Methods("GET")
	// A check's name may hold slashes (ci/test), escaped or not.
	api.HandleFunc(rp+"/patches/{id}/revisions/{rev}/checks/{name:.+}", s.h(s.apiCheck)).Methods("GET")
	api.HandleFunc(rp+"/patches/{id}/revisions/{rev}/checks/{name:.+}", s.h(s.apiPutCheck)).Methods("PUT")
	// So may a branch's (release/1.0).
	api.HandleFunc(rp+"/branches/{branch:.+}/protection", s.h(s.apiProtection)).Methods("GET")
	api.HandleFunc(rp+"/branches/{branch:.+}/protection", s.h(s.apiProtect)).Methods("PUT")
	api.HandleFunc(rp+"/branches/{branch:.+}/protection", s.h(s.apiUnprotect)).Methods("DELETE")
}

func (s *Server) apiSubmit(w http.ResponseWriter, r *http.Request) error {
	ref, err := idRef(r)
	if err != nil {
		return err
	}
	var b struct {
		Strategy *string `json:"strategy"`
		Chain    bool    `json:"chain"`
	}
	if err := decode(r, &b); err != nil {
		return err
	}
	in := ops.Submit{Patch: ref, LeaseToken: strings.TrimSpace(r.Header.Get("X-Lease-Token")), Chain: b.Chain}
	if b.Strategy != nil {
		if *b.Strategy == "" {
			return fault.New(fault.Usage, `bad strategy "": want merge, ff-only, rebase, squash`)
		}
		in.Strategy = *b.Strategy
	}
	out, err := s.ops.Submit(r.Context(), actor(r), in)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out.Patch)
	return nil
}

// checksRef reads the patch and revision of a checks path.
func checksRef(r *http.Request) (ops.Checks, error) {
	ref, err := idRef(r)
	if err != nil {
		return ops.Checks{}, err
	}
	v := pathVar(r, "rev")
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return ops.Checks{}, fault.New(fault.Usage, "bad revision %q: revisions are numbered from 1", text.Clip(v))
	}
	return ops.Checks{Patch: ref, Revision: n, Name: pathVar(r, "name")}, nil
}

func (s *Server) apiChecks(w http.ResponseWriter, r *http.Request) error {
	in, err := checksRef(r)
	if err != nil {
		return err
	}
	out, err := s.ops.ListChecks(r.Context(), actor(r), in)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) apiCheck(w http.ResponseWriter, r *http.Request) error {
	in, err := checksRef(r)
	if err != nil {
		return err
	}
	out, err := s.ops.GetCheck(r.Context(), actor(r), in)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) apiPutCheck(w http.ResponseWriter, r *http.Request) error {
	in, err := checksRef(r)
	if err != nil {
		return err
	}
	var b struct {
		State   string `json:"state"`
		URL     string `json:"url"`
		Summary string `json:"summary"`
	}
	if err := decode(r, &b); err != nil {
		return err
	}
	out, err := s.ops.PostCheck(r.Context(), actor(r), ops.PostCheck{
		Patch: in.Patch, Revision: in.Revision, Name: in.Name, State: b.State, URL: b.URL, Summary: b.Summary,
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) apiProtection(w http.ResponseWriter, r *http.Request) error {
	name, err := repoName(r)
	if err != nil {
		return err
	}
	out, err := s.ops.BranchRule(r.Context(), actor(r), name, pathVar(r, "branch"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) apiProtect(w http.ResponseWriter, r *http.Request) error {
	name, err := repoName(r)
	if err != nil {
		return err
	}
	var b struct {
		Approvals  *int     `json:"approvals"`
		Checks     []string `json:"checks"`
		Strategy   string   `json:"strategy"`
		DirectPush string   `json:"direct_push"`
		Resolved   bool     `json:"resolved"`
	}
	if err := decode(r, &b); err != nil {
		return err
	}
	out, err := s.ops.ProtectBranch(r.Context(), actor(r), ops.ProtectBranch{
		Repo: name, Branch: pathVar(r, "branch"), Approvals: b.Approvals, Checks: b.Checks, Strategy: b.Strategy, DirectPush: b.DirectPush, Resolved: b.Resolved,
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) apiUnprotect(w http.ResponseWriter, r *http.Request) error {
	name, err := repoName(r)
	if err != nil {
		return err
	}
	out, err := s.ops.UnprotectBranch(r.Context(), actor(r), name, pathVar(r, "branch"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// postSubmit is the patch page's Submit button: the same submit as the
// API's, from a CSRF-checked form; a refusal shows its requirements on the
// error page, a submit returns to the patch, now merged.
func (s *Server) postSubmit(w http.ResponseWriter, r *http.Request) error {
	ref, err := s.formRef(w, r)
	if err != nil {
		return err
	}
	out, err := s.ops.Submit(r.Context(), actor(r), ops.Submit{Patch: ref, Strategy: r.PostFormValue("strategy")})
	if err != nil {
		return err
	}
	http.Redirect(w, r, pagePath(out.Patch.Repo, "patches", out.Patch.ID), http.StatusSeeOther)
	return nil
}
