package testscript

import "github.com/rogpeppe/go-internal/testscript"

// webCmds start and drive a real collab-web for a script (issue 6).
func webCmds() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	return map[string]func(ts *testscript.TestScript, neg bool, args []string){}
}
