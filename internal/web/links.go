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

// postLink is the issue page's link form (POST …/issues/ID/links): other
// and kind link the issue; unlink=1 with other removes a link.
func (s *Server) postLink(w http.ResponseWriter, r *http.Request) error {
	ref, err := s.formRef(w, r)
	if err != nil {
		return err
	}
	in := ops.LinkIssue{Issue: ref, Other: r.PostFormValue("other"), Kind: r.PostFormValue("kind")}
	var l ops.Linked
	if r.PostFormValue("unlink") != "" {
		l, err = s.ops.UnlinkIssue(r.Context(), actor(r), in)
	} else {
		l, err = s.ops.LinkIssue(r.Context(), actor(r), in)
	}
	if err != nil {
		return s.refusedPost(w, r, "link", err, s.pageIssue)
	}
	http.Redirect(w, r, pagePath(l.Repo, "issues", l.ID)+"#links", http.StatusSeeOther)
	return nil
}
