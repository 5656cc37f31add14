package testscript

import "github.com/rogpeppe/go-internal/testscript"

// sshdCmds start and drive a real sshd for a script (issue 3).
func sshdCmds() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	return map[string]func(ts *testscript.TestScript, neg bool, args []string){}
}
