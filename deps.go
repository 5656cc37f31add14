//go:build tools

// This file pins modules the tree is growing into, so that parallel work
// does not race on go.mod. Delete a line once real code imports it.
package collab

import (
	_ "github.com/chromedp/chromedp"
	_ "github.com/gorilla/mux"
	_ "github.com/microcosm-cc/bluemonday"
	_ "github.com/sourcegraph/conc/pool"
	_ "github.com/yuin/goldmark"
	_ "golang.org/x/sys/unix"
)
